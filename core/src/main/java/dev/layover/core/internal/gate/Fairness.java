package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.provider.TokenDimension;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.FairnessSettings;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A provider key's permits shared among the fairness keys of its jobs ({@code docs/fairness.md}):
 * a job with a fairness key that needs a permit asks for it in a round of the key's fair queue
 * ({@link FairSql#ROUND}) instead of taking the next free one; and each key this instance knows
 * to have waiting jobs gets a round every half horizon from the pump thread, so that permits
 * are booked in tag order while the queue lasts. Rounds of one key are serial fleet-wide (the
 * key's rows are locked for each), so any number of instances may pump.
 *
 * <p>The permit is a bucket's (requests, and tokens at each job's estimated cost) or, for a key
 * with a concurrency limit, a free slot ({@link #admitSlot}).
 */
final class Fairness {

    private static final Logger LOG = LoggerFactory.getLogger(Fairness.class);

    /** Jobs one round tags at most. */
    static final int MAX_TAG = 10_000;

    /** The round's answer. {@code carried} null: the key has no row of the limit; {@code shares} null: none read. */
    record Round(Boolean carried, Instant slot, Instant estimate, int booked, int tagged, boolean waiting,
            double[] shares) {}

    /**
     * What a key's fair queue shares: its bucket, or (slots above 0) its concurrency limit, whose
     * free slots are the permits; a slot counts as free when its holder's heartbeat is older than
     * {@code deadAfter}.
     */
    record Limit(BucketSettings bucket, int slots, Duration deadAfter) {

        static Limit of(BucketSettings b) {
            return new Limit(b, 0, null);
        }

        boolean isSlots() {
            return slots > 0;
        }
    }

    private final GateDb gdb;
    private final Duration permitGrace;
    private final TokenLedger ledger;
    private volatile FairnessSettings settings = FairnessSettings.defaults();
    private final Set<String> pumped = ConcurrentHashMap.newKeySet();
    /** Keys whose fair queue shares a concurrency limit, met by {@link #admitSlot}: their limit. */
    private final Map<String, Limit> slotKeys = new ConcurrentHashMap<>();
    private volatile ScheduledExecutorService pump;
    private volatile long lastWarned;

    /** @param ledger where a booking of a bucket that limits tokens becomes the run's reservation */
    Fairness(GateDb gdb, Duration permitGrace, TokenLedger ledger) {
        this.gdb = gdb;
        this.permitGrace = permitGrace;
        this.ledger = ledger;
    }

    void configure(FairnessSettings s) {
        this.settings = s;
    }

    FairnessSettings settings() {
        return settings;
    }

    /**
     * Writes the configured weights and starts the pump.
     *
     * @param bucketOf the bucket a key's calls pass now (null: none), read at every pump round
     * @param now the gate's clock
     * @param held whether a key's calls are held now (a cooldown, a breaker not closed): no pump
     *     round books permits its jobs would be refused at
     */
    synchronized void start(Function<String, BucketSettings> bucketOf, java.util.function.Supplier<Instant> now,
            java.util.function.Predicate<String> held) {
        for (Map.Entry<String, Double> w : settings.weights().entrySet()) {
            gdb.inline("configuring the fairness weight of " + w.getKey(), c -> {
                try (PreparedStatement ps = c.prepareStatement(FairSql.CONFIGURE_WEIGHT)) {
                    Db.bind(ps, w.getKey(), w.getValue(), w.getValue(), gdb.workerName);
                    return ps.executeUpdate();
                }
            });
        }
        if (pump != null) {
            return;
        }
        ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "layover-fair-pump-" + gdb.workerName);
            t.setDaemon(true);
            return t;
        });
        long every = Math.max(10, settings.horizon().toMillis() / 2);
        s.scheduleWithFixedDelay(() -> pumpOnce(bucketOf, now, held), every, every, TimeUnit.MILLISECONDS);
        pump = s;
        this.pumpNow = () -> pumpOnce(bucketOf, now, held);
    }

    private volatile Runnable pumpNow;
    private final java.util.concurrent.atomic.AtomicBoolean nudged = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * A run of this instance ended and its row is gone: when a key's fair queue shares a
     * concurrency limit, its slot is free now, so the pump runs a round at once instead of at its
     * next tick (the next job in line is called without waiting half a horizon). Coalesced: one
     * extra pass at a time. Never blocks.
     */
    void nudge() {
        ScheduledExecutorService s = pump;
        Runnable r = pumpNow;
        if (slotKeys.isEmpty() || s == null || r == null || !nudged.compareAndSet(false, true)) {
            return;
        }
        try {
            s.execute(() -> {
                nudged.set(false);
                r.run();
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            nudged.set(false); // stopping
        }
    }

    synchronized void stop() {
        if (pump != null) {
            pump.shutdownNow();
            pump = null;
        }
        pumped.clear();
        slotKeys.clear();
    }

    /** @return the keys this instance pumps now (for tests and the console) */
    Set<String> pumped() {
        return Set.copyOf(pumped);
    }

    private void pumpOnce(Function<String, BucketSettings> bucketOf, java.util.function.Supplier<Instant> now,
            java.util.function.Predicate<String> held) {
        for (String key : pumped) {
            if (held.test(key)) {
                continue; // cooling down or breaker not closed: permits booked now would only be refused
            }
            try {
                Limit limit = slotKeys.get(key);
                if (limit == null) {
                    BucketSettings b = bucketOf.apply(key);
                    if (!fair(b)) {
                        pumped.remove(key);
                        continue;
                    }
                    limit = Limit.of(b);
                }
                Round r = round(key, limit, now.get(), null);
                if (r.carried() == null || !r.waiting()) {
                    pumped.remove(key);
                }
            } catch (RuntimeException e) {
                long t = System.nanoTime();
                if (t - lastWarned > TimeUnit.MINUTES.toNanos(1)) {
                    lastWarned = t;
                    LOG.warn("Layover: a round of the fair queue of {} failed (its jobs wait for their estimates, and the "
                            + "next pick of one asks again): {}", key, e.toString());
                }
            }
        }
    }

    /** @return whether a job with a fairness key passes {@code b} through its fair queue (requests or tokens limited) */
    static boolean fair(BucketSettings b) {
        return b != null && (b.requestRate() > 0 || b.limitsTokens());
    }

    /**
     * A job's permit from its key's fair queue: the held permit spent, a permit booked in its turn
     * (now: go), or its place in the queue (wait, holding no permit). When the bucket limits
     * tokens, the booking (the job's estimate times the key's shares) becomes the run's token
     * reservation, settled after the call.
     *
     * @param configure writes the bucket row when it is missing; null for a learned pace
     * @return go or wait; null when the job is not in the queue (its row has no fairness key: it
     *     was enqueued by a version without one) or a learned pace's row is missing: the caller
     *     admits it as a job without a fairness key
     */
    Admission admit(KeyState ks, BucketSettings b, Instant now, ProviderRun run, Runnable configure) {
        Turn t = turn(ks.key, Limit.of(b), now, run, configure);
        if (t != null && t.admission() instanceof Admission.Go && b.limitsTokens()) {
            ledger.reserveBooked(ks.key, b, run, t.shares());
        }
        return t == null ? null : t.admission();
    }

    /**
     * A job's turn at a free slot of its key's concurrency limit ({@code docs/fairness.md}): go
     * (the caller then claims the slot as every job does), or its place in the queue (wait,
     * holding no slot; a round calls it when a slot is free in its turn).
     *
     * @param configure writes the limit's rows when they are missing
     * @return go or wait; null when the job is not in the queue (as {@link #admit})
     */
    Admission admitSlot(String key, int slots, Duration deadAfter, Instant now, ProviderRun run, Runnable configure) {
        Limit limit = new Limit(null, slots, deadAfter);
        slotKeys.put(key, limit);
        Turn t = turn(key, limit, now, run, configure);
        return t == null ? null : t.admission();
    }

    /** A job's answer from its fair queue, with the key's token shares the round read (null: none). */
    private record Turn(Admission admission, double[] shares) {}

    private Turn turn(String key, Limit limit, Instant now, ProviderRun run, Runnable configure) {
        for (int tries = 0; tries < 2; tries++) {
            Round r = round(key, limit, now, run);
            if (r.carried() == null) {
                if (configure == null) {
                    return null;
                }
                configure.run();
                continue;
            }
            if (r.waiting()) {
                pumped.add(key);
            }
            String what = limit.isSlots() ? "a slot of its concurrency limit (" + limit.slots() + ")"
                    : "a permit of its bucket (" + Buckets.describe(limit.bucket()) + ")";
            if (r.carried() || (r.slot() != null && !r.slot().isAfter(now))) {
                return new Turn(ProviderGate.GO, r.shares());
            }
            // a wait for a slot, or for a turn without a permit, is a hold (no reschedule counted, never parked)
            String reason = limit.isSlots() ? Limits.CONCURRENCY : Limits.FAIR;
            if (r.slot() != null) {
                // a permit within the horizon: wait for it here rather than be written back and picked again at it
                // (a late tenant's first job would lose the pick's delay too)
                if (Duration.between(now, r.slot()).compareTo(settings.horizon()) <= 0 && awaitSlot(now, r.slot())) {
                    return new Turn(ProviderGate.GO, r.shares());
                }
                return new Turn(new Admission.Wait(r.slot(), reason, "fair share of " + key + ": " + what
                        + " booked in the turn of " + run.fairnessKey() + " at " + r.slot(), r.slot()), null);
            }
            if (r.estimate() != null) {
                return new Turn(new Admission.Wait(r.estimate(), reason, "fair share of " + key + ": " + run.fairnessKey()
                        + " waits its turn among the key's fairness keys for " + what + " (about " + r.estimate() + ")",
                        null), null);
            }
            return null;
        }
        throw new IllegalStateException("the " + (limit.isSlots() ? "concurrency limit" : "bucket") + " row of " + key
                + " could not be created");
    }

    /**
     * An operator's weight for a fairness key or pattern ({@link FairSql#SET_WEIGHT}).
     *
     * @return the weight in force before; null when the pattern had none of its own
     */
    Double setWeight(String pattern, double weight, String by, String reason) {
        dev.layover.core.provider.state.FairnessSettings.defaults().withWeight(pattern, weight); // validates
        return gdb.inline("setting the fairness weight of " + pattern, c -> {
            try (PreparedStatement ps = c.prepareStatement(FairSql.SET_WEIGHT)) {
                Db.bind(ps, pattern, weight, by, reason);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    double before = rs.getDouble(1);
                    return rs.wasNull() ? null : before;
                }
            }
        });
    }

    /**
     * Reverts an operator's weight ({@link FairSql#REVERT_WEIGHT}).
     *
     * @return the operator's weight removed; null when the pattern had none
     */
    Double revertWeight(String pattern, String by) {
        return gdb.inline("reverting the fairness weight of " + pattern, c -> {
            try (PreparedStatement ps = c.prepareStatement(FairSql.REVERT_WEIGHT)) {
                Db.bind(ps, pattern, by);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getDouble(1) : null;
                }
            }
        });
    }

    /** Sleeps until {@code slot} ({@code now} on the gate's clock); false when interrupted (the worker stops). */
    private static boolean awaitSlot(Instant now, Instant slot) {
        long ms = Duration.between(now, slot).toMillis();
        if (ms <= 0) {
            return true;
        }
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** One {@link FairSql#ROUND}; {@code run} null: a pump round. */
    Round round(String key, Limit limit, Instant now, ProviderRun run) {
        FairnessSettings s = settings;
        BucketSettings b = limit.bucket();
        boolean slots = limit.isSlots();
        double rr = slots ? 0 : b.requestRate();
        // cost units a second the limit serves: request permits, seconds when only tokens are limited, a guess of
        // one call a second per slot for a concurrency limit (estimates only: rounds book in tag order whatever they say)
        double rate = slots ? limit.slots() : rr > 0 ? rr : 1;
        return gdb.inline("a round of the fair queue of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(FairSql.ROUND)) {
                Db.bind(ps, key, ts(now), slots ? "slots" : "bucket", rr, slots ? 0 : b.requestCapacity(),
                        dimension(b, TokenDimension.TOKENS, false), dimension(b, TokenDimension.TOKENS, true),
                        dimension(b, TokenDimension.INPUT_TOKENS, false), dimension(b, TokenDimension.INPUT_TOKENS, true),
                        dimension(b, TokenDimension.OUTPUT_TOKENS, false), dimension(b, TokenDimension.OUTPUT_TOKENS, true),
                        limit.slots(), slots ? seconds(limit.deadAfter()) : 0.0, rate, seconds(s.horizon()),
                        s.lowPriorityShare(), MAX_TAG, run == null ? null : run.taskName(), run == null ? null : run.jobId(),
                        run == null ? null : run.version(), seconds(permitGrace));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    Object carried = rs.getObject("carried");
                    double[] shares = null;
                    if (rs.getObject("token_share") != null || rs.getObject("input_share") != null
                            || rs.getObject("output_share") != null) {
                        shares = new double[] {share(rs, "token_share"), share(rs, "input_share"), share(rs, "output_share")};
                    }
                    return new Round(carried == null ? null : (Boolean) carried, instant(rs, "slot"),
                            instant(rs, "estimate"), rs.getInt("booked"), rs.getInt("tagged"), rs.getBoolean("waiting"),
                            shares);
                }
            }
        });
    }

    /** A token dimension's rate (/s) or capacity; 0 when the bucket does not limit it (or there is no bucket). */
    private static double dimension(BucketSettings b, TokenDimension d, boolean capacity) {
        if (b == null || b.rate(d) <= 0) {
            return 0;
        }
        return capacity ? b.capacity(d) : b.rate(d);
    }

    /** A share as the token bookings use it: clamped to [0.05, 1], none learned: 1. */
    private static double share(ResultSet rs, String column) throws java.sql.SQLException {
        double v = rs.getDouble(column);
        return rs.wasNull() ? 1 : Math.min(1, Math.max(0.05, v));
    }
}
