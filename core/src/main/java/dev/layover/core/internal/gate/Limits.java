package dev.layover.core.internal.gate;

import static dev.layover.core.internal.time.Durations.seconds;

import dev.layover.core.internal.keys.KeyPatterns;
import dev.layover.core.internal.time.Backoff;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.TokenDimension;
import dev.layover.core.tokens.TokenEstimate;

/**
 * Admission for jobs with more than one limit: fleet-wide concurrency limits, and buckets on keys
 * other than the job's provider key (a tenant key), all claimed at once. Internal: used by
 * Layover's engine; see {@code docs/admission-and-control.md}.
 *
 * <p>A job's keys are its provider key and its limit keys ({@code JobType.Builder#limitKeys}). Each
 * key may have a concurrency limit and a bucket, configured exactly or by a {@code prefix*} pattern
 * (each key matching the pattern gets a limit of its own). When none of a job's keys has a
 * concurrency limit and only its provider key has a bucket, the job takes the usual path
 * ({@link ProviderGate#admit}: no extra statement). Otherwise the provider key's breaker, cooldown
 * and trial are checked as usual, then one call of {@code layover.admit_tokens} takes a permit
 * from every bucket and a slot of every concurrency limit, or nothing at all (see its comment in
 * the migration).
 */
public final class Limits {

    private static final Logger LOG = LoggerFactory.getLogger(Limits.class);

    /** The reason of a wait for a concurrency slot: a hold, not a reschedule (no cap, no attempt). */
    public static final String CONCURRENCY = "concurrency";

    /** The reason of a wait for a turn in a provider key's fair queue (docs/fairness.md). */
    public static final String FAIR = "fair";

    private static final Duration FAIL_CLOSED_DELAY = Duration.ofSeconds(5);

    /**
     * The limits of a Layover instance.
     *
     * @param concurrency concurrency limits by key; a key ending in {@code *} is a pattern: every
     *     key starting with what precedes it gets that limit of its own
     * @param buckets buckets by key (the provider state's exact buckets and the patterns)
     * @param deadAfter how old a job's heartbeat may be before its slot counts as free (the
     *     dead-worker limit: heartbeat interval times missed heartbeats)
     */
    public record Config(Map<String, Integer> concurrency, Map<String, BucketSettings> buckets, Duration deadAfter) {

        /** Copies the maps, checks the limits. */
        public Config {
            concurrency = Map.copyOf(concurrency);
            buckets = Map.copyOf(buckets);
            Objects.requireNonNull(deadAfter, "deadAfter");
            for (Map.Entry<String, Integer> e : concurrency.entrySet()) {
                if (e.getValue() < 1) {
                    throw new IllegalArgumentException("concurrency limit of " + e.getKey() + " must be at least 1");
                }
            }
        }

        /** @return no limits */
        public static Config none() {
            return new Config(Map.of(), Map.of(), Duration.ofSeconds(40));
        }
    }

    private final Db db;
    private final Clock clock;
    private final String workerName;
    private final Config config;
    private final ProviderGate gate;
    private final boolean anyConcurrency;
    private final boolean anyPatternBucket;
    /** Keys whose limit rows this instance wrote; forgotten wholesale past {@link #MAX_CONFIGURED}. */
    private final ConcurrentHashMap<String, Boolean> configured = new ConcurrentHashMap<>();
    private static final int MAX_CONFIGURED = 100_000;
    /** A lock per key while its rows are written (single flight). */
    private final ConcurrentHashMap<String, Object> configuring = new ConcurrentHashMap<>();

    /**
     * @param db the database
     * @param clock the clock
     * @param workerName this instance's worker name (written with a claimed slot)
     * @param config the limits
     */
    public Limits(Db db, Clock clock, String workerName, Config config) {
        this(db, clock, workerName, config, null);
    }

    /**
     * @param db the database
     * @param clock the clock
     * @param workerName this instance's worker name (written with a claimed slot)
     * @param config the limits
     * @param gate whose operators' overrides ({@code layover.limit_overrides}) replace configured
     *     limits; null: none
     */
    public Limits(Db db, Clock clock, String workerName, Config config, ProviderGate gate) {
        this.db = db;
        this.clock = clock;
        this.workerName = workerName;
        this.config = config;
        this.gate = gate;
        this.anyConcurrency = !config.concurrency().isEmpty();
        this.anyPatternBucket = config.buckets().keySet().stream().anyMatch(Limits::isPattern);
    }

    /** @return the limits */
    public Config config() {
        return config;
    }

    /**
     * Whether a job with these keys needs {@link #admit}: a concurrency limit on one of its keys,
     * or a bucket on a key other than its provider key. Never touches the database.
     *
     * @param providerKey the job's provider key, or null
     * @param limitKeys its limit keys
     * @return true when the job must be admitted here rather than by {@link ProviderGate#admit}
     */
    public boolean applies(String providerKey, List<String> limitKeys) {
        if (!anyConcurrency && limitKeys.isEmpty() && (gate == null || !gate.anyConcurrencyOverride())) {
            return false;
        }
        if (providerKey != null && concurrencyOf(providerKey) > 0) {
            return true;
        }
        for (String k : limitKeys) {
            if (concurrencyOf(k) > 0 || bucketOf(k) != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * Admits a job against every limit of its keys, all or nothing: first the provider key's
     * breaker, cooldown and half-open trial ({@link ProviderGate#admitState}), then one call of
     * {@code layover.admit_tokens} for the buckets and concurrency limits of all its keys. When the
     * limits refuse, a trial claimed for the provider key is given back. Never throws: a database
     * error gives a wait of 5 s (fail closed), logged.
     *
     * @param gate the provider state
     * @param run the job's run (its provider key, token estimate, job and version)
     * @param limitKeys the job's limit keys
     * @return go; wait (reason {@code bucket}: run again when every bucket has a permit, or
     *     {@link #CONCURRENCY}: no slot now, hold briefly); or refuse (the provider key's breaker
     *     is open)
     */
    public Admission admit(ProviderGate gate, ProviderRun run, List<String> limitKeys) {
        Admission state = gate.admitState(run);
        if (!(state instanceof Admission.Go go)) {
            return state;
        }
        String trial = go.trialToken();
        Admission limits = null;
        int slots = run.providerKey() == null || run.fairnessKey() == null ? 0 : concurrencyOf(run.providerKey());
        if (slots > 0) { // a fair share of the provider key's slots: the job's turn first (docs/fairness.md)
            String key = run.providerKey();
            configure(key, bucketOf(key), slots); // once per key: a round finding no row would have every thread write it
            Admission turn = gate.admitFairSlot(run, slots, config.deadAfter(), () -> {
                configured.remove(key);
                configure(key, bucketOf(key), slots);
            });
            if (turn != null && !(turn instanceof Admission.Go)) {
                limits = turn;
            }
        }
        try {
            if (limits == null) {
                limits = claim(gate, run, limitKeys);
            }
        } catch (RuntimeException e) {
            Instant now = clock.instant();
            LOG.warn("Layover fails closed: cannot claim the limits of job {}/{} ({}); the job waits {} s without "
                    + "spending an attempt", run.taskName(), run.jobId(), e.getMessage(), FAIL_CLOSED_DELAY.toSeconds());
            limits = new Admission.Wait(now.plus(FAIL_CLOSED_DELAY).plus(Backoff.rescheduleJitter(FAIL_CLOSED_DELAY)),
                    "provider_state_unavailable", GateDb.cut("cannot claim the limits: " + e.getMessage()), null);
        }
        if (!(limits instanceof Admission.Go) && trial != null) {
            gate.giveBackTrial(run.providerKey(), trial);
            run.trialToken(null);
        }
        return limits instanceof Admission.Go ? state : limits;
    }

    private Admission claim(ProviderGate gate, ProviderRun run, List<String> limitKeys) {
        TreeSet<String> sorted = new TreeSet<>(limitKeys);
        if (run.providerKey() != null) {
            sorted.add(run.providerKey());
        }
        List<String> keys = new ArrayList<>();
        List<Double> rr = new ArrayList<>();
        List<Double> rc = new ArrayList<>();
        List<Double> tr = new ArrayList<>();
        List<Double> tc = new ArrayList<>();
        List<Double> ir = new ArrayList<>();
        List<Double> ic = new ArrayList<>();
        List<Double> or = new ArrayList<>();
        List<Double> oc = new ArrayList<>();
        List<Integer> max = new ArrayList<>();
        Map<String, String> describe = new LinkedHashMap<>();
        for (String k : sorted) {
            BucketSettings b = bucketOf(k);
            boolean learned = false;
            if (b == null && k.equals(run.providerKey())) {
                b = gate.learnedBucket(k); // a pace learned from a 429: its row exists, never configured from here
                learned = b != null;
            }
            int m = concurrencyOf(k);
            if (b == null && m == 0) {
                continue;
            }
            String big = b == null ? null : TokenLedger.tooLarge(k, b, run.estimate());
            if (big != null) {
                return new Admission.TooLarge(GateDb.cut(big));
            }
            keys.add(k);
            rr.add(b == null ? 0 : b.requestRate());
            rc.add(b == null ? 0 : b.requestCapacity());
            tr.add(b == null ? 0 : b.tokenRate());
            tc.add(b == null ? 0 : b.tokenCapacity());
            ir.add(b == null ? 0 : b.rate(TokenDimension.INPUT_TOKENS));
            ic.add(b == null ? 0 : b.capacity(TokenDimension.INPUT_TOKENS));
            or.add(b == null ? 0 : b.rate(TokenDimension.OUTPUT_TOKENS));
            oc.add(b == null ? 0 : b.capacity(TokenDimension.OUTPUT_TOKENS));
            max.add(m);
            configure(k, learned ? null : b, m);
        }
        if (keys.isEmpty()) {
            return new Admission.Go(null);
        }
        TokenEstimate e = run.estimate();
        for (int tries = 0; tries < 2; tries++) {
            Instant now = clock.instant().truncatedTo(ChronoUnit.MICROS);
            Object[] row = db.autocommit("claiming the limits of job " + run.taskName() + "/" + run.jobId(), c -> {
                try (PreparedStatement ps = c.prepareStatement(LimitSql.ADMIT)) {
                    Db.bind(ps, GateDb.ts(now), run.taskName(), run.jobId(), run.version(), workerName,
                            c.createArrayOf("text", keys.toArray()), c.createArrayOf("float8", rr.toArray()),
                            c.createArrayOf("float8", rc.toArray()), c.createArrayOf("float8", tr.toArray()),
                            c.createArrayOf("float8", tc.toArray()), c.createArrayOf("float8", ir.toArray()),
                            c.createArrayOf("float8", ic.toArray()), c.createArrayOf("float8", or.toArray()),
                            c.createArrayOf("float8", oc.toArray()), c.createArrayOf("int4", max.toArray()),
                            (double) e.totalTokens(), (double) e.inputTokens(), (double) e.outputCeiling(),
                            seconds(config.deadAfter()));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return new Object[] {rs.getBoolean("admitted"), rs.getString("reason"), rs.getString("limit_key"),
                                GateDb.instant(rs, "retry_at")};
                    }
                }
            });
            if ((Boolean) row[0]) {
                for (int i = 0; i < keys.size(); i++) { // the tokens taken are settled after the call
                    double[] rates = {tr.get(i), ir.get(i), or.get(i)};
                    if (rates[0] > 0 || rates[1] > 0 || rates[2] > 0) {
                        run.reserved(new TokenLedger.Reservation(keys.get(i), rates, new long[] {
                                rates[0] > 0 ? e.totalTokens() : 0, rates[1] > 0 ? e.inputTokens() : 0,
                                rates[2] > 0 ? e.outputCeiling() : 0}));
                    }
                }
                return new Admission.Go(null);
            }
            String reason = (String) row[1];
            String key = (String) row[2];
            if (reason.startsWith("missing_")) {
                configured.remove(key);
                int i = keys.indexOf(key);
                configure(key, bucketOf(key), i < 0 ? 0 : max.get(i));
                continue;
            }
            if (reason.equals("bucket")) {
                Instant at = (Instant) row[3];
                Duration wait = Duration.between(now, at);
                return new Admission.Wait(at.plus(Backoff.rescheduleJitter(wait)), "bucket",
                        GateDb.cut("no permit of " + key + "'s bucket before " + at
                                + (keys.size() > 1 ? " (nothing taken from the other limits of the job: " + others(keys, key)
                                        + ")" : "")), null);
            }
            int i = keys.indexOf(key);
            return new Admission.Wait(now, CONCURRENCY, GateDb.cut("all " + (i < 0 ? "?" : max.get(i))
                    + " concurrency slots of " + key + " are in flight"
                    + (keys.size() > 1 ? " (nothing taken from the other limits of the job: " + others(keys, key) + ")"
                            : "")), null);
        }
        throw new IllegalStateException("the limit rows of " + keys + " could not be created");
    }

    private static String others(List<String> keys, String but) {
        List<String> o = new ArrayList<>(keys);
        o.remove(but);
        return String.join(", ", o);
    }

    /** Writes a key's concurrency limit and bucket the first time this instance meets the key. */
    private void configure(String key, BucketSettings b, int max) {
        if (configured.containsKey(key)) {
            return;
        }
        Object lock = configuring.computeIfAbsent(key, k -> new Object());
        try {
            synchronized (lock) { // threads meeting a new key at once write its rows once, not each in turn on its row lock
                if (!configured.containsKey(key)) {
                    write(key, b, max);
                }
            }
        } finally {
            configuring.remove(key, lock);
        }
    }

    private void write(String key, BucketSettings b, int max) {
        db.autocommit("configuring the limits of " + key, c -> {
            if (max > 0) {
                try (PreparedStatement ps = c.prepareStatement(LimitSql.CONFIGURE_CONCURRENCY)) {
                    Db.bind(ps, key, max, workerName);
                    ps.execute();
                }
            }
            if (b != null) {
                TokenLedger.configure(c, key, b, workerName);
            }
            return null;
        });
        if (configured.size() >= MAX_CONFIGURED) {
            configured.clear(); // writing a key's limits again is harmless (an upsert); memory is not
        }
        configured.put(key, Boolean.TRUE);
    }

    /** @return the concurrency limit of a key (exact, else the longest matching pattern), or 0 */
    public int concurrencyOf(String key) {
        Integer n = lookup(config.concurrency(), key);
        int configured = n == null ? 0 : n;
        return gate == null ? configured : gate.concurrencyOf(key, configured);
    }

    /** @return the bucket of a key (exact, else the longest matching pattern), or null */
    BucketSettings bucketOf(String key) {
        BucketSettings configured = anyPatternBucket ? lookup(config.buckets(), key) : config.buckets().get(key);
        return gate == null ? configured : gate.bucketOf(key, configured);
    }

    /**
     * @param map settings by exact key or {@code prefix*} pattern
     * @param key a key
     * @param <T> the settings type
     * @return {@link KeyPatterns#lookup}'s answer
     */
    public static <T> T lookup(Map<String, T> map, String key) {
        return KeyPatterns.lookup(map, key);
    }

    /**
     * @param key a configured key
     * @return whether it is a pattern ({@link KeyPatterns#isPattern})
     */
    public static boolean isPattern(String key) {
        return KeyPatterns.isPattern(key);
    }
}
