package dev.layover.core.provider;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * Finds how long a provider asked to wait, taking the first source present:
 * {@code retry-after-ms}; {@code retry-after} (seconds, possibly fractional, or an HTTP-date);
 * AWS's {@code x-amz-retry-after} (milliseconds, what AWS SDK v2 reads with its 2026 retry
 * behaviour); Gemini's {@code RetryInfo.retryDelay}; OpenAI's {@code x-ratelimit-reset-requests/-tokens}
 * (the one whose {@code x-ratelimit-remaining-*} is 0, else the larger); Anthropic's
 * {@code anthropic-ratelimit-*-reset} times whose matching {@code -remaining} is 0 (the latest);
 * the wait rows of the rule tables ({@code x-ratelimit-reset} in epoch milliseconds, epoch seconds,
 * seconds, RFC 3339 or a duration; the IETF {@code RateLimit-Reset} and {@code RateLimit}); a
 * "try again in 644ms" or "replenished in 2.12:43:08" hint in the message. Headers a gateway quoted
 * in its body count when the response lacks them. A source that cannot be read is skipped.
 */
final class RetryAfter {

    private static final long NANOS_PER_MS = 1_000_000L;
    private static final long NANOS_PER_S = 1_000_000_000L;

    private static final String[] OPENAI_LIMITS = {"requests", "tokens"};
    private static final String[] ANTHROPIC_LIMITS = {"requests", "tokens", "input-tokens", "output-tokens"};

    private RetryAfter() {}

    static Duration find(HeaderMap headers, ErrorDetails d, Instant now, List<Row.Wait> rows, Provider provider) {
        Duration wait = longest(headers.all("retry-after-ms"), v -> Waits.decimal(v, NANOS_PER_MS));
        if (wait == null) {
            wait = longest(headers.all("retry-after"), v -> Waits.retryAfter(v, now));
        }
        if (wait == null) {
            wait = longest(headers.all("x-amz-retry-after"), v -> Waits.decimal(v, NANOS_PER_MS));
        }
        if (wait == null) {
            wait = d.retryDelay();
        }
        if (wait == null) {
            wait = openAiReset(headers, now);
        }
        if (wait == null) {
            wait = anthropicReset(headers, now);
        }
        for (int i = 0; wait == null && i < rows.size(); i++) {
            wait = fromRow(rows.get(i), headers, now, provider);
        }
        if (wait == null) {
            wait = Waits.hint(d.message());
        }
        return wait;
    }

    /** The wait a wait row's header states, when its limit is spent; null when absent or unreadable. */
    private static Duration fromRow(Row.Wait row, HeaderMap headers, Instant now, Provider provider) {
        if (!applies(row, headers, provider)) {
            return null;
        }
        return longest(headers.all(row.header()), v -> Waits.inForm(v, row.form(), now));
    }

    private static boolean applies(Row.Wait row, HeaderMap headers, Provider provider) {
        if (row.providers() != null && !row.providers().contains(provider)) {
            return false;
        }
        if (row.form() == Row.Form.STRUCTURED && Waits.structuredHasRoom(headers.first(row.header()))) {
            return false;
        }
        if (row.remaining() != null) {
            Long left = integer(headers.first(row.remaining()));
            return left == null || left <= 0;
        }
        return true;
    }

    /**
     * Whether a wait header holds a value that cannot be read ({@code retry-after: soon}, a reset
     * {@code whenever}); such a value is skipped by {@link #find}, never guessed.
     */
    static boolean unreadable(HeaderMap headers, Instant now, List<Row.Wait> rows, Provider provider) {
        for (String name : new String[] {"retry-after-ms", "x-amz-retry-after"}) {
            for (String v : headers.all(name)) {
                if (!v.isBlank() && longest(List.of(v), x -> Waits.decimal(x, NANOS_PER_MS)) == null) {
                    return true;
                }
            }
        }
        for (String v : headers.all("retry-after")) {
            if (!v.isBlank() && longest(List.of(v), x -> Waits.retryAfter(x, now)) == null) {
                return true;
            }
        }
        for (String limit : OPENAI_LIMITS) {
            String v = headers.first("x-ratelimit-reset-" + limit);
            if (v != null && Waits.inForm(v, Row.Form.AUTO, now) == null) {
                return true;
            }
        }
        for (String limit : ANTHROPIC_LIMITS) {
            String v = headers.first("anthropic-ratelimit-" + limit + "-reset");
            if (v != null && Waits.rfc3339(v) == null) {
                return true;
            }
        }
        for (Row.Wait row : rows) {
            String v = headers.first(row.header());
            if (v != null && applies(row, headers, provider)
                    && longest(List.of(v), x -> Waits.inForm(x, row.form(), now)) == null) {
                return true;
            }
        }
        return false;
    }

    /**
     * The longest readable wait among a header's values. A header sent twice, or one value
     * holding a comma-separated list, is ambiguous: the longest wait is the conservative reading.
     */
    private static Duration longest(List<String> values, java.util.function.Function<String, Duration> parse) {
        Duration best = null;
        for (String value : values) {
            Duration whole = parse.apply(value);
            if (whole != null) {
                best = max(best, whole);
                continue;
            }
            // an HTTP-date holds a comma itself, so split only what did not parse whole
            if (value.indexOf(',') >= 0 && value.length() <= 256) {
                for (String part : value.split(",")) {
                    Duration p = parse.apply(part);
                    if (p != null) {
                        best = max(best, p);
                    }
                }
            }
        }
        return best;
    }

    private static Duration openAiReset(HeaderMap headers, Instant now) {
        Duration exhausted = null;
        Duration any = null;
        for (String limit : OPENAI_LIMITS) {
            // OpenAI and Groq write durations (6m0s); other servers epoch times: the auto form reads both
            Duration reset = Waits.inForm(headers.first("x-ratelimit-reset-" + limit), Row.Form.AUTO, now);
            Long remaining = integer(headers.first("x-ratelimit-remaining-" + limit));
            if (reset == null || (remaining != null && remaining < 0)) {
                // Azure sends remaining -1 with reset 0 when it has no limit to report
                continue;
            }
            any = max(any, reset);
            if (remaining != null && remaining == 0) {
                exhausted = max(exhausted, reset);
            }
        }
        return exhausted != null ? exhausted : any;
    }

    private static Duration anthropicReset(HeaderMap headers, Instant now) {
        Duration latest = null;
        for (String limit : ANTHROPIC_LIMITS) {
            Long remaining = integer(headers.first("anthropic-ratelimit-" + limit + "-remaining"));
            if (remaining == null || remaining != 0) {
                continue;
            }
            Instant at = Waits.rfc3339(headers.first("anthropic-ratelimit-" + limit + "-reset"));
            if (at != null) {
                latest = max(latest, Waits.until(now, at));
            }
        }
        return latest;
    }

    /** A decimal integer header value, or null. */
    static Long integer(String value) {
        if (value == null || value.length() > 19) {
            return null;
        }
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static Duration max(Duration a, Duration b) {
        if (a == null) {
            return b;
        }
        return b == null || a.compareTo(b) >= 0 ? a : b;
    }
}
