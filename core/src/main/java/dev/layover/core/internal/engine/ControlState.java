package dev.layover.core.internal.engine;

import dev.layover.core.JobPolicy;
import dev.layover.core.outcome.FailureType;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.spi.Db;
import dev.layover.core.internal.jobs.JobRun;

/**
 * What a running worker knows of operator control, refreshed once a second and at once on a
 * NOTIFY (a pause, a resume, a cancel request): the active pauses, and the deadline and cancel
 * request of each job it has picked. The engine reads it before and while a job runs, with no
 * round trip. The same refresh finds waiting jobs past their deadline (or due after it) and cancel
 * requests left on waiting jobs, and parks or cancels them (version-checked: a worker that picks
 * one first wins).
 */
final class ControlState {

    private static final Logger LOG = LoggerFactory.getLogger(ControlState.class);
    static final Duration REFRESH_INTERVAL = Duration.ofSeconds(1);

    /** An active pause as cached. */
    record PauseInfo(String scope, String target, String by, String reason) {
        String describe() {
            return (scope.equals("job_type") ? "job type " : "key ") + target + " paused by " + by
                    + (reason == null || reason.isBlank() ? "" : ": " + reason);
        }
    }

    /** A job this worker has picked, with its deadline and cancel request. */
    record Mine(long version, Instant deadline, Instant cancelAt, String cancelBy, String cancelReason) {}

    private final Db db;
    private final Clock clock;
    private final String workerName;
    private final OutcomeWriter writer;
    private final Object wake = new Object();
    private volatile Map<String, PauseInfo> pausedTypes = Map.of();
    private volatile Map<String, PauseInfo> pausedKeys = Map.of();
    private volatile Map<String, Mine> mine = Map.of();
    private volatile boolean running;
    private volatile boolean wakeRequested;
    private volatile boolean failing;
    private Thread thread;

    ControlState(Db db, Clock clock, String workerName, OutcomeWriter writer) {
        this.db = db;
        this.clock = clock;
        this.workerName = workerName;
        this.writer = writer;
    }

    synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        refreshOnce(); // pauses made before this worker started are known before it picks anything
        thread = new Thread(this::loop, "layover-control-" + workerName);
        thread.setDaemon(true);
        thread.start();
    }

    synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        wakeUp();
        try {
            thread.join(3000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A NOTIFY on the provider state channel: refresh now. */
    void wakeUp() {
        synchronized (wake) {
            wakeRequested = true;
            wake.notifyAll();
        }
    }

    /** @return whether any pause is active (cached) */
    boolean anyPause() {
        return !pausedTypes.isEmpty() || !pausedKeys.isEmpty();
    }

    /**
     * @param jobType a job type
     * @param keys the job's provider key and limit keys
     * @return the active pause covering them, or null (cached)
     */
    PauseInfo pauseOf(String jobType, List<String> keys) {
        PauseInfo p = pausedTypes.get(jobType);
        if (p != null) {
            return p;
        }
        Map<String, PauseInfo> byKey = pausedKeys;
        if (byKey.isEmpty()) {
            return null;
        }
        for (String k : keys) {
            p = byKey.get(k);
            if (p != null) {
                return p;
            }
        }
        return null;
    }

    /**
     * @return what this worker knows of one of its picked jobs at this version, or null
     */
    Mine mine(String jobType, String id, long version) {
        Map<String, Mine> m = mine;
        if (m.isEmpty()) {
            return null;
        }
        Mine x = m.get(jobType + '\u0000' + id);
        return x != null && x.version() == version ? x : null;
    }

    private void loop() {
        while (running) {
            synchronized (wake) {
                if (!wakeRequested) {
                    try {
                        wake.wait(REFRESH_INTERVAL.toMillis());
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                wakeRequested = false;
            }
            if (running) {
                refreshOnce();
            }
        }
    }

    void refreshOnce() {
        Instant now = clock.instant();
        boolean due;
        try {
            due = read(now);
            if (failing) {
                failing = false;
                LOG.info("Layover: pauses and cancel requests readable again");
            }
        } catch (RuntimeException e) {
            if (!failing) {
                failing = true;
                LOG.warn("Layover: cannot read pauses and cancel requests (will retry every {} ms; the last known "
                        + "state applies meanwhile): {}", REFRESH_INTERVAL.toMillis(), e.getMessage());
            }
            return;
        }
        if (due) {
            try {
                sweep(now);
            } catch (RuntimeException e) {
                LOG.warn("Layover: could not park jobs past their deadline or cancel jobs: {}", e.getMessage());
            }
        }
    }

    private boolean read(Instant now) {
        Map<String, PauseInfo> types = new HashMap<>();
        Map<String, PauseInfo> keys = new HashMap<>();
        Map<String, Mine> picked = new HashMap<>();
        boolean[] due = {false};
        db.autocommit("reading pauses and cancel requests", c -> {
            try (PreparedStatement ps = c.prepareStatement(ControlSql.REFRESH)) {
                ps.setString(1, workerName);
                ps.setTimestamp(2, Timestamp.from(now));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        String kind = rs.getString("kind");
                        if (kind.equals("pause")) {
                            PauseInfo p = new PauseInfo(rs.getString("a"), rs.getString("b"), rs.getString("by"),
                                    rs.getString("reason"));
                            (p.scope().equals("job_type") ? types : keys).put(p.target(), p);
                        } else if (kind.equals("mine")) {
                            picked.put(rs.getString("a") + '\u0000' + rs.getString("b"), new Mine(rs.getLong("version"),
                                    instant(rs, "deadline"), instant(rs, "cancel_at"), rs.getString("by"),
                                    rs.getString("reason")));
                        } else {
                            due[0] = true;
                        }
                    }
                }
            }
            return null;
        });
        pausedTypes = types.isEmpty() ? Map.of() : types;
        pausedKeys = keys.isEmpty() ? Map.of() : keys;
        mine = picked.isEmpty() ? Map.of() : picked;
        return due[0];
    }

    /** Parks waiting jobs past their deadline and cancels waiting jobs with a cancel request. */
    private void sweep(Instant now) {
        List<Object[]> rows = db.autocommit("finding jobs past their deadline or cancelled", c -> {
            List<Object[]> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(ControlSql.DUE)) {
                ps.setTimestamp(1, Timestamp.from(now));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new Object[] {rs.getString("task_name"), rs.getString("task_instance"),
                                rs.getLong("version"), rs.getInt("attempts"), instant(rs, "deadline"),
                                instant(rs, "execution_time"), instant(rs, "paused_run_at"),
                                instant(rs, "cancel_requested_at"), rs.getString("cancel_requested_by"),
                                rs.getString("cancel_reason")});
                    }
                }
            }
            return out;
        });
        Collections.shuffle(rows); // workers sweeping at once mostly take different jobs first
        for (Object[] r : rows) {
            if (!running) {
                return;
            }
            JobRun run = new JobRun((String) r[0], (String) r[1], (Long) r[2], (Integer) r[3], JobPolicy.defaults());
            if (r[7] != null) {
                writer.cancel(run, false, (String) r[8], (String) r[9]);
                continue;
            }
            Instant deadline = (Instant) r[4];
            Instant runAt = (Instant) r[5];
            String why = !deadline.isAfter(now)
                    ? "its deadline " + deadline + " passed before it could run"
                            + (r[6] != null ? " (it was held by a pause)" : "")
                    : "its next run at " + runAt + " is after its deadline " + deadline;
            writer.park(run, FailureType.DEADLINE_EXCEEDED, "DeadlineExceeded", why);
        }
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }
}
