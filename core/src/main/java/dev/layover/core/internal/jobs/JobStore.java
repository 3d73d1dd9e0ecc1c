package dev.layover.core.internal.jobs;

import static dev.layover.core.internal.time.Durations.seconds;

import dev.layover.core.internal.db.NamedSql;
import dev.layover.core.spi.Db;
import dev.layover.core.spi.JobWrites;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.postgresql.PGStatement;

/**
 * The owner of the job table ({@code layover.scheduled_tasks}): every write Layover makes to it is
 * one method here, running one statement of {@link JobSql} (db-scheduler's own picks, heartbeats
 * and revivals aside). Each method says which rows it may touch; every write of a picked job is
 * version-checked, so a row that changed meanwhile is left alone and the method reports it.
 */
public final class JobStore implements JobWrites {

    /** The job table, as db-scheduler is told to name it. */
    public static final String TABLE = JobSql.TABLE;

    private static final NamedSql INSERT = NamedSql.load("job_insert");
    private static final NamedSql INSERT_BATCH = NamedSql.load("job_insert_batch");
    private static final NamedSql PARK = NamedSql.load("job_park");
    private static final NamedSql DONE = NamedSql.load("job_done");
    private static final NamedSql DONE_HISTORY = NamedSql.load("job_done_history");

    private final Db db;
    /** A test clock's time for the group settle's run times, or null for the database's clock. */
    private final java.util.function.Supplier<Instant> testNow;

    /**
     * @param db the database
     */
    public JobStore(Db db) {
        this(db, null);
    }

    /**
     * @param db the database
     * @param testClock an injected test clock, whose time the settle of a group uses
     *     ({@code layover.group_settle}'s {@code p_now}, as the pick takes it); null for the
     *     database's clock
     */
    public JobStore(Db db, java.time.Clock testClock) {
        this.db = db;
        this.testNow = testClock == null ? null : testClock::instant;
    }

    /** @return a test clock's time now, or null when the database's clock decides (production) */
    Instant testNow() {
        return testNow == null ? null : testNow.get();
    }

    /** @return the database this store writes */
    public Db db() {
        return db;
    }

    // ---- enqueue ------------------------------------------------------------------------------

    /**
     * A job to insert, with every column a fresh job gets.
     *
     * @param type the job type
     * @param id the job id (an idempotency key or a random id)
     * @param data the args as JSON bytes
     * @param runAt when it is due
     * @param priority its priority
     * @param providerKey its provider key, or null
     * @param deadline its deadline, or null
     * @param limitKeys its limit keys, or null
     * @param argsShape the fingerprint of its args type's shape ({@code ArgsCodec#shape})
     * @param fairnessKey its fairness key, or null
     * @param tokenEstimate its stored token estimate, or null
     * @param tag whether it gets a tag in its key's fair queue (a fairness key, and due at enqueue)
     * @param traceContext the enqueue's W3C trace context, a jsonb object, or null
     */
    public record NewJob(String type, String id, byte[] data, Instant runAt, int priority, String providerKey,
            Instant deadline, String[] limitKeys, String argsShape, String fairnessKey, Double[] tokenEstimate,
            boolean tag, String traceContext) {}

    /**
     * Inserts one job ({@code job_insert.sql}; with {@code keyed}, nothing is written when the id
     * names a live job or a dead letter still parked or in review).
     *
     * @param caller the caller's connection (its transaction decides), or null for an autocommitted
     *     insert on Layover's pool
     * @return rows inserted, 0 or 1
     */
    public int insert(Connection caller, NewJob j, boolean keyed) {
        return run(caller, "enqueueing a " + j.type() + " job", c -> {
            Map<String, Object> p = new HashMap<>();
            p.put("type", j.type());
            p.put("id", j.id());
            p.put("data", j.data());
            p.put("run_at", Timestamp.from(j.runAt()));
            p.put("priority", j.priority());
            p.put("provider_key", j.providerKey());
            p.put("deadline", j.deadline() == null ? null : Timestamp.from(j.deadline()));
            p.put("limit_keys", j.limitKeys() == null ? null : c.createArrayOf("text", j.limitKeys()));
            p.put("args_shape", j.argsShape());
            p.put("fairness_key", j.fairnessKey());
            p.put("token_estimate", j.tokenEstimate() == null ? null : c.createArrayOf("float8", j.tokenEstimate()));
            p.put("tag", j.tag());
            p.put("keyed", keyed);
            p.put("trace_context", j.traceContext());
            try (PreparedStatement ps = INSERT.prepare(c, p)) {
                return ps.executeUpdate();
            }
        });
    }

    /**
     * Keeps the driver from preparing the statement on the server, so that PostgreSQL plans each
     * execution with its parameters. A statement over parameter arrays planned once for any
     * parameters (the driver prepares a statement on its 5th execution, the server plans it
     * generically on the 6th after that) reads each {@code unnest} as 10 rows and joins by nested
     * loops: the 10th {@code enqueueBatch} of 5,000 jobs on a connection ran for minutes, spilling
     * to disk (seen in {@code BacklogBench}), where a plan for 5,000 rows joins by hashing. Planning
     * each time costs little beside the insert it plans. A connection that is not the PostgreSQL
     * driver's is left as it is.
     */
    private static void planEachTime(PreparedStatement ps) throws SQLException {
        if (ps.isWrapperFor(PGStatement.class)) {
            ps.unwrap(PGStatement.class).setPrepareThreshold(0);
        }
    }

    /**
     * Inserts many jobs of one type in one statement ({@link JobSql#INSERT_BATCH}); ids that name a
     * live job or an unresolved dead letter are skipped.
     *
     * @param caller the caller's connection, or null
     * @param type the job type
     * @param ids the ids
     * @param data the args
     * @param runAts run times, ISO-8601 text
     * @param priorities priorities
     * @param providerKeys provider keys (null elements: none)
     * @param deadlines deadlines, ISO-8601 text or null
     * @param limitKeys limit keys, each a text[] literal or null
     * @param argsShape the fingerprint of the args type's shape
     * @param fairnessKeys fairness keys (null elements: none)
     * @param tokenEstimates token estimates, each a float8[] literal or null
     * @param now the time that decides which jobs are due (and get their fair-queue tags)
     * @param traceContext the enqueue's W3C trace context every job stores, a jsonb object, or null
     * @param groupId the group the jobs join (each inserted job gets its {@code layover.group_members}
     *     row in the same statement), or null
     * @return the ids inserted
     */
    public Set<String> insertBatch(Connection caller, String type, String[] ids, byte[][] data, String[] runAts,
            Integer[] priorities, String[] providerKeys, String[] deadlines, String[] limitKeys, String argsShape,
            String[] fairnessKeys, String[] tokenEstimates, Instant now, String traceContext, String groupId) {
        return run(caller, "enqueueing " + ids.length + " " + type + " jobs", c -> {
            Set<String> created = new HashSet<>();
            Map<String, Object> p = new HashMap<>();
            p.put("ids", c.createArrayOf("text", ids));
            p.put("data", c.createArrayOf("bytea", data));
            p.put("run_ats", c.createArrayOf("text", runAts));
            p.put("priorities", c.createArrayOf("int4", priorities));
            p.put("provider_keys", c.createArrayOf("text", providerKeys));
            p.put("deadlines", c.createArrayOf("text", deadlines));
            p.put("limit_keys", c.createArrayOf("text", limitKeys));
            p.put("fairness_keys", c.createArrayOf("text", fairnessKeys));
            p.put("token_estimates", c.createArrayOf("text", tokenEstimates));
            p.put("now", Timestamp.from(now));
            p.put("type", type);
            p.put("args_shape", argsShape);
            p.put("trace_context", traceContext);
            p.put("group_id", groupId);
            try (PreparedStatement ps = INSERT_BATCH.prepare(c, p)) {
                planEachTime(ps);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        created.add(rs.getString(1));
                    }
                }
            }
            return created;
        });
    }

    /**
     * A job just inserted on {@code c} waiting says why ({@link JobSql#WAITS}).
     *
     * @param c the connection of the enqueue's transaction
     * @param reason {@code group} or {@code dependencies}
     * @param detail what it waits for, in a sentence
     * @param type the job's type
     * @param id its id
     */
    void waits(Connection c, String reason, String detail, String type, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(JobSql.WAITS)) {
            Db.bind(ps, reason, detail, type, id);
            ps.executeUpdate();
        }
    }

    /** Where a job a dependent names is, at the dependent's enqueue. */
    enum Prerequisite { LIVE, PARKED, COMPLETED, UNKNOWN }

    /**
     * Finds (and for a live job marks, for a parked one locks) a job a dependent is enqueued to run
     * after, in the enqueue's transaction ({@link JobSql#MARK_DEPENDED_ON}, {@link JobSql#PARKED_DEPENDED_ON},
     * {@link JobSql#COMPLETED}).
     */
    Prerequisite prerequisite(Connection c, String type, String id) throws SQLException {
        if (exists(c, JobSql.MARK_DEPENDED_ON, type, id)) {
            return Prerequisite.LIVE;
        }
        if (exists(c, JobSql.PARKED_DEPENDED_ON, type, id)) {
            return Prerequisite.PARKED;
        }
        if (exists(c, JobSql.MARK_DEPENDED_ON, type, id)) { // replayed while the lock above waited
            return Prerequisite.LIVE;
        }
        return exists(c, JobSql.COMPLETED, type, id) ? Prerequisite.COMPLETED : Prerequisite.UNKNOWN;
    }

    private static boolean exists(Connection c, String sql, String type, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            Db.bind(ps, type, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** A dependent's edges ({@link JobSql#INSERT_DEPENDENCIES}), in its enqueue's transaction. */
    void insertDependencies(Connection c, String type, String id, String[] afterTypes, String[] afterIds)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(JobSql.INSERT_DEPENDENCIES)) {
            Db.bind(ps, type, id, c.createArrayOf("text", afterTypes), c.createArrayOf("text", afterIds));
            ps.executeUpdate();
        }
    }

    private static String[] texts(java.sql.Array a) throws SQLException {
        return a == null ? null : (String[]) a.getArray();
    }

    // ---- outcomes of a run --------------------------------------------------------------------

    /**
     * A reschedule ({@link JobSql#RESCHEDULE}): run time moved, {@code reschedules + 1}, attempts
     * untouched, the held bucket permit set, the run's trail appended.
     *
     * @return 1, or 0 when the row changed meanwhile or reached {@code maxReschedules}
     */
    public int reschedule(JobRun run, Instant now, Instant runAt, String reason, String detail, String trail) {
        return db.autocommit("rescheduling job " + run.label(), c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.RESCHEDULE)) {
                Db.bind(ps, Timestamp.from(runAt), reason, detail, Timestamp.from(now), trail, run.batchItem(),
                        run.taskName(), run.id(), run.version(), run.policy().maxReschedules());
                return ps.executeUpdate();
            }
        });
    }

    /**
     * A retry ({@link JobSql#RETRY}): an attempt spent, the error appended, the run's trail appended.
     *
     * @param attempts the attempts spent now (the row's {@code consecutive_failures})
     * @param error the attempt's error, a jsonb object
     * @return 1, or 0 when the row changed meanwhile
     */
    public int retry(JobRun run, Instant now, Instant runAt, int attempts, String error, String trail) {
        return db.autocommit("retrying job " + run.label(), c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.RETRY)) {
                Db.bind(ps, Timestamp.from(runAt), attempts, Timestamp.from(now), error, trail, run.batchItem(),
                        run.taskName(), run.id(), run.version());
                return ps.executeUpdate();
            }
        });
    }

    /**
     * What a park (or a cancel) writes to the dead letter and the history row.
     *
     * @param mayBePicked whether a picked row may be moved (the engine, for the job it runs)
     * @param historyOutcome the history outcome, {@code parked} or {@code cancelled}
     * @param failureType the failure type code
     * @param errorClass the error class
     * @param message the error message, as stored
     * @param error the last attempt's error, a jsonb object
     * @param attempts the attempts to record, or null for the row's own
     * @param trail the run's fallback trail, a jsonb array
     * @param reviewIfSweep whether a sweep replay that ends here goes to review
     * @param history whether to write the history row
     * @param historyArgs whether the history row keeps the args
     */
    public record Park(boolean mayBePicked, String historyOutcome, String failureType, String errorClass,
            String message, String error, Integer attempts, String trail, boolean reviewIfSweep, boolean history,
            boolean historyArgs) {}

    /** A job moved to its dead letter: the dead letter's id and the job's provider key. */
    public record Parked(long deadLetter, String providerKey) {}

    /** What {@link #park} found when the move did not happen. */
    public enum NotParked {
        /** The row changed meanwhile (or is picked and may not be moved): nothing written. */
        CHANGED,
        /** The row was there but no dead letter could be written: rolled back, the job left in place. */
        NO_DEAD_LETTER
    }

    /**
     * The one move of a job to its dead letter ({@code job_park.sql}), in one transaction: the row
     * deleted (version-checked), the dead letter written or updated, the history row written.
     * Committed only when both the row and the dead letter are there; else rolled back.
     *
     * @param timing the run's timing for the history row
     * @param notParked told why when nothing was moved (may be null)
     * @return the dead letter, or null when nothing was moved
     */
    public Parked park(JobRun run, RunTiming timing, Park p, java.util.function.Consumer<NotParked> notParked) {
        RunTiming t = timing == null ? RunTiming.NONE : timing;
        return db.transaction("parking job " + run.label(), c -> {
            Map<String, Object> v = new HashMap<>();
            v.put("input_tokens", run.tokens().input());
            v.put("output_tokens", run.tokens().output());
            v.put("cached_input_tokens", run.tokens().cached());
            v.put("estimated_tokens", run.tokens().estimated());
            v.put("job_type", run.taskName());
            v.put("job_id", run.id());
            v.put("version", run.version());
            v.put("may_be_picked", p.mayBePicked());
            v.put("review_if_sweep", p.reviewIfSweep());
            v.put("failure_type", p.failureType());
            v.put("error_class", p.errorClass());
            v.put("message", p.message());
            v.put("error", p.error());
            v.put("attempts", p.attempts());
            v.put("trail", p.trail());
            v.put("history_outcome", p.historyOutcome());
            v.put("started_at", t.startedAtText());
            v.put("duration_ms", t.durationMs());
            v.put("keep_args", p.historyArgs());
            v.put("history", p.history());
            try (PreparedStatement ps = PARK.prepare(c, v)) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    long moved = rs.getLong("moved");
                    long id = rs.getLong("dead_letter_id");
                    boolean hasId = !rs.wasNull();
                    if (moved == 1 && hasId) {
                        return new Parked(id, rs.getString("provider_key"));
                    }
                    if (notParked != null) {
                        notParked.accept(moved == 1 ? NotParked.NO_DEAD_LETTER : NotParked.CHANGED);
                    }
                    throw Db.Rollback.now();
                }
            }
        });
    }

    /**
     * A finished job: its key and version, and for its history row the start of its run, its
     * handler's duration in ms, its last run's fallback trail, what it returned as JSON and the
     * tokens its call reported and reserved (each null when unknown or none).
     */
    public record Done(String name, String id, long version, String startedAt, Double durationMs, String trail,
            String result, RunTokens tokens) {

        /** A null {@code tokens} is {@link RunTokens#NONE}. */
        public Done {
            tokens = tokens == null ? RunTokens.NONE : tokens;
        }

        /**
         * A finished job without token counts.
         *
         * @param name the job type
         * @param id the job id
         * @param version the row version
         * @param startedAt the run's start (ISO-8601), or null
         * @param durationMs the handler's duration, or null
         * @param trail the last run's fallback trail, or null
         * @param result what it returned as JSON, or null
         */
        public Done(String name, String id, long version, String startedAt, Double durationMs, String trail,
                String result) {
            this(name, id, version, startedAt, durationMs, trail, result, RunTokens.NONE);
        }
    }

    /**
     * Deletes finished jobs in one statement ({@code job_done.sql}, or {@code job_done_history.sql}
     * which also writes their history rows); a row whose
     * version moved on is left alone.
     *
     * @return rows deleted
     */
    public int deleteDone(List<Done> batch, boolean history, boolean historyArgs) {
        int n = batch.size();
        String[] names = new String[n];
        String[] ids = new String[n];
        Long[] versions = new Long[n];
        String[] starts = new String[n];
        Double[] durations = new Double[n];
        String[] trails = new String[n];
        String[] results = new String[n];
        Long[] inputs = new Long[n];
        Long[] outputs = new Long[n];
        Long[] cached = new Long[n];
        Long[] estimated = new Long[n];
        for (int i = 0; i < n; i++) {
            Done d = batch.get(i);
            names[i] = d.name();
            ids[i] = d.id();
            versions[i] = d.version();
            starts[i] = d.startedAt();
            durations[i] = d.durationMs();
            trails[i] = d.trail();
            results[i] = d.result();
            inputs[i] = d.tokens().input();
            outputs[i] = d.tokens().output();
            cached[i] = d.tokens().cached();
            estimated[i] = d.tokens().estimated();
        }
        // one transaction: the members' ends (written by the delete) and their groups' settle, so the
        // callback of a group is made due with its last member's end or not at all (decision 0005)
        return db.transaction("deleting finished jobs", c -> {
            int deleted;
            String[] groups;
            String[] dependedTypes;
            String[] dependedIds;
            Map<String, Object> v = new HashMap<>();
            v.put("names", c.createArrayOf("text", names));
            v.put("ids", c.createArrayOf("text", ids));
            v.put("versions", c.createArrayOf("bigint", versions));
            v.put("results", c.createArrayOf("text", results));
            if (history) {
                v.put("started_at", c.createArrayOf("text", starts));
                v.put("duration_ms", c.createArrayOf("float8", durations));
                v.put("trails", c.createArrayOf("text", trails));
                v.put("input_tokens", c.createArrayOf("bigint", inputs));
                v.put("output_tokens", c.createArrayOf("bigint", outputs));
                v.put("cached_input_tokens", c.createArrayOf("bigint", cached));
                v.put("estimated_tokens", c.createArrayOf("bigint", estimated));
                v.put("keep_args", historyArgs);
            }
            try (PreparedStatement ps = (history ? DONE_HISTORY : DONE).prepare(c, v)) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    deleted = rs.getInt(1);
                    groups = texts(rs.getArray(2));
                    dependedTypes = texts(rs.getArray(3));
                    dependedIds = texts(rs.getArray(4));
                }
            }
            if (groups != null && groups.length > 0) {
                GroupStore.settle(c, groups, testNow());
            }
            if (dependedTypes != null && dependedTypes.length > 0) {
                try (PreparedStatement ps = c.prepareStatement(JobSql.DEPENDENCIES_COMPLETED)) {
                    Db.bind(ps, c.createArrayOf("text", dependedTypes), c.createArrayOf("text", dependedIds));
                    ps.execute();
                }
            }
            return deleted;
        });
    }

    /**
     * A durable sleep ({@link JobSql#SLEEP}): the job waits until {@code wakeAt}, no attempt, no
     * reschedule counted.
     *
     * @param run the job's run
     * @param wakeAt its wake time (database time, stored with its sleep step)
     * @param now the time of the write
     * @param detail what it waits for, in a sentence
     * @param trail the run's fallback trail (jsonb text)
     * @param signal the name of the signal step it waits for ({@link JobSql#AWAIT_SIGNAL}), or null for a sleep
     * @return 1, or 0 when the row changed meanwhile
     */
    public int sleep(JobRun run, Instant wakeAt, Instant now, String detail, String trail, String signal) {
        return db.autocommit("writing the sleep of job " + run.label(), c -> {
            if (signal != null) {
                try (PreparedStatement ps = c.prepareStatement(JobSql.AWAIT_SIGNAL)) {
                    Db.bind(ps, Timestamp.from(wakeAt), signal, Timestamp.from(now), detail, trail, run.taskName(),
                            run.id(), run.version());
                    return ps.executeUpdate();
                }
            }
            try (PreparedStatement ps = c.prepareStatement(JobSql.SLEEP)) {
                Db.bind(ps, Timestamp.from(wakeAt), Timestamp.from(now), detail, trail, run.taskName(), run.id(),
                        run.version());
                return ps.executeUpdate();
            }
        });
    }

    /**
     * A signal to a job waiting for it ({@code layover.signal}).
     *
     * @param type the job's type
     * @param id its id
     * @param name the signal's name
     * @param payload the payload as JSON, or null
     * @return true when a wait took it, false when none was open (nothing written)
     */
    public boolean signal(String type, String id, String name, String payload) {
        return db.autocommit("signalling job " + type + "/" + id, c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.SIGNAL)) {
                Db.bind(ps, type, id, name, payload);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getBoolean(1);
                }
            }
        });
    }

    /**
     * A job in a batch waits for its line ({@link JobSql#WAIT_FOR_BATCH}): no attempt, no
     * reschedule counted.
     *
     * @param runAt when it looks again (it is made due sooner when its line is stored)
     * @return 1, or 0 when the row changed meanwhile
     */
    public int waitForBatch(JobRun run, Instant runAt, String detail) {
        return db.autocommit("letting job " + run.label() + " wait for its batch", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.WAIT_FOR_BATCH)) {
                Db.bind(ps, Timestamp.from(runAt), detail, run.taskName(), run.id(), run.version());
                return ps.executeUpdate();
            }
        });
    }

    /**
     * A hold of a job that cannot go on for a reason of its own run, its batch state unreadable
     * ({@link JobSql#HOLD}): run time moved a little (full jitter
     * over {@code base * 2^holds} up to {@code cap}), {@code holds + 1}; no attempt, no reschedule.
     *
     * @return 1, or 0 when the row changed meanwhile
     */
    public int hold(JobRun run, Instant now, Duration cap, Duration base, String reason, String detail) {
        return db.autocommit("holding job " + run.label(), c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.HOLD)) {
                Db.bind(ps, Timestamp.from(now), cap.toNanos() / 1e9, base.toNanos() / 1e9, reason, detail,
                        run.taskName(), run.id(), run.version());
                return ps.executeUpdate();
            }
        });
    }

    /**
     * A job picked while a pause covers it ({@link JobSql#HOLD_PAUSED}).
     *
     * @param keys the job's provider key and limit keys
     * @param limitKeys its limit keys, stored when the row has none yet
     * @return true when held, false when no pause holds it any more (it runs again at once), null
     *     when the row changed meanwhile
     */
    public Boolean holdPaused(JobRun run, List<String> keys, List<String> limitKeys, Instant now, String detail) {
        return db.autocommit("holding paused job " + run.label(), c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.HOLD_PAUSED)) {
                Db.bind(ps, run.taskName(), c.createArrayOf("text", keys.toArray()), Timestamp.from(now),
                        Timestamp.from(now), limitKeys.isEmpty() ? null : c.createArrayOf("text", limitKeys.toArray()),
                        detail, run.taskName(), run.id(), run.version());
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getBoolean(1) : null;
                }
            }
        });
    }

    /**
     * Who wrote a job whose args do not read.
     *
     * @param argsShape the shape of the args type that wrote it, or null when unknown
     * @param enqueuedAt when it was first enqueued
     * @param reschedules its reschedules so far
     * @param now the database's time
     */
    public record ArgsOrigin(String argsShape, Instant enqueuedAt, int reschedules, Instant now) {}

    /** @return who wrote the job's args ({@link JobSql#ARGS_ORIGIN}), or null when the row is gone */
    public ArgsOrigin argsOrigin(JobRun run) {
        return db.autocommit("reading job " + run.label(), c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.ARGS_ORIGIN)) {
                Db.bind(ps, run.taskName(), run.id());
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return null;
                    }
                    OffsetDateTime at = rs.getObject("first_enqueued_at", OffsetDateTime.class);
                    return new ArgsOrigin(rs.getString("args_shape"), at == null ? null : at.toInstant(),
                            rs.getInt("reschedules"), rs.getObject("db_now", OffsetDateTime.class).toInstant());
                }
            }
        });
    }

    /** @return the job's {@code reschedules} ({@link JobSql#JOB_EXTRAS}), 0 when the row is gone */
    public int reschedules(JobRun run) {
        return db.autocommit("reading job " + run.label(), c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.JOB_EXTRAS)) {
                Db.bind(ps, run.taskName(), run.id());
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getInt("reschedules") : 0;
                }
            }
        });
    }

    /**
     * A job type as a worker registered it, for {@code layover.job_types}.
     *
     * @param type the job type
     * @param argsShape the fingerprint of its args type's shape
     * @param argsProperties the properties its args type declares; null for any (a Map or JsonNode args type)
     * @param maxArgsBytes the args size cap
     * @param providerKey its fixed provider key, or null
     * @param providerKeyFromArgs whether its provider key is derived from args
     * @param fairnessKeyFromArgs whether it has a fairness key function
     * @param limitKeysFromArgs whether it has a limit keys function
     */
    public record TypeRow(String type, String argsShape, String[] argsProperties, int maxArgsBytes, String providerKey,
            boolean providerKeyFromArgs, boolean fairnessKeyFromArgs, boolean limitKeysFromArgs) {}

    /**
     * Records the job types a worker runs ({@link JobSql#REGISTER_TYPE}, one row each, in one
     * transaction), so that {@code layover.enqueue} knows them.
     *
     * @param types the types
     * @param worker the worker registering them
     */
    public void registerTypes(List<TypeRow> types, String worker) {
        if (types.isEmpty()) {
            return;
        }
        db.transaction("recording the job types this worker runs", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.REGISTER_TYPE)) {
                for (TypeRow t : types) {
                    Db.bind(ps, t.type(), t.argsShape(),
                            t.argsProperties() == null ? null : c.createArrayOf("text", t.argsProperties()), t.maxArgsBytes(),
                            t.providerKey(), t.providerKeyFromArgs(), t.fairnessKeyFromArgs(), t.limitKeysFromArgs(),
                            worker);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            return null;
        });
    }

    /**
     * Records that the database answers again after an outage ({@link JobSql#DATABASE_RETURNED}):
     * until 10 s after it, no worker's db-scheduler takes a held job for dead by its heartbeat.
     */
    public void databaseReturned() {
        db.autocommit("recording the database's return", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.DATABASE_RETURNED)) {
                ps.execute();
                return null;
            }
        });
    }

    /**
     * One heartbeat for every job a worker has picked, running or waiting for a thread
     * ({@link JobSql#HEARTBEAT_PICKED}).
     *
     * @return rows touched
     */
    public int heartbeatPicked(Instant now, String worker) {
        return db.autocommit("writing the bulk heartbeat", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.HEARTBEAT_PICKED)) {
                ps.setTimestamp(1, Timestamp.from(now));
                ps.setString(2, worker);
                return ps.executeUpdate();
            }
        });
    }

    /**
     * A row a worker holds picked.
     *
     * @param taskName the job type
     * @param id the job id
     * @param version its version
     */
    public record Picked(String taskName, String id, long version) {}

    /**
     * @param jobTypes the job types to look at: a plugin's own tasks (the recovery sweep, the
     *     retention) are not jobs and never given back
     * @return the rows of those job types {@code worker} holds picked ({@link JobSql#PICKED_BY})
     */
    public List<Picked> pickedBy(String worker, String[] jobTypes) {
        return db.autocommit("reading the jobs " + worker + " picked", c -> {
            List<Picked> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(JobSql.PICKED_BY)) {
                ps.setString(1, worker);
                ps.setArray(2, c.createArrayOf("text", jobTypes));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new Picked(rs.getString(1), rs.getString(2), rs.getLong(3)));
                    }
                }
            }
            return out;
        });
    }

    /**
     * Whether the worker still holds a job it picked at that version ({@link JobSql#STILL_PICKED}):
     * false once another worker took it back (a dead-worker rescue) or it moved on.
     *
     * @return whether the row is still picked by {@code worker} at {@code version}
     */
    public boolean stillPicked(String taskName, String id, long version, String worker) {
        return db.autocommit("checking job " + taskName + "/" + id + " is still this worker's", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.STILL_PICKED)) {
                Db.bind(ps, taskName, id, version, worker);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next();
                }
            }
        });
    }

    /**
     * Whether the job's previous run also ended with its worker lost ({@link JobSql#LOST_BEFORE}).
     *
     * @return true or false; null when the row is gone or moved past {@code version}
     */
    public Boolean lostBefore(String taskName, String id, long version) {
        return db.autocommit("reading how job " + taskName + "/" + id + " last ended", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.LOST_BEFORE)) {
                Db.bind(ps, taskName, id, version);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getBoolean(1) : null;
                }
            }
        });
    }

    /**
     * Gives back a job the worker picked but did not start ({@link JobSql#GIVE_BACK}).
     *
     * @return 1, or 0 when the row moved on meanwhile
     */
    public int giveBack(String taskName, String id, long version, String worker) {
        return db.autocommit("giving back job " + taskName + "/" + id, c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.GIVE_BACK)) {
                Db.bind(ps, taskName, id, version, worker);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getInt("n");
                }
            }
        });
    }

    // ---- operator control ---------------------------------------------------------------------

    /**
     * A live job as operator control sees it.
     *
     * @param version its row version
     * @param picked whether a worker holds it
     * @param attempts its attempts spent
     */
    public record LiveJob(long version, boolean picked, int attempts) {}

    /** @return the live job of that type and id, or null ({@link JobSql#JOB}) */
    public LiveJob find(String jobType, String jobId) {
        return db.autocommit("reading job " + jobType + "/" + jobId, c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.JOB)) {
                Db.bind(ps, jobType, jobId);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? new LiveJob(rs.getLong(1), rs.getBoolean(2), rs.getInt(3)) : null;
                }
            }
        });
    }

    /**
     * Marks a running job's row as asked to stop and tells the workers ({@link JobSql#REQUEST_CANCEL});
     * the version is not changed, so the run's own outcome write still matches.
     *
     * @return rows marked, 0 or 1
     */
    public long requestCancel(String jobType, String jobId, long version, Instant now, String by, String reason) {
        return db.autocommit("asking job " + jobType + "/" + jobId + " to stop", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.REQUEST_CANCEL)) {
                Db.bind(ps, Timestamp.from(now), by, reason, jobType, jobId, version);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong("n");
                }
            }
        });
    }

    /**
     * Holds the waiting jobs of a job type, or of a key, for a pause
     * ({@link JobSql#HOLD_WAITING_OF_TYPE}, {@link JobSql#HOLD_WAITING_OF_KEY}), in the caller's
     * transaction.
     *
     * @param ofJobType whether {@code target} is a job type (else a provider or limit key)
     * @return jobs held
     */
    public int holdWaiting(Connection c, boolean ofJobType, String target, String detail) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(ofJobType ? JobSql.HOLD_WAITING_OF_TYPE : JobSql.HOLD_WAITING_OF_KEY)) {
            if (ofJobType) {
                Db.bind(ps, detail, target);
            } else {
                Db.bind(ps, detail, target, target);
            }
            return ps.executeUpdate();
        }
    }

    /**
     * Gives every held job that no active pause covers its run time back and wakes the workers
     * ({@link JobSql#RELEASE}), in the caller's transaction.
     *
     * @return jobs released
     */
    public long releaseHeld(Connection c, String detail) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(JobSql.RELEASE)) {
            Db.bind(ps, detail);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong("n");
            }
        }
    }


    // ---- the dead-letter store's writes -------------------------------------------------------

    @Override
    public List<Replayed> insertReplays(Connection c, long[] deadLetterIds, String[] editedArgs, Instant runAt,
            long spreadMs, String replayKind) throws SQLException {
        Long[] ids = new Long[deadLetterIds.length];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = deadLetterIds[i];
        }
        try (PreparedStatement ps = c.prepareStatement(JobSql.INSERT_REPLAYS)) {
            Db.bind(ps, runAt == null ? null : OffsetDateTime.ofInstant(runAt, ZoneOffset.UTC), spreadMs, replayKind,
                    c.createArrayOf("bigint", ids), c.createArrayOf("text", editedArgs));
            List<Replayed> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Replayed(rs.getLong("dead_letter_id"), rs.getString("task_instance"),
                            rs.getObject("execution_time", OffsetDateTime.class).toInstant()));
                }
            }
            return out;
        }
    }

    @Override
    public int nudgeRecurring(String taskName) {
        return db.autocommit("bringing " + taskName + " forward", c -> {
            try (PreparedStatement ps = c.prepareStatement(JobSql.NUDGE_RECURRING)) {
                ps.setString(1, taskName);
                return ps.executeUpdate();
            }
        });
    }

    @Override
    public int scheduleRecurring(Connection c, String taskName, String instance) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(JobSql.SCHEDULE_RECURRING)) {
            ps.setString(1, taskName);
            ps.setString(2, instance);
            return ps.executeUpdate();
        }
    }

    private <T> T run(Connection caller, String what, Db.Work<T> work) {
        if (caller == null) {
            return db.autocommit(what, work);
        }
        try {
            return work.run(caller);
        } catch (SQLException e) {
            throw Db.failure(what, e);
        }
    }
}
