package dev.layover.core.provider;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds the request rate a provider says a key is limited to, from a 429, taking the first source
 * present:
 * <ol>
 *   <li>OpenAI's message {@code "... on requests per min (RPM): Limit 500, Used 500, Requested 1"}
 *       (also {@code per sec (RPS)}; a per-day limit is a spent quota, never a pace): the limit
 *       over its window, exact even when refused calls have driven the bucket below empty;
 *   <li>OpenAI's headers, when the requests limit is the one spent
 *       ({@code x-ratelimit-remaining-requests} 0 or less than the limit and a
 *       {@code x-ratelimit-reset-requests} to full): {@code (limit - remaining) / reset};
 *   <li>Anthropic's headers, when the requests limit is the one spent
 *       ({@code anthropic-ratelimit-requests-remaining} 0): {@code anthropic-ratelimit-requests-limit}
 *       per minute, as Anthropic documents it;
 *   <li>Gemini's {@code QuotaFailure}: a per-minute request quota
 *       ({@code GenerateRequestsPerMinutePerProjectPerModel...}) with its {@code quotaValue}, per
 *       minute.
 * </ol>
 * Groq's {@code x-ratelimit-*-requests} headers count requests per day: they give no pace.
 * A message or header that names a token limit gives nothing (the request rate is not what
 * refused; see {@link TokenLimits}). Bedrock states no limit in its 429s, nor Gemini when its
 * {@code QuotaFailure} has no {@code quotaValue}: nothing. Never throws.
 */
final class Pace {

    /** OpenAI: "on requests per min (RPM): Limit 3, Used 3". */
    private static final Pattern OPENAI_MESSAGE = Pattern.compile(
            "on requests per (min|minute|sec|second|day) \\((?:RPM|RPS|RPD)\\): Limit (\\d{1,12})",
            Pattern.CASE_INSENSITIVE);
    /** OpenAI names the token limit the same way: "on tokens per min (TPM): Limit 30000". */
    private static final Pattern OPENAI_TOKENS = Pattern.compile("on tokens per \\w+ \\(T", Pattern.CASE_INSENSITIVE);

    /** Rates below this (one request a day) are noise, not a pace. */
    private static final double MIN_RATE = 1.0 / 86_400;

    private Pace() {}

    /**
     * @param headers the response headers
     * @param d what the body said
     * @return requests per second, or null when the 429 does not say
     */
    static Double find(Provider provider, HeaderMap headers, ErrorDetails d) {
        String message = d.message();
        Double r = fromMessage(message);
        if (r == null && message != null && message.length() <= 4096 && OPENAI_TOKENS.matcher(message).find()) {
            return null;
        }
        if (r == null && provider != Provider.GROQ) {
            // Groq's x-ratelimit-*-requests count requests per day, not per minute
            r = openAiHeaders(headers);
        }
        if (r == null) {
            r = anthropicHeaders(headers);
        }
        if (r == null) {
            r = geminiQuota(d);
        }
        return r == null || !(r >= MIN_RATE) || r.isInfinite() ? null : r;
    }

    private static Double fromMessage(String message) {
        if (message == null || message.length() > 4096) {
            return null;
        }
        Matcher m = OPENAI_MESSAGE.matcher(message);
        if (!m.find()) {
            return null;
        }
        double limit = Double.parseDouble(m.group(2));
        String unit = m.group(1).toLowerCase(Locale.ROOT);
        double seconds = unit.startsWith("sec") ? 1 : unit.startsWith("min") ? 60 : 86_400;
        return limit / seconds;
    }

    private static Double openAiHeaders(HeaderMap headers) {
        Long limit = RetryAfter.integer(headers.first("x-ratelimit-limit-requests"));
        Long remaining = RetryAfter.integer(headers.first("x-ratelimit-remaining-requests"));
        Duration reset = Waits.goDuration(headers.first("x-ratelimit-reset-requests"));
        if (limit == null || remaining == null || reset == null || limit <= 0 || remaining < 0 || remaining >= limit
                || reset.isZero()) {
            return null; // Azure sends remaining -1 and reset 0 when it has no limit to report
        }
        Long tokensLeft = RetryAfter.integer(headers.first("x-ratelimit-remaining-tokens"));
        if (remaining > 0 && tokensLeft != null && tokensLeft == 0) {
            return null; // the token limit refused
        }
        return (limit - remaining) / (reset.toNanos() / 1e9);
    }

    private static Double geminiQuota(ErrorDetails d) {
        for (ErrorDetails.Quota q : d.quotas()) {
            if (q.id() != null && q.value() != null && q.id().contains("Requests") && q.id().contains("PerMinute")) {
                return q.value() / 60.0;
            }
        }
        return null;
    }

    private static Double anthropicHeaders(HeaderMap headers) {
        Long limit = RetryAfter.integer(headers.first("anthropic-ratelimit-requests-limit"));
        Long remaining = RetryAfter.integer(headers.first("anthropic-ratelimit-requests-remaining"));
        if (limit == null || remaining == null || limit <= 0 || remaining != 0) {
            return null;
        }
        return limit / 60.0;
    }
}
