package dev.layover.core.provider;

import java.net.http.HttpHeaders;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The rate-limit headers of a provider response, successful or not: how much of each limit is
 * left, so that a caller (the engine's token bucket) can correct its drift from the provider's own
 * count. A pure reading: nothing is stored, nothing touches the database.
 *
 * <table>
 *   <caption>headers read</caption>
 *   <tr><th>window</th><th>OpenAI, Azure OpenAI</th><th>Anthropic</th></tr>
 *   <tr><td>{@link #requests()}</td><td>{@code x-ratelimit-{limit,remaining,reset}-requests}</td>
 *       <td>{@code anthropic-ratelimit-requests-{limit,remaining,reset}}</td></tr>
 *   <tr><td>{@link #tokens()}</td><td>{@code x-ratelimit-{limit,remaining,reset}-tokens}</td>
 *       <td>{@code anthropic-ratelimit-tokens-{limit,remaining,reset}}</td></tr>
 *   <tr><td>{@link #inputTokens()}</td><td>-</td><td>{@code anthropic-ratelimit-input-tokens-*}</td></tr>
 *   <tr><td>{@link #outputTokens()}</td><td>-</td><td>{@code anthropic-ratelimit-output-tokens-*}</td></tr>
 * </table>
 * OpenAI's reset is a duration until the window is full again ({@code 6m0s}, {@code 120ms},
 * {@code 1s}), turned into an instant from {@code now}; Anthropic's is the RFC 3339 time at which
 * it is fully replenished. Limits are per minute for both (OpenAI's RPM/TPM, Anthropic's RPM,
 * ITPM, OTPM); Anthropic rounds {@code -remaining} token counts to the nearest thousand. Azure's
 * {@code -1} ("nothing to report"), negative, garbled and over-long values are ignored. Gemini and
 * Bedrock send no such headers: empty.
 *
 * @param requests the request window, or {@code null} when not reported
 * @param tokens the combined-token window, or {@code null}
 * @param inputTokens the input-token window (Anthropic), or {@code null}
 * @param outputTokens the output-token window (Anthropic), or {@code null}
 */
public record RateLimitHeaders(Window requests, Window tokens, Window inputTokens, Window outputTokens) {

    /**
     * One limit's state as the provider reported it. Each part may be missing.
     *
     * @param limit the most the window admits (per minute), or {@code null}
     * @param remaining what is left of it now, or {@code null}
     * @param resetAt when the window is full again, or {@code null}
     */
    public record Window(Long limit, Long remaining, Instant resetAt) {

        /** @return whether nothing was reported */
        boolean isEmpty() {
            return limit == null && remaining == null && resetAt == null;
        }
    }

    /**
     * The window of a token dimension.
     *
     * @param dimension which tokens; not {@code null}
     * @return that window, or {@code null} when not reported
     */
    public Window tokens(TokenDimension dimension) {
        return switch (Objects.requireNonNull(dimension, "dimension")) {
            case TOKENS -> tokens;
            case INPUT_TOKENS -> inputTokens;
            case OUTPUT_TOKENS -> outputTokens;
        };
    }

    /**
     * Reads the rate-limit headers of a response.
     *
     * @param headers the response headers, names in any case; may be {@code null}
     * @param now the instant the response arrived, to turn OpenAI's reset durations into instants;
     *     not {@code null}
     * @return the windows reported, or empty when the response reports none
     */
    public static Optional<RateLimitHeaders> read(Map<String, List<String>> headers, Instant now) {
        Objects.requireNonNull(now, "now");
        HeaderMap h;
        try {
            h = HeaderMap.of(headers);
        } catch (RuntimeException e) {
            return Optional.empty();
        }
        Window requests = either(openAi(h, "requests", now), anthropic(h, "requests"));
        Window tokens = either(openAi(h, "tokens", now), anthropic(h, "tokens"));
        Window input = anthropic(h, "input-tokens");
        Window output = anthropic(h, "output-tokens");
        if (requests == null && tokens == null && input == null && output == null) {
            return Optional.empty();
        }
        return Optional.of(new RateLimitHeaders(requests, tokens, input, output));
    }

    /**
     * Reads the rate-limit headers of a JDK {@link java.net.http.HttpClient} response.
     *
     * @param headers the headers; may be {@code null}
     * @param now the instant the response arrived; not {@code null}
     * @return the windows reported, or empty when none
     */
    public static Optional<RateLimitHeaders> read(HttpHeaders headers, Instant now) {
        return read(headers == null ? null : headers.map(), now);
    }

    private static Window openAi(HeaderMap h, String kind, Instant now) {
        Long raw = RetryAfter.integer(h.first("x-ratelimit-remaining-" + kind));
        if (raw != null && raw < 0) {
            return null; // Azure: -1 remaining and a reset of 0 when it has nothing to report
        }
        Long limit = count(h.first("x-ratelimit-limit-" + kind));
        Long remaining = count(h.first("x-ratelimit-remaining-" + kind));
        Duration reset = Waits.inForm(h.first("x-ratelimit-reset-" + kind), Row.Form.AUTO, now);
        Instant at = reset == null ? null : plus(now, reset);
        Window w = new Window(limit, remaining, at);
        return w.isEmpty() ? null : w;
    }

    private static Window anthropic(HeaderMap h, String kind) {
        String prefix = "anthropic-ratelimit-" + kind + "-";
        Window w = new Window(count(h.first(prefix + "limit")), count(h.first(prefix + "remaining")),
                Waits.rfc3339(h.first(prefix + "reset")));
        return w.isEmpty() ? null : w;
    }

    private static Window either(Window a, Window b) {
        return a != null ? a : b;
    }

    /** A non-negative count; Azure's -1, negatives and garbage give null. */
    private static Long count(String value) {
        Long v = RetryAfter.integer(value);
        return v == null || v < 0 ? null : v;
    }

    private static Instant plus(Instant now, Duration d) {
        try {
            return now.plus(d);
        } catch (RuntimeException overflow) {
            return null;
        }
    }
}
