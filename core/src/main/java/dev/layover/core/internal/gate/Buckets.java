package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.spi.Db;
import dev.layover.core.internal.jobs.JobStore;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rate buckets ({@code layover.buckets}, GCRA): permits taken in one statement, a few leased at a
 * time and spent from memory within the burst; a job that finds none is given the future slot at
 * which its permit will exist (it is rescheduled once, to that slot, holding the permit); a key's
 * due backlog is given its slots together in one statement; the jobs of one pick are leased their
 * keys' free permits together, in one statement for all the keys ({@link #leaseAhead}).
 */
final class Buckets {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);

    static final Duration MAX_LEASE_TTL = Duration.ofSeconds(1);

    /**
     * How long {@link #takePlaces} waits at most for bucket rows other transactions hold (one
     * statement each, normally a millisecond): the pick's jobs are handed to threads after it.
     */
    static final int PLACES_WAIT_SECONDS = 1;

    /** Jobs reserved by one {@link #reserveBacklog} statement at most. */
    static final int BACKLOG_BATCH = 10_000;

    /**
     * How far ahead a backlog's permits are booked at most: the statement that books them holds
     * the bucket row, so it stays short; the rest of the backlog waits in the key's line.
     */
    static final Duration BOOK_AHEAD = dev.layover.core.internal.jobs.Enqueuer.BOOK_AHEAD;

    /** Statements one backlog placement runs at most while each comes back full. */
    static final int BACKLOG_MAX_ROUNDS = 50;

    /** How long one backlog placement keeps running full statements at most. */
    static final Duration BACKLOG_ROUNDS_BUDGET = Duration.ofSeconds(3);

    /** How often one instance reserves a key's backlog at most. */
    static final Duration BACKLOG_EVERY = Duration.ofSeconds(1);

    private final GateDb gdb;
    private final JobStore store;
    private final Duration permitGrace;
    private final ConcurrentHashMap<String, Long> backlogReservedAt = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicBoolean placing = new java.util.concurrent.atomic.AtomicBoolean();
    private final TokenLedger ledger;
    private final Fairness fairness;

    /**
     * @param permitGrace how late a job may come back for the bucket permit it holds before the
     *     permit lapses
     * @param ledger the token side of the buckets
     * @param fairness the fair queues, for jobs with a fairness key
     */
    Buckets(GateDb gdb, JobStore store, Duration permitGrace, TokenLedger ledger, Fairness fairness) {
        this.gdb = gdb;
        this.store = store;
        this.permitGrace = permitGrace;
        this.ledger = ledger;
        this.fairness = fairness;
    }

    /** @return the token side of the buckets */
    TokenLedger ledger() {
        return ledger;
    }

    private record Permit(boolean carried, Instant slot, double requests, double tokens, Instant lineEnd,
            boolean aheadOfLine) {}

    /**
     * Takes a permit for one call of the key: a leased one from memory, the one the job holds from
     * its reschedule, or one (plus a lease) from the bucket row. When none is free: with
     * {@code mayWait} the next future slot is reserved and the job waits for it; without, nothing
     * is taken.
     *
     * @param run the job's run, or null (a fallback endpoint)
     * @return go, or wait for the slot; null when the learned pace this bucket was has been deleted
     *     by an operator (the caller forgets it and goes)
     */
    Admission permit(KeyState ks, BucketSettings b, long tokens, Instant now, ProviderRun run, boolean mayWait) {
        return permit(ks, b, tokens, now, run, mayWait, null);
    }

    /**
     * Like {@link #permit(KeyState, BucketSettings, long, Instant, ProviderRun, boolean)}; a future
     * slot after {@code bookBy} (when set) is not reserved: the wait then holds no permit.
     */
    Admission permit(KeyState ks, BucketSettings b, long tokens, Instant now, ProviderRun run, boolean mayWait,
            Instant bookBy) {
        KeyState.Learned l = ks.learned;
        boolean learned = l != null && l.bucket() == b; // a missing learned row is forgotten, never configured
        if (run != null && run.fairnessKey() != null && mayWait && bookBy == null && Fairness.fair(b)) {
            String big = b.limitsTokens() ? TokenLedger.tooLarge(ks.key, b, run.estimate()) : null;
            if (big != null) {
                return new Admission.TooLarge(GateDb.cut(big));
            }
            Admission fair = fairness.admit(ks, b, now, run, learned ? null : () -> configure(ks.key, b));
            if (fair != null) {
                return fair; // else: not in the queue (no fairness key on the row), admitted as a job without one
            }
        }
        if (b.limitsTokens()) { // requests and every token dimension in one statement, no lease (TokenLedger)
            TokenEstimate e = run != null ? run.estimate() : TokenEstimate.total(Math.min(tokens, TokenUsage.MAX_COUNT));
            return ledger.take(ks, b, e, now, run, mayWait, learned ? null : () -> configure(ks.key, b));
        }
        if (run != null && run.carryPickedPermit(now, permitGrace)) {
            return ProviderGate.GO; // the permit the job holds, as its pick read it: no statement, no lease spent
        }
        boolean limitsRequests = b.requestRate() > 0;
        boolean limitsTokens = b.tokenRate() > 0 && tokens > 0;
        if (ks.takeLeased(limitsRequests, limitsTokens, tokens, System.nanoTime())) {
            return ProviderGate.GO;
        }
        // a job told to wait may take a place at the end of the key's waiting line instead of a permit ahead of it
        Duration joinsLine = mayWait && bookBy == null && run != null ? run.joinsLineWithin() : null;
        for (int tries = 0; tries < 2; tries++) {
            double extraRequests = b.lease() - 1;
            double extraTokens = limitsTokens ? (double) tokens * (b.lease() - 1) : 0;
            Permit p = gdb.inline("taking a permit from the bucket of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.TAKE_PERMITS)) {
                    Db.bind(ps, ks.key, ts(now),
                            b.requestRate(), b.requestCapacity(), 1.0, extraRequests,
                            b.tokenRate(), b.tokenCapacity(), (double) tokens, extraTokens,
                            mayWait, run == null ? null : run.heldPermitTask(), run == null ? null : run.jobId(),
                            run == null ? null : run.version(), seconds(permitGrace), bookBy == null ? null : ts(bookBy),
                            joinsLine == null ? null : seconds(joinsLine));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return new Permit(rs.getLong("carried") > 0, instant(rs, "last_slot"),
                                rs.getDouble("last_granted_requests"), rs.getDouble("last_granted_tokens"),
                                instant(rs, "line_end"), rs.getBoolean("ahead_of_line"));
                    }
                }
            });
            if (p.carried()) {
                if (run != null) {
                    run.permitCarried();
                }
                return ProviderGate.GO;
            }
            if (p.slot() == null) {
                if (learned) {
                    return null;
                }
                configure(ks.key, b);
                continue;
            }
            if (p.lineEnd() != null && p.requests() == 0 && p.tokens() == 0) {
                // a permit booked ahead of the line would shift every place in it: one request's time behind its end
                Instant place = p.lineEnd().plusNanos(Math.round(1e9 / b.requestRate()));
                return new Admission.Wait(place, "bucket", "bucket of " + ks.key + ": " + JobStore.LINE_PLACE, null);
            }
            if (!p.slot().isAfter(now)) {
                // a leased permit is spent within the burst (at most 1 s), so it adds at most one burst to any interval
                long ttl = Math.min(MAX_LEASE_TTL.toNanos(), b.burst().toNanos());
                ks.lease(p.requests() - 1, p.tokens() - tokens, System.nanoTime(), ttl);
                return ProviderGate.GO;
            }
            String detail = "no permit of " + ks.key + "'s bucket (" + describe(b) + ") before " + p.slot();
            boolean booked = mayWait && (p.requests() > 0 || p.tokens() > 0);
            return new Admission.Wait(p.slot(), "bucket", detail, booked ? p.slot() : null, booked && p.aheadOfLine());
        }
        throw new IllegalStateException("the bucket row of " + ks.key + " could not be created");
    }

    /**
     * A key's ask in {@link #leaseAhead}.
     *
     * @param jobs the jobs of the pick that will take a permit of the key
     */
    record Ask(KeyState ks, BucketSettings bucket, int jobs) {}

    /**
     * Takes, in one statement for every key ({@link StateSql#LEASE_AHEAD}), the request permits
     * free now of each key's bucket, up to its jobs less what is leased already and at most the
     * bucket's {@link BucketSettings#lease()}, and leases them ({@link KeyState#lease}). Buckets
     * with a token dimension are left out (their takes reserve tokens per call, never leased), as
     * are rows another transaction holds ({@code SKIP LOCKED}: those jobs take their own). Never
     * throws: a failed statement leases nothing, and the jobs take their permits as they run.
     */
    void leaseAhead(List<Ask> asks, Instant now) {
        long t = System.nanoTime();
        List<Ask> wanted = new ArrayList<>();
        for (Ask a : asks) {
            if (requestsAlone(a.bucket()) && a.ks().leasedRequests(t) < Math.min(a.jobs(), a.bucket().lease())) {
                wanted.add(a);
            }
        }
        Map<String, Ask> byKey = new java.util.HashMap<>();
        wanted.forEach(a -> byKey.put(a.ks().key, a));
        perKey("leasing bucket permits ahead", StateSql.LEASE_AHEAD, 0, wanted,
                a -> (int) Math.ceil(Math.min(a.jobs(), a.bucket().lease()) - a.ks().leasedRequests(t)), ts(now))
                .forEach((key, n) -> {
                    Ask a = byKey.get(key);
                    long ttl = Math.min(MAX_LEASE_TTL.toNanos(), a.bucket().burst().toNanos());
                    a.ks().lease(n, 0, System.nanoTime(), ttl);
                });
    }

    /**
     * Takes, in one statement for every key ({@link StateSql#TAKE_PLACES}), the permits of a
     * pick's jobs picked within the grace of their places in their keys' waiting lines: for each
     * key, as many of its jobs as fit, as their takes one by one would ({@code TAKE_PERMITS} for a
     * job at its place). Buckets with a token dimension are left out. A bucket row another
     * transaction holds is waited for, at most {@link #PLACES_WAIT_SECONDS}: past it the statement
     * is cancelled and takes nothing. Never throws: a failed statement takes nothing, and the jobs
     * take their own permits as they run.
     *
     * @return the permits taken, by key (keys given none left out)
     */
    Map<String, Integer> takePlaces(List<Ask> asks, Instant now) {
        List<Ask> wanted = asks.stream().filter(a -> requestsAlone(a.bucket())).toList();
        return perKey("taking the permits of places in waiting lines", StateSql.TAKE_PLACES, PLACES_WAIT_SECONDS, wanted,
                Ask::jobs, ts(now), seconds(permitGrace));
    }

    /** @return whether a bucket limits requests and nothing else (its permits may be taken many at a time) */
    private static boolean requestsAlone(BucketSettings b) {
        return b.requestRate() > 0 && b.tokenRate() <= 0 && !b.limitsTokens();
    }

    /**
     * Runs a statement over many keys' buckets ({@link StateSql#LEASE_AHEAD}, {@link
     * StateSql#TAKE_PLACES}): its leading parameters, then keys, request rates, request
     * capacities and counts as arrays; it returns each key and the permits it took. Never throws.
     *
     * @param timeoutSeconds how long the statement may run before it is cancelled (0: no limit)
     * @return the permits taken, by key; empty when the statement failed
     */
    private Map<String, Integer> perKey(String what, String sql, int timeoutSeconds, List<Ask> asks,
            java.util.function.ToIntFunction<Ask> count, Object... leading) {
        Map<String, Integer> taken = new java.util.HashMap<>();
        if (asks.isEmpty()) {
            return taken;
        }
        String[] keys = new String[asks.size()];
        Double[] rates = new Double[asks.size()];
        Double[] capacities = new Double[asks.size()];
        Integer[] counts = new Integer[asks.size()];
        for (int i = 0; i < asks.size(); i++) {
            Ask a = asks.get(i);
            keys[i] = a.ks().key;
            rates[i] = a.bucket().requestRate();
            capacities[i] = a.bucket().requestCapacity();
            counts[i] = count.applyAsInt(a);
        }
        try {
            gdb.inline(what + " for " + keys.length + " keys", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql)) {
                    ps.setQueryTimeout(timeoutSeconds);
                    int i = 1;
                    for (Object o : leading) {
                        ps.setObject(i++, o);
                    }
                    ps.setArray(i++, c.createArrayOf("text", keys));
                    ps.setArray(i++, c.createArrayOf("float8", rates));
                    ps.setArray(i++, c.createArrayOf("float8", capacities));
                    ps.setArray(i, c.createArrayOf("int4", counts));
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            taken.put(rs.getString(1), rs.getInt(2));
                        }
                    }
                }
                return null;
            });
        } catch (RuntimeException e) {
            LOG.debug("Layover: {} failed (the jobs take their own permits as they run): {}", what, e.toString());
            taken.clear();
        }
        return taken;
    }

    /** Writes a bucket's limits as configured by this worker, every dimension ({@link TokenSql#CONFIGURE_BUCKET}). */
    void configure(String key, BucketSettings b) {
        gdb.inline("configuring the bucket of " + key, c -> TokenLedger.configure(c, key, b, gdb.workerName));
    }

    /**
     * Gives a key's due, unpicked jobs, then its waiting line's front, their permits in one
     * statement ({@link JobStore#reserveBacklog}), each rescheduled to its slot holding it; then
     * moves to the line's end its jobs whose places' permits were booked ahead of them ({@link JobStore#realignLine}),
     * and places the rest of a deeper backlog in the line. At most once per
     * {@link #BACKLOG_EVERY} per key in this instance; nothing when the bucket limits no requests.
     * Never throws.
     *
     * @return how many jobs of each type were reserved (empty when none)
     */
    Map<String, Integer> reserveBacklog(String key, BucketSettings b, List<ProviderGate.BacklogType> types, Instant now) {
        if (b == null || b.requestRate() <= 0) {
            return Map.of();
        }
        long t = System.nanoTime();
        boolean[] mine = {false};
        backlogReservedAt.compute(key, (k, last) -> {
            if (last != null && t - last < BACKLOG_EVERY.toNanos()) {
                return last;
            }
            mine[0] = true;
            return t;
        });
        if (!mine[0]) {
            return Map.of();
        }
        Movable m = movable(b, types);
        if (m == null) {
            return Map.of();
        }
        List<String> names = m.names();
        List<Integer> caps = m.caps();
        double horizonSeconds = Math.min(seconds(m.horizon()), seconds(BOOK_AHEAD));
        try {
            gdb.countInline();
            Map<String, Integer> reserved = new java.util.LinkedHashMap<>(store.reserveBacklog(key, now, b.requestRate(),
                    b.requestCapacity(), BACKLOG_BATCH, horizonSeconds, names, caps));
            gdb.countInline();
            store.realignLine(key, now, b.requestRate(), BACKLOG_BATCH, names, caps)
                    .forEach((type, n) -> reserved.merge(type, n, Integer::sum));
            placeBacklog(key, b, now, t, names, caps, reserved);
            if (!reserved.isEmpty()) {
                LOG.debug("Reserved bucket permits of {} for waiting jobs, or places in its waiting line: {}", key, reserved);
            }
            return reserved;
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not reserve bucket permits for the backlog of {} (its jobs take them one by one): {}",
                    key, e.toString());
            return Map.of();
        }
    }

    /** The job types whose jobs a backlog statement may move, their reschedule caps, and the shortest maxDeferral. */
    private record Movable(List<String> names, List<Integer> caps, Duration horizon) {}

    /** The types of {@code types} a statement may move behind bucket {@code b}; null when none. */
    private static Movable movable(BucketSettings b, List<ProviderGate.BacklogType> types) {
        List<String> names = new ArrayList<>();
        List<Integer> caps = new ArrayList<>();
        Duration horizon = null;
        for (ProviderGate.BacklogType bt : types) {
            if (bt.countsTokens() && b.limitsTokens()) {
                continue;
            }
            names.add(bt.name());
            caps.add(bt.maxReschedules());
            horizon = horizon == null || bt.maxDeferral().compareTo(horizon) < 0 ? bt.maxDeferral() : horizon;
        }
        return names.isEmpty() ? null : new Movable(names, caps, horizon);
    }

    /**
     * After a job of the key booked a permit a place in its waiting line stood for: the line's
     * jobs whose places' permits are gone move to its end ({@link JobStore#realignLine}), a write
     * for each permit booked ahead of the line instead of one for each job behind it. Skipped while
     * another worker realigns the key. Never throws.
     *
     * @return how many jobs of each type were moved (empty when none)
     */
    Map<String, Integer> realignLine(String key, BucketSettings b, List<ProviderGate.BacklogType> types, Instant now) {
        Movable m = b == null || b.requestRate() <= 0 ? null : movable(b, types);
        if (m == null) {
            return Map.of();
        }
        try {
            gdb.countInline();
            return store.realignLine(key, now, b.requestRate(), BACKLOG_BATCH, m.names(), m.caps());
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not realign the waiting line of {} (its jobs are booked again as they come due): {}",
                    key, e.toString());
            return Map.of();
        }
    }

    /**
     * The rest of a backlog deeper than the booking horizon: placed in the key's waiting line, a
     * statement at a time while each comes back full (within {@link #BACKLOG_ROUNDS_BUDGET}), by
     * one thread of this instance at a time, whatever the key. None of these statements holds the
     * bucket row.
     */
    private void placeBacklog(String key, BucketSettings b, Instant now, long t0, List<String> names,
            List<Integer> caps, Map<String, Integer> moved) {
        // one placement at a time in this instance, whatever the key: it runs on a worker thread, and ten keys
        // with deep backlogs placing at once took every thread of the worker (measured: 0 jobs for 80 s)
        java.util.concurrent.atomic.AtomicBoolean busy = placing;
        if (!busy.compareAndSet(false, true)) {
            return;
        }
        try {
            for (int round = 0; round < BACKLOG_MAX_ROUNDS; round++) {
                gdb.countInline();
                Map<String, Integer> r = store.placeBacklog(key, now.plusNanos(System.nanoTime() - t0), b.requestRate(),
                        BACKLOG_BATCH, names, caps);
                r.forEach((type, n) -> moved.merge(type, n, Integer::sum));
                if (r.values().stream().mapToInt(Integer::intValue).sum() < BACKLOG_BATCH
                        || System.nanoTime() - t0 > BACKLOG_ROUNDS_BUDGET.toNanos()) {
                    return;
                }
            }
        } finally {
            busy.set(false);
        }
    }

    static String describe(BucketSettings b) {
        List<String> parts = new ArrayList<>();
        if (b.requestsPerMinute() > 0) {
            parts.add(trim(b.requestsPerMinute()) + " requests/min");
        }
        if (b.tokensPerMinute() > 0) {
            parts.add(trim(b.tokensPerMinute()) + " tokens/min");
        }
        if (b.inputTokensPerMinute() > 0) {
            parts.add(trim(b.inputTokensPerMinute()) + " input tokens/min");
        }
        if (b.outputTokensPerMinute() > 0) {
            parts.add(trim(b.outputTokensPerMinute()) + " output tokens/min");
        }
        return String.join(", ", parts);
    }

    static String trim(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
