package dev.layover.core.internal.engine;

import dev.layover.core.JobPolicy;
import dev.layover.core.LayoverException;
import dev.layover.core.control.CancelResult;
import dev.layover.core.control.JobControl;
import dev.layover.core.control.Pause;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.spi.Db;
import dev.layover.core.internal.db.DatabaseClock;
import dev.layover.core.internal.db.StoredText;
import dev.layover.core.internal.jobs.JobStore;
import java.util.Objects;
import javax.sql.DataSource;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.observe.Observability;

/**
 * The operator side of admission and control, {@link JobControl}: cancel a job, pause and resume a
 * job type or a key. Jobs are held, released and cancelled through the {@link JobStore}; the pauses
 * themselves are this class's ({@link ControlSql}).
 */
public final class Controls implements JobControl {

    private static final Logger LOG = LoggerFactory.getLogger(Controls.class);
    private static final int MAX_TRIES = 10;

    private final JobStore store;
    private final Db db;
    private final Clock clock;
    private final JobMover mover;

    Controls(JobStore store, Clock clock, JobMover mover) {
        this.store = store;
        this.db = store.db();
        this.clock = clock;
        this.mover = mover;
    }

    /**
     * The control of a JVM that runs no jobs (a standalone console): cancels write history rows as
     * Layover does by default (on, without args), times are the database's.
     *
     * @param dataSource the Layover database
     * @return the handle
     */
    public static JobControl create(DataSource dataSource) {
        JobStore store = new JobStore(new Db(dataSource));
        Clock clock = new DatabaseClock(dataSource, Clock.systemUTC(), "control");
        return new Controls(store, clock, new JobMover(store, clock, Observability.DEFAULT, WriteRetry.ONCE));
    }

    @Override
    public CancelResult cancel(String jobType, String jobId, String by, String reason) {
        Objects.requireNonNull(jobId, "jobId");
        return cancelJob(jobType(jobType), storable(jobId, "jobId"), who(by), reason == null ? null : StoredText.clean(reason));
    }

    @Override
    public Pause pauseJobType(String jobType, String by, String reason) {
        return pause(Pause.Scope.JOB_TYPE, jobType(jobType), who(by), reason == null ? null : StoredText.clean(reason));
    }

    @Override
    public Optional<Pause> resumeJobType(String jobType, String by) {
        return resume(Pause.Scope.JOB_TYPE, target(jobType), who(by));
    }

    @Override
    public Pause pauseKey(String key, String by, String reason) {
        return pause(Pause.Scope.KEY, target(key), who(by), reason == null ? null : StoredText.clean(reason));
    }

    @Override
    public Optional<Pause> resumeKey(String key, String by) {
        return resume(Pause.Scope.KEY, target(key), who(by));
    }

    @Override
    public List<Pause> recentPauses(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1");
        }
        return query("reading pauses", ControlSql.RECENT_PAUSES, limit);
    }

    private static String who(String by) {
        if (by == null || by.isBlank() || by.length() > 200) {
            throw new IllegalArgumentException("by (who takes the action) must be 1-200 characters");
        }
        return storable(by, "by (who takes the action)");
    }

    private static String storable(String s, String what) {
        if (StoredText.unstorable(s)) {
            throw new IllegalArgumentException(what + " must not contain a NUL character or half of a surrogate pair");
        }
        return s;
    }

    private static String jobType(String t) {
        target(t);
        if (t.startsWith("layover-")) {
            throw new IllegalArgumentException("'" + t + "' is one of Layover's own tasks, not a job type");
        }
        return t;
    }

    private static String target(String t) {
        if (t == null || t.isBlank() || t.length() > 200) {
            throw new IllegalArgumentException("a job type or key must be 1-200 characters");
        }
        return storable(t, "a job type or key");
    }

    /** Cancels a waiting job at once, or asks a running one to stop. */
    private CancelResult cancelJob(String jobType, String jobId, String by, String reason) {
        for (int tries = 0; tries < MAX_TRIES; tries++) {
            JobStore.LiveJob row = store.find(jobType, jobId);
            if (row == null) {
                return new CancelResult(CancelResult.Status.NOT_FOUND, jobType, jobId, null);
            }
            if (!row.picked()) {
                JobRun run = new JobRun(jobType, jobId, row.version(), row.attempts(), JobPolicy.defaults());
                Long deadLetter = mover.cancel(run, false, by, reason);
                if (deadLetter != null) {
                    return new CancelResult(CancelResult.Status.CANCELLED, jobType, jobId, deadLetter);
                }
                continue; // picked or changed meanwhile: look again
            }
            Instant now = clock.instant();
            long marked = store.requestCancel(jobType, jobId, row.version(), now, by, reason);
            if (marked == 1) {
                LOG.info("Asked running job {}/{} to stop (cancelled by {})", jobType, jobId, by);
                return new CancelResult(CancelResult.Status.REQUESTED, jobType, jobId, null);
            }
        }
        throw new LayoverException("job " + jobType + "/" + jobId + " kept changing while it was being cancelled; try again");
    }

    /**
     * Starts a pause, unless one of the same scope and target is active (then returns that one).
     *
     * @param scope what to pause
     * @param target the job type name or key
     * @param by who pauses
     * @param reason why, or null
     * @return the active pause
     */
    private Pause pause(Pause.Scope scope, String target, String by, String reason) {
        Long id = db.transaction("pausing " + scope.code() + " " + target, c -> {
            lock(c);
            Long pauseId;
            try (PreparedStatement ps = c.prepareStatement(ControlSql.INSERT_PAUSE)) {
                Db.bind(ps, scope.code(), target, by, reason);
                try (ResultSet rs = ps.executeQuery()) {
                    pauseId = rs.next() ? rs.getLong(1) : null;
                }
            }
            if (pauseId == null) {
                return null;
            }
            String detail = (scope == Pause.Scope.JOB_TYPE ? "job type " : "key ") + target + " paused by " + by
                    + (reason == null || reason.isBlank() ? "" : ": " + reason);
            int held = store.holdWaiting(c, scope == Pause.Scope.JOB_TYPE, target, StoredText.cut(detail));
            try (PreparedStatement ps = c.prepareStatement(ControlSql.SET_HELD)) {
                Db.bind(ps, held, pauseId);
                ps.executeUpdate();
            }
            LOG.info("Paused {} {} ({} waiting jobs held) by {}", scope.code(), target, held, by);
            return pauseId;
        });
        if (id == null) {
            return active(scope, target).orElseThrow(() -> new LayoverException(
                    "could not pause " + scope.code() + " " + target + ": an active pause was there and is gone"));
        }
        return byId(id);
    }

    /**
     * Ends the active pause of a scope and target, and gives every job no other active pause
     * covers its run time back.
     *
     * @return the ended pause, or empty when none was active
     */
    private Optional<Pause> resume(Pause.Scope scope, String target, String by) {
        Long id = db.transaction("resuming " + scope.code() + " " + target, c -> {
            lock(c);
            Long pauseId;
            try (PreparedStatement ps = c.prepareStatement(ControlSql.END_PAUSE)) {
                Db.bind(ps, by, scope.code(), target);
                try (ResultSet rs = ps.executeQuery()) {
                    pauseId = rs.next() ? rs.getLong(1) : null;
                }
            }
            if (pauseId == null) {
                return null;
            }
            long released = store.releaseHeld(c, StoredText.cut((scope == Pause.Scope.JOB_TYPE ? "job type " : "key ")
                    + target + " resumed by " + by));
            try (PreparedStatement ps = c.prepareStatement(ControlSql.SET_RELEASED)) {
                Db.bind(ps, released, pauseId);
                ps.executeUpdate();
            }
            LOG.info("Resumed {} {} ({} held jobs released) by {}", scope.code(), target, released, by);
            return pauseId;
        });
        return id == null ? Optional.empty() : Optional.of(byId(id));
    }

    /** @return the active pause of a scope and target */
    private Optional<Pause> active(Pause.Scope scope, String target) {
        List<Pause> p = query("reading a pause", ControlSql.ACTIVE_PAUSE, scope.code(), target);
        return p.isEmpty() ? Optional.empty() : Optional.of(p.get(0));
    }

    @Override
    public List<Pause> activePauses() {
        return query("reading pauses", ControlSql.ACTIVE_PAUSES);
    }

    private Pause byId(long id) {
        return query("reading a pause", ControlSql.PAUSE_BY_ID, id).get(0);
    }

    private static void lock(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(ControlSql.LOCK)) {
            ps.setLong(1, ControlSql.PAUSE_LOCK);
            ps.execute();
        }
    }

    private List<Pause> query(String what, String sql, Object... params) {
        return db.autocommit(what, c -> {
            List<Pause> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                Db.bind(ps, params);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        long released = rs.getLong("released_jobs");
                        Long rel = rs.wasNull() ? null : released;
                        out.add(new Pause(rs.getLong("id"), Pause.Scope.fromCode(rs.getString("scope")),
                                rs.getString("target"), instant(rs, "paused_at"), rs.getString("paused_by"),
                                rs.getString("reason"), rs.getLong("held_jobs"), instant(rs, "resumed_at"),
                                rs.getString("resumed_by"), rel));
                    }
                }
            }
            return out;
        });
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }
}
