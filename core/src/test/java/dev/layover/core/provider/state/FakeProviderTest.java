package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.FailureClass;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.provider.TokenDimension;
import dev.layover.testing.PureTest;
import dev.layover.testing.TestClock;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.FakeProvider.Api;
import dev.layover.testing.provider.FakeProvider.Dimension;
import dev.layover.testing.provider.FakeProvider.Phase;
import dev.layover.testing.provider.FakeProvider.Stage;
import dev.layover.testing.provider.FakeProvider.Style;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The fake provider speaks the providers' shapes, counts tokens and enforces limits as they do, and
 * Layover's classifier reads it as the real ones. Time is moved by hand: no sleep.
 */
@PureTest
class FakeProviderTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private static final Instant START = Instant.parse("2026-11-29T12:00:00Z");

    private final TestClock clock = new TestClock(START);
    private final FakeProvider fake = FakeProvider.start(clock);
    private final ProviderClassifier classifier =
            ProviderClassifier.builder().clock(Clock.fixed(START, ZoneOffset.UTC)).build();

    @AfterEach
    void close() {
        fake.close();
    }

    private static HttpResponse<String> post(URI url, String content, String style) throws Exception {
        return send(url, chat(content, null), style == null ? new String[0] : new String[] {"x-fake-style", style});
    }

    private static ObjectNode chat(String content, Integer maxTokens) {
        ObjectNode body = JSON.createObjectNode().put("model", "gpt-4o-mini");
        body.putArray("messages").addObject().put("role", "user").put("content", content);
        if (maxTokens != null) {
            body.put("max_tokens", maxTokens);
        }
        return body;
    }

    private static HttpResponse<String> send(URI url, JsonNode body, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(url).POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        for (int i = 0; i + 1 < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String content(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body()).path("choices").path(0).path("message").path("content").asText();
    }

    private Classification classify(Provider p, HttpResponse<String> r) {
        return classifier.classify(p, r).orElseThrow();
    }

    // ---- answers ---------------------------------------------------------------------------------

    @Test
    void aTranslationRequestIsAnsweredDeterministically() throws Exception {
        HttpResponse<String> r = post(fake.primary().url(), "{\"segments\":[\"Hello\",\"World\"],\"target\":\"fr\"}", null);
        assertEquals(200, r.statusCode());
        JsonNode answer = JSON.readTree(content(r));
        assertEquals("<TRANSLATED:fr> Hello", answer.get("segments").get(0).asText());
        assertEquals("<TRANSLATED:fr> World", answer.get("segments").get(1).asText());
        assertEquals("stop", JSON.readTree(r.body()).path("choices").path(0).path("finish_reason").asText());
        assertEquals("<ECHO> hi", content(post(fake.primary().url(), "hi", null)));
        assertTrue(classifier.classify(Provider.OPENAI, r).isEmpty(), "a clean answer is no failure");
    }

    @Test
    void answersCanBeFencedChattyOrTruncated() throws Exception {
        String req = "{\"segments\":[\"a\"],\"target\":\"de\"}";
        assertTrue(content(post(fake.primary().url(), req, "fenced")).startsWith("```json\n{"));
        assertTrue(content(post(fake.primary().url(), req, "chatty")).startsWith("Sure!"));
        HttpResponse<String> cut = post(fake.primary().url(), req, "truncated");
        assertEquals("length", JSON.readTree(cut.body()).path("choices").path(0).path("finish_reason").asText());
        fake.secondary().styleEvery(Style.FENCED, 2);
        assertTrue(content(post(fake.secondary().url(), "x", null)).startsWith("<ECHO>"));
        assertTrue(content(post(fake.secondary().url(), "x", null)).startsWith("```json"));
    }

    @Test
    void openAiUsageCountsEveryTextByCharactersOverFour() throws Exception {
        ObjectNode body = JSON.createObjectNode().put("model", "gpt-4o-mini");
        body.putArray("messages")
                .add(JSON.createObjectNode().put("role", "system").put("content", "x".repeat(40)))
                .add(JSON.createObjectNode().put("role", "user").put("content", "y".repeat(21)));
        HttpResponse<String> r = send(fake.primary().url(), body, "x-fake-cached-tokens", "8");
        JsonNode usage = JSON.readTree(r.body()).get("usage");
        assertEquals(16, usage.get("prompt_tokens").asInt(), "(40 + 21) / 4 rounded up");
        int completion = usage.get("completion_tokens").asInt();
        assertEquals((("<ECHO> " + "y".repeat(21)).length() + 3) / 4, completion, "the answer's characters / 4");
        assertEquals(16 + completion, usage.get("total_tokens").asInt());
        assertEquals(8, usage.path("prompt_tokens_details").path("cached_tokens").asInt());
        assertEquals(16, fake.primary().inputTokens());
        assertEquals(8, fake.primary().cachedInputTokens());
        assertEquals(Api.OPENAI_CHAT, fake.primary().usages().get(0).api());
    }

    @Test
    void outputUsesAShareOfTheCeilingBetweenTheBounds() throws Exception {
        fake.primary().outputShare(0.2, 1.0);
        for (int i = 0; i < 20; i++) {
            JsonNode usage = JSON.readTree(send(fake.primary().url(), chat("prompt " + i, 500)).body()).get("usage");
            int out = usage.get("completion_tokens").asInt();
            assertTrue(out >= 100 && out <= 500, "20-100 % of 500: " + out);
        }
        long distinct = fake.primary().usages().stream().mapToLong(FakeProvider.Usage::outputTokens).distinct().count();
        assertTrue(distinct > 5, "shares vary with the request: " + distinct);
        JsonNode again = JSON.readTree(send(fake.primary().url(), chat("prompt 3", 500)).body()).get("usage");
        assertEquals(fake.primary().usages().get(3).outputTokens(), again.get("completion_tokens").asLong(),
                "the same request gets the same share");
        assertThrows(IllegalArgumentException.class, () -> fake.primary().outputShare(0, 1));
        assertThrows(IllegalArgumentException.class, () -> fake.primary().outputShare(0.5, 0.4));
    }

    // ---- request limits ------------------------------------------------------------------------

    @Test
    void overTheLimitItAnswers429WithOpenAisHeadersAndTheClassifierWaitsAsTold() throws Exception {
        fake.primary().limitPerMinute(2);
        assertEquals(200, post(fake.primary().url(), "1", null).statusCode());
        assertEquals(200, post(fake.primary().url(), "2", null).statusCode());
        HttpResponse<String> r = post(fake.primary().url(), "3", null);
        assertEquals(429, r.statusCode());
        assertEquals("30", r.headers().firstValue("retry-after").orElseThrow(), "one request per 30 s");
        assertEquals("2", r.headers().firstValue("x-ratelimit-limit-requests").orElseThrow());
        assertEquals("0", r.headers().firstValue("x-ratelimit-remaining-requests").orElseThrow());
        assertTrue(r.headers().firstValue("x-ratelimit-reset-requests").orElseThrow().matches("\\d+s|\\d+m\\d+s"));
        JsonNode err = JSON.readTree(r.body()).get("error");
        assertEquals("rate_limit_exceeded", err.get("code").asText());
        assertEquals("requests", err.get("type").asText());
        assertTrue(err.get("param").isNull());
        Classification c = classify(Provider.OPENAI, r);
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(30), c.retryAfter());
        assertEquals(2 / 60.0, c.requestLimitPerSecond(), 1e-9);
        assertEquals(1, fake.primary().rateLimited());
        assertEquals(1, fake.primary().rateLimited(Dimension.REQUESTS));
        assertEquals(0, fake.secondary().calls(), "the secondary has its own bucket and counters");
        assertEquals(200, post(fake.secondary().url(), "4", null).statusCode());
        clock.advance(Duration.ofSeconds(31));
        assertEquals(200, post(fake.primary().url(), "5", null).statusCode(), "refilled after the wait");
    }

    @Test
    void refusedCallsCanCountAgainstTheLimit() throws Exception {
        fake.primary().limitPerSecond(1).countRefused(true);
        post(fake.primary().url(), "1", null);
        assertEquals(429, post(fake.primary().url(), "2", null).statusCode());
        clock.advance(Duration.ofMillis(1100));
        assertEquals(429, post(fake.primary().url(), "3", null).statusCode(), "the refused call took the refill");
        clock.advance(Duration.ofMillis(2100));
        assertEquals(200, post(fake.primary().url(), "4", null).statusCode());
    }

    @Test
    void theRequestLimitChangesAtRunTimeKeepingWhatTheBucketHolds() throws Exception {
        FakeProvider.Endpoint ep = fake.primary().limitPerSecond(50);
        assertEquals(50, admittedOf(ep, 60), "a full bucket of 50");
        clock.advance(Duration.ofSeconds(1));
        ep.changeLimitPerSecond(20);
        assertEquals(20, admittedOf(ep, 60), "the 50 refilled are cut to the new 20");
        clock.advance(Duration.ofMillis(500));
        assertEquals(10, admittedOf(ep, 60), "refilled at 20/s");
        ep.changeLimitPerSecond(80);
        clock.advance(Duration.ofMillis(500));
        assertEquals(40, admittedOf(ep, 100), "refilled at 80/s from the change");
        HttpResponse<String> r = post(ep.url(), "over", null);
        assertEquals(80 / 1.0, classify(Provider.OPENAI, r).requestLimitPerSecond(), 1e-9, "the 429 states the new limit");
    }

    private int admittedOf(FakeProvider.Endpoint ep, int attempts) throws Exception {
        int ok = 0;
        for (int i = 0; i < attempts; i++) {
            if (post(ep.url(), "n" + i, null).statusCode() == 200) {
                ok++;
            }
        }
        return ok;
    }

    // ---- token limits --------------------------------------------------------------------------

    @Test
    void aTokenLimitRefusesInOpenAisShapeAndGivesUnusedOutputBack() throws Exception {
        FakeProvider.Endpoint ep = fake.primary().tokenLimitPerMinute(600).outputShare(0.5, 0.5);
        String prompt = "p".repeat(400); // 100 input tokens
        HttpResponse<String> first = send(ep.url(), chat(prompt, 200));
        assertEquals(200, first.statusCode());
        assertEquals(100, JSON.readTree(first.body()).path("usage").path("completion_tokens").asInt(), "half of 200");
        RateLimitHeaders h = RateLimitHeaders.read(first.headers(), START).orElseThrow();
        assertEquals(600L, h.tokens().limit());
        assertEquals(300L, h.tokens().remaining(), "600 - (100 input + 200 reserved), before the unused 100 came back");
        HttpResponse<String> second = send(ep.url(), chat(prompt + "q", 200));
        assertEquals(200, second.statusCode());
        RateLimitHeaders h2 = RateLimitHeaders.read(second.headers(), START).orElseThrow();
        assertEquals(99L, h2.tokens().remaining(), "400 after the give-back, minus 101 input and 200 reserved");
        HttpResponse<String> refused = send(ep.url(), chat(prompt, 200));
        assertEquals(429, refused.statusCode());
        JsonNode err = JSON.readTree(refused.body()).get("error");
        assertEquals("tokens", err.get("type").asText());
        assertTrue(err.get("message").asText().contains("on tokens per min (TPM): Limit 600, Used"), err.toString());
        assertTrue(err.get("message").asText().contains("Requested 300"), err.toString());
        Classification c = classify(Provider.OPENAI, refused);
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(600.0, c.tokenLimitPerMinute());
        assertEquals(TokenDimension.TOKENS, c.tokenDimension());
        assertNull(c.requestLimitPerSecond());
        assertTrue(c.retryAfter().compareTo(Duration.ZERO) > 0);
        assertEquals(1, ep.rateLimited(Dimension.TOKENS));
        clock.advance(c.retryAfter());
        assertEquals(200, send(ep.url(), chat(prompt, 200)).statusCode(), "admitted after the stated wait");
    }

    @Test
    void aRequestLargerThanTheTokenLimitIsTooLargeForever() throws Exception {
        fake.primary().tokenLimitPerMinute(1000);
        HttpResponse<String> r = send(fake.primary().url(), chat("z".repeat(4000), 200));
        assertEquals(429, r.statusCode());
        assertTrue(JSON.readTree(r.body()).path("error").path("message").asText()
                .startsWith("Request too large for gpt-4o-mini in organization org-fake on tokens per min (TPM): "
                        + "Limit 1000, Requested 1200."), r.body());
        Classification c = classify(Provider.OPENAI, r);
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
        assertEquals(1000.0, c.tokenLimitPerMinute());
    }

    @Test
    void anthropicInputAndOutputLimitsCountAsAnthropicDocuments() throws Exception {
        FakeProvider.Endpoint ep = fake.primary().inputTokenLimitPerMinute(200).outputTokenLimitPerMinute(100);
        ObjectNode body = JSON.createObjectNode().put("model", "claude-haiku-4-5").put("max_tokens", 60);
        body.putArray("messages").addObject().put("role", "user").put("content", "c".repeat(600)); // 150 input
        HttpResponse<String> ok = send(ep.url(Api.ANTHROPIC_MESSAGES), body, "x-fake-cached-tokens", "100");
        assertEquals(200, ok.statusCode());
        JsonNode usage = JSON.readTree(ok.body()).get("usage");
        assertEquals(50, usage.get("input_tokens").asInt(), "input_tokens excludes the cache read");
        assertEquals(100, usage.get("cache_read_input_tokens").asInt());
        assertEquals(0, usage.get("cache_creation_input_tokens").asInt());
        assertTrue(usage.get("output_tokens").asInt() > 0);
        RateLimitHeaders h = RateLimitHeaders.read(ok.headers(), START).orElseThrow();
        assertEquals(150L, h.inputTokens().remaining(), "only the 50 uncached count against input tokens per minute");
        assertEquals(200L, h.inputTokens().limit());
        assertEquals(40L, h.outputTokens().remaining(), "max_tokens 60 reserved");
        HttpResponse<String> second = send(ep.url(Api.ANTHROPIC_MESSAGES), body);
        assertEquals(429, second.statusCode(), "the 150 input tokens fit, the 60 reserved output do not");
        Classification c = classify(Provider.ANTHROPIC, second);
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(100.0, c.tokenLimitPerMinute());
        assertEquals(TokenDimension.OUTPUT_TOKENS, c.tokenDimension());
        assertTrue(second.headers().firstValue("retry-after").isPresent());
        assertTrue(JSON.readTree(second.body()).path("error").path("message").asText()
                .contains("of 100 output tokens per minute"), second.body());
    }

    // ---- the other APIs' shapes at the HTTP level ----------------------------------------------

    @Test
    void geminiAndBedrockAnswerWithTheirUsageShapes() throws Exception {
        ObjectNode g = JSON.createObjectNode();
        g.putArray("contents").addObject().put("role", "user").putArray("parts").addObject().put("text", "g".repeat(8));
        g.putObject("generationConfig").put("maxOutputTokens", 5);
        JsonNode gemini = JSON.readTree(send(fake.primary().url(Api.GEMINI_GENERATE_CONTENT), g).body());
        assertEquals(2, gemini.path("usageMetadata").path("promptTokenCount").asInt());
        assertEquals(4, gemini.path("usageMetadata").path("candidatesTokenCount").asInt(), "(7 + 8) / 4 rounded up");
        assertEquals("STOP", gemini.path("candidates").path(0).path("finishReason").asText());
        assertEquals("<ECHO> gggggggg", gemini.path("candidates").path(0).path("content").path("parts").path(0)
                .path("text").asText());
        ObjectNode b = JSON.createObjectNode();
        b.putArray("messages").addObject().put("role", "user").putArray("content").addObject().put("text", "b".repeat(12));
        b.putObject("inferenceConfig").put("maxTokens", 2);
        JsonNode bedrock = JSON.readTree(send(fake.primary().url(Api.BEDROCK_CONVERSE), b).body());
        assertEquals(3, bedrock.path("usage").path("inputTokens").asInt());
        assertEquals(2, bedrock.path("usage").path("outputTokens").asInt(), "cut at the ceiling");
        assertEquals(5, bedrock.path("usage").path("totalTokens").asInt());
        assertEquals("max_tokens", bedrock.path("stopReason").asText());
    }

    @Test
    void statingNoLimitLeavesNothingToLearnInAnyShape() throws Exception {
        FakeProvider.Endpoint ep = fake.primary().limitPerSecond(1).tokenLimitPerMinute(100_000).statesNoLimit(true);
        HttpResponse<String> ok = post(ep.url(), "first", null);
        assertEquals(200, ok.statusCode());
        assertTrue(RateLimitHeaders.read(ok.headers(), START).isEmpty(), "no rate-limit headers on success");
        ObjectNode anthropic = JSON.createObjectNode().put("model", "claude-haiku-4-5").put("max_tokens", 10);
        anthropic.putArray("messages").addObject().put("role", "user").put("content", "hi");
        ObjectNode gemini = JSON.createObjectNode();
        gemini.putArray("contents").addObject().put("role", "user").putArray("parts").addObject().put("text", "hi");
        ObjectNode bedrock = JSON.createObjectNode();
        bedrock.putArray("messages").addObject().put("role", "user").putArray("content").addObject().put("text", "hi");
        record Case(Provider provider, URI url, JsonNode body) {}
        for (Case k : new Case[] {new Case(Provider.OPENAI, ep.url(), chat("again", null)),
                new Case(Provider.ANTHROPIC, ep.url(Api.ANTHROPIC_MESSAGES), anthropic),
                new Case(Provider.GEMINI, ep.url(Api.GEMINI_GENERATE_CONTENT), gemini),
                new Case(Provider.BEDROCK, ep.url(Api.BEDROCK_CONVERSE), bedrock)}) {
            HttpResponse<String> r = send(k.url(), k.body());
            assertEquals(429, r.statusCode(), k.provider().name());
            assertTrue(r.headers().firstValue("retry-after").isEmpty(), k.provider().name());
            assertTrue(RateLimitHeaders.read(r.headers(), START).isEmpty(), k.provider().name());
            assertFalse(r.body().matches(".*\\d{2,}.*") && !k.provider().equals(Provider.GEMINI),
                    "no numbers: " + r.body());
            Classification c = classify(k.provider(), r);
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass(), k.provider().name());
            assertNull(c.requestLimitPerSecond(), k.provider().name());
            assertNull(c.tokenLimitPerMinute(), k.provider().name());
            assertNull(c.retryAfter(), k.provider().name());
        }
    }

    // ---- phases ----------------------------------------------------------------------------------

    @Test
    void scriptedPhasesGiveTheProvidersOwnErrorShapes() throws Exception {
        Duration step = Duration.ofMillis(300);
        fake.primary().script(new Stage(Phase.THROTTLED, step), new Stage(Phase.OUTAGE, step),
                new Stage(Phase.OVERLOADED, step), new Stage(Phase.NORMAL, Duration.ZERO));
        assertEquals(FailureClass.RATE_LIMITED, classify(Provider.OPENAI, post(fake.primary().url(), "x", null))
                .failureClass());
        clock.advance(step);
        HttpResponse<String> outage = post(fake.primary().url(), "x", null);
        assertEquals(503, outage.statusCode());
        assertEquals(FailureClass.OVERLOADED, classify(Provider.OPENAI, outage).failureClass());
        clock.advance(step);
        HttpResponse<String> overloaded = post(fake.primary().url(), "x", null);
        assertEquals(529, overloaded.statusCode());
        assertTrue(overloaded.body().contains("overloaded_error"));
        assertEquals(FailureClass.OVERLOADED, classify(Provider.OPENAI, overloaded).failureClass());
        clock.advance(step);
        assertEquals(200, post(fake.primary().url(), "x", null).statusCode(), "recovered");
        fake.primary().phase(Phase.REJECTING);
        assertEquals(FailureClass.BAD_REQUEST, classify(Provider.OPENAI, post(fake.primary().url(), "x", null))
                .failureClass());
        fake.primary().phase(Phase.UNAUTHORIZED);
        assertEquals(FailureClass.AUTH_REFUSED, classify(Provider.OPENAI, post(fake.primary().url(), "x", null))
                .failureClass());
        assertEquals(1, fake.primary().unavailable());
        assertEquals(1, fake.primary().overloaded());
        assertEquals(2, fake.primary().refused());
        assertEquals(1, fake.primary().successes());
        assertEquals(6, fake.primary().calls());
        assertEquals(6, fake.primary().perSecond().values().stream().mapToInt(Integer::intValue).sum());
        assertTrue(fake.primary().maxInFlight() >= 1);
    }

    @Test
    void everyPhaseSpeaksEachApisShape() throws Exception {
        ObjectNode gemini = JSON.createObjectNode();
        gemini.putArray("contents").addObject().put("role", "user").putArray("parts").addObject().put("text", "hi");
        ObjectNode bedrock = JSON.createObjectNode();
        bedrock.putArray("messages").addObject().put("role", "user").putArray("content").addObject().put("text", "hi");
        FakeProvider.Endpoint ep = fake.secondary();
        ep.phase(Phase.UNAUTHORIZED);
        assertEquals(FailureClass.AUTH_REFUSED, classify(Provider.GEMINI,
                send(ep.url(Api.GEMINI_GENERATE_CONTENT), gemini)).failureClass());
        assertEquals(FailureClass.AUTH_REFUSED, classify(Provider.BEDROCK,
                send(ep.url(Api.BEDROCK_CONVERSE), bedrock)).failureClass());
        ep.phase(Phase.OUTAGE);
        assertEquals(FailureClass.OVERLOADED, classify(Provider.GEMINI,
                send(ep.url(Api.GEMINI_GENERATE_CONTENT), gemini)).failureClass());
        ep.phase(Phase.REJECTING);
        assertEquals(FailureClass.BAD_REQUEST, classify(Provider.BEDROCK,
                send(ep.url(Api.BEDROCK_CONVERSE), bedrock)).failureClass());
        ep.throttledRetryAfter(Duration.ofSeconds(7)).phase(Phase.THROTTLED);
        Classification g = classify(Provider.GEMINI, send(ep.url(Api.GEMINI_GENERATE_CONTENT), gemini));
        assertEquals(FailureClass.RATE_LIMITED, g.failureClass());
        assertEquals(Duration.ofSeconds(7), g.retryAfter(), "RetryInfo");
        assertEquals(3, ep.refused());
        assertEquals(1, ep.rateLimited());
        assertEquals(404, send(URI.create(ep.base() + "/v1/nothing"), gemini).statusCode());
    }

    @Test
    void throttleFirstAnswersTheNextRequests429WhateverTheTimeThenNormally() throws Exception {
        fake.primary().throttledRetryAfter(Duration.ofSeconds(3)).throttleFirst(2);
        for (int i = 0; i < 2; i++) {
            HttpResponse<String> r = post(fake.primary().url(), "hello", null);
            assertEquals(429, r.statusCode(), r.body());
            assertEquals(Duration.ofSeconds(3), classify(Provider.OPENAI, r).retryAfter());
        }
        HttpResponse<String> ok = post(fake.primary().url(), "hello", null);
        assertEquals(200, ok.statusCode(), ok.body());
        assertEquals(2, fake.primary().rateLimited());
        assertEquals(1, fake.primary().successes());
    }
}
