package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.time.Duration;

/**
 * How long a provider key cools down when the provider did not say. Immutable. Set with
 * {@code Layover.Builder#cooldowns}.
 *
 * <p>A cooldown is a row of {@code layover.cooldowns}: no worker calls the key before its
 * {@code until}, which only ever moves forward. RATE_LIMITED sets it to at least now +
 * retry-after; QUOTA_EXHAUSTED with a known reset sets it to the reset; OVERLOADED sets a short
 * one. When the provider gave no wait, the wait escalates with the key's back-to-back cooldowns
 * ("strikes"): {@code base * 2^(strikes-1)} up to the cap. A cooldown that starts more than
 * {@link #strikeMemory()} after the previous one ended starts again at one strike.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #rateLimitBase()} / {@link #rateLimitCap()}</td><td>1 s doubling to 60 s</td></tr>
 *   <tr><td>{@link #overloadBase()} / {@link #overloadCap()}</td><td>1 s doubling to 30 s (a
 *       retry-after sent with the overload is used instead, up to the cap)</td></tr>
 *   <tr><td>{@link #strikeMemory()}</td><td>60 s</td></tr>
 * </table>
 *
 * @param rateLimitBase the first wait after a 429 without retry-after
 * @param rateLimitCap the longest such wait
 * @param overloadBase the first cooldown after an overloaded answer (503, 529)
 * @param overloadCap the longest overload cooldown
 * @param strikeMemory how soon after the previous cooldown a new one counts as back-to-back
 */
public record CooldownSettings(Duration rateLimitBase, Duration rateLimitCap, Duration overloadBase,
        Duration overloadCap, Duration strikeMemory) {

    private static final CooldownSettings DEFAULTS = new CooldownSettings(Duration.ofSeconds(1),
            Duration.ofSeconds(60), Duration.ofSeconds(1), Duration.ofSeconds(30), Duration.ofSeconds(60));

    /** Validates the settings. */
    public CooldownSettings {
        BreakerSettings.positive(rateLimitBase, "rateLimitBase");
        BreakerSettings.positive(rateLimitCap, "rateLimitCap");
        BreakerSettings.positive(overloadBase, "overloadBase");
        BreakerSettings.positive(overloadCap, "overloadCap");
        BreakerSettings.positive(strikeMemory, "strikeMemory");
        if (rateLimitCap.compareTo(rateLimitBase) < 0 || overloadCap.compareTo(overloadBase) < 0) {
            throw new ConfigurationException("a cooldown cap must not be less than its base");
        }
    }

    /** @return the defaults: 1 s doubling to 60 s after a 429, 1 s doubling to 30 s after an overload */
    public static CooldownSettings defaults() {
        return DEFAULTS;
    }
}
