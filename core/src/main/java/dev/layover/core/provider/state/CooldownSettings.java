package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.time.Duration;

/**
 * How long a provider key cools down when the provider did not say. Immutable. Set with
 * {@code Layover.Builder#cooldowns}.
 *
 * <p>A cooldown is a row of {@code layover.cooldowns}: no worker calls the key before its
 * {@code until}, which only ever moves forward. RATE_LIMITED sets it to at least now +
 * retry-after; QUOTA_EXHAUSTED with a known reset sets it to the reset; OVERLOADED sets its
 * retry-after, or without one a short cooldown only when the key's recent calls show a rate of
 * failures (at least 3 in its breaker window, at least 20 % of its calls). When the provider gave
 * no wait, the wait escalates with the key's back-to-back cooldowns ("strikes"):
 * {@code base * 2^(strikes-1)} up to the cap. A cooldown that starts more than
 * {@link #strikeMemory()} after the previous one ended, or after a call of the key succeeded once
 * the previous one ended, starts again at one strike.
 *
 * <p><b>Learned pace.</b> A cooldown alone lets the whole fleet call again at its end, and the
 * burst that follows earns the next 429. When a 429 states the key's request limit
 * ({@link dev.layover.core.outcome.Outcome.RateLimited#requestLimitPerSecond()}: OpenAI,
 * Anthropic) and the key has no configured bucket, Layover writes a <em>learned</em> bucket: a
 * row of {@code layover.buckets} with {@code learned_until = now + learnedPaceFor} and
 * {@code requests_per_minute = learnedPaceShare * limit} (default burst and lease, see
 * {@link BucketSettings}). Every worker reads it with the key's state (each second, or at once
 * after the cooldown's NOTIFY) and takes permits from it like from a configured bucket. Each
 * further 429 that states a limit renews it; without one it lapses (the limit may have been
 * raised) and the key is called freely again. A configured bucket is never overwritten.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #rateLimitBase()} / {@link #rateLimitCap()}</td><td>1 s doubling to 60 s</td></tr>
 *   <tr><td>{@link #overloadBase()} / {@link #overloadCap()}</td><td>1 s doubling to 30 s (a
 *       retry-after sent with the overload is used instead, up to the cap)</td></tr>
 *   <tr><td>{@link #strikeMemory()}</td><td>60 s</td></tr>
 *   <tr><td>{@link #learnedPaceFor()}</td><td>10 min ({@link Duration#ZERO}: never learn a pace)</td></tr>
 *   <tr><td>{@link #learnedPaceShare()}</td><td>0.95 of the stated limit</td></tr>
 *   <tr><td>{@link #discovery()}</td><td>{@link DiscoverySettings#off()}: no pace discovered; opt in
 *       with {@code withDiscovery(DiscoverySettings.defaults())} for keys whose 429s state no limit</td></tr>
 * </table>
 *
 * @param rateLimitBase the first wait after a 429 without retry-after
 * @param rateLimitCap the longest such wait
 * @param overloadBase the first cooldown after an overloaded answer (503, 529)
 * @param overloadCap the longest overload cooldown
 * @param strikeMemory how soon after the previous cooldown a new one counts as back-to-back
 * @param learnedPaceFor how long a pace learned from a 429 lasts after the last 429 that stated
 *     the limit; zero: never learn one
 * @param learnedPaceShare the share of the stated limit a learned pace allows, in (0, 1]
 * @param discovery how a pace is discovered for a key whose 429s state no limit (see
 *     {@link DiscoverySettings})
 */
public record CooldownSettings(Duration rateLimitBase, Duration rateLimitCap, Duration overloadBase,
        Duration overloadCap, Duration strikeMemory, Duration learnedPaceFor, double learnedPaceShare,
        DiscoverySettings discovery) {

    /** The default {@link #learnedPaceFor()}. */
    public static final Duration DEFAULT_LEARNED_PACE_FOR = Duration.ofMinutes(10);
    /** The default {@link #learnedPaceShare()}. */
    public static final double DEFAULT_LEARNED_PACE_SHARE = 0.95;

    private static final CooldownSettings DEFAULTS = new CooldownSettings(Duration.ofSeconds(1),
            Duration.ofSeconds(60), Duration.ofSeconds(1), Duration.ofSeconds(30), Duration.ofSeconds(60));

    /**
     * Validates the settings.
     *
     * @param rateLimitBase the first wait after a 429 without retry-after
     * @param rateLimitCap the longest such wait
     * @param overloadBase the first cooldown after an overloaded answer (503, 529)
     * @param overloadCap the longest overload cooldown
     * @param strikeMemory how soon after the previous cooldown a new one counts as back-to-back
     * @param learnedPaceFor how long a pace learned from a 429 lasts after the last 429 that stated the
     *     limit; zero: never learn one
     * @param learnedPaceShare the share of the stated limit a learned pace allows, in (0, 1]
     * @param discovery how a pace is discovered for a key whose 429s state no limit; not null
     */
    public CooldownSettings {
        if (discovery == null) {
            throw new ConfigurationException("discovery must not be null (DiscoverySettings.off() turns it off)");
        }
        BreakerSettings.positive(rateLimitBase, "rateLimitBase");
        BreakerSettings.positive(rateLimitCap, "rateLimitCap");
        BreakerSettings.positive(overloadBase, "overloadBase");
        BreakerSettings.positive(overloadCap, "overloadCap");
        BreakerSettings.positive(strikeMemory, "strikeMemory");
        if (rateLimitCap.compareTo(rateLimitBase) < 0 || overloadCap.compareTo(overloadBase) < 0) {
            throw new ConfigurationException("a cooldown cap must not be less than its base");
        }
        if (learnedPaceFor == null || learnedPaceFor.isNegative()) {
            throw new ConfigurationException("learnedPaceFor must be zero or more, was " + learnedPaceFor);
        }
        if (!(learnedPaceShare > 0 && learnedPaceShare <= 1)) {
            throw new ConfigurationException("learnedPaceShare must be in (0, 1], was " + learnedPaceShare);
        }
    }

    /**
     * Cooldown waits and a learned pace, without discovery (opt in with {@link #withDiscovery}).
     *
     * @param rateLimitBase the first wait after a 429 without retry-after
     * @param rateLimitCap the longest such wait
     * @param overloadBase the first cooldown after an overloaded answer (503, 529)
     * @param overloadCap the longest overload cooldown
     * @param strikeMemory how soon after the previous cooldown a new one counts as back-to-back
     * @param learnedPaceFor how long a pace learned from a 429 lasts; zero: never learn one
     * @param learnedPaceShare the share of the stated limit a learned pace allows, in (0, 1]
     */
    public CooldownSettings(Duration rateLimitBase, Duration rateLimitCap, Duration overloadBase, Duration overloadCap,
            Duration strikeMemory, Duration learnedPaceFor, double learnedPaceShare) {
        this(rateLimitBase, rateLimitCap, overloadBase, overloadCap, strikeMemory, learnedPaceFor, learnedPaceShare,
                DiscoverySettings.off());
    }

    /**
     * Cooldown waits with the default learned pace.
     *
     * @param rateLimitBase the first wait after a 429 without retry-after
     * @param rateLimitCap the longest such wait
     * @param overloadBase the first cooldown after an overloaded answer
     * @param overloadCap the longest overload cooldown
     * @param strikeMemory how soon after the previous cooldown a new one counts as back-to-back
     */
    public CooldownSettings(Duration rateLimitBase, Duration rateLimitCap, Duration overloadBase, Duration overloadCap,
            Duration strikeMemory) {
        this(rateLimitBase, rateLimitCap, overloadBase, overloadCap, strikeMemory, DEFAULT_LEARNED_PACE_FOR,
                DEFAULT_LEARNED_PACE_SHARE);
    }

    /**
     * @param keepFor how long a learned pace lasts after the last 429 that stated the limit; zero:
     *     never learn one
     * @param share the share of the stated limit it allows, in (0, 1]
     * @return a copy with these learned-pace settings
     */
    public CooldownSettings withLearnedPace(Duration keepFor, double share) {
        return new CooldownSettings(rateLimitBase, rateLimitCap, overloadBase, overloadCap, strikeMemory, keepFor, share,
                discovery);
    }

    /**
     * @param settings how a pace is discovered for keys whose 429s state no limit
     * @return a copy with these discovery settings
     */
    public CooldownSettings withDiscovery(DiscoverySettings settings) {
        return new CooldownSettings(rateLimitBase, rateLimitCap, overloadBase, overloadCap, strikeMemory, learnedPaceFor,
                learnedPaceShare, settings);
    }

    /** @return a copy that discovers no pace: a 429 that states no limit only sets a cooldown */
    public CooldownSettings withoutDiscovery() {
        return withDiscovery(DiscoverySettings.off());
    }

    /** @return a copy that never learns a pace: 429s only set cooldowns */
    public CooldownSettings withoutLearnedPace() {
        return withLearnedPace(Duration.ZERO, learnedPaceShare);
    }

    /**
     * @return the defaults: 1 s doubling to 60 s after a 429, 1 s doubling to 30 s after an
     *     overload; a pace learned at 95 % of a stated limit, for 10 minutes
     */
    public static CooldownSettings defaults() {
        return DEFAULTS;
    }
}
