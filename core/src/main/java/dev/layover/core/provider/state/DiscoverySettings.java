package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.time.Duration;

/**
 * How the fleet discovers the pace of a provider key whose 429s state no limit (Gemini, Bedrock,
 * Azure without limit headers, OpenAI-compatible servers). Immutable; set with
 * {@link CooldownSettings#withDiscovery(DiscoverySettings)} on {@code Layover.Builder#cooldowns}.
 *
 * <p><b>Opt in</b>: {@code CooldownSettings.defaults().withDiscovery(DiscoverySettings.defaults())}
 * ({@link CooldownSettings#defaults()} has it off). Discovery then applies to a key with no
 * configured bucket and no pace learned from a stated limit, from its first 429 that states no
 * limit (a 429 naming only a token limit included: the outcome does not tell them apart). A key
 * that never meets such a 429 is never paced by it. Precedence: a configured bucket, then a pace a
 * 429 stated, then a discovered one. Off by default because its slow start paces a key that was
 * busy at a high rate from 1 request/s after its first such 429, and a fallback chain waits for
 * the discovered pace's slot instead of falling back; {@link #defaults()} is the tuning measured
 * in docs/benchmarks.md.
 *
 * <p><b>The rule</b> (TCP CUBIC's curve, with slow start): the first such
 * 429 writes a row of {@code layover.buckets} with {@code discovered = true} in slow start at
 * {@link #initialPerSecond()}; every worker takes permits from it like from a configured bucket.
 * Slow start doubles the rate every {@link #every()} until the first 429 burst; then the pace is
 * steady: every interval in which due jobs of the key waited for it, the rate moves one interval
 * along a cubic curve through the ceiling (the rate of the last 429 burst): fast back up from a
 * decrease, flat near the ceiling, {@link #recovery()} from {@link #decrease()} of the ceiling to
 * the ceiling itself, then past it as fast again (probing for a limit that was raised). A 429 burst multiplies the rate by {@link #decrease()}
 * once for the fleet (a 429 within one interval of the last decrease belongs to its burst; the
 * first burst of a slow start halves it once more, since the rate doubled again before its 429s
 * came back), down
 * to {@link #minPerSecond()}, and the key pauses {@link #pause()} instead of the escalating
 * cooldown (a stated retry-after is still honoured; at the floor the cooldown escalates again). A
 * cooldown of {@link #restartAfter()} or more (a long stated wait, a quota reset, an overload)
 * restarts slow start from the initial rate up to the rate before it, so that the fleet does not
 * step from idle to full rate (which OpenAI's {@code slow_down} and Anthropic's acceleration
 * limits punish). A new rate applies at the next pick: nothing is booked ahead at the old one.
 *
 * <p><b>Database</b>: increases, decreases and restarts are conditional {@code UPDATE}s with the
 * database's clock: no write per successful call (each instance tries an increase at most once per
 * interval and key, and only one of the fleet's tries per interval changes the row), one decrease
 * per burst however many workers meet it. The row survives restarts; it lapses after
 * {@link #keepFor()} without a change. {@code layover.provider_keys} shows it ({@code pace_source =
 * 'discovered'}, {@code discovery_*}); an operator resets it by deleting its row (the statement is in
 * docs/provider-state.md, "Discovered pace").
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #enabled()}</td><td>true</td></tr>
 *   <tr><td>{@link #initialPerSecond()}</td><td>1 request/s</td></tr>
 *   <tr><td>{@link #minPerSecond()}</td><td>0.1 request/s</td></tr>
 *   <tr><td>{@link #every()}</td><td>1 s</td></tr>
 *   <tr><td>{@link #recovery()}</td><td>3 s (back to the ceiling after a decrease)</td></tr>
 *   <tr><td>{@link #decrease()}</td><td>0.7 (the rate kept at a 429 burst)</td></tr>
 *   <tr><td>{@link #pause()}</td><td>500 ms</td></tr>
 *   <tr><td>{@link #restartAfter()}</td><td>10 s</td></tr>
 *   <tr><td>{@link #keepFor()}</td><td>30 min</td></tr>
 * </table>
 *
 * @param enabled whether paces are discovered at all
 * @param initialPerSecond the rate slow start begins at, requests per second
 * @param minPerSecond the floor decreases stop at, requests per second
 * @param every the adjustment interval: at most one increase per key and interval, fleet-wide
 * @param recovery how long the steady curve takes from a decrease back to the ceiling (as long again
 *     to pass it by the share the decrease took)
 * @param decrease the share of the rate kept at a 429 burst, in (0, 1)
 * @param pause the cooldown after a 429 burst that stated no wait, while the rate can still decrease
 * @param restartAfter a cooldown at least this long restarts slow start
 * @param keepFor how long a discovered pace lasts after its last change
 */
public record DiscoverySettings(boolean enabled, double initialPerSecond, double minPerSecond, Duration every,
        Duration recovery, double decrease, Duration pause, Duration restartAfter, Duration keepFor) {

    private static final DiscoverySettings DEFAULTS = new DiscoverySettings(true, 1, 0.1, Duration.ofSeconds(1),
            Duration.ofSeconds(3), 0.7, Duration.ofMillis(500), Duration.ofSeconds(10), Duration.ofMinutes(30));

    /**
     * Validates the settings.
     *
     * @param enabled whether paces are discovered at all
     * @param initialPerSecond the rate slow start begins at, requests per second
     * @param minPerSecond the floor decreases stop at, requests per second
     * @param every the adjustment interval
     * @param recovery how long the steady curve takes from a decrease back to the ceiling
     * @param decrease the share of the rate kept at a 429 burst, in (0, 1)
     * @param pause the cooldown after a 429 burst that stated no wait
     * @param restartAfter a cooldown at least this long restarts slow start
         * @param keepFor how long a discovered pace lasts after its last change
     */
    public DiscoverySettings {
        if (!(minPerSecond > 0 && minPerSecond < Double.POSITIVE_INFINITY)) {
            throw new ConfigurationException("minPerSecond must be positive and finite, was " + minPerSecond);
        }
        if (!(initialPerSecond >= minPerSecond && initialPerSecond < Double.POSITIVE_INFINITY)) {
            throw new ConfigurationException("initialPerSecond must be finite and at least minPerSecond, was "
                    + initialPerSecond);
        }
        if (!(decrease > 0 && decrease < 1)) {
            throw new ConfigurationException("decrease must be in (0, 1), was " + decrease);
        }
        BreakerSettings.positive(every, "every");
        BreakerSettings.positive(recovery, "recovery");
        BreakerSettings.positive(pause, "pause");
        BreakerSettings.positive(restartAfter, "restartAfter");
        BreakerSettings.positive(keepFor, "keepFor");
    }

    /** @return the defaults (see the table above) */
    public static DiscoverySettings defaults() {
        return DEFAULTS;
    }

    /** @return the defaults, switched off: a 429 that states no limit only sets a cooldown */
    public static DiscoverySettings off() {
        return DEFAULTS.withEnabled(false);
    }

    /**
     * @param on whether paces are discovered
     * @return a copy with that switch
     */
    public DiscoverySettings withEnabled(boolean on) {
        return new DiscoverySettings(on, initialPerSecond, minPerSecond, every, recovery, decrease, pause, restartAfter,
                keepFor);
    }

    /**
     * @param initial the rate slow start begins at, requests per second
     * @param min the floor of decreases, requests per second
     * @return a copy with these rates
     */
    public DiscoverySettings withRates(double initial, double min) {
        return new DiscoverySettings(enabled, initial, min, every, recovery, decrease, pause, restartAfter,
                keepFor);
    }

    /**
     * @param interval the adjustment interval
     * @param recoveryTime how long the steady curve takes from a decrease back to the ceiling
     * @param decreaseShare the share of the rate kept at a 429 burst
     * @return a copy with this rule
     */
    public DiscoverySettings withRule(Duration interval, Duration recoveryTime, double decreaseShare) {
        return new DiscoverySettings(enabled, initialPerSecond, minPerSecond, interval, recoveryTime, decreaseShare, pause,
                restartAfter, keepFor);
    }

    /**
     * @param afterBurst the cooldown after a 429 burst that stated no wait
     * @param restartAfterCooldown a cooldown at least this long restarts slow start
     * @return a copy with these waits
     */
    public DiscoverySettings withWaits(Duration afterBurst, Duration restartAfterCooldown) {
        return new DiscoverySettings(enabled, initialPerSecond, minPerSecond, every, recovery, decrease, afterBurst,
                restartAfterCooldown, keepFor);
    }

    /**
     * @param keep how long a discovered pace lasts after its last change
     * @return a copy with this duration
     */
    public DiscoverySettings withKeepFor(Duration keep) {
        return new DiscoverySettings(enabled, initialPerSecond, minPerSecond, every, recovery, decrease, pause,
                restartAfter, keep);
    }
}
