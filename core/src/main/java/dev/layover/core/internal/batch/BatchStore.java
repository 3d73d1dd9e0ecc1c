package dev.layover.core.internal.batch;

import dev.layover.core.batch.BatchResultLine;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.spi.Db;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The owner of {@code layover.batches} and {@code layover.batch_items}: every read and write of
 * them, one statement each ({@link BatchSql}), and the calls of the {@code batch_*} functions that gather jobs
 * into batches and make them due again.
 */
public final class BatchStore {

    private final Db db;

    /** @param db the database */
    public BatchStore(Db db) {
        this.db = db;
    }

    /**
     * What a picked batchable job's row says of its batch.
     *
     * @param item its batch item, or null
     * @param deadline its deadline, or null
     * @param enqueuedAt its first enqueue
     * @param now database time
     * @param itemState gathered | result | returned, or null
     * @param kind the stored line's kind (succeeded | errored | expired | cancelled), or null
     * @param status the stored line's status
     * @param result the stored line's body, or null
     * @param inputTokens the line's input tokens
     * @param outputTokens the line's output tokens
     * @param latest the item's latest useful finish, or null
     * @param batchId its batch, or null
     * @param batchState its batch's state, or null
     */
    public record PickState(Long item, Instant deadline, Instant enqueuedAt, Instant now, String itemState, String kind,
            int status, String result, long inputTokens, long outputTokens, Instant latest, Long batchId,
            String batchState) {

        /** @return whether the job has an item that still stands (gathered, or with a stored line) */
        public boolean inBatch() {
            return item != null && ("gathered".equals(itemState) || "result".equals(itemState));
        }
    }

    /** @return the job's batch state, or null when its row is gone */
    public PickState pickState(String taskName, String id) {
        return db.autocommit("reading the batch state of job " + taskName + "/" + id, c -> {
            try (PreparedStatement ps = c.prepareStatement(BatchSql.PICK_STATE)) {
                Db.bind(ps, taskName, id);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return null;
                    }
                    long item = rs.getLong("batch_item");
                    Long itemOrNull = rs.wasNull() ? null : item;
                    long batch = rs.getLong("batch_id");
                    Long batchOrNull = rs.wasNull() ? null : batch;
                    return new PickState(itemOrNull, instant(rs, "deadline"), instant(rs, "first_enqueued_at"),
                            instant(rs, "db_now"), rs.getString("state"), rs.getString("result_kind"),
                            rs.getInt("result_status"), rs.getString("result"), rs.getLong("input_tokens"),
                            rs.getLong("output_tokens"), instant(rs, "latest"), batchOrNull, rs.getString("batch_state"));
                }
            }
        });
    }

    /**
     * A due job a gather may take along, locked until the gather commits.
     *
     * @param id the job id
     * @param version its version
     * @param data its stored args
     * @param deadline its deadline, or null
     * @param enqueuedAt its first enqueue
     */
    public record Candidate(String id, long version, byte[] data, Instant deadline, Instant enqueuedAt) {}

    /**
     * One job to gather.
     *
     * @param id the job id
     * @param version the version it must still have
     * @param request its request body, JSON text
     * @param latest its latest useful finish
     * @param waitUntil its run time while it waits for its line
     */
    public record Line(String id, long version, String request, Instant latest, Instant waitUntil) {}

    /**
     * What a gather takes along: the type's due backlog of the key, up to a limit.
     *
     * @param limit how many more jobs at most (0: none)
     * @param needSeconds how far a job's latest useful finish must be
     * @param toleranceSeconds the type's tolerance, or null
     * @param lines turns the locked candidates into lines (skipping those it cannot make a request of)
     */
    public record Backlog(int limit, double needSeconds, Double toleranceSeconds,
            Function<List<Candidate>, List<Line>> lines) {}

    /**
     * Gathers a picked job, and the backlog it takes along, into its key's open batch, in one
     * transaction ({@code layover.batch_gather}).
     *
     * @return the ids gathered (the picked job first, when its version still stood)
     */
    public List<String> gather(String taskName, String key, BatchSettings s, Line first, Backlog backlog) {
        return db.transaction("gathering job " + taskName + "/" + first.id() + " into a batch", c -> {
            List<Line> lines = new ArrayList<>();
            lines.add(first);
            if (backlog.limit() > 0) {
                lines.addAll(backlog.lines().apply(candidates(c, taskName, key, first.id(), backlog)));
            }
            int n = lines.size();
            String[] ids = new String[n];
            Long[] versions = new Long[n];
            String[] requests = new String[n];
            Timestamp[] latest = new Timestamp[n];
            Timestamp[] wait = new Timestamp[n];
            for (int i = 0; i < n; i++) {
                Line l = lines.get(i);
                ids[i] = l.id();
                versions[i] = l.version();
                requests[i] = l.request();
                latest[i] = l.latest() == null ? null : Timestamp.from(l.latest());
                wait[i] = Timestamp.from(l.waitUntil());
            }
            List<String> gathered = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(BatchSql.GATHER)) {
                Db.bind(ps, taskName, c.createArrayOf("text", ids), c.createArrayOf("bigint", versions),
                        c.createArrayOf("text", requests), c.createArrayOf("timestamptz", latest),
                        c.createArrayOf("timestamptz", wait), key, s.transport().name(), s.maxRequests(), s.maxBytes(),
                        s.discount());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        gathered.add(rs.getString(1));
                    }
                }
            }
            return gathered;
        });
    }

    private static List<Candidate> candidates(Connection c, String taskName, String key, String firstId, Backlog b)
            throws SQLException {
        List<Candidate> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(BatchSql.BACKLOG)) {
            Db.bind(ps, taskName, key, firstId, b.needSeconds(), b.toleranceSeconds(), b.toleranceSeconds(),
                    b.needSeconds(), b.limit());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Candidate(rs.getString(1), rs.getLong(2), rs.getBytes(3), instant(rs, "deadline"),
                            instant(rs, "first_enqueued_at")));
                }
            }
        }
        return out;
    }

    /** @return whether the item left its batch (not submitted yet); false: it must wait for its line */
    public boolean leave(long item) {
        return db.autocommit("taking batch item " + item + " out of its batch", c -> {
            try (PreparedStatement ps = c.prepareStatement(BatchSql.LEAVE)) {
                Db.bind(ps, item);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() && rs.getBoolean(1);
                }
            }
        });
    }

    /** An open batch and its age (database time). */
    record Open(long id, String key, double ageSeconds) {}

    List<Open> open() {
        return db.autocommit("reading open batches", c -> {
            List<Open> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(BatchSql.OPEN); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Open(rs.getLong(1), rs.getString(2), rs.getDouble(3)));
                }
            }
            return out;
        });
    }

    boolean seal(long id) {
        return update("sealing batch " + id, BatchSql.SEAL, id) > 0;
    }

    /** A batch the loop may act on. */
    record Live(long id, String key, String state, int lines, String providerId, int submitAttempts,
            Instant submitStartedAt, Instant earliestDeadline, Instant cancelAskedAt, Instant now) {}

    List<Live> live() {
        return db.autocommit("reading live batches", c -> {
            List<Live> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(BatchSql.LIVE); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Live(rs.getLong("id"), rs.getString("provider_key"), rs.getString("state"),
                            rs.getInt("lines"), rs.getString("provider_batch_id"), rs.getInt("submit_attempts"),
                            instant(rs, "submit_started_at"), instant(rs, "earliest_deadline"),
                            instant(rs, "cancel_asked_at"), instant(rs, "db_now")));
                }
            }
            return out;
        });
    }

    /** A claimed submit: the attempt's number and when the first began. */
    record Claim(int attempt, Instant firstStartedAt) {}

    Claim claimSubmit(long id, String owner, double leaseSeconds) {
        return db.autocommit("claiming batch " + id + " to submit", c -> {
            try (PreparedStatement ps = c.prepareStatement(BatchSql.CLAIM_SUBMIT)) {
                Db.bind(ps, owner, leaseSeconds, id);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? new Claim(rs.getInt(1), instant(rs, "submit_started_at")) : null;
                }
            }
        });
    }

    /** The lines of a batch being submitted, in order. */
    List<dev.layover.core.batch.BatchLine> lines(long id) {
        return db.autocommit("reading the lines of batch " + id, c -> {
            List<dev.layover.core.batch.BatchLine> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(BatchSql.LINES)) {
                Db.bind(ps, id);
                ps.setFetchSize(1000);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new dev.layover.core.batch.BatchLine(rs.getString(1), rs.getString(2)));
                    }
                }
            }
            return out;
        });
    }

    boolean submitted(long id, String owner, String providerId, double pollSeconds) {
        return update("recording the submit of batch " + id, BatchSql.SUBMITTED, providerId, pollSeconds, id, owner) > 0;
    }

    void submitFailed(long id, String owner, String error, double pauseSeconds) {
        update("recording a failed submit of batch " + id, BatchSql.SUBMIT_FAILED, cut(error), pauseSeconds, id, owner);
    }

    boolean claimPoll(long id, String owner, double leaseSeconds) {
        return update("claiming batch " + id + " to poll", BatchSql.CLAIM_POLL, owner, leaseSeconds, id) > 0;
    }

    void polled(long id, String owner, double nextSeconds, String error, boolean cancelAsked) {
        update("recording a poll of batch " + id, BatchSql.POLLED, nextSeconds, cut(error), cancelAsked, id, owner);
    }

    /** Stores a chunk of result lines ({@code layover.batch_collect}); returns how many were new. */
    int collect(long id, List<BatchResultLine> lines) {
        if (lines.isEmpty()) {
            return 0;
        }
        return db.autocommit("storing " + lines.size() + " result lines of batch " + id, c -> {
            int n = lines.size();
            String[] ids = new String[n];
            String[] kinds = new String[n];
            Integer[] statuses = new Integer[n];
            String[] bodies = new String[n];
            Long[] in = new Long[n];
            Long[] out = new Long[n];
            for (int i = 0; i < n; i++) {
                BatchResultLine l = lines.get(i);
                ids[i] = l.customId();
                kinds[i] = l.kind().name().toLowerCase(java.util.Locale.ROOT);
                statuses[i] = l.status();
                bodies[i] = clean(l.body());
                in[i] = l.inputTokens();
                out[i] = l.outputTokens();
            }
            try (PreparedStatement ps = c.prepareStatement(BatchSql.COLLECT)) {
                Array a1 = c.createArrayOf("text", ids);
                Db.bind(ps, id, a1, c.createArrayOf("text", kinds), c.createArrayOf("int", statuses),
                        c.createArrayOf("text", bodies), c.createArrayOf("bigint", in), c.createArrayOf("bigint", out));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getInt(1) : 0;
                }
            }
        });
    }

    /** Ends a batch ({@code layover.batch_finish}); returns how many items went back to the queue. */
    int finish(long id, String state, String error) {
        return db.autocommit("ending batch " + id, c -> {
            try (PreparedStatement ps = c.prepareStatement(BatchSql.FINISH)) {
                Db.bind(ps, id, state, cut(error));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getInt(1) : 0;
                }
            }
        });
    }

    /** Makes due the jobs of recently finished batches that still wait ({@code layover.batch_wake}). */
    int wake() {
        return db.autocommit("waking the jobs of finished batches", c -> {
            try (PreparedStatement ps = c.prepareStatement(BatchSql.WAKE); ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        });
    }

    private int update(String what, String sql, Object... params) {
        return db.autocommit(what, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                Db.bind(ps, params);
                return ps.executeUpdate();
            }
        });
    }

    /** A provider's body as Postgres text keeps it: without NUL characters. */
    private static String clean(String s) {
        return s == null ? null : s.indexOf('\0') < 0 ? s : s.replace("\0", "\\u0000");
    }

    private static String cut(String s) {
        return s == null ? null : clean(s.length() <= 2000 ? s : s.substring(0, 2000));
    }

    private static Instant instant(ResultSet rs, String col) throws SQLException {
        Timestamp t = rs.getTimestamp(col);
        return t == null ? null : t.toInstant();
    }
}
