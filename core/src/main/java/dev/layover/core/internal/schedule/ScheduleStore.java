package dev.layover.core.internal.schedule;

import dev.layover.core.internal.db.NamedSql;
import dev.layover.core.schedule.MissedRuns;
import dev.layover.core.schedule.Overlap;
import dev.layover.core.schedule.ScheduleInfo;
import dev.layover.core.schedule.Timing;
import dev.layover.core.spi.Db;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The owner of {@code layover.schedules}: every statement that reads it for a decision or writes
 * it, each in its own {@code schedule_*.sql} file. Every method runs on the connection it is given
 * (the caller's transaction decides).
 */
final class ScheduleStore {

    private static final NamedSql PEEK = NamedSql.load("schedule_peek");
    private static final NamedSql CLAIM = NamedSql.load("schedule_claim");
    private static final NamedSql LOCK = NamedSql.load("schedule_lock");
    private static final NamedSql ADVANCE = NamedSql.load("schedule_advance");
    private static final NamedSql INSERT = NamedSql.load("schedule_insert");
    private static final NamedSql UPDATE = NamedSql.load("schedule_update");
    private static final NamedSql CODE_ROWS = NamedSql.load("schedule_code_rows");
    private static final NamedSql CODE_REMOVE = NamedSql.load("schedule_code_remove");
    private static final NamedSql PAUSE = NamedSql.load("schedule_pause");
    private static final NamedSql RESUME = NamedSql.load("schedule_resume");
    private static final NamedSql TRIGGERED = NamedSql.load("schedule_triggered");
    private static final NamedSql DELETE = NamedSql.load("schedule_delete");
    private static final NamedSql VIEW = NamedSql.load("schedule_view");

    private final Db db;

    /** @param db the database */
    public ScheduleStore(Db db) {
        this.db = db;
    }

    /** @return the database */
    public Db db() {
        return db;
    }

    /**
     * A claimed (locked) schedule.
     *
     * @param tenant its tenant
     * @param name its name
     * @param jobType its job type
     * @param cron its cron expression, or null
     * @param zone its zone, or null
     * @param everyMs its interval, or null
     * @param argsJson its stored args, or null
     * @param argsFromCode whether code computes its args
     * @param missed its missed-run policy
     * @param overlap its overlap policy
     * @param jitterMs its jitter
     * @param priority its occurrences' priority
     * @param nextAt its next occurrence
     * @param held whether that occurrence is held by the overlap policy
     * @param lastJobId its last occurrence's job id, or null
     * @param lastLive whether that job is still in the queue
     * @param dbNow the time the claim decided on
     * @param paused whether it is paused (the lock only)
     * @param source {@code code} or {@code api} (the lock only)
     * @param removed whether it is a code schedule's tombstone (the lock only)
     */
    public record Row(String tenant, String name, String jobType, String cron, String zone, Long everyMs,
            String argsJson, boolean argsFromCode, MissedRuns missed, Overlap overlap, long jitterMs, int priority,
            Instant nextAt, boolean held, String lastJobId, boolean lastLive, Instant dbNow, boolean paused,
            String source, boolean removed) {

        /** @return the timing */
        public Timing timing() {
            return cron != null ? Timing.cron(cron, zone) : Timing.every(Duration.ofMillis(everyMs));
        }
    }

    /** A code schedule as stored: its name, source, hash, generation, and whether it is a tombstone. */
    record CodeRow(String name, String source, String hash, long generation, boolean removed) {}

    /**
     * @param now the test clock's time, or null for the database's
     * @return whether any schedule this worker can fire is due (one indexed statement)
     */
    boolean anyDue(Connection c, Instant now, String[] types, String[] codeNames) throws SQLException {
        Map<String, Object> p = new HashMap<>();
        p.put("now", ts(now));
        p.put("types", c.createArrayOf("text", types));
        p.put("code_names", c.createArrayOf("text", codeNames));
        try (PreparedStatement ps = PEEK.prepare(c, p); ResultSet rs = ps.executeQuery()) {
            return rs.next();
        }
    }

    /** Claims up to {@code limit} due schedules, locked until the transaction ends. */
    List<Row> claim(Connection c, Instant now, String[] types, String[] codeNames, int limit) throws SQLException {
        Map<String, Object> p = new HashMap<>();
        p.put("now", ts(now));
        p.put("types", c.createArrayOf("text", types));
        p.put("code_names", c.createArrayOf("text", codeNames));
        p.put("limit", limit);
        List<Row> rows = new ArrayList<>();
        try (PreparedStatement ps = CLAIM.prepare(c, p); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                rows.add(row(rs, false));
            }
        }
        return rows;
    }

    /** Locks one schedule; null when there is none. */
    Row lock(Connection c, Instant now, String tenant, String name) throws SQLException {
        Map<String, Object> p = new HashMap<>();
        p.put("now", ts(now));
        p.put("tenant", tenant);
        p.put("name", name);
        try (PreparedStatement ps = LOCK.prepare(c, p); ResultSet rs = ps.executeQuery()) {
            return rs.next() ? row(rs, true) : null;
        }
    }

    private static Row row(ResultSet rs, boolean lock) throws SQLException {
        long every = rs.getLong("every_ms");
        Long everyMs = rs.wasNull() ? null : every;
        long window = rs.getLong("missed_window_ms");
        Duration w = rs.wasNull() ? null : Duration.ofMillis(window);
        return new Row(rs.getString("tenant"), rs.getString("name"), rs.getString("job_type"), rs.getString("cron"),
                rs.getString("zone"), everyMs, rs.getString("args"), rs.getBoolean("args_from_code"),
                MissedRuns.of(MissedRuns.Policy.valueOf(rs.getString("missed").toUpperCase(Locale.ROOT)), w),
                Overlap.valueOf(rs.getString("overlap").toUpperCase(Locale.ROOT)), rs.getLong("jitter_ms"),
                rs.getInt("priority"), instant(rs, "next_at"), rs.getBoolean("held"), rs.getString("last_job_id"),
                rs.getBoolean("last_live"), instant(rs, "db_now"), lock && rs.getBoolean("paused"),
                lock ? rs.getString("source") : null, lock && rs.getBoolean("removed"));
    }

    /**
     * What a claim decided for one schedule.
     *
     * @param row the claimed schedule
     * @param decision its decision (the outcome as it ended)
     * @param lastAt the last occurrence enqueued, or null
     * @param lastJobId its job id, or null
     */
    record Advance(Row row, Occurrences.Decision decision, Instant lastAt, String lastJobId) {}

    /** Writes what a claim decided, for every schedule it claimed, in one statement. */
    void advance(Connection c, List<Advance> all) throws SQLException {
        if (all.isEmpty()) {
            return;
        }
        int n = all.size();
        String[] tenants = new String[n];
        String[] names = new String[n];
        String[] nextAts = new String[n];
        String[] dueAts = new String[n];
        Boolean[] helds = new Boolean[n];
        String[] lastAts = new String[n];
        String[] lastJobIds = new String[n];
        String[] outcomes = new String[n];
        for (int i = 0; i < n; i++) {
            Advance a = all.get(i);
            tenants[i] = a.row().tenant();
            names[i] = a.row().name();
            nextAts[i] = a.decision().nextAt().toString();
            dueAts[i] = a.decision().dueAt() == null ? null : a.decision().dueAt().toString();
            helds[i] = a.decision().held();
            lastAts[i] = a.lastAt() == null ? null : a.lastAt().toString();
            lastJobIds[i] = a.lastJobId();
            outcomes[i] = a.decision().outcome();
        }
        Map<String, Object> p = new HashMap<>();
        p.put("tenants", c.createArrayOf("text", tenants));
        p.put("names", c.createArrayOf("text", names));
        p.put("next_ats", c.createArrayOf("text", nextAts));
        p.put("due_ats", c.createArrayOf("text", dueAts));
        p.put("helds", c.createArrayOf("boolean", helds));
        p.put("last_ats", c.createArrayOf("text", lastAts));
        p.put("last_job_ids", c.createArrayOf("text", lastJobIds));
        p.put("outcomes", c.createArrayOf("text", outcomes));
        p.put("db_now", ts(all.get(0).row().dbNow()));
        try (PreparedStatement ps = ADVANCE.prepare(c, p)) {
            ps.executeUpdate();
        }
    }

    /** Inserts a schedule; false when the name is taken. */
    boolean insert(Connection c, String tenant, String name, Definition d, Instant nextAt, String source, String hash,
            long generation) throws SQLException {
        Map<String, Object> p = definition(tenant, name, d, nextAt, source, hash, generation);
        try (PreparedStatement ps = INSERT.prepare(c, p)) {
            return ps.executeUpdate() == 1;
        }
    }

    /** Changes a schedule of {@code source}; false when there is none. */
    boolean update(Connection c, String tenant, String name, Definition d, Instant nextAt, String source, String hash,
            long generation) throws SQLException {
        Map<String, Object> p = definition(tenant, name, d, nextAt, source, hash, generation);
        try (PreparedStatement ps = UPDATE.prepare(c, p)) {
            return ps.executeUpdate() == 1;
        }
    }

    private static Map<String, Object> definition(String tenant, String name, Definition d, Instant nextAt,
            String source, String hash, long generation) {
        Map<String, Object> p = new HashMap<>();
        p.put("tenant", tenant);
        p.put("name", name);
        p.put("job_type", d.jobType());
        p.put("cron", d.timing().cronExpression());
        p.put("zone", d.timing().zone() == null ? null : d.timing().zone().getId());
        p.put("every_ms", d.timing().interval() == null ? null : d.timing().interval().toMillis());
        p.put("args", d.argsJson());
        p.put("args_from_code", d.argsFromCode());
        p.put("missed", d.missedColumn());
        p.put("missed_window_ms", d.missed().window() == null ? null : d.missed().window().toMillis());
        p.put("overlap", d.overlapColumn());
        p.put("jitter_ms", d.jitterMs());
        p.put("priority", d.priority());
        p.put("next_at", ts(nextAt));
        p.put("source", source);
        p.put("definition_hash", hash);
        p.put("generation", generation);
        return p;
    }

    /** Serializes the starts' reconciliations of code schedules (for the transaction). */
    void lockCodeSchedules(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext('layover.schedules code'))")) {
            ps.execute();
        }
    }

    /** The code schedules as stored. */
    List<CodeRow> codeRows(Connection c) throws SQLException {
        List<CodeRow> rows = new ArrayList<>();
        try (PreparedStatement ps = CODE_ROWS.prepare(c, Map.of()); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                rows.add(new CodeRow(rs.getString("name"), rs.getString("source"), rs.getString("definition_hash"),
                        rs.getLong("generation"), rs.getBoolean("removed")));
            }
        }
        return rows;
    }

    /** Marks a code schedule removed (a tombstone); false when its generation is higher. */
    boolean removeCode(Connection c, String name, long generation) throws SQLException {
        try (PreparedStatement ps = CODE_REMOVE.prepare(c, Map.of("name", name, "generation", generation))) {
            return ps.executeUpdate() == 1;
        }
    }

    boolean pause(Connection c, String tenant, String name) throws SQLException {
        try (PreparedStatement ps = PAUSE.prepare(c, Map.of("tenant", tenant, "name", name))) {
            return ps.executeUpdate() == 1;
        }
    }

    boolean resume(Connection c, String tenant, String name, Instant nextAt) throws SQLException {
        try (PreparedStatement ps = RESUME.prepare(c, Map.of("tenant", tenant, "name", name, "next_at", ts(nextAt)))) {
            return ps.executeUpdate() == 1;
        }
    }

    void triggered(Connection c, String tenant, String name, Instant at, String jobId) throws SQLException {
        try (PreparedStatement ps = TRIGGERED.prepare(c, Map.of("tenant", tenant, "name", name, "last_at", ts(at),
                "last_job_id", jobId))) {
            ps.executeUpdate();
        }
    }

    boolean delete(Connection c, String tenant, String name) throws SQLException {
        try (PreparedStatement ps = DELETE.prepare(c, Map.of("tenant", tenant, "name", name))) {
            return ps.executeUpdate() == 1;
        }
    }

    /** Schedules from the view: one ({@code name} given), a tenant's, or all ({@code tenant} null). */
    List<ScheduleInfo> view(Connection c, String tenant, String name) throws SQLException {
        Map<String, Object> p = new HashMap<>();
        p.put("tenant", tenant);
        p.put("name", name);
        List<ScheduleInfo> out = new ArrayList<>();
        try (PreparedStatement ps = VIEW.prepare(c, p); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                double every = rs.getDouble("every_ms");
                Duration e = rs.wasNull() ? null : Duration.ofMillis(Math.round(every));
                out.add(new ScheduleInfo(rs.getString("tenant"), rs.getString("name"), rs.getString("job_type"),
                        rs.getString("source"), rs.getString("cron"), rs.getString("zone"), e, rs.getString("args"),
                        rs.getString("missed"), rs.getString("overlap"), rs.getBoolean("paused"),
                        rs.getBoolean("removed"), instant(rs, "next_at"), rs.getBoolean("held_by_overlap"),
                        instant(rs, "last_at"), rs.getString("last_job_id"), rs.getString("last_outcome"),
                        rs.getString("last_job_state")));
            }
        }
        return out;
    }

    private static Timestamp ts(Instant i) {
        return i == null ? null : Timestamp.from(i);
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }
}
