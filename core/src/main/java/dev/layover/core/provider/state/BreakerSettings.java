package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.time.Duration;
import java.util.Objects;

/**
 * When a provider key's circuit breaker opens and how long it stays open. Immutable; every
 * {@code withX} returns a copy. Set for all keys with {@code Layover.Builder#breakers} or for one
 * key with {@code Layover.Builder#breaker}.
 *
 * <p>A closed breaker counts calls in a tumbling window of {@link #window()}: a success (the
 * handler returned done) counts a call; an OVERLOADED, TRANSIENT, QUOTA_EXHAUSTED or AUTH_REFUSED
 * outcome counts a call and a failure. A rate limit, a rejected request, a snooze and the job's
 * own errors count nothing. The breaker opens when, within one window, there were at least
 * {@link #minimumCalls()} calls, at least {@link #failureThreshold()} failures, and failures make
 * at least {@link #failureRatio()} of the calls; or when {@link #consecutiveFailures()} failures
 * came in a row, fleet-wide, with no success reported between them (an outage that starts after
 * a window of successes opens it without waiting for the window to end; a failure reported by a
 * worker that had successes since its last report starts the row again).
 *
 * <p>Open, it refuses calls for {@link #openFor()}, doubling with each failed trial up to
 * {@link #maxOpenFor()}. Then one worker in the fleet claims the trial (the breaker is half-open);
 * a trial not reported within {@link #trialTimeout()} is taken over by another worker. A
 * successful trial closes the breaker; a failed one opens it again.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #window()}</td><td>60 s</td></tr>
 *   <tr><td>{@link #minimumCalls()}</td><td>10</td></tr>
 *   <tr><td>{@link #failureThreshold()}</td><td>5</td></tr>
 *   <tr><td>{@link #failureRatio()}</td><td>0.5</td></tr>
 *   <tr><td>{@link #openFor()}</td><td>30 s</td></tr>
 *   <tr><td>{@link #maxOpenFor()}</td><td>10 min</td></tr>
 *   <tr><td>{@link #trialTimeout()}</td><td>2 min</td></tr>
 *   <tr><td>{@link #consecutiveFailures()}</td><td>10</td></tr>
 * </table>
 *
 * @param window the counting window
 * @param minimumCalls calls in the window before the breaker may open; at least 1
 * @param failureThreshold failures in the window before the breaker may open; at least 1
 * @param failureRatio the share of failures among calls that opens it; in (0, 1]
 * @param openFor how long the first opening lasts
 * @param maxOpenFor the longest opening after repeated failed trials
 * @param trialTimeout how long a claimed trial may take before another worker may claim it
 * @param consecutiveFailures failures in a row, with no success between them, that open it; at least 1
 */
public record BreakerSettings(Duration window, int minimumCalls, int failureThreshold, double failureRatio,
        Duration openFor, Duration maxOpenFor, Duration trialTimeout, int consecutiveFailures) {

    /** The default of {@link #consecutiveFailures()}: 10. */
    public static final int DEFAULT_CONSECUTIVE_FAILURES = 10;

    private static final BreakerSettings DEFAULTS = new BreakerSettings(Duration.ofSeconds(60), 10, 5, 0.5,
            Duration.ofSeconds(30), Duration.ofMinutes(10), Duration.ofMinutes(2), DEFAULT_CONSECUTIVE_FAILURES);

    /**
     * Validates the settings.
     *
     * @param window the counting window
     * @param minimumCalls calls in the window before the breaker may open; at least 1
     * @param failureThreshold failures in the window before the breaker may open; at least 1
     * @param failureRatio the share of failures among calls that opens it; in (0, 1]
     * @param openFor how long the first opening lasts
     * @param maxOpenFor the longest opening after repeated failed trials
     * @param trialTimeout how long a claimed trial may take before another worker may claim it
     * @param consecutiveFailures failures in a row, with no success between them, that open it; at least 1
     */
    public BreakerSettings {
        positive(window, "window");
        positive(openFor, "openFor");
        positive(maxOpenFor, "maxOpenFor");
        positive(trialTimeout, "trialTimeout");
        if (minimumCalls < 1) {
            throw new ConfigurationException("minimumCalls must be at least 1, was " + minimumCalls);
        }
        if (failureThreshold < 1) {
            throw new ConfigurationException("failureThreshold must be at least 1, was " + failureThreshold);
        }
        if (!(failureRatio > 0 && failureRatio <= 1)) {
            throw new ConfigurationException("failureRatio must be in (0, 1], was " + failureRatio);
        }
        if (consecutiveFailures < 1) {
            throw new ConfigurationException("consecutiveFailures must be at least 1, was " + consecutiveFailures);
        }
        if (maxOpenFor.compareTo(openFor) < 0) {
            throw new ConfigurationException("maxOpenFor (" + maxOpenFor + ") must not be less than openFor (" + openFor + ")");
        }
    }

    /**
     * @return the defaults: 5 failures and half of at least 10 calls within 60 s, or 10 failures in a
     *     row; open 30 s doubling to 10 min
     */
    public static BreakerSettings defaults() {
        return DEFAULTS;
    }

    /**
     * @param window the counting window
     * @param minimumCalls calls in the window before it may open
     * @param failureThreshold failures in the window before it may open
     * @param failureRatio the share of failures that opens it
     * @return a copy with those thresholds
     */
    public BreakerSettings withThresholds(Duration window, int minimumCalls, int failureThreshold, double failureRatio) {
        return new BreakerSettings(window, minimumCalls, failureThreshold, failureRatio, openFor, maxOpenFor, trialTimeout, consecutiveFailures);
    }

    /**
     * @param first how long the first opening lasts
     * @param max the longest opening
     * @return a copy with those durations
     */
    public BreakerSettings withOpenFor(Duration first, Duration max) {
        return new BreakerSettings(window, minimumCalls, failureThreshold, failureRatio, first, max, trialTimeout, consecutiveFailures);
    }

    /**
     * @param timeout how long a trial may take before its claim goes stale
     * @return a copy with that timeout
     */
    public BreakerSettings withTrialTimeout(Duration timeout) {
        return new BreakerSettings(window, minimumCalls, failureThreshold, failureRatio, openFor, maxOpenFor, timeout, consecutiveFailures);
    }

    /**
     * @param n failures in a row, with no success reported between them, that open the breaker
     * @return a copy with that count
     */
    public BreakerSettings withConsecutiveFailures(int n) {
        return new BreakerSettings(window, minimumCalls, failureThreshold, failureRatio, openFor, maxOpenFor, trialTimeout, n);
    }

    static void positive(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new ConfigurationException(name + " must be positive, was " + d);
        }
    }
}
