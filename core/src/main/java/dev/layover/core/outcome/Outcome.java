package dev.layover.core.outcome;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * What became of one run of a job, and so what Layover writes to the database.
 *
 * <p>A handler returns an outcome, or throws an {@link OutcomeException} carrying one; returning
 * normally with {@code null} or {@link #done()} means done. Any other exception is classified:
 * provider SDK and HTTP errors become the matching provider outcome, anything else is a
 * {@link Retry} (a bug, parked as {@code job_error} once attempts run out).
 *
 * <p>Each case states its database effect. "Attempt" means db-scheduler's
 * {@code consecutive_failures} ({@code attempts} in {@code layover.jobs}); "reschedule" moves
 * {@code run_at} forward and adds one to {@code reschedules} without spending an attempt. A job
 * that exhausts a limit is <em>parked</em>: moved, in one transaction, into
 * {@code layover.dead_letters} with its arguments and the error of every attempt.
 *
 * <table>
 *   <caption>Outcomes and their effect</caption>
 *   <tr><th>outcome</th><th>attempt spent</th><th>reschedules +1</th><th>parks as</th></tr>
 *   <tr><td>{@link Done}</td><td>no</td><td>no</td><td>- (row deleted)</td></tr>
 *   <tr><td>{@link Snooze}</td><td>no</td><td>yes</td><td>{@code snooze_exhausted} past the cap</td></tr>
 *   <tr><td>{@link RateLimited}</td><td>no</td><td>yes</td><td>{@code rate_limit_exhausted}</td></tr>
 *   <tr><td>{@link QuotaExhausted}</td><td>no</td><td>yes</td><td>{@code quota_exhausted}</td></tr>
 *   <tr><td>{@link Overloaded}</td><td>yes</td><td>no</td><td>{@code provider_unavailable}</td></tr>
 *   <tr><td>{@link Transient}</td><td>yes</td><td>no</td><td>{@code provider_unavailable}</td></tr>
 *   <tr><td>{@link Retry}</td><td>yes</td><td>no</td><td>{@code job_error}</td></tr>
 *   <tr><td>{@link AuthRefused}</td><td>no</td><td>no</td><td>{@code auth_refused}, at once</td></tr>
 *   <tr><td>{@link Rejected}</td><td>no</td><td>no</td><td>{@code rejected}, at once</td></tr>
 *   <tr><td>{@link Park}</td><td>no</td><td>no</td><td>{@code handler_parked}, at once</td></tr>
 * </table>
 */
public sealed interface Outcome
        permits Outcome.Done,
                Outcome.Snooze,
                Outcome.RateLimited,
                Outcome.QuotaExhausted,
                Outcome.Overloaded,
                Outcome.Transient,
                Outcome.Retry,
                Outcome.AuthRefused,
                Outcome.Rejected,
                Outcome.Park {

    /**
     * The job is finished. Database: the job row is deleted (in a batched {@code DELETE},
     * version-checked: a row that changed meanwhile is left alone). No attempt is spent.
     */
    record Done() implements Outcome {}

    /**
     * Run again after {@code delay}, on the job's own initiative. Database: {@code run_at = now +
     * delay} exactly, {@code reschedules + 1}, {@code attempts} untouched; no fleet-wide effect.
     * Past the job type's {@code maxReschedules} the job is parked as {@code snooze_exhausted}.
     *
     * @param delay how long to wait; zero or more
     * @param reason shown in {@code layover.jobs.reschedule_detail}
     */
    record Snooze(Duration delay, String reason) implements Outcome {
        public Snooze {
            requireNonNegative(delay, "delay");
        }
    }

    /**
     * The provider said "too many requests, wait". Database: {@code run_at = now + max(retryAfter,
     * the provider key's cooldown left) + jitter}, {@code reschedules + 1}, {@code attempts}
     * untouched, the provider key's fleet-wide cooldown moved forward; never a breaker failure.
     * Past the job type's {@code maxReschedules}, or when the wait exceeds its {@code maxDeferral},
     * the job is parked as {@code rate_limit_exhausted}.
     *
     * <p>When the provider stated its request limit ({@code requestLimitPerSecond}) and the key has
     * no configured bucket, the fleet also <em>learns a pace</em>: a row of {@code layover.buckets}
     * with {@code learned_until} set, at a share of that rate (95 % by default, see
     * {@code CooldownSettings}), through which every worker's calls of the key then pass as
     * through a configured bucket, until it expires (10 minutes after the last 429 that taught it,
     * by default). So the fleet stops bursting into the limit at the end of each cooldown.
     *
     * @param retryAfter how long the provider asked to wait; {@code null} when it did not say (an
     *     escalating default is used)
     * @param reason the provider's words, for {@code reschedule_detail}
     * @param requestLimitPerSecond the request rate the provider says the key is limited to, in
     *     requests per second; {@code null} when it did not say
     */
    record RateLimited(Duration retryAfter, String reason, Double requestLimitPerSecond) implements Outcome {
        public RateLimited {
            if (retryAfter != null) {
                requireNonNegative(retryAfter, "retryAfter");
            }
            if (requestLimitPerSecond != null && !(requestLimitPerSecond > 0 && requestLimitPerSecond < Double.POSITIVE_INFINITY)) {
                throw new IllegalArgumentException("requestLimitPerSecond must be positive and finite, was "
                        + requestLimitPerSecond);
            }
        }

        /**
         * A rate limit without a stated request limit.
         *
         * @param retryAfter how long the provider asked to wait, or {@code null}
         * @param reason the provider's words
         */
        public RateLimited(Duration retryAfter, String reason) {
            this(retryAfter, reason, null);
        }
    }

    /**
     * A quota with a longer horizon is spent (per-day limits, billing, credit balance). Database:
     * when {@code resetAt} is known and no further than the job type's {@code maxDeferral}:
     * {@code run_at = resetAt + jitter}, {@code reschedules + 1}, {@code attempts} untouched;
     * otherwise the job is parked as {@code quota_exhausted}. Counts as a breaker failure of the
     * provider key.
     *
     * @param resetAt when the quota comes back; {@code null} when unknown
     * @param reason the provider's words
     */
    record QuotaExhausted(Instant resetAt, String reason) implements Outcome {}

    /**
     * The provider is overloaded (Anthropic 529, HTTP 503, Bedrock {@code ModelNotReady}).
     * Database: an attempt is spent ({@code attempts + 1}, the error appended to {@code errors}),
     * {@code run_at = now + max(retryAfter, full-jitter backoff)}; when attempts run out the job is
     * parked as {@code provider_unavailable}. Counts as a breaker failure.
     *
     * @param retryAfter a floor under the backoff, or {@code null}
     * @param reason the provider's words
     */
    record Overloaded(Duration retryAfter, String reason) implements Outcome {
        public Overloaded {
            if (retryAfter != null) {
                requireNonNegative(retryAfter, "retryAfter");
            }
        }
    }

    /**
     * A transient provider failure (timeout, connection reset, 5xx, 408, 409). Database: like
     * {@link Overloaded}, an attempt is spent and the job retried with full-jitter backoff; parked
     * as {@code provider_unavailable} when attempts run out. Counts as a breaker failure.
     *
     * @param reason a short description
     * @param cause the exception, kept in the error log of the job; may be {@code null}
     */
    record Transient(String reason, Throwable cause) implements Outcome {}

    /**
     * The run failed for a reason of the job's own (a bug, a downstream error Layover cannot
     * classify). Database: an attempt is spent, the error appended to {@code errors}, {@code run_at
     * = now + full-jitter backoff} (never earlier than {@code minDelay}); parked as
     * {@code job_error} when attempts run out. Not a breaker failure.
     *
     * @param reason a short description
     * @param cause the exception, or {@code null}
     * @param minDelay a floor under the backoff, or {@code null}
     */
    record Retry(String reason, Throwable cause, Duration minDelay) implements Outcome {
        public Retry {
            if (minDelay != null) {
                requireNonNegative(minDelay, "minDelay");
            }
        }
    }

    /**
     * The provider refused the credentials (401, 403, invalid key). Database: parked at once as
     * {@code auth_refused}, no attempt spent. Counts as a breaker failure.
     *
     * @param reason the provider's words
     */
    record AuthRefused(String reason) implements Outcome {}

    /**
     * The request itself is wrong (a 4xx other than the above, a prompt larger than any limit).
     * Database: parked at once as {@code rejected}, no attempt spent; never replayed automatically.
     * Not a breaker failure.
     *
     * @param reason the provider's words
     */
    record Rejected(String reason) implements Outcome {}

    /**
     * Stop trying: the handler knows this job cannot succeed. Database: parked at once as
     * {@code handler_parked} with {@code reason} as its error message; no attempt spent.
     *
     * @param reason why, for the person who will look at the dead letter
     */
    record Park(String reason) implements Outcome {}

    // ---- factories -------------------------------------------------------------------------

    /** @return {@link Done} */
    static Outcome done() {
        return new Done();
    }

    /**
     * @param delay how long to wait
     * @return {@link Snooze}
     */
    static Outcome snooze(Duration delay) {
        return new Snooze(delay, "snoozed by the handler");
    }

    /**
     * @param retryAfter how long the provider asked to wait, or {@code null}
     * @return {@link RateLimited}
     */
    static Outcome rateLimited(Duration retryAfter) {
        return new RateLimited(retryAfter, "rate limited");
    }

    /**
     * @param retryAfter how long the provider asked to wait, or {@code null}
     * @param reason the provider's words
     * @return {@link RateLimited}
     */
    static Outcome rateLimited(Duration retryAfter, String reason) {
        return new RateLimited(retryAfter, reason);
    }

    /**
     * A rate limit whose provider stated the key's request limit: the fleet learns a pace from it
     * (see {@link RateLimited}).
     *
     * @param retryAfter how long the provider asked to wait, or {@code null}
     * @param reason the provider's words
     * @param requestLimitPerSecond the key's request limit, requests per second
     * @return {@link RateLimited}
     */
    static Outcome rateLimited(Duration retryAfter, String reason, double requestLimitPerSecond) {
        return new RateLimited(retryAfter, reason, requestLimitPerSecond);
    }

    /**
     * @param resetAt when the quota comes back, or {@code null}
     * @param reason the provider's words
     * @return {@link QuotaExhausted}
     */
    static Outcome quotaExhausted(Instant resetAt, String reason) {
        return new QuotaExhausted(resetAt, reason);
    }

    /**
     * @param retryAfter a floor under the backoff, or {@code null}
     * @param reason the provider's words
     * @return {@link Overloaded}
     */
    static Outcome overloaded(Duration retryAfter, String reason) {
        return new Overloaded(retryAfter, reason);
    }

    /**
     * @param reason a short description
     * @param cause the exception, or {@code null}
     * @return {@link Transient}
     */
    static Outcome transientFailure(String reason, Throwable cause) {
        return new Transient(reason, cause);
    }

    /**
     * @param reason a short description
     * @return {@link Retry}
     */
    static Outcome retry(String reason) {
        return new Retry(reason, null, null);
    }

    /**
     * @param cause the exception
     * @return {@link Retry}
     */
    static Outcome retry(Throwable cause) {
        return new Retry(describe(cause), cause, null);
    }

    /**
     * @param reason the provider's words
     * @return {@link AuthRefused}
     */
    static Outcome authRefused(String reason) {
        return new AuthRefused(reason);
    }

    /**
     * @param reason the provider's words
     * @return {@link Rejected}
     */
    static Outcome rejected(String reason) {
        return new Rejected(reason);
    }

    /**
     * @param reason why the job cannot succeed
     * @return {@link Park}
     */
    static Outcome park(String reason) {
        return new Park(reason);
    }

    /**
     * This outcome as an exception, for handlers that prefer to throw: {@code throw
     * Outcome.rateLimited(d).toException();}
     *
     * @return an exception carrying this outcome
     */
    default OutcomeException toException() {
        return new OutcomeException(this);
    }

    /**
     * Whether this outcome spends an attempt ({@code attempts + 1}).
     *
     * @return true for {@link Overloaded}, {@link Transient} and {@link Retry}
     */
    default boolean spendsAttempt() {
        return this instanceof Overloaded || this instanceof Transient || this instanceof Retry;
    }

    private static void requireNonNegative(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.isNegative()) {
            throw new IllegalArgumentException(name + " must not be negative: " + d);
        }
    }

    private static String describe(Throwable t) {
        if (t == null) {
            return "failed";
        }
        String m = t.getMessage();
        return m == null ? t.getClass().getName() : t.getClass().getSimpleName() + ": " + m;
    }
}
