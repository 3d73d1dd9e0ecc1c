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
 * a "try again in 644ms" hint in the message. A source that cannot be read is skipped.
 */
final class RetryAfter {

    private static final long NANOS_PER_MS = 1_000_000L;
    private static final long NANOS_PER_S = 1_000_000_000L;

    private static final String[] OPENAI_LIMITS = {"requests", "tokens"};
    private static final String[] ANTHROPIC_LIMITS = {"requests", "tokens", "input-tokens", "output-tokens"};

    private RetryAfter() {}

    static Duration find(HeaderMap headers, ErrorDetails d, Instant now) {
        Duration wait = longest(headers.all("retry-after-ms"), v -> Waits.decimal(v, NANOS_PER_MS));
        if (wait == null) {
            wait = longest(headers.all("retry-after"), v -> {
                Duration seconds = Waits.decimal(v, NANOS_PER_S);
                return seconds != null ? seconds : Waits.httpDate(v, now);
            });
        }
        if (wait == null) {
            wait = longest(headers.all("x-amz-retry-after"), v -> Waits.decimal(v, NANOS_PER_MS));
        }
        if (wait == null) {
            wait = d.retryDelay();
        }
        if (wait == null) {
            wait = openAiReset(headers);
        }
        if (wait == null) {
            wait = anthropicReset(headers, now);
        }
        if (wait == null) {
            wait = Waits.hint(d.message());
        }
        return wait;
    }

    /**
     * Whether a wait header holds a value that cannot be read ({@code retry-after: soon}, a reset
     * {@code whenever}); such a value is skipped by {@link #find}, never guessed.
     */
    static boolean unreadable(HeaderMap headers, Instant now) {
        for (String name : new String[] {"retry-after-ms", "x-amz-retry-after"}) {
            for (String v : headers.all(name)) {
                if (!v.isBlank() && longest(List.of(v), x -> Waits.decimal(x, NANOS_PER_MS)) == null) {
                    return true;
                }
            }
        }
        for (String v : headers.all("retry-after")) {
            if (!v.isBlank() && longest(List.of(v), x -> {
                Duration seconds = Waits.decimal(x, NANOS_PER_S);
                return seconds != null ? seconds : Waits.httpDate(x, now);
            }) == null) {
                return true;
            }
        }
        for (String limit : OPENAI_LIMITS) {
            String v = headers.first("x-ratelimit-reset-" + limit);
            if (v != null && Waits.goDuration(v) == null) {
                return true;
            }
        }
        for (String limit : ANTHROPIC_LIMITS) {
            String v = headers.first("anthropic-ratelimit-" + limit + "-reset");
            if (v != null && Waits.rfc3339(v) == null) {
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

    private static Duration openAiReset(HeaderMap headers) {
        Duration exhausted = null;
        Duration any = null;
        for (String limit : OPENAI_LIMITS) {
            Duration reset = Waits.goDuration(headers.first("x-ratelimit-reset-" + limit));
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
