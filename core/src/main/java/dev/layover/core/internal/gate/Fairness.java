package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.gate.GateDb.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

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
 */
final class Fairness {

    private static final Logger LOG = LoggerFactory.getLogger(Fairness.class);

    /** Jobs one round tags at most. */
    static final int MAX_TAG = 10_000;

    /** The round's answer. {@code carried} null: the key has no request bucket row. */
    record Round(Boolean carried, Instant slot, Instant estimate, int booked, int tagged, boolean waiting) {}

    private final GateDb gdb;
    private final Duration permitGrace;
    private volatile FairnessSettings settings = FairnessSettings.defaults();
    private final Set<String> pumped = ConcurrentHashMap.newKeySet();
    private volatile ScheduledExecutorService pump;
    private volatile long lastWarned;

    Fairness(GateDb gdb, Duration permitGrace) {
        this.gdb = gdb;
        this.permitGrace = permitGrace;
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
    }

    synchronized void stop() {
        if (pump != null) {
            pump.shutdownNow();
            pump = null;
        }
        pumped.clear();
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
                BucketSettings b = bucketOf.apply(key);
                if (!fair(b)) {
                    pumped.remove(key);
                    continue;
                }
                Round r = round(key, b, now.get(), null);
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

    /** @return whether a job with a fairness key passes {@code b} through its fair queue */
    static boolean fair(BucketSettings b) {
        return b != null && b.requestRate() > 0 && !b.limitsTokens();
    }

    /**
     * A job's permit from its key's fair queue: the held permit spent, a permit booked in its turn
     * (now: go), or its place in the queue (wait, holding no permit).
     *
     * @param configure writes the bucket row when it is missing; null for a learned pace
     * @return go or wait; null when the job is not in the queue (its row has no fairness key: it
     *     was enqueued by a version without one) or a learned pace's row is missing: the caller
     *     admits it as a job without a fairness key
     */
    Admission admit(KeyState ks, BucketSettings b, Instant now, ProviderRun run, Runnable configure) {
        for (int tries = 0; tries < 2; tries++) {
            Round r = round(ks.key, b, now, run);
            if (r.carried() == null) {
                if (configure == null) {
                    return null;
                }
                configure.run();
                continue;
            }
            if (r.waiting()) {
                pumped.add(ks.key);
            }
            if (r.carried()) {
                return ProviderGate.GO;
            }
            if (r.slot() != null) {
                if (!r.slot().isAfter(now)) {
                    return ProviderGate.GO;
                }
                return new Admission.Wait(r.slot(), "fair", "fair share of " + ks.key + ": a permit of its bucket ("
                        + Buckets.describe(b) + ") booked in the turn of " + run.fairnessKey() + " at " + r.slot(), r.slot());
            }
            if (r.estimate() != null) {
                return new Admission.Wait(r.estimate(), "fair", "fair share of " + ks.key + ": " + run.fairnessKey()
                        + " waits its turn among the key's fairness keys (about " + r.estimate() + ")", null);
            }
            return null;
        }
        throw new IllegalStateException("the bucket row of " + ks.key + " could not be created");
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

    /** One {@link FairSql#ROUND}; {@code run} null: a pump round. */
    Round round(String key, BucketSettings b, Instant now, ProviderRun run) {
        FairnessSettings s = settings;
        return gdb.inline("a round of the fair queue of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(FairSql.ROUND)) {
                Db.bind(ps, key, ts(now), b.requestRate(), b.requestCapacity(), seconds(s.horizon()), s.lowPriorityShare(),
                        MAX_TAG, run == null ? null : run.taskName(), run == null ? null : run.jobId(),
                        run == null ? null : run.version(), seconds(permitGrace));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    Object carried = rs.getObject("carried");
                    return new Round(carried == null ? null : (Boolean) carried, instant(rs, "slot"),
                            instant(rs, "estimate"), rs.getInt("booked"), rs.getInt("tagged"), rs.getBoolean("waiting"));
                }
            }
        });
    }
}
