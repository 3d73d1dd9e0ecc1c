package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.time.Duration;
import java.util.Objects;

/**
 * How background jobs share a provider key with interactive calls ({@code InteractiveCalls}: a web
 * request's call, admitted from any thread; {@code docs/interactive.md}). Set with
 * {@code Layover.Builder#interactive(InteractiveSettings)}; every instance of a fleet should use the
 * same settings (each pick applies its own instance's).
 *
 * <p>While interactive calls of a key are arriving (one asked for a permit within the last
 * {@link #window()}, as the key's bucket row records in database time), background admissions (the
 * pick, a job's call to another key) leave {@link #share()} of each dimension of the key's bucket
 * (requests and tokens) free; interactive calls are not limited by it. When interactive calls stop,
 * background takes the whole bucket back after one window (work-conserving). A key without a
 * bucket has nothing to share.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #share()}</td><td>0.25 of each dimension's capacity (0: no reserve)</td></tr>
 *   <tr><td>{@link #window()}</td><td>1 s since the last interactive call</td></tr>
 * </table>
 *
 * @param share the share of each bucket dimension's capacity kept free for interactive calls, in [0, 1)
 * @param window how long after an interactive call the share stays reserved, more than zero and at most one hour
 */
public record InteractiveSettings(double share, Duration window) {

    /** The default {@link #share()}. */
    public static final double DEFAULT_SHARE = 0.25;
    /** The default {@link #window()}. */
    public static final Duration DEFAULT_WINDOW = Duration.ofSeconds(1);

    /**
     * Validates the settings.
     *
     * @param share the reserved share
     * @param window how long the share stays reserved after an interactive call
     * @throws ConfigurationException when a value is out of range
     */
    public InteractiveSettings {
        Objects.requireNonNull(window, "window");
        if (!(share >= 0 && share < 1)) {
            throw new ConfigurationException("interactive share must be in [0, 1), was " + share);
        }
        if (window.isNegative() || window.isZero() || window.compareTo(Duration.ofHours(1)) > 0) {
            throw new ConfigurationException("interactive window must be more than zero and at most 1 hour, was "
                    + window);
        }
    }

    /** @return the defaults: 0.25 kept free for 1 s after each interactive call */
    public static InteractiveSettings defaults() {
        return new InteractiveSettings(DEFAULT_SHARE, DEFAULT_WINDOW);
    }

    /**
     * @param share the share of each dimension kept free, in [0, 1)
     * @param window how long after an interactive call it stays reserved
     * @return the settings
     */
    public static InteractiveSettings of(double share, Duration window) {
        return new InteractiveSettings(share, window);
    }

    /** @return the window in seconds, as the pick's options carry it */
    public double windowSeconds() {
        return window.toNanos() / 1e9;
    }
}
