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
 * <p>{@link Kind} is the one table of what each outcome does to the job row, the breaker and the
 * cooldown of its provider key, and where it parks; {@link #kind()} names the row of an outcome.
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
     * version-checked: a row that changed meanwhile is left alone), and with history on its
     * {@code layover.job_history} row keeps {@code result} as JSON (at most 64 KiB; a larger or
     * unwritable result is logged and not kept), for a caller that looks the job up by its key
     * ({@code Layover.lookup}). No attempt is spent.
     *
     * @param result what the job produced, or {@code null}; written with Layover's JSON mapper
     */
    record Done(Object result) implements Outcome {
        /** Done, with no result. */
        public Done() {
            this(null);
        }

        @Override
        public Kind kind() {
            return Kind.DONE;
        }

        /** @return {@code "done"} */
        @Override
        public String reason() {
            return "done";
        }
    }

    /**
     * Run again after {@code delay}, on the job's own initiative. Database: {@code run_at = now +
     * delay} exactly, {@code reschedules + 1}, {@code attempts} untouched; no fleet-wide effect.
     * Past the job type's {@code maxReschedules} the job is parked as {@code snooze_exhausted}.
     *
     * @param delay how long to wait; zero or more
     * @param reason shown in {@code layover.jobs.reschedule_detail}
     */
    record Snooze(Duration delay, String reason) implements Outcome {
        @Override
        public Kind kind() {
            return Kind.SNOOZE;
        }

        /**
         * Checks that {@code delay} is not negative.
         *
         * @param delay how long to wait; zero or more
         * @param reason shown in {@code layover.jobs.reschedule_detail}
         */
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
        @Override
        public Kind kind() {
            return Kind.RATE_LIMITED;
        }

        /**
         * Checks that {@code retryAfter} is not negative.
         *
         * @param retryAfter how long the provider asked to wait; {@code null} when it did not say (an
         *     escalating default is used)
         * @param reason the provider's words, for {@code reschedule_detail}
         * @param requestLimitPerSecond the request rate the provider says the key is limited to, in requests
         *     per second; {@code null} when it did not say
         */
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
    record QuotaExhausted(Instant resetAt, String reason) implements Outcome {
        @Override
        public Kind kind() {
            return Kind.QUOTA_EXHAUSTED;
        }
    }

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
        @Override
        public Kind kind() {
            return Kind.OVERLOADED;
        }

        /**
         * Checks that {@code retryAfter} is not negative.
         *
         * @param retryAfter a floor under the backoff, or {@code null}
         * @param reason the provider's words
         */
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
    record Transient(String reason, Throwable cause) implements Outcome {
        @Override
        public Kind kind() {
            return Kind.TRANSIENT;
        }
    }

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
        @Override
        public Kind kind() {
            return Kind.RETRY;
        }

        /**
         * Checks that {@code minDelay} is not negative.
         *
         * @param reason a short description
         * @param cause the exception, or {@code null}
         * @param minDelay a floor under the backoff, or {@code null}
         */
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
    record AuthRefused(String reason) implements Outcome {
        @Override
        public Kind kind() {
            return Kind.AUTH_REFUSED;
        }
    }

    /**
     * The request itself is wrong (a 4xx other than the above, a prompt larger than any limit).
     * Database: parked at once as {@code rejected}, no attempt spent; never replayed automatically.
     * Not a breaker failure.
     *
     * @param reason the provider's words
     */
    record Rejected(String reason) implements Outcome {
        @Override
        public Kind kind() {
            return Kind.REJECTED;
        }
    }

    /**
     * Stop trying: the handler knows this job cannot succeed. Database: parked at once as
     * {@code handler_parked} with {@code reason} as its error message; no attempt spent.
     *
     * @param reason why, for the person who will look at the dead letter
     */
    record Park(String reason) implements Outcome {
        @Override
        public Kind kind() {
            return Kind.PARK;
        }
    }

    /** @return this outcome's row of the {@link Kind} table */
    Kind kind();

    /** @return the words describing this outcome (the provider's, the handler's), or {@code null} */
    String reason();

    /** @return the exception kept with this outcome, or {@code null} */
    default Throwable cause() {
        return null;
    }

    /** What an outcome does to its provider key's circuit breaker. */
    enum BreakerEffect {
        /** A success: counts toward the breaker's window; closes a half-open breaker whose trial it was. */
        SUCCESS,
        /** A failure: counts toward opening the breaker; reopens a half-open breaker whose trial it was. */
        FAILURE,
        /** Says nothing of the provider's health; a trial it was is given back for the next call. */
        NONE
    }

    /** What an outcome does to its provider key's fleet-wide cooldown ({@code layover.cooldowns}). */
    enum CooldownEffect {
        /** No cooldown. */
        NONE,
        /**
         * The key waits the provider's retry-after, or, when none was given, an escalating default
         * ({@code CooldownSettings} rate-limit base doubling up to its cap).
         */
        RATE_LIMIT,
        /** The key waits until the quota's stated reset, when one was stated. */
        UNTIL_RESET,
        /**
         * The provider's retry-after when it stated one; else a short escalating cooldown
         * ({@code CooldownSettings} overload base up to its cap) only when the key's breaker window
         * shows a rate of failures (at least 3, and 20 % of its calls): one stray 503 pauses no one.
         */
        OVERLOAD
    }

    /**
     * The one table of what each outcome does. Every write of an outcome follows it: the engine's
     * decision of what becomes of the run (done, reschedule, retry, park) and the provider state's
     * breaker and cooldown updates read it, and nothing else decides these effects.
     *
     * <table>
     *   <caption>Outcomes and their effect on the database</caption>
     *   <tr><th>kind</th><th>tag</th><th>attempt spent</th><th>reschedules +1</th><th>breaker</th>
     *       <th>cooldown of the key</th><th>parks as</th><th>when</th></tr>
     *   <tr><td>DONE</td><td>done</td><td>no</td><td>no</td><td>success</td><td>-</td><td>-</td>
     *       <td>row deleted</td></tr>
     *   <tr><td>SNOOZE</td><td>snooze</td><td>no</td><td>yes</td><td>-</td><td>-</td>
     *       <td>{@code snooze_exhausted}</td><td>past {@code maxReschedules}</td></tr>
     *   <tr><td>RATE_LIMITED</td><td>rate_limited</td><td>no</td><td>yes</td><td>-</td>
     *       <td>retry-after or escalating</td><td>{@code rate_limit_exhausted}</td>
     *       <td>past {@code maxReschedules} or {@code maxDeferral}</td></tr>
     *   <tr><td>QUOTA_EXHAUSTED</td><td>quota_exhausted</td><td>no</td><td>yes</td><td>failure</td>
     *       <td>until the reset</td><td>{@code quota_exhausted}</td><td>no reset within
     *       {@code maxDeferral}</td></tr>
     *   <tr><td>OVERLOADED</td><td>overloaded</td><td>yes</td><td>no</td><td>failure</td>
     *       <td>its retry-after; else short, escalating, when failures are a trend</td>
     *       <td>{@code provider_unavailable}</td><td>attempts run out</td></tr>
     *   <tr><td>TRANSIENT</td><td>transient</td><td>yes</td><td>no</td><td>failure</td><td>-</td>
     *       <td>{@code provider_unavailable}</td><td>attempts run out</td></tr>
     *   <tr><td>RETRY</td><td>error</td><td>yes</td><td>no</td><td>-</td><td>-</td>
     *       <td>{@code job_error}</td><td>attempts run out</td></tr>
     *   <tr><td>AUTH_REFUSED</td><td>auth_refused</td><td>no</td><td>no</td><td>failure</td><td>-</td>
     *       <td>{@code auth_refused}</td><td>at once</td></tr>
     *   <tr><td>REJECTED</td><td>rejected</td><td>no</td><td>no</td><td>-</td><td>-</td>
     *       <td>{@code rejected}</td><td>at once</td></tr>
     *   <tr><td>PARK</td><td>parked</td><td>no</td><td>no</td><td>-</td><td>-</td>
     *       <td>{@code handler_parked}</td><td>at once</td></tr>
     * </table>
     */
    enum Kind {
        /** {@link Done}. */
        DONE("done", false, false, BreakerEffect.SUCCESS, CooldownEffect.NONE, null, false),
        /** {@link Snooze}. */
        SNOOZE("snooze", false, true, BreakerEffect.NONE, CooldownEffect.NONE, FailureType.SNOOZE_EXHAUSTED, false),
        /** {@link RateLimited}. */
        RATE_LIMITED("rate_limited", false, true, BreakerEffect.NONE, CooldownEffect.RATE_LIMIT,
                FailureType.RATE_LIMIT_EXHAUSTED, false),
        /** {@link QuotaExhausted}. */
        QUOTA_EXHAUSTED("quota_exhausted", false, true, BreakerEffect.FAILURE, CooldownEffect.UNTIL_RESET,
                FailureType.QUOTA_EXHAUSTED, false),
        /** {@link Overloaded}. */
        OVERLOADED("overloaded", true, false, BreakerEffect.FAILURE, CooldownEffect.OVERLOAD,
                FailureType.PROVIDER_UNAVAILABLE, false),
        /** {@link Transient}. */
        TRANSIENT("transient", true, false, BreakerEffect.FAILURE, CooldownEffect.NONE,
                FailureType.PROVIDER_UNAVAILABLE, false),
        /** {@link Retry}. */
        RETRY("error", true, false, BreakerEffect.NONE, CooldownEffect.NONE, FailureType.JOB_ERROR, false),
        /** {@link AuthRefused}. */
        AUTH_REFUSED("auth_refused", false, false, BreakerEffect.FAILURE, CooldownEffect.NONE,
                FailureType.AUTH_REFUSED, true),
        /** {@link Rejected}. */
        REJECTED("rejected", false, false, BreakerEffect.NONE, CooldownEffect.NONE, FailureType.REJECTED, true),
        /** {@link Park}. */
        PARK("parked", false, false, BreakerEffect.NONE, CooldownEffect.NONE, FailureType.HANDLER_PARKED, true);

        private final String tag;
        private final boolean spendsAttempt;
        private final boolean countsReschedule;
        private final BreakerEffect breaker;
        private final CooldownEffect cooldown;
        private final FailureType parksAs;
        private final boolean parksAtOnce;

        Kind(String tag, boolean spendsAttempt, boolean countsReschedule, BreakerEffect breaker,
                CooldownEffect cooldown, FailureType parksAs, boolean parksAtOnce) {
            this.tag = tag;
            this.spendsAttempt = spendsAttempt;
            this.countsReschedule = countsReschedule;
            this.breaker = breaker;
            this.cooldown = cooldown;
            this.parksAs = parksAs;
            this.parksAtOnce = parksAtOnce;
        }

        /**
         * @return the name in metrics tags, log lines, fallback trails and the error log of a job
         *     ({@code kind}), e.g. {@code rate_limited}
         */
        public String tag() {
            return tag;
        }

        /** @return whether the outcome spends an attempt ({@code attempts + 1}) */
        public boolean spendsAttempt() {
            return spendsAttempt;
        }

        /** @return whether the outcome reschedules the job ({@code reschedules + 1}, attempts untouched) */
        public boolean countsReschedule() {
            return countsReschedule;
        }

        /** @return what the outcome does to its provider key's breaker */
        public BreakerEffect breaker() {
            return breaker;
        }

        /** @return what the outcome does to its provider key's cooldown */
        public CooldownEffect cooldown() {
            return cooldown;
        }

        /** @return the failure type the job parks as when this outcome exhausts it; {@code null} for DONE */
        public FailureType parksAs() {
            return parksAs;
        }

        /** @return whether the outcome parks the job at once (no retry, no reschedule) */
        public boolean parksAtOnce() {
            return parksAtOnce;
        }
    }

    // ---- factories -------------------------------------------------------------------------

    /** @return {@link Done} */
    static Outcome done() {
        return new Done();
    }

    /**
     * @param result what the job produced, kept on its history row (see {@link Done})
     * @return {@link Done}
     */
    static Outcome done(Object result) {
        return new Done(result);
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
        return kind().spendsAttempt();
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
