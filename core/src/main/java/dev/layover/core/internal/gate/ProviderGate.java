package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.cut;

import dev.layover.core.spi.Db;
import dev.layover.core.internal.observe.SafeMetrics;
import dev.layover.core.internal.time.Backoff;
import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BreakerListener;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.InteractiveSettings;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet-wide provider state as one Layover instance sees it. A job's own key admits it at the
 * pick ({@code layover.pick}); the gate checks, from memory, that nothing this worker learnt since
 * forbids the call ({@link #stillAdmits}), admits the calls a handler makes to other keys (a
 * fallback chain's endpoints, a key pool's keys: {@link #admitEndpoint}) and calls made outside jobs
 * ({@link #admitInteractive}, for {@link InteractiveHandle}), and records what each
 * call taught (cooldowns, breaker successes and failures, learned and discovered paces). A facade
 * over its parts, each with one job: {@link StateCache} (what is known of each key and how it stays
 * fresh), {@link Breakers}, {@link Cooldowns}, {@link Paces}, {@link Discovery}, {@link Buckets},
 * {@link Fairness} (weights) and {@link BreakerEvents}.
 *
 * <p>Hot path: a job whose key is neither throttled nor failing costs no round trip here. If the
 * state cannot be read, an endpoint's call is not made (fail closed) and the job waits
 * {@link #FAIL_CLOSED_DELAY} without spending an attempt.
 */
public final class ProviderGate {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);

    /** The refresh's staleness bound: older cached state is read again inline. */
    public static final Duration MAX_STALENESS = StateCache.MAX_STALENESS;
    static final Duration FAIL_CLOSED_DELAY = Duration.ofSeconds(5);
    static final Admission GO = new Admission.Go(null);

    /**
     * The provider-state settings of a Layover instance.
     *
     * @param breakers the breaker settings of every key without its own
     * @param perKeyBreakers breaker settings of single keys
     * @param cooldowns cooldown settings
     * @param buckets the buckets, by key or {@code prefix*} pattern
     * @param listeners breaker listeners
     * @param notifications whether to hear other JVMs' changes at once ({@code LISTEN}); without,
     *     the one-second refresh sees them
     */
    public record Config(BreakerSettings breakers, Map<String, BreakerSettings> perKeyBreakers,
            CooldownSettings cooldowns, Map<String, BucketSettings> buckets, List<BreakerListener> listeners,
            boolean notifications) {

        /** Copies the maps. */
        public Config {
            Objects.requireNonNull(breakers, "breakers");
            Objects.requireNonNull(cooldowns, "cooldowns");
            perKeyBreakers = Map.copyOf(perKeyBreakers);
            buckets = Map.copyOf(buckets);
            listeners = List.copyOf(listeners);
        }

        /**
         * Settings that listen for other JVMs' changes.
         *
         * @param breakers the breaker settings of every key without its own
         * @param perKeyBreakers breaker settings of single keys
         * @param cooldowns cooldown settings
         * @param buckets the buckets, by key
         * @param listeners breaker listeners
         */
        public Config(BreakerSettings breakers, Map<String, BreakerSettings> perKeyBreakers, CooldownSettings cooldowns,
                Map<String, BucketSettings> buckets, List<BreakerListener> listeners) {
            this(breakers, perKeyBreakers, cooldowns, buckets, listeners, true);
        }

        /** @return defaults everywhere, no buckets, no listeners */
        public static Config defaults() {
            return new Config(BreakerSettings.defaults(), Map.of(), CooldownSettings.defaults(), Map.of(), List.of());
        }
    }

    private final Config config;
    private final Clock clock;
    private final LayoverMetrics metrics;
    private final GateDb gdb;
    private final BreakerEvents events;
    private final StateCache cache;
    private final Breakers breakers;
    private final Cooldowns cooldowns;
    private final Paces paces;
    private final Buckets buckets;
    private final Discovery discovery;
    private final Fairness fairness;
    private final Overrides overrides;
    private volatile long lastStackLogged = System.nanoTime() - TimeUnit.MINUTES.toNanos(2);

    /**
     * A gate that counts nothing.
     *
     * @param db the database
     * @param clock the clock
     * @param workerName this instance's worker name, written as {@code changed_by}
     * @param config the settings
     */
    public ProviderGate(Db db, Clock clock, String workerName, Config config) {
        this(db, clock, workerName, config, LayoverMetrics.none());
    }

    /**
     * @param db the database
     * @param clock the clock
     * @param workerName this instance's worker name, written as {@code changed_by}
     * @param config the settings
     * @param metrics where provider calls and breaker transitions are counted
     *     ({@code layover.provider.calls}, {@code layover.breaker.transitions}), guarded against
     *     exceptions by the caller
     */
    public ProviderGate(Db db, Clock clock, String workerName, Config config, LayoverMetrics metrics) {
        this.config = config;
        this.clock = clock;
        this.metrics = metrics == null ? LayoverMetrics.none() : metrics;
        this.gdb = new GateDb(db, workerName, clock instanceof dev.layover.core.internal.db.DatabaseClock);
        this.events = new BreakerEvents(config.listeners(), this.metrics, workerName);
        Map<String, BreakerSettings> perKey = config.perKeyBreakers();
        this.cache = new StateCache(gdb, clock, events, key -> perKey.getOrDefault(key, config.breakers()).window(),
                config.notifications());
        this.breakers = new Breakers(gdb, cache, events, config.breakers(), perKey);
        this.cooldowns = new Cooldowns(gdb, cache, config.cooldowns(),
                key -> perKey.getOrDefault(key, config.breakers()).window());
        this.overrides = new Overrides(gdb);
        this.paces = new Paces(gdb, cache, config.cooldowns(), config.buckets(), overrides);
        TokenLedger ledger = new TokenLedger(gdb, this.metrics);
        this.fairness = new Fairness(gdb);
        this.buckets = new Buckets(gdb, ledger);
        this.discovery = new Discovery(gdb, config.cooldowns().discovery(), config.buckets(), buckets);
        cache.onForget(cooldowns::forget);
        cache.onRefresh(overrides::refresh);
        cache.onForget(discovery::forget);
    }

    // ---- lifecycle ------------------------------------------------------------------------

    /** Writes the configured buckets and starts the refresh and NOTIFY threads. */
    public synchronized void start() {
        if (cache.running()) {
            return;
        }
        for (Map.Entry<String, BucketSettings> e : config.buckets().entrySet()) {
            // a pattern's row is copied to each key matching it when a pick or a take first meets the key
            buckets.configure(e.getKey(), e.getValue());
        }
        fairness.start();
        cache.start();
    }

    /**
     * How a key's permits are shared among the fairness keys of its jobs; before {@link #start}.
     *
     * @param s the settings
     */
    public void configureFairness(dev.layover.core.provider.state.FairnessSettings s) {
        fairness.configure(java.util.Objects.requireNonNull(s, "fairness"));
    }

    /** Stops the threads and writes the successes not yet written. */
    public synchronized void stop() {
        if (!cache.running()) {
            return;
        }
        cache.stop();
        events.close();
    }

    // ---- before a call ----------------------------------------------------------------------

    /**
     * The provider side of one job run.
     *
     * @param providerKey the job's key, or null
     * @param taskName the job type
     * @param jobId the job id
     * @param version the row version the run was picked at
     * @param tokens the job's token estimate (0 when none)
     * @param attempt the attempt number the handler sees
     * @return the run
     */
    public ProviderRun newRun(String providerKey, String taskName, String jobId, long version, long tokens, int attempt) {
        long t = Math.min(TokenUsage.MAX_COUNT, Math.max(0, tokens));
        return newRun(providerKey, taskName, jobId, version, t > 0 ? TokenEstimate.total(t) : null, attempt);
    }

    /**
     * The provider side of one job run with a token estimate (reserved with its permit when its
     * key's bucket limits tokens, {@link TokenLedger}).
     *
     * @param providerKey the job's key, or null
     * @param taskName the job type
     * @param jobId the job id
     * @param version the row version the run was picked at
     * @param estimate the job's token estimate, or null when its type has none
     * @param attempt the attempt number the handler sees
     * @return the run
     */
    public ProviderRun newRun(String providerKey, String taskName, String jobId, long version, TokenEstimate estimate,
            int attempt) {
        return new ProviderRun(this, providerKey, taskName, jobId, version, estimate, estimate != null, attempt);
    }

    /** @return the token side of the buckets */
    TokenLedger ledger() {
        return buckets.ledger();
    }

    /**
     * A response's headers stated the key's token limits: learned as the key's token pace unless
     * it has a configured bucket ({@link Paces#learnTokens}). Never throws.
     */
    void learnTokenLimits(String key, RateLimitHeaders h) {
        if (key != null && cache.running()) {
            paces.learnTokens(cache.keyState(key), h, cache.now());
        }
    }

    /**
     * @param key a provider key, or null
     * @param estimate a call's estimate
     * @return why the key's bucket can never admit it (the numbers), or null when it can
     */
    public String tooLarge(String key, TokenEstimate estimate) {
        BucketSettings b = key == null ? null : paces.bucketOf(cache.keyState(key), cache.now());
        return b == null ? null : TokenLedger.tooLarge(key, b, estimate);
    }

    /**
     * Whether a job its pick admitted may still call: what this worker learnt of its key since,
     * from memory (no statement): a cooldown begun (wait; the job is given back to its key's
     * queue, no attempt spent) or a breaker opened (refuse: parked {@code breaker_open}). The
     * breaker's own trial goes. Never throws.
     *
     * @param run the job's run
     * @return go, wait or refuse
     */
    public Admission stillAdmits(ProviderRun run) {
        String key = run.providerKey();
        if (key == null || run.trialToken() != null) {
            return GO;
        }
        KeyState ks = cache.known(key);
        Snapshot s = ks == null ? null : ks.snapshot;
        if (s == null) {
            cache.keyState(key); // met: the refresh keeps it fresh from now on
            return GO;
        }
        Instant now = cache.now();
        if (s.cooldownUntil() != null && s.cooldownUntil().isAfter(now)) {
            return new Admission.Wait(s.cooldownUntil(), "cooldown", cut(key + " began to cool down after this job was "
                    + "picked, until " + s.cooldownUntil() + " (" + s.cooldownReason() + ")"));
        }
        if (s.state() == BreakerState.OPEN && (s.openUntil() == null || s.openUntil().isAfter(now))) {
            return refuse(key, s);
        }
        cache.keyState(key);
        return GO;
    }

    /**
     * Decides whether a call a handler makes to a key its pick did not admit for may go now (a
     * fallback chain's endpoint, a key pool's key): breaker, cooldown and the half-open trial from
     * the cached state, then the key's bucket, if it has one, in one statement ({@link
     * Buckets#take}: taken whole or not at all). Never throws: a database error gives a wait (fail
     * closed), logged.
     *
     * @param key the endpoint's key
     * @param estimate the call's token estimate, or null
     * @param run the run whose reservation it becomes (settled after the call), or null
     * @return go (maybe as the breaker's trial), wait, refuse or too large
     */
    public Admission admitEndpoint(String key, TokenEstimate estimate, ProviderRun run) {
        return admit(key, estimate, run, false);
    }

    /**
     * Decides whether an interactive call (a call made outside jobs, {@code InteractiveCalls}) may go
     * now: as {@link #admitEndpoint} (breaker, cooldown, half-open trial from the cached state), then
     * always the key's bucket row in one statement ({@link Buckets#take}, interactive: not limited by
     * the share background leaves free, and stamping the row's {@code interactive_at} whether it
     * takes or not), so that a key configured only by the workers is limited too, and a key without
     * a bucket row goes at once. Never throws: a database error gives a wait (fail closed), logged.
     *
     * @param key the key
     * @param estimate the call's token estimate, or null
     * @param run the run whose reservation it becomes (settled after the call)
     * @return go (maybe as the breaker's trial), wait, refuse or too large
     */
    public Admission admitInteractive(String key, TokenEstimate estimate, ProviderRun run) {
        return admit(key, estimate, run, true);
    }

    /**
     * How background admissions share keys with interactive calls; before {@link #start}.
     *
     * @param s the settings
     */
    public void configureInteractive(InteractiveSettings s) {
        buckets.interactive(Objects.requireNonNull(s, "interactive"));
    }

    private Admission admit(String key, TokenEstimate estimate, ProviderRun run, boolean interactive) {
        Instant now = cache.now();
        KeyState ks = cache.keyState(key);
        Snapshot s;
        try {
            s = cache.fresh(ks);
        } catch (RuntimeException e) {
            return failClosed(key, "read", e, now);
        }
        Admission a;
        try {
            a = breakerAndCooldown(ks, s, now);
        } catch (RuntimeException e) {
            return failClosed(key, "claim the breaker trial of", e, now);
        }
        if (!(a instanceof Admission.Go)) {
            return a;
        }
        String trial = ((Admission.Go) a).trialToken();
        BucketSettings bucket = paces.bucketOf(ks, now);
        if (bucket == null && !interactive) {
            return a;
        }
        Admission b;
        try {
            TokenEstimate e = estimate == null ? TokenEstimate.NONE : estimate;
            String big = bucket == null ? null : TokenLedger.tooLarge(key, bucket, e);
            b = big != null ? new Admission.TooLarge(cut(big)) : buckets.take(key, bucket, e, now, run, interactive);
        } catch (RuntimeException e) {
            b = failClosed(key, "take a permit from the bucket of", e, now);
        }
        if (!(b instanceof Admission.Go) && trial != null) {
            breakers.releaseTrialQuietly(key, trial);
        }
        return b instanceof Admission.Go ? a : b;
    }

    /**
     * {@link #admitEndpoint(String, TokenEstimate, ProviderRun)} for a call of {@code tokens} combined
     * tokens whose reservation no run settles.
     *
     * @param key the endpoint's key
     * @param tokens the call's token estimate (0: none)
     * @return go (maybe as the breaker's trial), wait, refuse or too large
     */
    public Admission admitEndpoint(String key, long tokens) {
        return admitEndpoint(key, tokens > 0 ? TokenEstimate.total(Math.min(tokens, TokenUsage.MAX_COUNT)) : null, null);
    }

    /** @return the database's time as this instance knows it: what admissions go by */
    public Instant now() {
        return cache.now();
    }

    /** Open breaker first (refuse), then cooldown (wait), then the half-open trial (claim or wait). */
    private Admission breakerAndCooldown(KeyState ks, Snapshot s, Instant now) {
        String key = ks.key;
        BreakerState state = s.state();
        if (state == BreakerState.OPEN && (s.openUntil() == null || s.openUntil().isAfter(now))) {
            return refuse(key, s);
        }
        if (s.cooldownUntil() != null && s.cooldownUntil().isAfter(now)) {
            return new Admission.Wait(s.cooldownUntil(), "cooldown", cut(key + " cools down until " + s.cooldownUntil()
                    + " (" + s.cooldownReason() + (s.cooldownDetail() == null ? "" : ": " + s.cooldownDetail()) + ")"));
        }
        if (state == BreakerState.CLOSED) {
            return GO;
        }
        if (state == BreakerState.HALF_OPEN && s.trialClaimed() && s.trialExpiresAt() != null
                && s.trialExpiresAt().isAfter(now)) {
            return Breakers.halfOpenWait(key, s.trialClaimedAt(), now);
        }
        return breakers.claimTrial(ks, now);
    }

    private static Admission.Refuse refuse(String key, Snapshot s) {
        Instant until = s.openUntil() == null ? Instant.MAX : s.openUntil();
        return new Admission.Refuse(until, cut("the breaker of " + key + " is open "
                + (until.equals(Instant.MAX) ? "until closed by an operator" : "until " + until)
                + (s.breakerReason() == null ? "" : ": " + s.breakerReason())));
    }

    /** @return operators' limits at run time ({@code layover.limit_overrides}), as last read */
    public LimitOverride limitOverride(String key) {
        return overrides.of(key);
    }

    /** @return every operator's limit this instance applies now, by key (in memory) */
    public Map<String, LimitOverride> limitOverrides() {
        return overrides.all();
    }

    LimitOverride setLimit(String key, LimitOverride limit, String by, String reason) {
        return overrides.set(key, limit, by, reason);
    }

    LimitOverride revertLimit(String key) {
        return overrides.revert(key);
    }

    LimitOverride readLimitOverride(String key) {
        return overrides.read(key);
    }

    private Admission failClosed(String key, String what, RuntimeException e, Instant now) {
        String msg = "cannot " + what + " the provider state of " + key + ": " + e.getMessage();
        long t = System.nanoTime();
        if (t - lastStackLogged > TimeUnit.MINUTES.toNanos(1)) {
            lastStackLogged = t;
            LOG.warn("Layover fails closed: {}; the provider is not called, the job waits {} s without spending an attempt",
                    msg, FAIL_CLOSED_DELAY.toSeconds(), e);
        } else {
            LOG.warn("Layover fails closed: {}; the provider is not called, the job waits {} s without spending an attempt",
                    msg, FAIL_CLOSED_DELAY.toSeconds());
        }
        return new Admission.Wait(now.plus(FAIL_CLOSED_DELAY).plus(Backoff.rescheduleJitter(FAIL_CLOSED_DELAY)),
                "provider_state_unavailable", cut(msg));
    }

    // ---- after a call -----------------------------------------------------------------------

    /**
     * Records what a call taught about its key, as the outcome's {@link Outcome.Kind} says: the
     * cooldown it asks for, the breaker's success or failure (the trial's verdict when
     * {@code trialToken} is set), and a learned pace when a rate limit stated the key's limit.
     * Never throws; a database error is logged.
     *
     * @param key the provider key, or null (nothing to record)
     * @param trialToken the trial this call was, or null
     * @param outcome what the call gave
     * @return the key's cooldown end after this call, when the outcome set a cooldown; else null
     */
    public Instant afterCall(String key, String trialToken, Outcome outcome) {
        if (key == null) {
            return null;
        }
        Instant now = cache.now();
        KeyState ks = cache.keyState(key);
        if (ks.snapshot == null) {
            try {
                cache.fresh(ks); // this instance's first call of the key: the read creates its breaker row to count on
            } catch (RuntimeException e) {
                LOG.warn("Layover: could not read the provider state of {}: {}", key, e.getMessage());
            }
        }
        String tag = SafeMetrics.callTag(outcome);
        if (tag != null) {
            metrics.providerCall(key, tag);
        }
        if (outcome instanceof Outcome.RateLimited r && r.requestLimitPerSecond() != null) {
            try {
                paces.learnFrom(ks, r.requestLimitPerSecond(), r.retryAfter(), now);
            } catch (RuntimeException e) {
                LOG.warn("Layover: could not write the pace of {} learned from a 429: {}", key, e.getMessage());
            }
        }
        Outcome forCooldown = outcome;
        if (outcome instanceof Outcome.RateLimited r && r.requestLimitPerSecond() == null) {
            try {
                Duration pause = discovery.after429(ks, r.retryAfter(), now);
                if (pause != null) {
                    forCooldown = new Outcome.RateLimited(pause, r.reason(), null); // the decrease is the escalation
                }
            } catch (RuntimeException e) {
                LOG.warn("Layover: could not write the discovered pace of {} after a 429: {}", key, e.getMessage());
            }
        }
        Instant until = null;
        try {
            until = cooldowns.after(key, forCooldown, now);
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not write the cooldown of {} after {}: {}", key, SafeMetrics.outcomeTag(outcome),
                    e.getMessage());
        }
        try {
            if (until != null) {
                discovery.afterCooldown(ks, until, now);
            } else if (outcome.kind() == Outcome.Kind.DONE) {
                discovery.afterSuccess(ks, now);
            }
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not adjust the discovered pace of {}: {}", key, e.getMessage());
        }
        try {
            switch (outcome.kind().breaker()) {
                case SUCCESS -> breakers.success(ks, trialToken, now);
                case FAILURE -> breakers.failure(ks, trialToken, SafeMetrics.outcomeTag(outcome) + ": "
                        + (outcome.reason() != null ? outcome.reason() : String.valueOf(outcome.cause())), now);
                case NONE -> {
                    if (trialToken != null) {
                        breakers.releaseTrial(key, trialToken);
                    }
                }
            }
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not write the breaker of {} after {}: {}", key, SafeMetrics.outcomeTag(outcome), e.getMessage());
        }
        return until;
    }

    /**
     * @param o an outcome
     * @return whether it counts as a breaker failure ({@link Outcome.Kind#breaker()})
     */
    public static boolean isBreakerFailure(Outcome o) {
        return o.kind().breaker() == Outcome.BreakerEffect.FAILURE;
    }

    /**
     * Gives back a half-open breaker's trial claimed by the pick or {@link #admitEndpoint} for a call that is not
     * made after all (another limit of the job refused it). Never throws; the claim expires by
     * itself if this fails.
     *
     * @param key the provider key
     * @param trialToken the claim
     */
    public void giveBackTrial(String key, String trialToken) {
        breakers.releaseTrialQuietly(key, trialToken);
    }

    /**
     * The pace learned for a key and in force now (stated by a 429 or discovered); null when none
     * (or when the key has a configured bucket).
     *
     * @param key the provider key
     * @return the learned bucket, or null
     */
    BucketSettings learnedBucket(String key) {
        return paces.learnedBucket(key);
    }

    /**
     * Runs {@code hook} (on the NOTIFY thread; it must be quick and must not throw) for every
     * notification on the provider state channel, which also carries pauses and cancel requests.
     *
     * @param hook what to run
     */
    public void addNotificationHook(Runnable hook) {
        cache.addNotificationHook(hook);
    }

    // ---- operators --------------------------------------------------------------------------

    Double setFairnessWeight(String pattern, double weight, String by, String reason) {
        return fairness.setWeight(pattern, weight, by, reason);
    }

    Double revertFairnessWeight(String pattern, String by) {
        return fairness.revertWeight(pattern, by);
    }

    boolean forceOpen(String key, Duration holdFor, String reason, String by) {
        return breakers.forceOpen(key, holdFor, reason, by);
    }

    boolean forceClose(String key, String reason, String by) {
        return breakers.forceClose(key, reason, by);
    }

    BreakerState breakerState(String key) {
        return breakers.read(key);
    }

    Instant cooldownUntil(String key) {
        return cooldowns.read(key);
    }

    void addListener(BreakerListener l) {
        events.add(l);
    }

    void removeListener(BreakerListener l) {
        events.remove(l);
    }

    String workerName() {
        return gdb.workerName;
    }

    BreakerSettings breakerSettings(String key) {
        return breakers.settings(key);
    }

    /** @return the clock this gate's times are on */
    public Clock clock() {
        return clock;
    }

    // ---- measurement (tests) ------------------------------------------------------------------

    /** @return statements run on worker threads (deciding or recording a call) since start */
    long inlineStatements() {
        return gdb.inlineStatements();
    }

    /** @return statements run by the background refresh since start */
    long backgroundStatements() {
        return gdb.backgroundStatements();
    }

    /** One background round now: writes counted successes, re-reads every known key. */
    void refreshOnce() {
        cache.refreshOnce();
    }
}
