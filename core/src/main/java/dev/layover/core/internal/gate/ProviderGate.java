package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.cut;

import dev.layover.core.spi.Db;
import dev.layover.core.internal.jobs.JobStore;
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
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import dev.layover.core.internal.keys.KeyPatterns;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet-wide provider state as one Layover instance sees it: decides before each call whether
 * a provider key may be called (cooldown, breaker, bucket), and records what each call taught
 * (cooldowns, breaker successes and failures, a learned pace). A facade over its parts, each with
 * one job: {@link StateCache} (what is known of each key and how it stays fresh), {@link Breakers},
 * {@link Cooldowns}, {@link Paces}, {@link Discovery}, {@link Buckets} and {@link BreakerEvents}.
 *
 * <p>Hot path: a job whose key is neither throttled nor failing costs no extra round trip; a
 * bucket costs one round trip per lease of permits. If the state cannot be read or claimed, the
 * call is not made (fail closed) and the job waits {@link #FAIL_CLOSED_DELAY} without spending an
 * attempt.
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
     * @param buckets the buckets, by key
     * @param listeners breaker listeners
     * @param permitGrace how late a job may come back for the bucket permit it holds (it is picked
     *     up to a poll interval after its run time) before the permit lapses
     * @param notifications whether to hear other JVMs' changes at once ({@code LISTEN}); without,
     *     the one-second refresh sees them
     */
    public record Config(BreakerSettings breakers, Map<String, BreakerSettings> perKeyBreakers,
            CooldownSettings cooldowns, Map<String, BucketSettings> buckets, List<BreakerListener> listeners,
            Duration permitGrace, boolean notifications) {

        /** Copies the maps. */
        public Config {
            Objects.requireNonNull(breakers, "breakers");
            Objects.requireNonNull(cooldowns, "cooldowns");
            Objects.requireNonNull(permitGrace, "permitGrace");
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
         * @param permitGrace how late a job may come back for the bucket permit it holds
         */
        public Config(BreakerSettings breakers, Map<String, BreakerSettings> perKeyBreakers, CooldownSettings cooldowns,
                Map<String, BucketSettings> buckets, List<BreakerListener> listeners, Duration permitGrace) {
            this(breakers, perKeyBreakers, cooldowns, buckets, listeners, permitGrace, true);
        }

        /**
         * Settings with the default permit grace ({@value #DEFAULT_PERMIT_GRACE_SECONDS} s).
         *
         * @param breakers the breaker settings of every key without its own
         * @param perKeyBreakers breaker settings of single keys
         * @param cooldowns cooldown settings
         * @param buckets the buckets, by key
         * @param listeners breaker listeners
         */
        public Config(BreakerSettings breakers, Map<String, BreakerSettings> perKeyBreakers, CooldownSettings cooldowns,
                Map<String, BucketSettings> buckets, List<BreakerListener> listeners) {
            this(breakers, perKeyBreakers, cooldowns, buckets, listeners, Duration.ofSeconds(DEFAULT_PERMIT_GRACE_SECONDS));
        }

        /** The default {@code permitGrace}, in seconds. */
        public static final int DEFAULT_PERMIT_GRACE_SECONDS = 2;

        /** @return defaults everywhere, no buckets, no listeners */
        public static Config defaults() {
            return new Config(BreakerSettings.defaults(), Map.of(), CooldownSettings.defaults(), Map.of(), List.of());
        }
    }

    /**
     * A job type whose due jobs {@link #reserveBacklog} may reserve permits for.
     *
     * @param name the job type
     * @param maxReschedules its reschedule cap (a reserved job is rescheduled once more)
     * @param maxDeferral how far ahead it may be rescheduled
     * @param countsTokens whether it has a token estimate (such jobs are reserved one by one when
     *     the bucket limits tokens)
     */
    public record BacklogType(String name, int maxReschedules, Duration maxDeferral, boolean countsTokens) {}

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
        this.gdb = new GateDb(db, workerName);
        this.events = new BreakerEvents(config.listeners(), this.metrics, workerName);
        Map<String, BreakerSettings> perKey = config.perKeyBreakers();
        this.cache = new StateCache(gdb, clock, events, key -> perKey.getOrDefault(key, config.breakers()).window(),
                config.notifications());
        this.breakers = new Breakers(gdb, cache, events, config.breakers(), perKey);
        this.cooldowns = new Cooldowns(gdb, cache, config.cooldowns());
        this.overrides = new Overrides(gdb);
        this.paces = new Paces(gdb, cache, config.cooldowns(), config.buckets(), overrides);
        JobStore store = new JobStore(db);
        TokenLedger ledger = new TokenLedger(gdb, config.permitGrace(), this.metrics);
        this.fairness = new Fairness(gdb, config.permitGrace(), ledger);
        this.buckets = new Buckets(gdb, store, config.permitGrace(), ledger, fairness);
        this.discovery = new Discovery(gdb, config.cooldowns().discovery(), config.buckets(), buckets, store);
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
            if (KeyPatterns.isPattern(e.getKey())) {
                continue; // a pattern's key gets its row when a worker first takes a permit of it
            }
            buckets.configure(e.getKey(), e.getValue());
        }
        cache.start();
        fairness.start(key -> paces.bucketOf(cache.keyState(key), cache.now()), cache::now, this::held);
    }

    /** Whether a key's calls are held now by its cached state: a cooldown in force, or a breaker not closed. */
    private boolean held(String key) {
        Snapshot s = cache.keyState(key).snapshot;
        Instant now = cache.now();
        return s != null && ((s.cooldownUntil() != null && s.cooldownUntil().isAfter(now))
                || (s.state() != null && s.state() != dev.layover.core.provider.state.BreakerState.CLOSED));
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
        fairness.stop();
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
    String tooLarge(String key, TokenEstimate estimate) {
        BucketSettings b = key == null ? null : paces.bucketOf(cache.keyState(key), cache.now());
        return b == null ? null : TokenLedger.tooLarge(key, b, estimate);
    }

    /**
     * Decides whether the job may call its provider key now. Never throws: a database error
     * while reading or claiming the state gives a {@link Admission.Wait} (fail closed), logged.
     *
     * @param run the job's run
     * @return go (maybe as the breaker's trial), wait, or refuse (breaker open)
     */
    public Admission admit(ProviderRun run) {
        String key = run.providerKey();
        return key == null ? GO : admit(key, run.tokens(), run, true, true);
    }

    /**
     * Decides whether a fallback endpoint may be called now. Like {@link #admit(ProviderRun)},
     * except that a bucket without a free permit reserves nothing (the chain moves on) and waits
     * carry no jitter.
     *
     * @param key the endpoint's key
     * @param tokens the call's token estimate
     * @return go, wait (skip) or refuse (skip)
     */
    public Admission admitEndpoint(String key, long tokens) {
        return admit(key, Math.max(0, tokens), null, false, true);
    }

    /**
     * Like {@link #admit(ProviderRun)} without the key's bucket: breaker, cooldown and the
     * half-open trial only. For a job whose limits (buckets, concurrency) are all claimed at once
     * by {@link Limits}; a trial claimed here is given back with {@link #giveBackTrial} when they refuse.
     *
     * @param run the job's run
     * @return go (maybe as the breaker's trial), wait, or refuse (breaker open)
     */
    public Admission admitState(ProviderRun run) {
        String key = run.providerKey();
        return key == null ? GO : admit(key, run.tokens(), run, true, false);
    }

    /**
     * A job with a fairness key whose provider key has a concurrency limit: its turn at a free slot
     * in the key's fair queue ({@code docs/fairness.md}). Go: the caller claims the slot with its
     * other limits; wait: in the queue, holding nothing. Never throws: a database error gives a
     * wait of 5 s (fail closed), logged.
     *
     * @param slots the key's concurrency limit
     * @param deadAfter how old a slot holder's heartbeat may be before the slot counts as free
     * @param configure writes the limit's rows when they are missing
     * @return go or wait; null when the job's row is not in the queue (admit it as a job without a fairness key)
     */
    public Admission admitFairSlot(ProviderRun run, int slots, Duration deadAfter, Runnable configure) {
        Instant now = cache.now();
        try {
            return fairness.admitSlot(run.providerKey(), slots, deadAfter, now, run, configure);
        } catch (RuntimeException e) {
            return failClosed(run.providerKey(), "take a turn in the fair queue of", e, now);
        }
    }

    /** @return operators' limits at run time ({@code layover.limit_overrides}), as last read */
    public LimitOverride limitOverride(String key) {
        return overrides.of(key);
    }

    /** @return whether an operator's override sets a concurrency limit of some key */
    public boolean anyConcurrencyOverride() {
        return overrides.anyConcurrency();
    }

    /** @return a key's concurrency limit with an operator's override applied ({@code configured}: 0 for none) */
    public int concurrencyOf(String key, int configured) {
        return overrides.concurrency(key, configured);
    }

    /** @return a key's bucket with an operator's override applied ({@code configured}: null for none) */
    public BucketSettings bucketOf(String key, BucketSettings configured) {
        return overrides.bucket(key, configured);
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

    /**
     * Finished jobs of this instance left the job table: a concurrency slot they held is free, so
     * a fair queue that shares one calls its next job at once ({@code docs/fairness.md}). Never blocks.
     */
    public void jobsLeft() {
        fairness.nudge();
    }

    /**
     * Leases ahead the request permits that the jobs of one pick will take, for every key given,
     * in one statement ({@link Buckets#leaseAhead}): what is free now of each key's bucket, up to
     * its job count less what this instance has leased already, at most the bucket's
     * {@code lease}; the jobs' admissions then spend them from memory (unspent ones lapse within
     * the burst, at most 1 s, as any lease). Only keys this instance has met, whose cached state
     * (within its staleness bound) has the breaker closed and no cooldown, with a configured or
     * stated (not discovered) bucket limiting requests alone; others are left to their jobs'
     * admissions, as is any key when the statement fails. Nothing is booked ahead: a key without a
     * free permit gets none. Never throws.
     *
     * @param jobsPerKey the pick's jobs admitted by their key's bucket alone, by provider key
     */
    public void leaseAhead(Map<String, Integer> jobsPerKey) {
        Instant now = cache.now();
        buckets.leaseAhead(asks(jobsPerKey, now), now);
    }

    /**
     * Takes in one statement ({@link Buckets#takePlaces}) the permits of a pick's jobs picked at
     * their places in their keys' waiting lines, within the grace of their places: for each key,
     * as many as fit, as the jobs' own takes would take them one by one. The caller carries them
     * into the jobs' admissions as permits held since {@code now} (spent within the grace, as a
     * permit booked for the job's run time). Only keys {@link #leaseAhead} would lease for; the
     * jobs of other keys, and those beyond what fits, take their own as they run. Never throws.
     *
     * @param jobsPerKey the pick's jobs at their places, by provider key
     * @param now the database's time as this instance knows it ({@link #now})
     * @return the permits taken, by key
     */
    public Map<String, Integer> takePlaces(Map<String, Integer> jobsPerKey, Instant now) {
        return buckets.takePlaces(asks(jobsPerKey, now), now);
    }

    /** @return the database's time as this instance knows it: what admissions go by */
    public Instant now() {
        return cache.now();
    }

    /**
     * @return the asks of the keys whose permits may be taken ahead of their jobs' admissions:
     *     keys this instance has met, whose cached state has the breaker closed and no cooldown,
     *     with a configured or stated (not discovered) bucket
     */
    private List<Buckets.Ask> asks(Map<String, Integer> jobsPerKey, Instant now) {
        List<Buckets.Ask> asks = new java.util.ArrayList<>();
        jobsPerKey.forEach((key, n) -> {
            KeyState ks = cache.known(key);
            Snapshot s = ks == null ? null : cache.cached(ks);
            if (s == null || s.state() != BreakerState.CLOSED || (s.cooldownUntil() != null && s.cooldownUntil().isAfter(now))) {
                return;
            }
            BucketSettings b = paces.bucketOf(ks, now);
            if (b != null && !paces.isDiscovered(ks, b)) {
                asks.add(new Buckets.Ask(ks, b, n));
            }
        });
        return asks;
    }

    private Admission admit(String key, long tokens, ProviderRun run, boolean forJob, boolean withBucket) {
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
            a = breakerAndCooldown(ks, s, now, forJob);
        } catch (RuntimeException e) {
            return failClosed(key, "claim the breaker trial of", e, now);
        }
        if (!(a instanceof Admission.Go)) {
            return a;
        }
        String trial = ((Admission.Go) a).trialToken();
        BucketSettings bucket = withBucket ? paces.bucketOf(ks, now) : null;
        if (bucket != null) {
            Admission b;
            try {
                b = paces.isDiscovered(ks, bucket) ? discovery.permit(ks, bucket, tokens, now, run, forJob)
                        : buckets.permit(ks, bucket, tokens, now, run, forJob);
                if (b == null) {
                    ks.learned = null; // an operator deleted the learned pace: forget it here too
                    b = GO;
                }
            } catch (RuntimeException e) {
                b = failClosed(key, "take a permit from the bucket of", e, now);
            }
            if (!(b instanceof Admission.Go)) {
                if (trial != null) {
                    breakers.releaseTrialQuietly(key, trial);
                }
                return b;
            }
        }
        if (trial != null && run != null) {
            run.trialToken(trial);
        }
        return a;
    }

    /** Open breaker first (park), then cooldown (wait), then the half-open trial (claim or wait). */
    private Admission breakerAndCooldown(KeyState ks, Snapshot s, Instant now, boolean forJob) {
        String key = ks.key;
        BreakerState state = s.state();
        if (state == BreakerState.OPEN && (s.openUntil() == null || s.openUntil().isAfter(now))) {
            Instant until = s.openUntil() == null ? Instant.MAX : s.openUntil();
            return new Admission.Refuse(until, cut("the breaker of " + key + " is open "
                    + (until.equals(Instant.MAX) ? "until closed by an operator" : "until " + until)
                    + (s.breakerReason() == null ? "" : ": " + s.breakerReason())));
        }
        if (s.cooldownUntil() != null && s.cooldownUntil().isAfter(now)) {
            Duration left = Duration.between(now, s.cooldownUntil());
            Instant runAt = forJob ? s.cooldownUntil().plus(Backoff.rescheduleJitter(left)) : s.cooldownUntil();
            return new Admission.Wait(runAt, "cooldown", cut(key + " cools down until " + s.cooldownUntil() + " ("
                    + s.cooldownReason() + (s.cooldownDetail() == null ? "" : ": " + s.cooldownDetail()) + ")"), null);
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
                "provider_state_unavailable", cut(msg), null);
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
     * Gives back a half-open breaker's trial claimed by {@link #admitState} for a call that is not
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
     * Called after a job of {@code key} was told to wait for a bucket permit far ahead: the key has
     * a backlog, and its due, unpicked jobs are given their permits together ({@link Buckets#reserveBacklog}).
     *
     * @param key the provider key
     * @param types the job types whose jobs may be reserved
     * @return how many jobs of each type were reserved (empty when none)
     */
    public Map<String, Integer> reserveBacklog(String key, List<BacklogType> types) {
        if (key == null || !cache.running()) {
            return Map.of();
        }
        Instant now = cache.now();
        KeyState ks = cache.keyState(key);
        BucketSettings b = paces.bucketOf(ks, now);
        if (paces.isDiscovered(ks, b)) {
            // no permits booked far ahead at today's rate (they would outlive its next change): places in the line
            return discovery.waitlistBacklog(key, types, now);
        }
        return buckets.reserveBacklog(key, b, types, now);
    }

    /**
     * Called after a job of {@code key} booked a permit a place in the key's waiting line stood for
     * ({@link Admission.Wait#aheadOfLine()}): the line's jobs whose places' permits are gone move to
     * its end ({@link Buckets#realignLine}). Nothing for a discovered pace (its line is its own).
     *
     * @param key the provider key
     * @param types the job types whose jobs may be moved
     * @return how many jobs of each type were moved (empty when none)
     */
    public Map<String, Integer> realignLine(String key, List<BacklogType> types) {
        if (key == null || !cache.running()) {
            return Map.of();
        }
        Instant now = cache.now();
        KeyState ks = cache.keyState(key);
        BucketSettings b = paces.bucketOf(ks, now);
        return paces.isDiscovered(ks, b) ? Map.of() : buckets.realignLine(key, b, types, now);
    }

    /**
     * The pace learned for a key and in force now, for {@link Limits}; null when none (or when the
     * key has a configured bucket).
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
