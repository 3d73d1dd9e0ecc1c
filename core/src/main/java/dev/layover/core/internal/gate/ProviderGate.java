package dev.layover.core.internal.gate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.internal.time.Backoff;
import dev.layover.core.internal.db.Db;
import dev.layover.core.internal.observe.SafeMetrics;
import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.FallbackChain;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.provider.state.BreakerEvent;
import dev.layover.core.provider.state.BreakerListener;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.ProviderStates;

/**
 * The fleet-wide provider state as one Layover instance sees it: decides before each call whether
 * a provider key may be called (cooldown, breaker, bucket), and records what each call taught
 * (cooldowns, breaker successes and failures). Internal: used by Layover's engine and
 * {@link FallbackChain}; operators use {@link ProviderStates}.
 *
 * <p>Hot path: the breaker and cooldown of each key are cached. A background thread re-reads every
 * known key in one query each second and writes the successes counted since (one statement), and
 * a LISTEN connection re-reads at once when another JVM changes a breaker or a cooldown (the
 * tables' triggers NOTIFY). So a job whose key is neither throttled nor failing costs no extra
 * round trip; a bucket costs one round trip per lease of permits. The database is read inline
 * only for a key seen for the first time, or when the cache is older than 5 s (the background
 * refresh failing): if that read fails, the call is not made (fail closed) and the job waits 5 s
 * without spending an attempt.
 */
public final class ProviderGate {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);

    static final Duration REFRESH_INTERVAL = Duration.ofSeconds(1);
    static final Duration MAX_STALENESS = Duration.ofSeconds(5);
    static final Duration FAIL_CLOSED_DELAY = Duration.ofSeconds(5);
    static final Duration MAX_LEASE_TTL = Duration.ofSeconds(1);
    private static final Duration HALF_OPEN_MIN_WAIT = Duration.ofSeconds(1);
    private static final Duration HALF_OPEN_MAX_WAIT = Duration.ofSeconds(10);
    private static final int MAX_DETAIL = 1000;
    private static final ObjectMapper JSON = new ObjectMapper();

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
     */
    public record Config(BreakerSettings breakers, Map<String, BreakerSettings> perKeyBreakers,
            CooldownSettings cooldowns, Map<String, BucketSettings> buckets, List<BreakerListener> listeners,
            Duration permitGrace) {

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

    private static final Admission GO = new Admission.Go(null);

    private final Db db;
    private final Clock clock;
    private final String workerName;
    private final String origin = UUID.randomUUID().toString();
    private final Config config;
    private final ConcurrentHashMap<String, KeyState> keys = new ConcurrentHashMap<>();
    private final CopyOnWriteArrayList<BreakerListener> listeners = new CopyOnWriteArrayList<>();
    private final Object wake = new Object();
    private final AtomicLong inlineStatements = new AtomicLong();
    private final AtomicLong backgroundStatements = new AtomicLong();
    private volatile ExecutorService events;
    private final LayoverMetrics metrics;
    /** Per key, the end of the newest cooldown this instance wrote: one log line per cooldown that starts. */
    private final ConcurrentHashMap<String, Instant> cooldownsWritten = new ConcurrentHashMap<>();
    private volatile boolean running;
    private volatile boolean wakeRequested;
    private volatile boolean refreshFailing;
    private volatile long lastStackLogged = System.nanoTime() - TimeUnit.MINUTES.toNanos(2);
    private Thread refresher;
    private Notifier notifier;

    /**
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
        this.metrics = metrics == null ? LayoverMetrics.none() : metrics;
        this.db = db;
        this.clock = clock;
        this.workerName = workerName;
        this.config = config;
        this.listeners.addAll(config.listeners());
    }

    // ---- lifecycle ------------------------------------------------------------------------

    /** Writes the configured buckets and starts the refresh and NOTIFY threads. */
    public synchronized void start() {
        if (running) {
            return;
        }
        for (Map.Entry<String, BucketSettings> e : config.buckets().entrySet()) {
            configureBucket(e.getKey(), e.getValue());
        }
        running = true;
        refresher = new Thread(this::refreshLoop, "layover-provider-state-" + workerName);
        refresher.setDaemon(true);
        refresher.start();
        notifier = new Notifier(db.dataSource(), this, "layover-provider-notify-" + workerName);
        notifier.start();
    }

    /** Stops the threads and writes the successes not yet written. */
    public synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        wakeUp();
        notifier.stop();
        try {
            refresher.join(3000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            flushSuccesses();
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not write the last breaker successes at shutdown: {}", e.getMessage());
        }
        ExecutorService ev = events;
        if (ev != null) {
            ev.shutdown();
        }
    }

    // ---- runs -----------------------------------------------------------------------------

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
        return new ProviderRun(this, providerKey, taskName, jobId, version, Math.max(0, tokens), attempt);
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
        if (key == null) {
            return GO;
        }
        return admit(key, run.tokens(), run, true);
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
        return admit(key, Math.max(0, tokens), null, false);
    }

    /**
     * Like {@link #admit(ProviderRun)} without the key's bucket: breaker, cooldown and the
     * half-open trial only. For a job whose limits (buckets, concurrency) are all claimed at once
     * by {@link Limits}; a trial claimed here is given back with {@link #afterCall} when they refuse.
     *
     * @param run the job's run
     * @return go (maybe as the breaker's trial), wait, or refuse (breaker open)
     */
    public Admission admitState(ProviderRun run) {
        String key = run.providerKey();
        if (key == null) {
            return GO;
        }
        return admit(key, run.tokens(), run, true, false);
    }

    private Admission admit(String key, long tokens, ProviderRun run, boolean forJob) {
        return admit(key, tokens, run, forJob, true);
    }

    private Admission admit(String key, long tokens, ProviderRun run, boolean forJob, boolean withBucket) {
        Instant now = now();
        KeyState ks = keyState(key);
        Snapshot s;
        try {
            s = fresh(ks);
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
        BucketSettings bucket = withBucket ? bucketOf(ks, now) : null;
        if (bucket != null) {
            Admission b;
            try {
                b = permit(ks, bucket, tokens, now, run, forJob);
            } catch (RuntimeException e) {
                b = failClosed(key, "take a permit from the bucket of", e, now);
            }
            if (!(b instanceof Admission.Go)) {
                if (trial != null) {
                    releaseTrialQuietly(key, trial);
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
            return halfOpenWait(key, s.trialClaimedAt(), now);
        }
        return claimTrial(ks, now);
    }

    private Admission claimTrial(KeyState ks, Instant now) {
        BreakerSettings bs = breakerSettings(ks.key);
        String token = workerName + ":" + UUID.randomUUID();
        BreakerState from = inline("claiming the breaker trial of " + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.CLAIM_TRIAL)) {
                Db.bind(ps, ks.key, ts(now), token, seconds(bs.trialTimeout()), workerName, origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        if (from == null) {
            // another worker holds the trial (or the breaker moved on); the refresh will tell
            wakeUp();
            return halfOpenWait(ks.key, now, now);
        }
        update(ks, s -> s.withBreaker(BreakerState.HALF_OPEN, s.openUntil(), true, now, now.plus(bs.trialTimeout()),
                "trial claimed by " + workerName));
        if (from != BreakerState.HALF_OPEN) {
            emit(ks.key, from, BreakerState.HALF_OPEN, "open period over; trial call claimed by " + workerName, now,
                    workerName, true);
        }
        return new Admission.Go(token);
    }

    private static Admission halfOpenWait(String key, Instant claimedAt, Instant now) {
        Duration age = claimedAt == null ? Duration.ZERO : Duration.between(claimedAt, now);
        Duration d = age.compareTo(HALF_OPEN_MIN_WAIT) < 0 ? HALF_OPEN_MIN_WAIT
                : age.compareTo(HALF_OPEN_MAX_WAIT) > 0 ? HALF_OPEN_MAX_WAIT : age;
        return new Admission.Wait(now.plus(d).plus(Backoff.rescheduleJitter(d)), "breaker_half_open",
                "the breaker of " + key + " is half-open and another worker holds its one trial call", null);
    }

    private Admission permit(KeyState ks, BucketSettings b, long tokens, Instant now, ProviderRun run, boolean mayWait) {
        boolean limitsRequests = b.requestRate() > 0;
        boolean limitsTokens = b.tokenRate() > 0 && tokens > 0;
        if (ks.takeLeased(limitsRequests, limitsTokens, tokens, System.nanoTime())) {
            return GO;
        }
        for (int tries = 0; tries < 2; tries++) {
            double extraRequests = b.lease() - 1;
            double extraTokens = limitsTokens ? (double) tokens * (b.lease() - 1) : 0;
            Permit p = inline("taking a permit from the bucket of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.TAKE_PERMITS)) {
                    Db.bind(ps, ks.key, ts(now),
                            b.requestRate(), b.requestCapacity(), 1.0, extraRequests,
                            b.tokenRate(), b.tokenCapacity(), (double) tokens, extraTokens,
                            mayWait, run == null ? null : run.taskName(), run == null ? null : run.jobId(),
                            run == null ? null : run.version(), seconds(config.permitGrace()));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return new Permit(rs.getLong("carried") > 0, instant(rs, "last_slot"),
                                rs.getDouble("last_granted_requests"), rs.getDouble("last_granted_tokens"));
                    }
                }
            });
            if (p.carried()) {
                return GO;
            }
            if (p.slot() == null) {
                KeyState.Learned l = ks.learned;
                if (l != null && l.bucket() == b) {
                    ks.learned = null; // an operator deleted the learned pace: forget it here too
                    return GO;
                }
                configureBucket(ks.key, b);
                continue;
            }
            if (!p.slot().isAfter(now)) {
                // a leased permit is spent within the burst (at most 1 s), so it adds at most one burst to any interval
                long ttl = Math.min(MAX_LEASE_TTL.toNanos(), b.burst().toNanos());
                ks.lease(p.requests() - 1, p.tokens() - tokens, System.nanoTime(), ttl);
                return GO;
            }
            String detail = "no permit of " + ks.key + "'s bucket (" + describe(b) + ") before " + p.slot();
            return new Admission.Wait(p.slot(), "bucket", detail, mayWait ? p.slot() : null);
        }
        throw new IllegalStateException("the bucket row of " + ks.key + " could not be created");
    }

    private record Permit(boolean carried, Instant slot, double requests, double tokens) {}

    private static String describe(BucketSettings b) {
        List<String> parts = new ArrayList<>();
        if (b.requestsPerMinute() > 0) {
            parts.add(trim(b.requestsPerMinute()) + " requests/min");
        }
        if (b.tokensPerMinute() > 0) {
            parts.add(trim(b.tokensPerMinute()) + " tokens/min");
        }
        return String.join(", ", parts);
    }

    private static String trim(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
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
     * Records what a call taught about its key: the cooldown a rate limit, a spent quota with a
     * known reset or an overload asks for, and the breaker's success or failure (the trial's
     * verdict when {@code trialToken} is set). A rate limit, a rejected request, a snooze and the
     * job's own errors are never breaker failures. Never throws; a database error is logged.
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
        Instant now = now();
        KeyState ks = keyState(key);
        countCall(key, outcome);
        if (outcome instanceof Outcome.RateLimited r && r.requestLimitPerSecond() != null) {
            try {
                learnFrom(ks, r.requestLimitPerSecond(), r.retryAfter(), now);
            } catch (RuntimeException e) {
                LOG.warn("Layover: could not write the pace of {} learned from a 429: {}", key, e.getMessage());
            }
        }
        Instant until = null;
        try {
            until = cooldownFor(key, outcome, now);
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not write the cooldown of {} after {}: {}", key, SafeMetrics.outcomeTag(outcome),
                    e.getMessage());
        }
        try {
            switch (outcome.kind().breaker()) {
                case SUCCESS -> success(ks, trialToken, now);
                case FAILURE -> failure(ks, trialToken, SafeMetrics.outcomeTag(outcome) + ": " + reasonOf(outcome), now);
                case NONE -> {
                    if (trialToken != null) {
                        releaseTrial(key, trialToken);
                    }
                }
            }
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not write the breaker of {} after {}: {}", key, SafeMetrics.outcomeTag(outcome), e.getMessage());
        }
        return until;
    }

    // ---- learned pace ---------------------------------------------------------------------

    /** A pace renewed less than this long ago is not written again (many workers meet one 429 burst). */
    private static final Duration RENEW_AFTER = Duration.ofSeconds(30);

    /**
     * The bucket the key's calls pass: the configured one, else a learned pace in force, else null.
     *
     * @param ks the key
     * @param now now
     */
    private BucketSettings bucketOf(KeyState ks, Instant now) {
        BucketSettings b = config.buckets().get(ks.key);
        if (b != null) {
            return b;
        }
        KeyState.Learned l = ks.learned;
        return l != null && l.until().isAfter(now) ? l.bucket() : null;
    }

    /**
     * The pace learned for a key and in force now, for {@link Limits}; null when none (or when the
     * key has a configured bucket).
     *
     * @param key the provider key
     * @return the learned bucket, or null
     */
    BucketSettings learnedBucket(String key) {
        if (config.buckets().containsKey(key)) {
            return null;
        }
        KeyState ks = keys.get(key);
        KeyState.Learned l = ks == null ? null : ks.learned;
        return l != null && l.until().isAfter(now()) ? l.bucket() : null;
    }

    /** A 429 stated the key's limit: learn (or renew) its pace, unless a bucket is configured. */
    private void learnFrom(KeyState ks, double limitPerSecond, Duration retryAfter, Instant now) {
        CooldownSettings cs = config.cooldowns();
        if (cs.learnedPaceFor().isZero() || config.buckets().containsKey(ks.key)) {
            return;
        }
        double rpm = limitPerSecond * 60 * cs.learnedPaceShare();
        KeyState.Learned l = ks.learned;
        if (l != null && l.until().isAfter(now) && Math.abs(l.bucket().requestsPerMinute() - rpm) <= rpm * 0.01
                && Duration.between(now, l.until()).compareTo(cs.learnedPaceFor().minus(RENEW_AFTER)) > 0) {
            return;
        }
        Duration wait = retryAfter != null ? retryAfter : cs.rateLimitBase();
        if (wait.compareTo(cs.learnedPaceFor()) > 0) {
            wait = cs.learnedPaceFor(); // a longer wait is the cooldown's business, not the pace's
        }
        learn(ks, rpm, now.plus(cs.learnedPaceFor()), now.plus(wait));
    }

    /**
     * Writes the key's learned pace ({@code StateSql.LEARN_PACE}) and keeps what the row holds.
     *
     * @param emptyAt when the provider's bucket is taken to be empty (the end of its wait): no
     *     burst is handed out before then
     */
    private void learn(KeyState ks, double rpm, Instant until, Instant emptyAt) {
        KeyState.Learned before = ks.learned;
        BucketSettings wanted = BucketSettings.requestsPerMinute(rpm);
        KeyState.Learned after = inline("learning the pace of " + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.LEARN_PACE)) {
                Db.bind(ps, ks.key, rpm, (int) wanted.burst().toMillis(), workerName, ts(until),
                        ts(emptyAt.plus(wanted.burst())));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? learned(rs.getDouble(1), instant(rs, "learned_until"), before) : null;
                }
            }
        });
        ks.learned = after;
        if (after != null && (before == null || !before.until().isAfter(now())
                || Math.abs(before.bucket().requestsPerMinute() - rpm) > rpm * 0.01)) {
            LOG.info("Pace of {} learned from a 429: {} requests/min until {} (a bucket shared by the fleet)", ks.key,
                    trim(Math.round(rpm * 100) / 100.0), after.until());
        }
    }

    /** The learned pace of a row, reusing {@code previous} when it says the same (no new settings object per read). */
    private static KeyState.Learned learned(double rpm, Instant until, KeyState.Learned previous) {
        if (until == null || !(rpm > 0)) {
            return null;
        }
        if (previous != null && previous.bucket().requestsPerMinute() == rpm) {
            return previous.until().equals(until) ? previous : new KeyState.Learned(previous.bucket(), until);
        }
        return new KeyState.Learned(BucketSettings.requestsPerMinute(rpm), until);
    }

    /**
     * @param o an outcome
     * @return whether it counts as a breaker failure: OVERLOADED, TRANSIENT, QUOTA_EXHAUSTED, AUTH_REFUSED
     */
    public static boolean isBreakerFailure(Outcome o) {
        return o.kind().breaker() == Outcome.BreakerEffect.FAILURE;
    }

    private Instant cooldownFor(String key, Outcome o, Instant now) {
        CooldownSettings cs = config.cooldowns();
        return switch (o.kind().cooldown()) {
            case RATE_LIMIT -> {
                Outcome.RateLimited r = (Outcome.RateLimited) o;
                yield cooldown(key, now, null, r.retryAfter(), cs.rateLimitBase(), cs.rateLimitCap(), "rate_limited",
                        r.reason());
            }
            case UNTIL_RESET -> {
                Outcome.QuotaExhausted q = (Outcome.QuotaExhausted) o;
                yield q.resetAt() == null ? null : cooldown(key, now, q.resetAt(), null, cs.rateLimitBase(),
                        cs.rateLimitCap(), "quota_exhausted", q.reason());
            }
            case OVERLOAD -> {
                Outcome.Overloaded ov = (Outcome.Overloaded) o;
                Duration wait = ov.retryAfter() == null ? null
                        : ov.retryAfter().compareTo(cs.overloadCap()) > 0 ? cs.overloadCap() : ov.retryAfter();
                yield cooldown(key, now, null, wait, cs.overloadBase(), cs.overloadCap(), "overloaded", ov.reason());
            }
            case NONE -> null;
        };
    }

    private Instant cooldown(String key, Instant now, Instant untilAbs, Duration wait, Duration base, Duration cap,
            String reason, String detail) {
        Snapshot before = keyState(key).snapshot;
        Instant until = inline("writing the cooldown of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.COOLDOWN)) {
                Db.bind(ps, key, ts(now), untilAbs == null ? null : ts(untilAbs), wait == null ? null : seconds(wait),
                        seconds(base), seconds(cap), seconds(config.cooldowns().strikeMemory()), reason, cut(detail),
                        workerName, origin);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return instant(rs, "until");
                }
            }
        });
        update(keyState(key), s -> s.withCooldown(until, reason, cut(detail)));
        logCooldown(key, before, now, until, reason, detail);
        return until;
    }

    /**
     * One INFO line when a cooldown starts (the key was callable before this write, as far as
     * this instance knew); a cooldown pushed further while it runs is logged at DEBUG.
     */
    private void logCooldown(String key, Snapshot before, Instant now, Instant until, String reason, String detail) {
        if (until == null) {
            return;
        }
        boolean[] starts = {false};
        cooldownsWritten.compute(key, (k, written) -> {
            boolean wasCooling = (written != null && written.isAfter(now))
                    || (before != null && before.cooldownUntil() != null && before.cooldownUntil().isAfter(now));
            starts[0] = !wasCooling && until.isAfter(now);
            return written == null || until.isAfter(written) ? until : written;
        });
        if (starts[0]) {
            LOG.info("Cooldown of {}: no call until {} ({} ms; {}{})", key, until, Duration.between(now, until).toMillis(),
                    reason, detail == null ? "" : ": " + cut(detail));
        } else if (LOG.isDebugEnabled()) {
            LOG.debug("Cooldown of {} until {} ({})", key, until, reason);
        }
    }

    /** Counts one call of {@code key} by its outcome ({@code layover.provider.calls}). */
    private void countCall(String key, Outcome outcome) {
        String tag = SafeMetrics.callTag(outcome);
        if (tag != null) {
            metrics.providerCall(key, tag);
        }
    }

    private void success(KeyState ks, String trialToken, Instant now) {
        if (trialToken == null) {
            ks.successes.increment();
            return;
        }
        BreakerState from = inline("closing the breaker of " + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.TRIAL_SUCCEEDED)) {
                Db.bind(ps, ks.key, ts(now), trialToken, workerName, origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        if (from == null) {
            ks.successes.increment();
            return;
        }
        update(ks, s -> s.withBreaker(BreakerState.CLOSED, null, false, null, null, "trial call succeeded"));
        emit(ks.key, from, BreakerState.CLOSED, "trial call succeeded", now, workerName, true);
    }

    private void failure(KeyState ks, String trialToken, String failure, Instant now) {
        BreakerSettings bs = breakerSettings(ks.key);
        if (trialToken != null) {
            Object[] row = inline("reopening the breaker of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.TRIAL_FAILED)) {
                    Db.bind(ps, ks.key, ts(now), trialToken, seconds(bs.openFor()), seconds(bs.maxOpenFor()),
                            cut(failure), workerName, origin);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? new Object[] {BreakerState.fromCode(rs.getString(1)), instant(rs, "open_until")} : null;
                    }
                }
            });
            if (row != null) {
                Instant until = (Instant) row[1];
                String reason = "trial call failed: " + failure;
                update(ks, s -> s.withBreaker(BreakerState.OPEN, until, false, null, null, reason));
                emit(ks.key, (BreakerState) row[0], BreakerState.OPEN, reason, now, workerName, true);
            }
            return;
        }
        Snapshot s = ks.snapshot;
        if (s != null && s.state() != BreakerState.CLOSED) {
            return; // a call that was in flight when the breaker opened: it proves nothing new
        }
        long ok = ks.successes.sumThenReset();
        Object[] row;
        try {
            row = inline("counting a failure of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.ADD_FAILURE)) {
                    Db.bind(ps, ks.key, ts(now), (int) Math.min(Integer.MAX_VALUE, ok), seconds(bs.window()),
                            bs.minimumCalls(), bs.failureThreshold(), bs.failureRatio(), seconds(bs.openFor()),
                            seconds(bs.maxOpenFor()), cut(failure), workerName, origin);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? new Object[] {rs.getString(1), instant(rs, "open_until"), rs.getString(3)} : null;
                    }
                }
            });
        } catch (RuntimeException e) {
            ks.successes.add(ok);
            throw e;
        }
        if (row == null) {
            wakeUp();
            return;
        }
        if ("open".equals(row[0])) {
            Instant until = (Instant) row[1];
            String reason = (String) row[2];
            update(ks, x -> x.withBreaker(BreakerState.OPEN, until, false, null, null, reason));
            emit(ks.key, BreakerState.CLOSED, BreakerState.OPEN, reason, now, workerName, true);
        }
    }

    private void releaseTrial(String key, String token) {
        inline("releasing the breaker trial of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.RELEASE_TRIAL)) {
                Db.bind(ps, key, token);
                return ps.executeUpdate();
            }
        });
        update(keyState(key), s -> s.state() == BreakerState.HALF_OPEN
                ? s.withBreaker(BreakerState.HALF_OPEN, s.openUntil(), false, null, null, s.breakerReason()) : s);
    }

    private void releaseTrialQuietly(String key, String token) {
        try {
            releaseTrial(key, token);
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not give back the breaker trial of {} (it expires by itself): {}", key, e.getMessage());
        }
    }

    private static String reasonOf(Outcome o) {
        return o.reason() != null ? o.reason() : String.valueOf(o.cause());
    }

    // ---- operators --------------------------------------------------------------------------

    boolean forceOpen(String key, Duration holdFor, String reason, String by) {
        Instant now = now();
        ensureBreakers(List.of(key), false);
        Instant until = holdFor == null ? null : now.plus(holdFor);
        String why = "forced open" + (reason == null || reason.isBlank() ? "" : ": " + reason);
        BreakerState from = inline("forcing open the breaker of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.FORCE_OPEN)) {
                Db.bind(ps, key, ts(now), until == null ? null : ts(until), cut(why), by, origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        update(keyState(key), s -> s.withBreaker(BreakerState.OPEN, until == null ? Instant.MAX : until, false, null, null, why));
        if (from != null && from != BreakerState.OPEN) {
            emit(key, from, BreakerState.OPEN, why, now, by, true);
            return true;
        }
        return false;
    }

    boolean forceClose(String key, String reason, String by) {
        Instant now = now();
        String why = "forced closed" + (reason == null || reason.isBlank() ? "" : ": " + reason);
        BreakerState from = inline("forcing closed the breaker of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.FORCE_CLOSE)) {
                Db.bind(ps, key, ts(now), cut(why), by, origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        if (from == null) {
            return false;
        }
        update(keyState(key), s -> s.withBreaker(BreakerState.CLOSED, null, false, null, null, why));
        emit(key, from, BreakerState.CLOSED, why, now, by, true);
        return true;
    }

    BreakerState breakerState(String key) {
        return inline("reading the breaker of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.BREAKER_STATE)) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : BreakerState.CLOSED;
                }
            }
        });
    }

    Instant cooldownUntil(String key) {
        return inline("reading the cooldown of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.COOLDOWN_UNTIL)) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? instant(rs, "until") : null;
                }
            }
        });
    }

    void addListener(BreakerListener l) {
        listeners.add(Objects.requireNonNull(l, "listener"));
    }

    void removeListener(BreakerListener l) {
        listeners.remove(l);
    }

    String workerName() {
        return workerName;
    }

    // ---- cache --------------------------------------------------------------------------------

    private KeyState keyState(String key) {
        return keys.computeIfAbsent(key, KeyState::new);
    }

    /** The key's snapshot, read from the database when missing or older than the staleness bound. */
    private Snapshot fresh(KeyState ks) {
        Snapshot s = ks.snapshot;
        if (s != null && System.nanoTime() - ks.loadedAt < MAX_STALENESS.toNanos()) {
            return s;
        }
        synchronized (ks.loadLock) {
            s = ks.snapshot;
            if (s != null && System.nanoTime() - ks.loadedAt < MAX_STALENESS.toNanos()) {
                return s;
            }
            load(List.of(ks.key), false);
            return ks.snapshot;
        }
    }

    /** Reads the keys' breakers and cooldowns in one query; creates missing breaker rows. */
    private void load(List<String> keyList, boolean background) {
        long started = System.nanoTime();
        List<String> missing = new ArrayList<>();
        Map<String, Object[]> paces = new java.util.HashMap<>();
        Map<String, Snapshot> read = run(background, "reading the provider state of " + keyList.size() + " keys", c -> {
            Map<String, Snapshot> out = new java.util.HashMap<>();
            try (PreparedStatement ps = c.prepareStatement(StateSql.LOAD)) {
                ps.setArray(1, c.createArrayOf("text", keyList.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        boolean has = rs.getBoolean("has_breaker");
                        String key = rs.getString("key");
                        if (!has) {
                            missing.add(key);
                        }
                        out.put(key, new Snapshot(has, BreakerState.fromCode(rs.getString("state")),
                                instant(rs, "open_until"), rs.getBoolean("trial_claimed"), instant(rs, "trial_claimed_at"),
                                instant(rs, "trial_expires_at"), rs.getString("reason"), instant(rs, "until"),
                                rs.getString("cooldown_reason"), rs.getString("cooldown_detail")));
                        double rpm = rs.getDouble("learned_rpm");
                        paces.put(key, new Object[] {rs.wasNull() ? null : rpm, instant(rs, "learned_until")});
                    }
                }
            }
            return out;
        });
        for (Map.Entry<String, Snapshot> e : read.entrySet()) {
            KeyState ks = keyState(e.getKey());
            ks.snapshot = e.getValue();
            ks.loadedAt = started;
            Object[] pace = paces.get(e.getKey());
            ks.learned = pace == null || pace[0] == null ? null : learned((Double) pace[0], (Instant) pace[1], ks.learned);
        }
        if (!missing.isEmpty()) {
            ensureBreakers(missing, background);
        }
    }

    private void ensureBreakers(List<String> keyList, boolean background) {
        run(background, "creating the breakers of " + keyList, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.ENSURE_BREAKERS)) {
                ps.setString(1, workerName);
                ps.setString(2, origin);
                ps.setArray(3, c.createArrayOf("text", keyList.toArray()));
                return ps.executeUpdate();
            }
        });
    }

    private void configureBucket(String key, BucketSettings b) {
        inline("configuring the bucket of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.CONFIGURE_BUCKET)) {
                Db.bind(ps, key, b.requestsPerMinute() > 0 ? b.requestsPerMinute() : null,
                        b.tokensPerMinute() > 0 ? b.tokensPerMinute() : null, (int) Math.min(Integer.MAX_VALUE, b.burst().toMillis()),
                        workerName);
                return ps.executeUpdate();
            }
        });
    }

    private void update(KeyState ks, java.util.function.UnaryOperator<Snapshot> f) {
        synchronized (ks.loadLock) {
            Snapshot s = ks.snapshot;
            if (s != null) {
                ks.snapshot = f.apply(s);
            }
        }
    }

    private void refreshLoop() {
        while (running) {
            synchronized (wake) {
                if (!wakeRequested) {
                    try {
                        wake.wait(REFRESH_INTERVAL.toMillis());
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                wakeRequested = false;
            }
            if (!running) {
                return;
            }
            refreshOnce();
        }
    }

    /** One background round: writes counted successes, re-reads every known key. */
    void refreshOnce() {
        try {
            flushSuccesses();
            List<String> all = new ArrayList<>(keys.keySet());
            if (!all.isEmpty()) {
                load(all, true);
            }
            if (refreshFailing) {
                refreshFailing = false;
                LOG.info("Layover: provider state readable again");
            }
        } catch (RuntimeException e) {
            if (!refreshFailing) {
                refreshFailing = true;
                LOG.warn("Layover: cannot refresh the provider state (will retry every {} ms; after {} s without a "
                        + "fresh read, jobs of these keys wait instead of calling): {}", REFRESH_INTERVAL.toMillis(),
                        MAX_STALENESS.toSeconds(), e.getMessage());
            }
        }
    }

    private void flushSuccesses() {
        List<String> names = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        List<Double> windows = new ArrayList<>();
        List<KeyState> states = new ArrayList<>();
        for (KeyState ks : keys.values()) {
            long n = ks.successes.sumThenReset();
            if (n > 0) {
                names.add(ks.key);
                counts.add((int) Math.min(Integer.MAX_VALUE, n));
                windows.add(seconds(breakerSettings(ks.key).window()));
                states.add(ks);
            }
        }
        if (names.isEmpty()) {
            return;
        }
        try {
            run(true, "writing breaker successes", c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.ADD_SUCCESSES)) {
                    ps.setObject(1, ts(now()));
                    ps.setArray(2, c.createArrayOf("text", names.toArray()));
                    ps.setArray(3, c.createArrayOf("int4", counts.toArray()));
                    ps.setArray(4, c.createArrayOf("float8", windows.toArray()));
                    return ps.executeUpdate();
                }
            });
        } catch (RuntimeException e) {
            for (int i = 0; i < states.size(); i++) {
                states.get(i).successes.add(counts.get(i));
            }
            throw e;
        }
    }

    /** Asks the background thread for a round now (after a NOTIFY, or a lost trial claim). */
    void wakeUp() {
        synchronized (wake) {
            wakeRequested = true;
            wake.notifyAll();
        }
    }

    /** A NOTIFY from the tables' triggers: tell listeners of other instances' changes, re-read. */
    void onNotification(String payload) {
        try {
            JsonNode n = JSON.readTree(payload);
            String key = n.path("key").asText(null);
            if (key != null && "breakers".equals(n.path("table").asText()) && !origin.equals(n.path("origin").asText())) {
                String from = n.path("from").asText(null);
                String to = n.path("to").asText(null);
                if (from != null && to != null && !from.equals(to)) {
                    emit(key, BreakerState.fromCode(from), BreakerState.fromCode(to), n.path("reason").asText(null),
                            clock.instant(), n.path("by").asText(null), false);
                }
            }
        } catch (Exception e) {
            LOG.warn("Layover: unreadable provider state notification {}: {}", payload, e.toString());
        }
        wakeUp();
        for (Runnable hook : notificationHooks) {
            hook.run();
        }
    }

    // ---- other readers of the provider state channel (pauses, cancels) -------------------------

    private final CopyOnWriteArrayList<Runnable> notificationHooks = new CopyOnWriteArrayList<>();

    /**
     * Runs {@code hook} (on the NOTIFY thread; it must be quick and must not throw) for every
     * notification on the provider state channel, which also carries pauses and cancel requests.
     *
     * @param hook what to run
     */
    public void addNotificationHook(Runnable hook) {
        notificationHooks.add(Objects.requireNonNull(hook, "hook"));
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
        releaseTrialQuietly(key, trialToken);
    }

    // ---- backlog reservation ------------------------------------------------------------------

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

    /** Jobs reserved by one {@link #reserveBacklog} statement at most. */
    static final int BACKLOG_BATCH = 10_000;

    /** How often one instance reserves a key's backlog at most. */
    static final Duration BACKLOG_EVERY = Duration.ofSeconds(1);

    private final ConcurrentHashMap<String, Long> backlogReservedAt = new ConcurrentHashMap<>();

    /**
     * Called after a job of {@code key} was told to wait for a bucket permit far ahead: the key has
     * a backlog. Gives the key's due, unpicked jobs their permits in one statement
     * ({@code StateSql.RESERVE_BACKLOG}), each rescheduled to its slot holding it, so that the
     * backlog is not picked and rescheduled one job at a time while the jobs holding permits wait
     * behind it (and miss them). At most once per {@link #BACKLOG_EVERY} per key in this instance;
     * nothing when the key has no request bucket. Never throws.
     *
     * @param key the provider key
     * @param types the job types whose jobs may be reserved
     * @return how many jobs of each type were reserved (empty when none)
     */
    public Map<String, Integer> reserveBacklog(String key, List<BacklogType> types) {
        BucketSettings b = key == null ? null : bucketOf(keyState(key), now());
        if (b == null || b.requestRate() <= 0 || !running) {
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
        List<String> names = new ArrayList<>();
        List<Integer> caps = new ArrayList<>();
        Duration horizon = null;
        for (BacklogType bt : types) {
            if (bt.countsTokens() && b.tokenRate() > 0) {
                continue;
            }
            names.add(bt.name());
            caps.add(bt.maxReschedules());
            horizon = horizon == null || bt.maxDeferral().compareTo(horizon) < 0 ? bt.maxDeferral() : horizon;
        }
        if (names.isEmpty()) {
            return Map.of();
        }
        Instant now = now();
        double horizonSeconds = seconds(horizon);
        try {
            Map<String, Integer> reserved = inline("reserving bucket permits for the backlog of " + key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.RESERVE_BACKLOG)) {
                    Db.bind(ps, key, ts(now), b.requestRate(), b.requestCapacity(), BACKLOG_BATCH, horizonSeconds,
                            c.createArrayOf("text", names.toArray()), c.createArrayOf("integer", caps.toArray()));
                    Map<String, Integer> byType = new LinkedHashMap<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            byType.put(rs.getString("task_name"), rs.getInt("reserved"));
                        }
                    }
                    return byType;
                }
            });
            if (!reserved.isEmpty()) {
                LOG.debug("Reserved bucket permits of {} for waiting jobs {}", key, reserved);
            }
            return reserved;
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not reserve bucket permits for the backlog of {} (its jobs take them one by one): {}",
                    key, e.toString());
            return Map.of();
        }
    }

    // ---- events -------------------------------------------------------------------------------

    private void emit(String key, BreakerState from, BreakerState to, String reason, Instant at, String by, boolean local) {
        if (local) {
            LOG.info("Breaker of {}: {} -> {} ({})", key, from.code(), to.code(), reason);
            metrics.breakerChanged(key, from.code(), to.code());
        }
        if (listeners.isEmpty()) {
            return;
        }
        BreakerEvent event = new BreakerEvent(key, from, to, at, reason, by, local);
        events().execute(() -> {
            for (BreakerListener l : listeners) {
                try {
                    l.onChange(event);
                } catch (RuntimeException e) {
                    LOG.warn("Layover: breaker listener {} failed on {}", l, event, e);
                }
            }
        });
    }

    private ExecutorService events() {
        ExecutorService ev = events;
        if (ev == null) {
            synchronized (this) {
                ev = events;
                if (ev == null) {
                    ev = Executors.newSingleThreadExecutor(r -> {
                        Thread t = new Thread(r, "layover-breaker-events-" + workerName);
                        t.setDaemon(true);
                        return t;
                    });
                    events = ev;
                }
            }
        }
        return ev;
    }

    // ---- measurement (tests) ------------------------------------------------------------------

    /** @return statements run on worker threads (deciding or recording a call) since start */
    long inlineStatements() {
        return inlineStatements.get();
    }

    /** @return statements run by the background refresh since start */
    long backgroundStatements() {
        return backgroundStatements.get();
    }

    // ---- helpers ------------------------------------------------------------------------------

    BreakerSettings breakerSettings(String key) {
        return config.perKeyBreakers().getOrDefault(key, config.breakers());
    }

    /** Now, at the database's precision, so that times read back compare equal to times written. */
    private Instant now() {
        return clock.instant().truncatedTo(ChronoUnit.MICROS);
    }

    private <T> T inline(String what, Db.Work<T> work) {
        return run(false, what, work);
    }

    private <T> T run(boolean background, String what, Db.Work<T> work) {
        (background ? backgroundStatements : inlineStatements).incrementAndGet();
        return db.autocommit(what, work);
    }

    static OffsetDateTime ts(Instant i) {
        return OffsetDateTime.ofInstant(i, ZoneOffset.UTC);
    }

    static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }

    static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        if (t == null) {
            return null;
        }
        if (t.equals(OffsetDateTime.MAX)) {
            return Instant.MAX;
        }
        if (t.equals(OffsetDateTime.MIN)) {
            return Instant.MIN;
        }
        return t.toInstant();
    }

    static String cut(String s) {
        if (s == null) {
            return null;
        }
        return s.length() <= MAX_DETAIL ? s : s.substring(0, MAX_DETAIL - 1) + "…";
    }
}
