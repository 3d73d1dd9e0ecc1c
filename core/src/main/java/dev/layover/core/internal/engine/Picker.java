package dev.layover.core.internal.engine;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.kagkarlsson.scheduler.task.Execution;
import com.github.kagkarlsson.scheduler.task.TaskInstance;
import dev.layover.core.internal.db.NamedSql;
import dev.layover.core.spi.Db;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The pick, which is the admission: one call of {@code layover.pick} ({@code pick.sql}) takes the
 * due jobs this worker runs, for each provider key as many as the key admits now, and moves the
 * keys' state in the same statement (docs/decisions/0001-the-pick-is-the-admission.md). It runs on
 * Layover's own connection in autocommit: nothing it locks outlives the statement.
 *
 * <p>Each picked job comes with its key's verdict ({@link Verdict}), kept here until the job's run
 * takes it ({@link #verdict}); a run given back before it started leaves its verdict behind, which
 * is dropped after {@link #FORGET_AFTER_NANOS}.
 */
final class Picker {

    /** How long a verdict no run asked for is kept. */
    static final long FORGET_AFTER_NANOS = TimeUnit.MINUTES.toNanos(2);

    private static final NamedSql PICK = NamedSql.load("pick");
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * What the pick decided for a job.
     *
     * @param key the job's provider key, or null
     * @param kind {@code run} (admitted), {@code trial} (admitted as its key's breaker trial),
     *     {@code breaker_open} (taken to be parked: its key's breaker is open), {@code deferral}
     *     (taken to be parked: due but not admitted for longer than its type's maxDeferral) or
     *     {@code too_large} (taken to be parked: its token estimate is more than its key can ever admit) or
     *     {@code deadline} (taken because its deadline passed while it waited)
     * @param trialToken the trial's claim, for {@code trial}
     * @param reserved the tokens its admission reserved per dimension (combined, input, output), or null
     * @param rates the key's token rates per second at the pick (combined, input, output), or null
     * @param detail why, for the kinds that park
     */
    record Verdict(String key, String kind, String trialToken, double[] reserved, double[] rates, String detail) {
        static final Verdict RUN = new Verdict(null, "run", null, null, null, null);
    }

    private record Kept(long version, Verdict verdict, long at) {}

    /**
     * What a traced run reads of its row besides what db-scheduler's execution carries (with tracing
     * on only): its enqueue's trace context and its reschedules.
     *
     * @param traceContext the stored {@code trace_context} (jsonb text), or null
     * @param reschedules its {@code reschedules}, or -1 when unknown
     */
    record Traced(String traceContext, int reschedules) {
        static final Traced UNKNOWN = new Traced(null, -1);
    }

    private record KeptTrace(long version, Traced traced, long at) {}

    /** With tracing on: the trace context and reschedules of the jobs one pick took, by primary key (one statement). */
    static final String TRACED = """
            SELECT t.task_name, t.task_instance, t.trace_context::text AS trace_context, t.reschedules
            FROM layover.scheduled_tasks t
            JOIN unnest(?::text[], ?::text[]) AS p(name, id) ON t.task_name = p.name AND t.task_instance = p.id""";

    private final Db db;
    private final String worker;
    private final Supplier<Instant> testNow;
    private final Supplier<List<String>> types;
    private final String options;
    private final ConcurrentHashMap<String, Kept> verdicts = new ConcurrentHashMap<>();
    private final boolean traced;
    private final ConcurrentHashMap<String, KeptTrace> traces = new ConcurrentHashMap<>();
    private volatile String after = "";

    /**
     * @param db Layover's connections
     * @param worker this worker's name ({@code picked_by})
     * @param clock the engine's clock, or null when it is the database's own
     * @param types the job types this worker runs (the only ones it picks), known once it starts
     * @param options the pick's settings ({@link #options})
     */
    Picker(Db db, String worker, Clock clock, Supplier<List<String>> types, Map<String, Object> options) {
        this(db, worker, clock, types, options, false);
    }

    /**
     * @param traced whether runs are traced: each pick then reads its jobs' trace context and
     *     reschedules ({@link #TRACED}), kept until the run asks ({@link #traced})
     */
    Picker(Db db, String worker, Clock clock, Supplier<List<String>> types, Map<String, Object> options,
            boolean traced) {
        this.traced = traced;
        this.db = db;
        this.worker = worker;
        this.testNow = clock == null ? null : clock::instant;
        this.types = types;
        this.options = JSON.valueToTree(options).toString();
    }

    /**
     * The pick's settings, as {@code layover.pick} reads them.
     *
     * @param deadAfterSeconds how old a picked job's heartbeat may be before its concurrency slot counts as free
     * @param trialTimeoutSeconds how long a breaker's trial claim is held
     * @param lowPriorityShare the share of a fair queue's admissions kept for its lower priorities
     * @param limitKeys whether any job type has limit keys
     * @param priority whether jobs without a key run highest priority first
     * @param deferralSeconds each job type's maxDeferral, in seconds
     * @return the settings
     */
    static Map<String, Object> options(double deadAfterSeconds, double trialTimeoutSeconds, double lowPriorityShare,
            boolean limitKeys, boolean priority, Map<String, Double> deferralSeconds) {
        return options(deadAfterSeconds, trialTimeoutSeconds, lowPriorityShare, limitKeys, priority, deferralSeconds,
                dev.layover.core.provider.state.InteractiveSettings.defaults());
    }

    /**
     * The pick's options with the share of each key left for interactive calls while they arrive
     * ({@code interactive_share}, {@code interactive_window_s}: {@code layover.interactive_reserve}).
     */
    static Map<String, Object> options(double deadAfterSeconds, double trialTimeoutSeconds, double lowPriorityShare,
            boolean limitKeys, boolean priority, Map<String, Double> deferralSeconds,
            dev.layover.core.provider.state.InteractiveSettings interactive) {
        Map<String, Object> o = new HashMap<>();
        o.put("interactive_share", interactive.share());
        o.put("interactive_window_s", interactive.windowSeconds());
        o.put("dead_after_s", deadAfterSeconds);
        o.put("trial_timeout_s", trialTimeoutSeconds);
        o.put("low_priority_share", lowPriorityShare);
        o.put("limit_keys", limitKeys);
        o.put("priority", priority);
        o.put("deferral_s", deferralSeconds);
        return o;
    }

    /**
     * Picks up to {@code limit} jobs.
     *
     * @param limit how many at most
     * @param withPriority whether db-scheduler orders by priority (then each execution carries it)
     * @return the picked jobs, as db-scheduler runs them
     * @throws dev.layover.core.LayoverException when the statement fails (db-scheduler logs it and polls
     *     again; the failure reaches the outage detection)
     */
    List<Execution> pick(int limit, boolean withPriority) {
        if (limit <= 0) {
            return List.of();
        }
        List<Execution> out = new ArrayList<>();
        long t = System.nanoTime();
        db.autocommit("picking due jobs", c -> {
            Array typeArray = c.createArrayOf("text", types.get().toArray());
            Map<String, Object> p = new HashMap<>();
            p.put("worker", worker);
            p.put("now", testNow == null ? null : Timestamp.from(testNow.get()));
            p.put("limit", limit);
            p.put("types", typeArray);
            p.put("after", after);
            p.put("options", options);
            String lastKey = null;
            long lastTurn = -1;
            try (PreparedStatement ps = PICK.prepare(c, p); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if ("turn".equals(rs.getString("verdict"))) { // no job: where the next pick's turn starts
                        lastTurn = Long.MAX_VALUE;
                        lastKey = rs.getString("provider_key");
                        continue;
                    }
                    String name = rs.getString("task_name");
                    String id = rs.getString("task_instance");
                    byte[] data = rs.getBytes("task_data");
                    int priority = withPriority ? rs.getInt("priority") : 0;
                    long version = rs.getLong("version");
                    out.add(new Execution(instant(rs, "execution_time"),
                            new TaskInstance<>(name, id, () -> data, priority), rs.getBoolean("picked"),
                            rs.getString("picked_by"), instant(rs, "last_success"), instant(rs, "last_failure"),
                            rs.getInt("consecutive_failures"), instant(rs, "last_heartbeat"), version));
                    Verdict v = verdict(rs);
                    if (v != Verdict.RUN) {
                        verdicts.put(id(name, id), new Kept(version, v, t));
                    }
                    long turn = rs.getLong("turn");
                    if (!rs.wasNull() && turn > lastTurn) {
                        lastTurn = turn;
                        lastKey = rs.getString("provider_key");
                    }
                }
            }
            if (lastKey != null) {
                after = lastKey; // the next pick starts with the keys after the last one this pick served or walked
            }
            if (traced && !out.isEmpty()) {
                readTraces(c, out, t);
            }
            return null;
        });
        if (verdicts.size() > 10_000) {
            verdicts.values().removeIf(k -> t - k.at() > FORGET_AFTER_NANOS);
        }
        if (traces.size() > 10_000) {
            traces.values().removeIf(k -> t - k.at() > FORGET_AFTER_NANOS);
        }
        return out;
    }

    private void readTraces(java.sql.Connection c, List<Execution> picked, long at) throws SQLException {
        String[] names = new String[picked.size()];
        String[] ids = new String[picked.size()];
        Map<String, Long> versions = new HashMap<>();
        for (int i = 0; i < names.length; i++) {
            Execution e = picked.get(i);
            names[i] = e.taskInstance.getTaskName();
            ids[i] = e.taskInstance.getId();
            versions.put(id(names[i], ids[i]), e.version);
        }
        try (PreparedStatement ps = c.prepareStatement(TRACED)) {
            ps.setArray(1, c.createArrayOf("text", names));
            ps.setArray(2, c.createArrayOf("text", ids));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String key = id(rs.getString(1), rs.getString(2));
                    traces.put(key, new KeptTrace(versions.get(key), new Traced(rs.getString(3), rs.getInt(4)), at));
                }
            }
        }
    }

    /**
     * What a traced run needs of its row, once ({@link Traced#UNKNOWN} without tracing, or when the
     * pick did not read it).
     *
     * @param taskName the job type
     * @param id the job id
     * @param version the version the job was picked at
     * @return its trace context and reschedules
     */
    Traced traced(String taskName, String id, long version) {
        if (!traced) {
            return Traced.UNKNOWN;
        }
        KeptTrace k = traces.remove(id(taskName, id));
        return k != null && k.version() == version ? k.traced() : Traced.UNKNOWN;
    }

    private static Verdict verdict(ResultSet rs) throws SQLException {
        String kind = rs.getString("verdict");
        String token = rs.getString("trial_token");
        double[] reserved = doubles(rs.getArray("reserved"));
        if ("run".equals(kind) && token == null && reserved == null) {
            return Verdict.RUN;
        }
        return new Verdict(rs.getString("provider_key"), kind, token, reserved, doubles(rs.getArray("rates")),
                rs.getString("detail"));
    }

    /**
     * The pick's verdict on a job, once: a job picked admitted without anything to carry has none
     * kept ({@link Verdict#RUN}).
     *
     * @param taskName the job type
     * @param id the job id
     * @param version the version the job was picked at
     * @return the verdict
     */
    Verdict verdict(String taskName, String id, long version) {
        Kept k = verdicts.remove(id(taskName, id));
        return k != null && k.version() == version ? k.verdict() : Verdict.RUN;
    }

    private static String id(String taskName, String id) {
        return taskName + '\u0000' + id;
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }

    private static double[] doubles(Array a) throws SQLException {
        if (a == null) {
            return null;
        }
        Object[] o = (Object[]) a.getArray();
        double[] d = new double[o.length];
        for (int i = 0; i < o.length; i++) {
            d[i] = o[i] == null ? 0 : ((Number) o[i]).doubleValue();
        }
        return d;
    }
}
