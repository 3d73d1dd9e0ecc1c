package dev.layover.dlq;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.Layover;
import dev.layover.core.LayoverException;
import dev.layover.core.UnknownJobTypeException;
import dev.layover.core.spi.Db;
import dev.layover.core.spi.JobWrites;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The dead-letter store: find, count and read dead letters; replay, discard and move them back;
 * every change recorded in the {@link AuditLog}.
 *
 * <pre>{@code
 * DeadLetters deadLetters = DeadLetters.create(layover);
 * DeadLetterPage page = deadLetters.find(DeadLetterFilter.all().withStates(DeadLetterState.PARKED), 50);
 * Replayed r = deadLetters.replay(page.items().get(0).id(), ReplayOptions.by("alice").note("provider is back"));
 * BulkResult all = deadLetters.replay(Selection.matching(filter), ReplayOptions.by("alice")
 *         .onProgress(p -> System.out.println(p.changed() + " / " + p.expected())));
 * }</pre>
 *
 * <p>What it does to the database:
 * <ul>
 *   <li>Reads are single statements on {@code layover.dead_letters}, autocommitted.
 *   <li>A replay, in one transaction per dead letter (one) or per batch (bulk): locks the dead
 *       letters still {@code parked} (or {@code review}, manual replays) with {@code FOR UPDATE},
 *       inserts one job per dead letter into {@code layover.scheduled_tasks} with the dead letter's
 *       job id, args, provider key and priority, {@code dead_letter_id} and {@code replay_kind}
 *       set, and marks {@code replayed} exactly the dead letters whose job was inserted (appending to
 *       {@code replays}, counting {@code replay_count}). Concurrent replays of one dead letter create
 *       exactly one job: the others wait for the lock, then find it {@code replayed}. Where a live
 *       job with the same type and id exists nothing is inserted and the dead letter is unchanged.
 *   <li>Discard and move back are conditional {@code UPDATE}s of {@code state}.
 *   <li>Every action writes one {@code layover.audit_log} row (a bulk one when it starts, its count
 *       updated in each batch's transaction).
 * </ul>
 *
 * <p>The Layover instance decides which job types can be replayed: a dead letter whose type is
 * not registered there is marked ({@code jobTypeRegistered = false}), stays parked, and its replay is
 * refused. Thread-safe.
 */
public final class DeadLetters {

    /** Largest page size of {@link #find}. */
    public static final int MAX_PAGE = 1000;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> MANUAL_STATES = List.of("parked", "review");
    private static final List<String> AUTO_STATES = List.of("parked");

    private final Layover layover;
    private final Db db;
    private final JobWrites jobs;
    private final AuditLog auditLog;

    private DeadLetters(Layover layover) {
        this.layover = Objects.requireNonNull(layover, "layover");
        this.db = new Db(layover.dataSource());
        this.jobs = JobWrites.on(layover.dataSource());
        this.auditLog = AuditLog.create(layover.dataSource());
    }

    /**
     * The store on a Layover instance's database. The instance need not be started (an enqueue-only
     * client is enough); its registered job types decide what can be replayed, and edited args are
     * validated with it.
     *
     * @param layover the Layover instance
     * @return the store
     */
    public static DeadLetters create(Layover layover) {
        return new DeadLetters(layover);
    }

    /** @return the audit log this store writes */
    public AuditLog auditLog() {
        return auditLog;
    }

    /**
     * @param jobType a job type name
     * @return whether it is registered in this store's Layover instance (dead letters of other
     *     types cannot be replayed from here)
     */
    public boolean isRegistered(String jobType) {
        return layover.jobType(jobType).isPresent();
    }

    // ------------------------------------------------------------------------------------ reads

    /**
     * The first page of dead letters matching a filter, newest park first.
     *
     * @param filter the filter
     * @param limit page size, 1-{@value #MAX_PAGE}
     * @return the page
     */
    public DeadLetterPage find(DeadLetterFilter filter, int limit) {
        return find(filter, limit, null);
    }

    /**
     * A keyset page of dead letters matching a filter, ordered by {@code parked_at DESC, id DESC}.
     *
     * @param filter the filter
     * @param limit page size, 1-{@value #MAX_PAGE}
     * @param cursor {@link DeadLetterPage#nextCursor()} of the previous page, or {@code null} for the
     *     first page
     * @return the page
     * @throws IllegalArgumentException for a cursor this store did not write
     */
    public DeadLetterPage find(DeadLetterFilter filter, int limit, String cursor) {
        Objects.requireNonNull(filter, "filter");
        if (limit < 1 || limit > MAX_PAGE) {
            throw new IllegalArgumentException("page size must be 1-" + MAX_PAGE + ", was " + limit);
        }
        DlqSql.Where w = DlqSql.where(filter);
        if (cursor != null) {
            Cursor k = Cursor.parse(cursor);
            DlqSql.after(w, k.parkedAt(), k.id());
        }
        String sql = DlqSql.page(w);
        List<DeadLetterSummary> items = db.autocommit("reading dead letters", c -> {
            try (PreparedStatement ps = DlqSql.prepareCustomPlanned(c, sql)) {
                List<Object> params = new ArrayList<>(w.params());
                params.add(limit + 1);
                DlqSql.bind(c, ps, params);
                List<DeadLetterSummary> out = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(summary(rs));
                    }
                }
                return out;
            }
        });
        String next = null;
        if (items.size() > limit) {
            items = items.subList(0, limit);
            DeadLetterSummary last = items.get(limit - 1);
            next = new Cursor(last.parkedAt(), last.id()).toString();
        }
        return new DeadLetterPage(List.copyOf(items), next);
    }

    /**
     * @param filter the filter
     * @return how many dead letters match it (for a "replay all 1,234?" confirmation)
     */
    public long count(DeadLetterFilter filter) {
        DlqSql.Where w = DlqSql.where(Objects.requireNonNull(filter, "filter"));
        return db.autocommit("counting dead letters", c -> {
            try (PreparedStatement ps = DlqSql.prepareCustomPlanned(c, DlqSql.count(w))) {
                DlqSql.bind(c, ps, w.params());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    /**
     * How many dead letters match a filter, counted no further than a bound: for a confirmation
     * that must answer fast whatever the filter. A filter on states, failure types, job types and
     * provider keys only is read from {@code layover.dead_letter_counts} (a few hundred
     * rows); a filter with a park time range or a text search counts matching rows, stopping at
     * {@code bound + 1}. Either way the result is cut at {@code bound + 1}.
     *
     * @param filter the filter
     * @param bound the largest count wanted, at least 1
     * @return the count, or {@code bound + 1} when more than {@code bound} match
     */
    public long countAtMost(DeadLetterFilter filter, long bound) {
        if (bound < 1) {
            throw new IllegalArgumentException("bound must be at least 1, was " + bound);
        }
        DlqSql.Where w = DlqSql.where(Objects.requireNonNull(filter, "filter"));
        boolean exact = w.onCountedColumnsOnly();
        return db.autocommit("counting dead letters", c -> {
            try (PreparedStatement ps = DlqSql.prepareCustomPlanned(c, DlqSql.countBounded(w))) {
                List<Object> params = new ArrayList<>(w.params());
                if (!exact) {
                    params.add(bound + 1);
                }
                DlqSql.bind(c, ps, params);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return Math.min(rs.getLong(1), bound + 1);
                }
            }
        });
    }

    /**
     * Counts of the dead letters matching a filter: in total, by state, failure type, job type and
     * provider key. A filter on those four columns only reads {@code layover.dead_letter_counts}
     * (kept by triggers on {@code layover.dead_letters}); one with a park time range or a text
     * search scans the matching rows.
     *
     * @param filter the filter
     * @return the counts
     */
    public FacetCounts counts(DeadLetterFilter filter) {
        DlqSql.Where w = DlqSql.where(Objects.requireNonNull(filter, "filter"));
        return db.autocommit("counting dead letters", c -> {
            try (PreparedStatement ps = DlqSql.prepareCustomPlanned(c, DlqSql.facets(w))) {
                DlqSql.bind(c, ps, w.params());
                long total = 0;
                Map<String, Long> byState = new LinkedHashMap<>();
                Map<String, Long> byFailure = new LinkedHashMap<>();
                Map<String, Long> byJobType = new LinkedHashMap<>();
                Map<String, Long> byProvider = new LinkedHashMap<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        long n = rs.getLong("n");
                        switch (rs.getInt("g")) {
                            case 7 -> byState.put(rs.getString("state"), n);
                            case 11 -> byFailure.put(rs.getString("failure_type"), n);
                            case 13 -> byJobType.put(rs.getString("job_type"), n);
                            case 14 -> byProvider.put(rs.getString("provider_key"), n);
                            case 15 -> total = n;
                            default -> { }
                        }
                    }
                }
                return new FacetCounts(total, Collections.unmodifiableMap(byState),
                        Collections.unmodifiableMap(byFailure), Collections.unmodifiableMap(byJobType),
                        Collections.unmodifiableMap(byProvider));
            }
        });
    }

    /**
     * One dead letter with its args, the error of every attempt and its replay history.
     *
     * @param id a dead letter id
     * @return the dead letter, or empty when there is none with that id
     */
    public Optional<DeadLetter> get(long id) {
        return db.autocommit("reading dead letter " + id, c -> {
            try (PreparedStatement ps = c.prepareStatement(DlqSql.ONE)) {
                DlqSql.bind(c, ps, id);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(detail(rs)) : Optional.<DeadLetter>empty();
                }
            }
        });
    }

    // ------------------------------------------------------------------------------------ replay

    /**
     * Replays one dead letter: a fresh job with the dead letter's job id, type, args (or the edited
     * args of {@link ReplayOptions#args(String)}), provider key and priority, due at
     * {@link ReplayOptions#runAt(Instant)} (default now). See the class description for the
     * transaction.
     *
     * @param id the dead letter
     * @param options who, why, kind, edited args
     * @return the job created
     * @throws DeadLetterNotFoundException when there is no such dead letter
     * @throws UnknownJobTypeException when its job type is not registered in this Layover instance
     *     (it stays as it is)
     * @throws dev.layover.core.InvalidArgsException when edited args do not read as the job type's
     *     args type, or exceed the size cap (nothing changed)
     * @throws ReplayConflictException when it is not in a replayable state (already replayed,
     *     discarded, or replayed a moment ago by someone else), when a live job with its id exists
     *     (nothing changed), or for a sweep replay whose budget is spent (moved to {@code review})
     * @throws LayoverException when the database fails
     */
    public Replayed replay(long id, ReplayOptions options) {
        Objects.requireNonNull(options, "options");
        Row row = db.autocommit("reading dead letter " + id, c -> classify(c, List.of(id)).get(id));
        if (row == null) {
            throw new DeadLetterNotFoundException(id);
        }
        if (!isRegistered(row.jobType())) {
            throw new UnknownJobTypeException(row.jobType(), "dead letter " + id + " cannot be replayed: its job type '"
                    + row.jobType() + "' is not registered in this Layover instance. It stays " + row.state()
                    + "; register the job type to replay it, or discard it.");
        }
        ReplayKind kind = options.kind();
        List<String> states = kind == ReplayKind.MANUAL ? MANUAL_STATES : AUTO_STATES;
        if (!states.contains(row.state())) {
            throw stateConflict(id, row.state(), kind);
        }
        String edited = options.args() == null ? null
                : new String(layover.validateArgs(row.jobType(), options.args()), StandardCharsets.UTF_8);

        Object result = db.transaction("replaying dead letter " + id, c -> {
            if (kind == ReplayKind.SWEEP && !reviewSpent(c, List.of(id), options.replayBudget()).isEmpty()) {
                ObjectNode d = replayDetails(options);
                d.put("moved_to_review", 1);
                AuditLog.insert(c, options.actor(), "replay", null, 0, new Long[] {id}, null, options.note(),
                        d.toString(), true);
                return Boolean.FALSE;
            }
            List<ReplayRow> rows = replayRows(c, List.of(id), states, options, edited);
            if (rows.isEmpty()) {
                Row now = classify(c, List.of(id)).get(id);
                if (now == null) {
                    throw new DeadLetterNotFoundException(id);
                }
                throw stateConflict(id, now.state(), kind);
            }
            ReplayRow r = rows.get(0);
            if (!r.replayed()) {
                throw new ReplayConflictException(id, ReplayConflictException.Reason.LIVE_JOB_EXISTS,
                        "dead letter " + id + " was not replayed: a live job '" + r.jobId() + "' of type '"
                                + r.jobType() + "' already exists (see layover.jobs); nothing was changed");
            }
            if (edited != null) {
                ObjectNode d = JSON.createObjectNode();
                d.put("job_type", r.jobType());
                d.put("job_id", r.jobId());
                d.set("before", parseOrText(r.oldArgs()));
                d.set("after", parseOrText(edited));
                AuditLog.insert(c, options.actor(), "edit", null, 1, new Long[] {id}, null, options.note(),
                        d.toString(), true);
            }
            ObjectNode d = replayDetails(options);
            d.put("job_type", r.jobType());
            d.put("job_id", r.jobId());
            d.put("args_edited", edited != null);
            long auditId = AuditLog.insert(c, options.actor(), "replay", null, 1, new Long[] {id}, null,
                    options.note(), d.toString(), true);
            return new Replayed(id, r.jobType(), r.jobId(), kind, r.runAt(), edited != null, auditId);
        });
        if (result instanceof Replayed replayed) {
            layover.metrics().jobsReplayed(replayed.jobType(), kind.code(), 1);
            layover.wakeUp();
            return replayed;
        }
        throw new ReplayConflictException(id, ReplayConflictException.Reason.BUDGET_SPENT,
                "dead letter " + id + " has spent its automatic replay budget (" + options.replayBudget()
                        + " sweep replays); it was moved to review");
    }

    /**
     * Replays many dead letters, in transactions of {@link ReplayOptions#batchSize(int)} (default
     * {@value ReplayOptions#DEFAULT_BATCH_SIZE}): each dead letter exactly as {@link #replay(long,
     * ReplayOptions)} would, except that one that cannot be replayed is counted in
     * {@link BulkResult#skipped()} instead of failing the call. A failure of the database stops
     * the run with an exception; the batches committed before it stay (and the audit row says how
     * many).
     *
     * <p>A filter selection works on the dead letters that existed when it started, in id order, so
     * it ends on a table that keeps growing and never replays twice a dead letter that was replayed
     * and parked again during the run.
     *
     * @param selection ids or a filter
     * @param options who, why, kind, run time and spread, limit, batch size, progress callback; not
     *     edited args
     * @return what was done
     */
    public BulkResult replay(Selection selection, ReplayOptions options) {
        Objects.requireNonNull(selection, "selection");
        Objects.requireNonNull(options, "options");
        if (options.args() != null) {
            throw new IllegalArgumentException("edited args replay one dead letter: use replay(id, options)");
        }
        ReplayKind kind = options.kind();
        List<String> states = kind == ReplayKind.MANUAL ? MANUAL_STATES : AUTO_STATES;
        Map<String, Long> replayedByType = new java.util.concurrent.ConcurrentHashMap<>();
        BatchAction action = (c, candidates, tally) -> {
            List<Long> ids = new ArrayList<>();
            for (Candidate cand : candidates) {
                if (isRegistered(cand.jobType())) {
                    ids.add(cand.id());
                } else {
                    tally.skip(BulkResult.SkipReason.JOB_TYPE_NOT_REGISTERED, 1);
                }
            }
            if (kind == ReplayKind.SWEEP && !ids.isEmpty()) {
                List<Long> reviewed = reviewSpent(c, ids, options.replayBudget());
                tally.movedToReview += reviewed.size();
                ids.removeAll(new HashSet<>(reviewed));
            }
            List<Long> changed = new ArrayList<>();
            if (ids.isEmpty()) {
                return changed;
            }
            List<ReplayRow> rows = replayRows(c, ids, states, options, null);
            for (ReplayRow r : rows) {
                if (r.replayed()) {
                    changed.add(r.id());
                    replayedByType.merge(r.jobType(), 1L, Long::sum);
                } else {
                    tally.skip(BulkResult.SkipReason.LIVE_JOB_EXISTS, 1);
                }
            }
            tally.skip(BulkResult.SkipReason.STATE, ids.size() - rows.size());
            return changed;
        };
        BulkResult result;
        try {
            result = bulk("replay", selection, options.actor(), options.note(), options.batchSize(),
                    options.limit(), options.progress(), states, action, replayDetails(options));
        } finally {
            // counted per batch in its transaction: batches committed before a failure count too
            replayedByType.forEach((type, n) -> layover.metrics().jobsReplayed(type, kind.code(), n));
        }
        layover.wakeUp();
        return result;
    }

    /**
     * Discards dead letters in {@code parked} or {@code review}: they will not run again, and
     * retention purges them after its period. Others are counted as skipped.
     *
     * @param selection one id, ids, or a filter (as for {@link #replay(Selection, ReplayOptions)})
     * @param options who, why, batch size, progress
     * @return what was done
     */
    public BulkResult discard(Selection selection, ActionOptions options) {
        return stateChange("discard", DlqSql.DISCARD, MANUAL_STATES, selection, options);
    }

    /**
     * Moves dead letters in {@code review} back to {@code parked}, with a fresh automatic replay
     * budget (their {@code auto_replay_count} is reset; the history stays in {@code replays}), so
     * that the recovery sweep may replay them again. Others are counted as skipped.
     *
     * @param selection one id, ids, or a filter
     * @param options who, why, batch size, progress
     * @return what was done
     */
    public BulkResult moveBackToParked(Selection selection, ActionOptions options) {
        return stateChange("move_back", DlqSql.MOVE_BACK, List.of("review"), selection, options);
    }

    private BulkResult stateChange(String name, String sql, List<String> states, Selection selection,
            ActionOptions options) {
        Objects.requireNonNull(selection, "selection");
        Objects.requireNonNull(options, "options");
        BatchAction action = (c, candidates, tally) -> {
            List<Long> changed = new ArrayList<>();
            if (candidates.isEmpty()) {
                return changed;
            }
            Long[] ids = candidates.stream().map(Candidate::id).toArray(Long[]::new);
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                DlqSql.bind(c, ps, new DlqSql.LongArray(ids));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        changed.add(rs.getLong(1));
                    }
                }
            }
            tally.skip(BulkResult.SkipReason.STATE, ids.length - changed.size());
            return changed;
        };
        return bulk(name, selection, options.actor(), options.note(), options.batchSize(), Long.MAX_VALUE,
                options.progress(), states, action, JSON.createObjectNode());
    }

    // ------------------------------------------------------------------------------------ bulk engine

    /** One dead letter offered to a batch action. */
    private record Candidate(long id, String jobType) {}

    /** Applies an action to a batch in its transaction; returns the ids it changed. */
    @FunctionalInterface
    private interface BatchAction {
        List<Long> apply(Connection c, List<Candidate> candidates, Tally tally) throws SQLException;
    }

    /** Running totals of a bulk action. */
    private static final class Tally {
        long processed;
        long changed;
        long movedToReview;
        final EnumMap<BulkResult.SkipReason, Long> skipped = new EnumMap<>(BulkResult.SkipReason.class);

        void skip(BulkResult.SkipReason reason, long n) {
            if (n > 0) {
                skipped.merge(reason, n, Long::sum);
            }
        }

        long skippedTotal() {
            return skipped.values().stream().mapToLong(Long::longValue).sum();
        }

        ObjectNode json() {
            ObjectNode n = JSON.createObjectNode();
            n.put("processed", processed);
            n.put("changed", changed);
            if (movedToReview > 0) {
                n.put("moved_to_review", movedToReview);
            }
            ObjectNode s = n.putObject("skipped");
            skipped.forEach((k, v) -> s.put(k.name().toLowerCase(java.util.Locale.ROOT), v));
            return n;
        }
    }

    private BulkResult bulk(String name, Selection selection, String actor, String note, int batchSize, long limit,
            Consumer<BulkProgress> progress, List<String> states, BatchAction action, ObjectNode details) {
        long started = System.nanoTime();
        String filterJson = selection.isFilter() ? selection.filter().toJson().toString() : null;
        long auditId = db.autocommit("writing the audit log",
                c -> AuditLog.insert(c, actor, name, null, 0, null, filterJson, note, details.toString(), false));
        Tally tally = new Tally();
        int batches = 0;
        String error = null;
        try {
            if (selection.isFilter()) {
                DeadLetterFilter filter = selection.filter();
                long maxId = db.autocommit("reading dead letters", c -> {
                    try (PreparedStatement ps = c.prepareStatement(DlqSql.MAX_ID); ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return rs.getLong(1);
                    }
                });
                long expected = countWindow(filter, states, maxId);
                long after = 0;
                while (tally.changed < limit) {
                    int n = (int) Math.min(batchSize, limit - tally.changed);
                    long from = after;
                    Long last = db.transaction(name + " of dead letters", c -> {
                        List<Candidate> batch = nextBatch(c, filter, states, from, maxId, n);
                        if (batch.isEmpty()) {
                            return null;
                        }
                        tally.processed += batch.size();
                        List<Long> changed = action.apply(c, batch, tally);
                        tally.changed += changed.size();
                        AuditLog.add(c, auditId, changed.size(), null);
                        return batch.get(batch.size() - 1).id();
                    });
                    if (last == null) {
                        break;
                    }
                    after = last;
                    batches++;
                    report(progress, batches, tally, expected);
                }
            } else {
                List<Long> all = selection.ids();
                int from = 0;
                while (from < all.size() && tally.changed < limit) {
                    int to = (int) Math.min(all.size(), from + Math.min(batchSize, limit - tally.changed));
                    List<Long> chunk = all.subList(from, to);
                    db.transaction(name + " of dead letters", c -> {
                        Map<Long, Row> rows = classify(c, chunk);
                        List<Candidate> eligible = new ArrayList<>();
                        for (Long id : chunk) {
                            Row r = rows.get(id);
                            if (r == null) {
                                tally.skip(BulkResult.SkipReason.NOT_FOUND, 1);
                            } else if (!states.contains(r.state())) {
                                tally.skip(BulkResult.SkipReason.STATE, 1);
                            } else {
                                eligible.add(new Candidate(id, r.jobType()));
                            }
                        }
                        tally.processed += chunk.size();
                        List<Long> changed = action.apply(c, eligible, tally);
                        tally.changed += changed.size();
                        AuditLog.add(c, auditId, changed.size(), changed.toArray(Long[]::new));
                        return null;
                    });
                    from = to;
                    batches++;
                    report(progress, batches, tally, all.size());
                }
            }
        } catch (RuntimeException e) {
            error = e.getMessage();
            throw e;
        } finally {
            ObjectNode end = tally.json();
            if (error != null) {
                end.put("error", error);
            }
            try {
                db.autocommit("writing the audit log", c -> {
                    AuditLog.finish(c, auditId, end.toString());
                    return null;
                });
            } catch (LayoverException e) {
                if (error == null) {
                    throw e;
                }
            }
        }
        return new BulkResult(name, tally.processed, tally.changed, tally.movedToReview, Map.copyOf(tally.skipped), batches,
                Duration.ofNanos(System.nanoTime() - started), auditId);
    }

    private static void report(Consumer<BulkProgress> progress, int batches, Tally t, long expected) {
        if (progress != null) {
            progress.accept(new BulkProgress(batches, t.processed, t.changed, t.skippedTotal(), expected));
        }
    }

    private long countWindow(DeadLetterFilter filter, List<String> states, long maxId) {
        DlqSql.Where w = DlqSql.where(filter);
        DlqSql.batchWindow(w, states, 0, maxId);
        return db.autocommit("counting dead letters", c -> {
            try (PreparedStatement ps = DlqSql.prepareCustomPlanned(c, DlqSql.count(w))) {
                DlqSql.bind(c, ps, w.params());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    private static List<Candidate> nextBatch(Connection c, DeadLetterFilter filter, List<String> states, long after,
            long maxId, int n) throws SQLException {
        DlqSql.Where w = DlqSql.where(filter);
        DlqSql.batchWindow(w, states, after, maxId);
        try (PreparedStatement ps = DlqSql.prepareCustomPlanned(c, DlqSql.batch(w))) {
            List<Object> params = new ArrayList<>(w.params());
            params.add(n);
            DlqSql.bind(c, ps, params);
            List<Candidate> out = new ArrayList<>(n);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Candidate(rs.getLong(1), rs.getString(2)));
                }
            }
            return out;
        }
    }

    // ------------------------------------------------------------------------------------ statements

    /** A dead letter's state and type. */
    private record Row(String state, String jobType) {}

    private static Map<Long, Row> classify(Connection c, List<Long> ids) throws SQLException {
        Map<Long, Row> out = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(DlqSql.CLASSIFY)) {
            DlqSql.bind(c, ps, new DlqSql.LongArray(ids.toArray(Long[]::new)));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getLong("id"), new Row(rs.getString("state"), rs.getString("job_type")));
                }
            }
        }
        return out;
    }

    private static List<Long> reviewSpent(Connection c, List<Long> ids, int budget) throws SQLException {
        List<Long> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(DlqSql.REVIEW_SPENT)) {
            DlqSql.bind(c, ps, new DlqSql.LongArray(ids.toArray(Long[]::new)), budget);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getLong(1));
                }
            }
        }
        return out;
    }

    /** One locked dead letter of a replay statement. */
    private record ReplayRow(long id, String jobType, String jobId, String oldArgs, Instant runAt, boolean replayed) {}

    private List<ReplayRow> replayRows(Connection c, List<Long> ids, List<String> states, ReplayOptions o,
            String edited) throws SQLException {
        String kind = o.kind().code();
        String event = o.kind() == ReplayKind.MANUAL ? "manual_replay" : "auto_replay";
        List<Long> locked = new ArrayList<>();
        Map<Long, String[]> candidates = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(DlqSql.REPLAY_CANDIDATES)) {
            DlqSql.bind(c, ps, new DlqSql.LongArray(ids.toArray(Long[]::new)), event,
                    new DlqSql.TextArray(registeredTypes()), kind, o.replayBudget());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    locked.add(rs.getLong("id"));
                    candidates.put(rs.getLong("id"),
                            new String[] {rs.getString("job_type"), rs.getString("job_id"), rs.getString("old_args")});
                }
            }
        }
        if (locked.isEmpty()) {
            return List.of();
        }
        long[] lockedIds = locked.stream().mapToLong(Long::longValue).toArray();
        String[] editedArgs = new String[lockedIds.length];
        java.util.Arrays.fill(editedArgs, edited);
        Map<Long, JobWrites.Replayed> inserted = new java.util.HashMap<>();
        for (JobWrites.Replayed r : jobs.insertReplays(c, lockedIds, editedArgs, o.runAt(), o.spread().toMillis(), kind)) {
            inserted.put(r.deadLetterId(), r);
        }
        if (!inserted.isEmpty() && (o.isFromScratch() || edited != null)) {
            List<String> types = new ArrayList<>();
            List<String> jobIds = new ArrayList<>();
            for (JobWrites.Replayed r : inserted.values()) {
                types.add(candidates.get(r.deadLetterId())[0]);
                jobIds.add(r.jobId());
            }
            try (PreparedStatement ps = c.prepareStatement(DlqSql.FORGET_STEPS)) {
                DlqSql.bind(c, ps, new DlqSql.TextArray(types.toArray(String[]::new)),
                        new DlqSql.TextArray(jobIds.toArray(String[]::new)));
                ps.executeQuery().close();
            }
        }
        java.util.Set<Long> marked = new java.util.HashSet<>();
        if (!inserted.isEmpty()) {
            Long[] markIds = inserted.keySet().toArray(Long[]::new);
            String[] jobIds = new String[markIds.length];
            for (int i = 0; i < markIds.length; i++) {
                jobIds[i] = inserted.get(markIds[i]).jobId();
            }
            try (PreparedStatement ps = c.prepareStatement(DlqSql.MARK_REPLAYED)) {
                DlqSql.bind(c, ps, event, kind, o.actor(), kind, edited != null, edited, edited, edited,
                        new DlqSql.LongArray(markIds), new DlqSql.TextArray(jobIds));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        marked.add(rs.getLong(1));
                    }
                }
            }
        }
        List<ReplayRow> out = new ArrayList<>();
        for (Map.Entry<Long, String[]> e : candidates.entrySet()) {
            JobWrites.Replayed r = inserted.get(e.getKey());
            out.add(new ReplayRow(e.getKey(), e.getValue()[0], e.getValue()[1], e.getValue()[2],
                    r == null ? null : r.runAt(), marked.contains(e.getKey())));
        }
        return out;
    }


    private String[] registeredTypes() {
        return layover.jobTypes().stream().map(t -> t.name()).toArray(String[]::new);
    }

    private static ReplayConflictException stateConflict(long id, String state, ReplayKind kind) {
        String allowed = kind == ReplayKind.MANUAL ? "parked or review" : "parked";
        return new ReplayConflictException(id, ReplayConflictException.Reason.STATE,
                "dead letter " + id + " is " + state + "; a " + kind.code() + " replay needs it " + allowed
                        + (state.equals("replayed") ? " (it was already replayed, perhaps a moment ago by someone else)"
                                : ""));
    }

    private static ObjectNode replayDetails(ReplayOptions o) {
        ObjectNode d = JSON.createObjectNode();
        d.put("kind", o.kind().code());
        if (o.runAt() != null) {
            d.put("run_at", o.runAt().toString());
        }
        if (!o.spread().isZero()) {
            d.put("spread_ms", o.spread().toMillis());
        }
        if (o.kind() == ReplayKind.SWEEP) {
            d.put("replay_budget", o.replayBudget());
        }
        if (o.isFromScratch()) {
            d.put("from_scratch", true); // the jobs' stored steps were dropped
        }
        if (o.limit() != Long.MAX_VALUE) {
            d.put("limit", o.limit());
        }
        return d;
    }

    private static JsonNode parseOrText(String json) {
        if (json == null) {
            return JSON.nullNode();
        }
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            return JSON.getNodeFactory().textNode(json);
        }
    }

    // ------------------------------------------------------------------------------------ mapping

    private DeadLetterSummary summary(ResultSet rs) throws SQLException {
        String jobType = rs.getString("job_type");
        return new DeadLetterSummary(rs.getLong("id"), jobType, rs.getString("job_id"), rs.getString("provider_key"),
                rs.getString("failure_type"), rs.getString("error_class"), rs.getString("error_message"),
                rs.getInt("attempts"), rs.getInt("reschedules"), rs.getInt("park_count"),
                DeadLetterState.fromCode(rs.getString("state")), instant(rs, "parked_at"),
                instant(rs, "state_changed_at"), rs.getInt("replay_count"), isRegistered(jobType));
    }

    private DeadLetter detail(ResultSet rs) throws SQLException {
        String jobType = rs.getString("job_type");
        int priority = rs.getInt("priority");
        Integer prio = rs.wasNull() ? null : priority;
        return new DeadLetter(rs.getLong("id"), jobType, rs.getString("job_id"), rs.getString("provider_key"),
                rs.getString("failure_type"), rs.getString("error_class"), rs.getString("error_message"),
                rs.getString("args"), rs.getBytes("args_raw"), rs.getInt("attempts"), rs.getInt("reschedules"), prio,
                instant(rs, "first_enqueued_at"), instant(rs, "parked_at"), rs.getInt("park_count"),
                DeadLetterState.fromCode(rs.getString("state")), instant(rs, "state_changed_at"),
                rs.getInt("replay_count"), rs.getInt("auto_replay_count"), List.copyOf(errors(rs.getString("errors"))),
                List.copyOf(replays(rs.getString("replays"))), isRegistered(jobType));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }

    private static List<DeadLetter.AttemptError> errors(String json) {
        List<DeadLetter.AttemptError> out = new ArrayList<>();
        for (JsonNode n : array(json)) {
            out.add(new DeadLetter.AttemptError(n.hasNonNull("attempt") ? n.get("attempt").asInt() : null,
                    time(n.get("at")), text(n.get("kind")), text(n.get("error_class")), text(n.get("message")),
                    text(n.get("stack_trace")), n.toString()));
        }
        return out;
    }

    private static List<DeadLetter.Replay> replays(String json) {
        List<DeadLetter.Replay> out = new ArrayList<>();
        for (JsonNode n : array(json)) {
            ReplayKind kind = ReplayKind.fromCode(text(n.get("kind")));
            if (kind == null && n.path("automatic").asBoolean(false)) {
                kind = ReplayKind.SWEEP;
            }
            out.add(new DeadLetter.Replay(text(n.get("job_id")), time(n.get("at")), text(n.get("by")),
                    kind == null ? ReplayKind.MANUAL : kind, n.path("args_edited").asBoolean(false)));
        }
        return out;
    }

    private static Iterable<JsonNode> array(String json) {
        if (json == null) {
            return List.of();
        }
        try {
            JsonNode n = JSON.readTree(json);
            return n.isArray() ? n : List.of();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static String text(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }

    private static Instant time(JsonNode n) {
        String s = text(n);
        if (s == null) {
            return null;
        }
        try {
            return OffsetDateTime.parse(s).toInstant();
        } catch (RuntimeException e) {
            try {
                return Instant.parse(s);
            } catch (RuntimeException e2) {
                return null;
            }
        }
    }

    // ------------------------------------------------------------------------------------ cursor

    /** A keyset position: the last row's park time (to the microsecond, Postgres' precision) and id. */
    private record Cursor(Instant parkedAt, long id) {
        @Override
        public String toString() {
            long micros = ChronoUnit.MICROS.between(Instant.EPOCH, parkedAt);
            return micros + "_" + id;
        }

        static Cursor parse(String s) {
            int sep = s.indexOf('_');
            try {
                if (sep <= 0) {
                    throw new NumberFormatException();
                }
                long micros = Long.parseLong(s.substring(0, sep));
                long id = Long.parseLong(s.substring(sep + 1));
                return new Cursor(Instant.EPOCH.plus(micros, ChronoUnit.MICROS), id);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a dead-letter page cursor: " + s);
            }
        }
    }
}
