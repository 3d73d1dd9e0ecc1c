package dev.layover.core.provider;

import dev.layover.core.outcome.Outcome;
import java.time.Duration;
import java.time.Instant;

/**
 * The verdict on one provider failure.
 *
 * @param failureClass what kind of failure it is; never {@code null}
 * @param retryAfter how long the provider asked to wait, zero or more (a wait beyond the classifier's
 *     {@code maxWait}, nonsense, is cut to it: see {@code waitReading}); {@code null} when it did
 *     not say
 * @param resetAt when a spent quota comes back, exactly as the provider stated it (a date a month
 *     away stays a month away; see {@link WaitReading}); only set for
 *     {@link FailureClass#QUOTA_EXHAUSTED}, and {@code null} when unknown
 * @param reason a short human description (the provider's words), at most 500 characters
 * @param provider the provider the failure came from; never {@code null}
 * @param httpStatus the HTTP status of the response, {@code 0} when there was none (an IO error)
 * @param requestLimitPerSecond for {@link FailureClass#RATE_LIMITED}: the request rate the provider
 *     says the key is limited to, in requests per second (OpenAI's message or
 *     {@code x-ratelimit-*-requests} headers, Anthropic's {@code anthropic-ratelimit-requests-*},
 *     Gemini's per-minute request quota); {@code null} when it did not say, or when a token limit
 *     refused
 * @param tokenLimitPerMinute for {@link FailureClass#RATE_LIMITED}, and for a
 *     {@link FailureClass#BAD_REQUEST} whose request is larger than the limit can ever admit: the
 *     token limit per minute the provider says refused the call (OpenAI's "on tokens per min
 *     (TPM): Limit 30000" or {@code x-ratelimit-limit-tokens}, Anthropic's "of 40,000 input tokens
 *     per minute" or {@code anthropic-ratelimit-*-tokens-limit}, Gemini's {@code quotaValue} of a
 *     per-minute token quota); {@code null} when it did not say. Positive and finite when set
 * @param tokenDimension which tokens {@code tokenLimitPerMinute} counts; set whenever the provider
 *     named a token limit as the refusing one, even without a number ({@code null} otherwise, and
 *     never {@code null} when {@code tokenLimitPerMinute} is set: {@link TokenDimension#TOKENS}
 *     when not given)
 * @param waitReading whether {@code retryAfter} and {@code resetAt} are as the provider stated
 *     them, or were cut (nonsense beyond {@code maxWait}) or skipped (unreadable); never
 *     {@code null}, {@link WaitReading#AS_STATED} when not given
 */
public record Classification(
        FailureClass failureClass,
        Duration retryAfter,
        Instant resetAt,
        String reason,
        Provider provider,
        int httpStatus,
        Double requestLimitPerSecond,
        Double tokenLimitPerMinute,
        TokenDimension tokenDimension,
        WaitReading waitReading) {

    /** Longest reason kept, in characters. */
    public static final int MAX_REASON_LENGTH = 500;

    /**
     * Checks the components; {@code null} class, reason or provider become defaults.
     *
     * @param failureClass what kind of failure it is; never {@code null}
     * @param retryAfter how long the provider asked to wait, zero or more (a wait beyond the classifier's
     *     {@code maxWait}, nonsense, is cut to it: see {@code waitReading}); {@code null} when it did not
     *     say
     * @param resetAt when a spent quota comes back, exactly as the provider stated it (a date a month away
     *     stays a month away; see {@link WaitReading}); only set for {@link FailureClass#QUOTA_EXHAUSTED},
     *     and {@code null} when unknown
     * @param reason a short human description (the provider's words), at most 500 characters
     * @param provider the provider the failure came from; never {@code null}
     * @param httpStatus the HTTP status of the response, {@code 0} when there was none (an IO error)
     * @param requestLimitPerSecond for {@link FailureClass#RATE_LIMITED}: the request rate the provider says
     *     the key is limited to, in requests per second (OpenAI's message or {@code x-ratelimit-*-requests}
     *     headers, Anthropic's {@code anthropic-ratelimit-requests-*}, Gemini's per-minute request quota);
     *     {@code null} when it did not say, or when a token limit refused
     * @param tokenLimitPerMinute for {@link FailureClass#RATE_LIMITED}, and for a {@link
     *     FailureClass#BAD_REQUEST} whose request is larger than the limit can ever admit: the token limit
     *     per minute the provider says refused the call (OpenAI's "on tokens per min (TPM): Limit 30000" or
     *     {@code x-ratelimit-limit-tokens}, Anthropic's "of 40,000 input tokens per minute" or {@code
     *     anthropic-ratelimit-*-tokens-limit}, Gemini's {@code quotaValue} of a per-minute token quota);
     *     {@code null} when it did not say. Positive and finite when set
     * @param tokenDimension which tokens {@code tokenLimitPerMinute} counts; set whenever the provider named
     *     a token limit as the refusing one, even without a number ({@code null} otherwise, and never {@code
     *     null} when {@code tokenLimitPerMinute} is set: {@link TokenDimension#TOKENS} when not given)
     * @param waitReading whether {@code retryAfter} and {@code resetAt} are as the provider stated them, or
     *     were cut (nonsense beyond {@code maxWait}) or skipped (unreadable); never {@code null}, {@link
     *     WaitReading#AS_STATED} when not given
     */
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
        boolean tokenClass = failureClass == FailureClass.RATE_LIMITED || failureClass == FailureClass.BAD_REQUEST;
        if (!tokenClass || !positiveFinite(tokenLimitPerMinute)) {
            tokenLimitPerMinute = null;
        }
        if (!tokenClass) {
            tokenDimension = null;
        } else if (tokenDimension == null && tokenLimitPerMinute != null) {
            tokenDimension = TokenDimension.TOKENS;
        }
        if (failureClass != FailureClass.RATE_LIMITED || tokenDimension != null || !positiveFinite(requestLimitPerSecond)) {
            requestLimitPerSecond = null;
        }
        if (waitReading == null) {
            waitReading = WaitReading.AS_STATED;
        }
    }

    /**
     * A verdict without a stated token limit, its waits as stated.
     *
     * @param failureClass what kind of failure it is
     * @param retryAfter how long the provider asked to wait, or {@code null}
     * @param resetAt when a spent quota comes back, or {@code null}
     * @param reason a short human description
     * @param provider the provider
     * @param httpStatus the HTTP status, {@code 0} when none
     * @param requestLimitPerSecond the stated request limit, or {@code null}
     */
    public Classification(FailureClass failureClass, Duration retryAfter, Instant resetAt, String reason,
            Provider provider, int httpStatus, Double requestLimitPerSecond) {
        this(failureClass, retryAfter, resetAt, reason, provider, httpStatus, requestLimitPerSecond, null, null,
                WaitReading.AS_STATED);
    }

    /**
     * A verdict without a stated limit, its waits as stated.
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
        this(failureClass, retryAfter, resetAt, reason, provider, httpStatus, null, null, null, WaitReading.AS_STATED);
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
     * {@code tokenLimitPerMinute}, {@code tokenDimension} and {@code waitReading} have no place in
     * the outcomes yet; the reason keeps the provider's words, numbers included.
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

    private static boolean positiveFinite(Double d) {
        return d != null && d > 0 && d < Double.POSITIVE_INFINITY;
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
