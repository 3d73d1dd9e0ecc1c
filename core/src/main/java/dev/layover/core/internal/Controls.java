package dev.layover.core.internal;

import dev.layover.core.JobPolicy;
import dev.layover.core.LayoverException;
import dev.layover.core.control.CancelResult;
import dev.layover.core.control.JobControl;
import dev.layover.core.control.Pause;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator side of admission and control: cancel a job, pause and resume a job type or a key.
 * Internal: the API is {@link JobControl}.
 */
public final class Controls {

    private static final Logger LOG = LoggerFactory.getLogger(Controls.class);
    private static final int MAX_TRIES = 10;

    private final Db db;
    private final Clock clock;
    private final OutcomeWriter writer;

    /**
     * @param db the database
     * @param clock the clock
     * @param observability what a cancel records ({@code layover.job_history} on or off, args or not)
     */
    public Controls(Db db, Clock clock, Observability observability) {
        this.db = db;
        this.clock = clock;
        this.writer = new OutcomeWriter(db, clock, null, null, null,
                observability == null ? Observability.DEFAULT : observability);
    }

    /**
     * Cancels a waiting job at once, or asks a running one to stop.
     *
     * @param jobType the job type
     * @param jobId the job id
     * @param by who cancels
     * @param reason why, or null
     * @return what happened
     */
    public CancelResult cancel(String jobType, String jobId, String by, String reason) {
        for (int tries = 0; tries < MAX_TRIES; tries++) {
            Object[] row = db.autocommit("reading job " + jobType + "/" + jobId, c -> {
                try (PreparedStatement ps = c.prepareStatement(ControlSql.JOB)) {
                    Db.bind(ps, jobType, jobId);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? new Object[] {rs.getLong(1), rs.getBoolean(2), rs.getInt(3)} : null;
                    }
                }
            });
            if (row == null) {
                return new CancelResult(CancelResult.Status.NOT_FOUND, jobType, jobId, null);
            }
            long version = (Long) row[0];
            boolean picked = (Boolean) row[1];
            if (!picked) {
                JobRun run = new JobRun(jobType, jobId, version, (Integer) row[2], JobPolicy.defaults());
                Long deadLetter = writer.cancel(run, false, by, reason);
                if (deadLetter != null) {
                    return new CancelResult(CancelResult.Status.CANCELLED, jobType, jobId, deadLetter);
                }
                continue; // picked or changed meanwhile: look again
            }
            Instant now = clock.instant();
            long marked = db.autocommit("asking job " + jobType + "/" + jobId + " to stop", c -> {
                try (PreparedStatement ps = c.prepareStatement(ControlSql.REQUEST_CANCEL)) {
                    Db.bind(ps, Timestamp.from(now), by, reason, jobType, jobId, version);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return rs.getLong("n");
                    }
                }
            });
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
    public Pause pause(Pause.Scope scope, String target, String by, String reason) {
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
            int held;
            try (PreparedStatement ps = c.prepareStatement(scope == Pause.Scope.JOB_TYPE
                    ? ControlSql.HOLD_WAITING_OF_TYPE : ControlSql.HOLD_WAITING_OF_KEY)) {
                if (scope == Pause.Scope.JOB_TYPE) {
                    Db.bind(ps, OutcomeWriter.cut(detail), target);
                } else {
                    Db.bind(ps, OutcomeWriter.cut(detail), target, target);
                }
                held = ps.executeUpdate();
            }
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
    public Optional<Pause> resume(Pause.Scope scope, String target, String by) {
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
            long released;
            try (PreparedStatement ps = c.prepareStatement(ControlSql.RELEASE)) {
                Db.bind(ps, OutcomeWriter.cut((scope == Pause.Scope.JOB_TYPE ? "job type " : "key ") + target
                        + " resumed by " + by));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    released = rs.getLong("n");
                }
            }
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
    public Optional<Pause> active(Pause.Scope scope, String target) {
        List<Pause> p = query("reading a pause", ControlSql.ACTIVE_PAUSE, scope.code(), target);
        return p.isEmpty() ? Optional.empty() : Optional.of(p.get(0));
    }

    /** @return every active pause, oldest first */
    public List<Pause> activePauses() {
        return query("reading pauses", ControlSql.ACTIVE_PAUSES);
    }

    /** @return the newest pauses, active or ended, newest first */
    public List<Pause> recentPauses(int limit) {
        return query("reading pauses", ControlSql.RECENT_PAUSES, limit);
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
