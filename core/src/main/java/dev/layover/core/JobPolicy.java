package dev.layover.core;

import java.time.Duration;
import java.util.Objects;

/**
 * The limits of one job type. Immutable; every {@code withX} returns a copy.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@link #maxAttempts()}</td><td>10</td><td>failed runs ({@code attempts}) before the job
 *       is parked. Only failures spend attempts; a rate limit never does.</td></tr>
 *   <tr><td>{@link #backoffBase()}</td><td>2 s</td><td>retry delay is full jitter:
 *       {@code uniform(0, min(cap, base * 2^attempts))}</td></tr>
 *   <tr><td>{@link #backoffCap()}</td><td>10 min</td><td>the longest retry delay</td></tr>
 *   <tr><td>{@link #maxReschedules()}</td><td>100</td><td>reschedules (rate limits and quota
 *       waits its own calls met, snoozes) before the job is parked; waiting for its key's
 *       admission is not a reschedule</td></tr>
 *   <tr><td>{@link #maxDeferral()}</td><td>1 h</td><td>the longest single wait a rate limit or
 *       quota reset may impose, and the longest a due job waits for its key's rate limit at the
 *       pick; a longer one parks the job (and the recovery sweep brings it back
 *       when the provider recovers)</td></tr>
 *   <tr><td>{@link #timeout()}</td><td>30 min</td><td>the longest a handler may run; past it its
 *       thread is interrupted and the run counts as TRANSIENT (an attempt spent, a breaker failure of
 *       the job's provider key). The call may still have reached the provider and done its work:
 *       handlers must be idempotent. Generous on purpose: it stops a hung handler from holding its
 *       thread (and its job) for good, not a slow call</td></tr>
 *   <tr><td>{@link #newerArgsWait()}</td><td>1 h</td><td>how long a job whose stored args this
 *       worker cannot read, and which a different version of the job type wrote, waits for a
 *       worker that can (a rolling deploy) before it is parked {@code bad_args}; rescheduled
 *       meanwhile with reason {@code args_newer_version}, no attempt spent. Args written by this
 *       very version that do not read are parked at once</td></tr>
 * </table>
 *
 * @param maxAttempts failed runs before parking; at least 1
 * @param backoffBase base of the exponential retry backoff; positive
 * @param backoffCap the longest retry delay; at least {@code backoffBase}
 * @param maxReschedules reschedules before parking; at least 0
 * @param maxDeferral the longest wait on a rate limit or quota reset; positive
 * @param timeout the longest a handler may run, or {@code null} for no limit; positive
 * @param newerArgsWait how long a job with args of another version of the job type waits for a
 *     worker that can read them; positive
 */
public record JobPolicy(
        int maxAttempts, Duration backoffBase, Duration backoffCap, int maxReschedules, Duration maxDeferral,
        Duration timeout, Duration newerArgsWait) {

    /** The default execution timeout. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(30);

    /** The default wait of args of another version for a worker that can read them. */
    public static final Duration DEFAULT_NEWER_ARGS_WAIT = Duration.ofHours(1);

    private static final JobPolicy DEFAULTS = new JobPolicy(10, Duration.ofSeconds(2), Duration.ofMinutes(10), 100,
            Duration.ofHours(1), DEFAULT_TIMEOUT, DEFAULT_NEWER_ARGS_WAIT);

    /**
     * Validates the settings.
     *
     * @param maxAttempts failed runs before parking; at least 1
     * @param backoffBase base of the exponential retry backoff; positive
     * @param backoffCap the longest retry delay; at least {@code backoffBase}
     * @param maxReschedules reschedules before parking; at least 0
     * @param maxDeferral the longest wait on a rate limit or quota reset; positive
     * @param timeout the longest a handler may run, or {@code null} for no limit; positive
     * @param newerArgsWait how long a job with args of another version of the job type waits for a worker
     *     that can read them; positive
     */
    public JobPolicy {
        if (maxAttempts < 1) {
            throw new ConfigurationException("maxAttempts must be at least 1, was " + maxAttempts);
        }
        positive(backoffBase, "backoffBase");
        positive(backoffCap, "backoffCap");
        if (backoffCap.compareTo(backoffBase) < 0) {
            throw new ConfigurationException(
                    "backoffCap (" + backoffCap + ") must not be less than backoffBase (" + backoffBase + ")");
        }
        if (maxReschedules < 0) {
            throw new ConfigurationException("maxReschedules must not be negative, was " + maxReschedules);
        }
        positive(maxDeferral, "maxDeferral");
        if (timeout != null) {
            positive(timeout, "timeout");
        }
        positive(newerArgsWait, "newerArgsWait");
    }

    /**
     * The limits with a timeout and the default {@link #newerArgsWait()}.
     *
     * @param maxAttempts failed runs before parking; at least 1
     * @param backoffBase base of the exponential retry backoff; positive
     * @param backoffCap the longest retry delay; at least {@code backoffBase}
     * @param maxReschedules reschedules before parking; at least 0
     * @param maxDeferral the longest wait on a rate limit or quota reset; positive
     * @param timeout the longest a handler may run, or {@code null} for no limit; positive
     */
    public JobPolicy(int maxAttempts, Duration backoffBase, Duration backoffCap, int maxReschedules,
            Duration maxDeferral, Duration timeout) {
        this(maxAttempts, backoffBase, backoffCap, maxReschedules, maxDeferral, timeout, DEFAULT_NEWER_ARGS_WAIT);
    }

    /**
     * The limits without an execution timeout (the form before timeouts existed).
     *
     * @param maxAttempts failed runs before parking; at least 1
     * @param backoffBase base of the exponential retry backoff; positive
     * @param backoffCap the longest retry delay; at least {@code backoffBase}
     * @param maxReschedules reschedules before parking; at least 0
     * @param maxDeferral the longest wait on a rate limit or quota reset; positive
     */
    public JobPolicy(int maxAttempts, Duration backoffBase, Duration backoffCap, int maxReschedules,
            Duration maxDeferral) {
        this(maxAttempts, backoffBase, backoffCap, maxReschedules, maxDeferral, null);
    }

    /**
     * @return the defaults: 10 attempts, backoff 2 s to 10 min, 100 reschedules, 1 h deferral, a
     *     30 min timeout, args of another version waited for 1 h
     */
    public static JobPolicy defaults() {
        return DEFAULTS;
    }

    /**
     * @param n failed runs before parking
     * @return a copy with that setting
     */
    public JobPolicy withMaxAttempts(int n) {
        return new JobPolicy(n, backoffBase, backoffCap, maxReschedules, maxDeferral, timeout, newerArgsWait);
    }

    /**
     * @param base base of the exponential backoff
     * @param cap the longest retry delay
     * @return a copy with those settings
     */
    public JobPolicy withBackoff(Duration base, Duration cap) {
        return new JobPolicy(maxAttempts, base, cap, maxReschedules, maxDeferral, timeout, newerArgsWait);
    }

    /**
     * @param n reschedules before parking
     * @return a copy with that setting
     */
    public JobPolicy withMaxReschedules(int n) {
        return new JobPolicy(maxAttempts, backoffBase, backoffCap, n, maxDeferral, timeout, newerArgsWait);
    }

    /**
     * @param d the longest wait on a rate limit or quota reset
     * @return a copy with that setting
     */
    public JobPolicy withMaxDeferral(Duration d) {
        return new JobPolicy(maxAttempts, backoffBase, backoffCap, maxReschedules, d, timeout, newerArgsWait);
    }

    /**
     * An execution timeout: a handler still running after {@code d} has its thread interrupted,
     * and the run counts as TRANSIENT (retried with backoff, an attempt spent, a breaker failure
     * of the provider key; {@code provider_unavailable} once attempts run out), whatever the
     * handler returns afterwards, unless it returns done. The call may still have reached the
     * provider and done its work: handlers must be idempotent. A handler that ignores interrupts
     * (a busy loop, I/O that is not interruptible) keeps its worker thread until it returns.
     *
     * @param d the longest run, or {@code null} for none; default 30 min
     * @return a copy with that setting
     */
    public JobPolicy withTimeout(Duration d) {
        return new JobPolicy(maxAttempts, backoffBase, backoffCap, maxReschedules, maxDeferral, d, newerArgsWait);
    }

    /**
     * @param d how long a job with args of another version of the job type waits for a worker that
     *     can read them before it is parked {@code bad_args}
     * @return a copy with that setting
     */
    public JobPolicy withNewerArgsWait(Duration d) {
        return new JobPolicy(maxAttempts, backoffBase, backoffCap, maxReschedules, maxDeferral, timeout, d);
    }

    private static void positive(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new ConfigurationException(name + " must be positive, was " + d);
        }
    }
}
