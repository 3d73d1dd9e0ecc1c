package dev.layover.core.provider;

import dev.layover.core.outcome.Outcome;
import java.time.Duration;
import java.time.Instant;

/**
 * The verdict on one provider failure.
 *
 * @param failureClass what kind of failure it is; never {@code null}
 * @param retryAfter how long the provider asked to wait, already clamped to
 *     {@code [0, maxWait]}; {@code null} when it did not say
 * @param resetAt when a spent quota comes back; only set for
 *     {@link FailureClass#QUOTA_EXHAUSTED}, and {@code null} when unknown
 * @param reason a short human description (the provider's words), at most 500 characters
 * @param provider the provider the failure came from; never {@code null}
 * @param httpStatus the HTTP status of the response, {@code 0} when there was none (an IO error)
 * @param requestLimitPerSecond for {@link FailureClass#RATE_LIMITED}: the request rate the provider
 *     says the key is limited to, in requests per second (OpenAI's message or
 *     {@code x-ratelimit-*-requests} headers, Anthropic's {@code anthropic-ratelimit-requests-*});
 *     {@code null} when it did not say, or when a token limit refused
 */
public record Classification(
        FailureClass failureClass,
        Duration retryAfter,
        Instant resetAt,
        String reason,
        Provider provider,
        int httpStatus,
        Double requestLimitPerSecond) {

    /** Longest reason kept, in characters. */
    public static final int MAX_REASON_LENGTH = 500;

    /** Checks the components; {@code null} class, reason or provider become defaults. */
    public Classification {
        if (failureClass == null) {
            failureClass = FailureClass.TRANSIENT;
        }
        if (provider == null) {
            provider = Provider.UNKNOWN;
        }
        if (retryAfter != null && retryAfter.isNegative()) {
            retryAfter = Duration.ZERO;
        }
        String r = reason == null ? "" : cut(reason);
        reason = r.isEmpty() ? failureClass.name().toLowerCase(java.util.Locale.ROOT) : r;
        if (failureClass != FailureClass.RATE_LIMITED || (requestLimitPerSecond != null && !(requestLimitPerSecond > 0
                && requestLimitPerSecond < Double.POSITIVE_INFINITY))) {
            requestLimitPerSecond = null;
        }
    }

    /**
     * A verdict without a stated request limit.
     *
     * @param failureClass what kind of failure it is
     * @param retryAfter how long the provider asked to wait, or {@code null}
     * @param resetAt when a spent quota comes back, or {@code null}
     * @param reason a short human description
     * @param provider the provider
     * @param httpStatus the HTTP status, {@code 0} when none
     */
    public Classification(FailureClass failureClass, Duration retryAfter, Instant resetAt, String reason,
            Provider provider, int httpStatus) {
        this(failureClass, retryAfter, resetAt, reason, provider, httpStatus, null);
    }

    /**
     * The outcome Layover applies for this failure, with no exception attached.
     *
     * @return the outcome; see {@link #toOutcome(Throwable)}
     */
    public Outcome toOutcome() {
        return toOutcome(null);
    }

    /**
     * The outcome Layover applies for this failure: RATE_LIMITED becomes
     * {@link Outcome.RateLimited}(retryAfter, reason, requestLimitPerSecond); QUOTA_EXHAUSTED becomes
     * {@link Outcome.QuotaExhausted}(resetAt, reason); OVERLOADED becomes
     * {@link Outcome.Overloaded}(retryAfter, reason); TRANSIENT becomes
     * {@link Outcome.Transient}(reason, cause); AUTH_REFUSED becomes
     * {@link Outcome.AuthRefused}(reason); BAD_REQUEST becomes {@link Outcome.Rejected}(reason).
     *
     * @param cause the exception to keep with a {@link Outcome.Transient}, or {@code null}
     * @return the outcome; never {@code null}
     */
    public Outcome toOutcome(Throwable cause) {
        return switch (failureClass) {
            case RATE_LIMITED -> new Outcome.RateLimited(retryAfter, reason, requestLimitPerSecond);
            case QUOTA_EXHAUSTED -> new Outcome.QuotaExhausted(resetAt, reason);
            case OVERLOADED -> new Outcome.Overloaded(retryAfter, reason);
            case TRANSIENT -> new Outcome.Transient(reason, cause);
            case AUTH_REFUSED -> new Outcome.AuthRefused(reason);
            case BAD_REQUEST -> new Outcome.Rejected(reason);
        };
    }

    static String cut(String s) {
        StringBuilder b = new StringBuilder(Math.min(s.length(), MAX_REASON_LENGTH));
        boolean space = false;
        for (int i = 0; i < s.length() && b.length() < MAX_REASON_LENGTH; i++) {
            char c = s.charAt(i);
            if (Character.isWhitespace(c) || Character.isISOControl(c)) {
                if (!space && b.length() > 0) {
                    b.append(' ');
                }
                space = true;
            } else {
                b.append(c);
                space = false;
            }
        }
        int end = b.length();
        while (end > 0 && b.charAt(end - 1) == ' ') {
            end--;
        }
        // never leave half of a surrogate pair at the cut
        if (end > 0 && Character.isHighSurrogate(b.charAt(end - 1))) {
            end--;
        }
        return b.substring(0, end);
    }
}
