package dev.layover.core.provider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.PureTest;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The request limit a 429 states, read for the learned pace (Classification#requestLimitPerSecond). */
@PureTest
class StatedLimitTest {

    private static final Instant NOW = Instant.parse("2026-11-29T12:00:00Z");
    private final ProviderClassifier classifier = ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    private static final String OPENAI_RPM = "{\"error\":{\"message\":\"Rate limit reached for gpt-4o-mini in organization "
            + "org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit "
            + "https://platform.openai.com/account/rate-limits to learn more.\",\"type\":\"requests\",\"param\":null,"
            + "\"code\":\"rate_limit_exceeded\"}}";
    private static final String OPENAI_TPM = "{\"error\":{\"message\":\"Rate limit reached for gpt-4o in organization "
            + "org-abc on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s.\","
            + "\"type\":\"tokens\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}";

    private Double stated(Provider p, Map<String, List<String>> headers, String body) {
        Classification c = classifier.classify(p, 429, headers, body).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        return c.requestLimitPerSecond();
    }

    @Test
    void openAisMessageStatesTheRequestLimitPerMinute() {
        assertEquals(500 / 60.0, stated(Provider.OPENAI, Map.of(), OPENAI_RPM), 1e-9);
    }

    @Test
    void openAisMessageWinsOverHeadersThatRefusedCallsHaveDrivenBelowEmpty() {
        // 50/s, refused calls counted: the bucket is 30 below empty, so the reset is 1.6 s, not 1 s
        String body = OPENAI_RPM.replace("requests per min (RPM): Limit 500", "requests per sec (RPS): Limit 50");
        assertEquals(50.0, stated(Provider.OPENAI, Map.of("x-ratelimit-limit-requests", List.of("50"),
                "x-ratelimit-remaining-requests", List.of("0"), "x-ratelimit-reset-requests", List.of("1.6s")), body), 1e-9);
    }

    @Test
    void openAisHeadersGiveTheRefillRateWhenTheMessageDoesNotSay() {
        // 10,000 RPM: 12 requests refill in 72 ms
        assertEquals(12 / 0.072, stated(Provider.OPENAI, Map.of("x-ratelimit-limit-requests", List.of("10000"),
                "x-ratelimit-remaining-requests", List.of("9988"), "x-ratelimit-reset-requests", List.of("72ms")),
                "{\"error\":{\"message\":\"Too many requests\",\"code\":\"rate_limit_exceeded\"}}"), 1e-6);
    }

    @Test
    void aTokenLimitStatesNoRequestPace() {
        assertNull(stated(Provider.OPENAI, Map.of("x-ratelimit-limit-requests", List.of("500"),
                "x-ratelimit-remaining-requests", List.of("499"), "x-ratelimit-reset-requests", List.of("120ms"),
                "x-ratelimit-remaining-tokens", List.of("0")), OPENAI_TPM));
        assertNull(stated(Provider.OPENAI, Map.of("x-ratelimit-limit-requests", List.of("500"),
                "x-ratelimit-remaining-requests", List.of("499"), "x-ratelimit-reset-requests", List.of("120ms"),
                "x-ratelimit-remaining-tokens", List.of("0")), "{\"error\":{\"message\":\"slow down\"}}"));
    }

    @Test
    void azuresNoLimitHeadersStateNothing() {
        assertNull(stated(Provider.AZURE_OPENAI, Map.of("x-ratelimit-remaining-requests", List.of("-1"),
                "x-ratelimit-reset-requests", List.of("0"), "retry-after", List.of("6")),
                "{\"error\":{\"code\":\"429\",\"message\":\"Requests to the ChatCompletions_Create Operation have "
                        + "exceeded call rate limit. Please retry after 6 seconds.\"}}"));
    }

    @Test
    void anthropicsRequestHeadersStateTheLimitPerMinuteWhenRequestsAreTheSpentLimit() {
        Map<String, List<String>> h = Map.of("anthropic-ratelimit-requests-limit", List.of("4000"),
                "anthropic-ratelimit-requests-remaining", List.of("0"),
                "anthropic-ratelimit-requests-reset", List.of("2026-11-29T12:00:01Z"), "retry-after", List.of("1"));
        String body = "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request "
                + "tokens has exceeded your per-minute rate limit\"}}";
        assertEquals(4000 / 60.0, stated(Provider.ANTHROPIC, h, body), 1e-9);
        assertNull(stated(Provider.ANTHROPIC, Map.of("anthropic-ratelimit-requests-limit", List.of("4000"),
                "anthropic-ratelimit-requests-remaining", List.of("3990"),
                "anthropic-ratelimit-input-tokens-remaining", List.of("0"), "retry-after", List.of("1")), body),
                "the input-token limit refused: the request rate is not what to pace");
    }

    @Test
    void geminiAndBedrockStateNoLimit() {
        assertNull(stated(Provider.GEMINI, Map.of(), "{\"error\":{\"code\":429,\"message\":\"Resource has been exhausted "
                + "(e.g. check quota).\",\"status\":\"RESOURCE_EXHAUSTED\"}}"));
        assertNull(stated(Provider.BEDROCK, Map.of("x-amzn-ErrorType", List.of("ThrottlingException")),
                "{\"message\":\"Too many requests, please wait before trying again.\"}"));
    }

    @Test
    void garbageStatesNothingAndTheOutcomeCarriesWhatWasStated() {
        assertNull(stated(Provider.OPENAI, Map.of("x-ratelimit-limit-requests", List.of("lots"),
                "x-ratelimit-remaining-requests", List.of("0"), "x-ratelimit-reset-requests", List.of("soon")), "{}"));
        assertNull(stated(Provider.OPENAI, Map.of("x-ratelimit-limit-requests", List.of("500"),
                "x-ratelimit-remaining-requests", List.of("500"), "x-ratelimit-reset-requests", List.of("0s")), "{}"),
                "nothing spent, nothing to refill: no rate");
        Outcome o = classifier.classify(Provider.OPENAI, 429, Map.of(), OPENAI_RPM).orElseThrow().toOutcome();
        assertEquals(500 / 60.0, ((Outcome.RateLimited) o).requestLimitPerSecond(), 1e-9);
    }
}
