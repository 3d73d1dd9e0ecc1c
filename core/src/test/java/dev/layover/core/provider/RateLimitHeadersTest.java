package dev.layover.core.provider;

import static dev.layover.core.provider.DocumentedVectorsTest.h;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.provider.RateLimitHeaders.Window;
import dev.layover.testing.PureTest;
import java.net.http.HttpHeaders;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The rate-limit headers of successful responses, in each provider's documented shape. */
@PureTest
class RateLimitHeadersTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");

    @Test
    void openAisDocumentedExampleIsRead() {
        // https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers
        RateLimitHeaders r = RateLimitHeaders.read(h("x-ratelimit-limit-requests", "60",
                "x-ratelimit-limit-tokens", "150000", "x-ratelimit-remaining-requests", "59",
                "x-ratelimit-remaining-tokens", "149984", "x-ratelimit-reset-requests", "1s",
                "x-ratelimit-reset-tokens", "6m0s"), NOW).orElseThrow();
        assertEquals(new Window(60L, 59L, NOW.plusSeconds(1)), r.requests());
        assertEquals(new Window(150_000L, 149_984L, NOW.plus(Duration.ofMinutes(6))), r.tokens());
        assertEquals(r.tokens(), r.tokens(TokenDimension.TOKENS));
        assertNull(r.inputTokens());
        assertNull(r.outputTokens());
    }

    @Test
    void openAisMillisecondResetIsExact() {
        RateLimitHeaders r = RateLimitHeaders.read(h("x-ratelimit-remaining-tokens", "29000",
                "x-ratelimit-reset-tokens", "120ms"), NOW).orElseThrow();
        assertEquals(new Window(null, 29_000L, NOW.plusMillis(120)), r.tokens());
        assertNull(r.requests());
    }

    @Test
    void anthropicsFourWindowsAreRead() {
        // https://docs.anthropic.com/en/api/rate-limits#response-headers
        RateLimitHeaders r = RateLimitHeaders.read(h(
                "anthropic-ratelimit-requests-limit", "4000", "anthropic-ratelimit-requests-remaining", "3999",
                "anthropic-ratelimit-requests-reset", "2026-05-28T10:15:31Z",
                "anthropic-ratelimit-tokens-limit", "480000", "anthropic-ratelimit-tokens-remaining", "478000",
                "anthropic-ratelimit-tokens-reset", "2026-05-28T10:15:32Z",
                "anthropic-ratelimit-input-tokens-limit", "400000", "anthropic-ratelimit-input-tokens-remaining",
                "399000", "anthropic-ratelimit-input-tokens-reset", "2026-05-28T10:15:32Z",
                "anthropic-ratelimit-output-tokens-limit", "80000", "anthropic-ratelimit-output-tokens-remaining",
                "79000", "anthropic-ratelimit-output-tokens-reset", "2026-05-28T10:15:33.500Z"), NOW).orElseThrow();
        assertEquals(new Window(4000L, 3999L, Instant.parse("2026-05-28T10:15:31Z")), r.requests());
        assertEquals(new Window(480_000L, 478_000L, Instant.parse("2026-05-28T10:15:32Z")), r.tokens());
        assertEquals(new Window(400_000L, 399_000L, Instant.parse("2026-05-28T10:15:32Z")),
                r.tokens(TokenDimension.INPUT_TOKENS));
        assertEquals(new Window(80_000L, 79_000L, Instant.parse("2026-05-28T10:15:33.500Z")),
                r.tokens(TokenDimension.OUTPUT_TOKENS));
    }

    @Test
    void azuresMinusOneReportsNothing() {
        // https://learn.microsoft.com/en-us/answers/questions/5625878
        assertTrue(RateLimitHeaders.read(h("x-ratelimit-limit-tokens", "-1", "x-ratelimit-remaining-tokens", "-1",
                "x-ratelimit-reset-tokens", "0"), NOW).isEmpty());
        RateLimitHeaders azure = RateLimitHeaders.read(h("x-ratelimit-remaining-requests", "119",
                "x-ratelimit-remaining-tokens", "119000", "apim-request-id", "8f0c6b2e-1"), NOW).orElseThrow();
        assertEquals(new Window(null, 119L, null), azure.requests());
        assertEquals(new Window(null, 119_000L, null), azure.tokens());
    }

    @Test
    void geminiAndBedrockSendNone() {
        assertTrue(RateLimitHeaders.read(h("content-type", "application/json", "x-amzn-RequestId", "5e4f"), NOW)
                .isEmpty());
        assertTrue(RateLimitHeaders.read((Map<String, List<String>>) null, NOW).isEmpty());
        assertTrue(RateLimitHeaders.read((HttpHeaders) null, NOW).isEmpty());
    }

    @Test
    void garbageIsIgnoredValueByValue() {
        RateLimitHeaders r = RateLimitHeaders.read(h("x-ratelimit-limit-tokens", "lots",
                "x-ratelimit-remaining-tokens", "99999999999999999999999", "x-ratelimit-reset-tokens", "6m0s",
                "anthropic-ratelimit-input-tokens-reset", "tomorrow", "anthropic-ratelimit-input-tokens-limit", "-3"),
                NOW).orElseThrow();
        assertEquals(new Window(null, null, NOW.plus(Duration.ofMinutes(6))), r.tokens());
        assertNull(r.inputTokens());
        assertThrows(NullPointerException.class, () -> RateLimitHeaders.read(Map.of(), null));
    }

    @Test
    void jdkHeadersAreRead() {
        HttpHeaders headers = HttpHeaders.of(Map.of("X-RateLimit-Remaining-Requests", List.of("7")), (a, b) -> true);
        assertEquals(new Window(null, 7L, null), RateLimitHeaders.read(headers, NOW).orElseThrow().requests());
    }
}
