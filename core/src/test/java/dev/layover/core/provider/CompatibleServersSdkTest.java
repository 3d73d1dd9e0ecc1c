package dev.layover.core.provider;

import static dev.layover.core.provider.ReplayServer.reply;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.OpenAIServiceException;
import com.openai.errors.SseException;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.PureTest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The OpenAI-compatible servers through openai-java 4.101.0 pointed at a base URL, its retries off
 * ({@code maxRetries(0)}: each call reaches the server once), against a local server replaying each
 * server's documented error shapes. openai-java reports them all as OpenAI: the classifier names them
 * from their headers, or from the hint the application gives.
 */
@PureTest
class CompatibleServersSdkTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    static ReplayServer server;
    static OpenAIClient client;

    @BeforeAll
    static void start() throws Exception {
        server = new ReplayServer();
        client = OpenAIOkHttpClient.builder().apiKey("key").baseUrl(server.url() + "/v1").maxRetries(0)
                .timeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    static ChatCompletionCreateParams params() {
        return ChatCompletionCreateParams.builder().model("llama-3.3-70b-versatile").addUserMessage("hi").build();
    }

    /** Calls once, asserts no retry, and returns the exception the handler would see. */
    private OpenAIServiceException fail(ReplayServer.Reply r) {
        server.answer(r);
        OpenAIServiceException e = assertThrows(OpenAIServiceException.class,
                () -> client.chat().completions().create(params()));
        assertEquals(1, server.requests(), "the SDK must not retry");
        return e;
    }

    private Classification call(Provider hint, ReplayServer.Reply r) {
        return CLASSIFIER.classify(hint, new RuntimeException("handler failed", fail(r))).orElseThrow();
    }

    // ---- Groq ------------------------------------------------------------------------------

    @Test
    void groqFlexCapacity498IsOverloadedAndNamedByItsRegionHeader() {
        // https://console.groq.com/docs/flex-processing: "fail quickly with status 498 and error capacity_exceeded"
        Classification c = call(null, reply(498).header("x-groq-region", "us-east-1").json("""
                {"error":{"message":"Flex tier capacity exceeded. This is a known issue that happens occasionally. \
                Please try again later.","type":"internal_server_error","code":"capacity_exceeded"}}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertEquals(Provider.GROQ, c.provider(), "x-groq-region names the server");
        assertEquals(498, c.httpStatus());
        assertTrue(c.toOutcome() instanceof Outcome.Overloaded);
    }

    @Test
    void groqRequestsPerDayIsQuotaAndItsHeadersStateNoPace() {
        // https://console.groq.com/docs/rate-limits: x-ratelimit-limit-requests counts requests per day
        Classification c = call(Provider.GROQ, reply(429).header("retry-after", "87")
                .header("x-ratelimit-limit-requests", "1000").header("x-ratelimit-remaining-requests", "0")
                .header("x-ratelimit-reset-requests", "1m26.4s").json("""
                        {"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile` in organization \
                        `org_01` service tier `on_demand` on requests per day (RPD): Limit 1000, Used 1000, \
                        Requested 1. Please try again in 1m26.4s.","type":"requests","code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(NOW.plusSeconds(87), c.resetAt());
        assertEquals(Provider.GROQ, c.provider());
    }

    @Test
    void groqTokensPerMinuteStatesItsPaceButNotFromTheRequestHeaders() {
        Classification c = call(Provider.GROQ, reply(429).header("retry-after", "3")
                .header("x-ratelimit-limit-requests", "14400").header("x-ratelimit-remaining-requests", "14000")
                .header("x-ratelimit-reset-requests", "2m40s").json("""
                        {"error":{"message":"Rate limit reached for requests","type":"requests",\
                        "code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(3), c.retryAfter());
        assertNull(c.requestLimitPerSecond(), "Groq's request headers count a day, not a minute");
        Classification openAi = call(Provider.OPENAI, reply(429).header("retry-after", "3")
                .header("x-ratelimit-limit-requests", "14400").header("x-ratelimit-remaining-requests", "14000")
                .header("x-ratelimit-reset-requests", "2m40s").json("""
                        {"error":{"message":"Rate limit reached for requests","type":"requests",\
                        "code":"rate_limit_exceeded"}}"""));
        assertEquals(2.5, openAi.requestLimitPerSecond(), "OpenAI's request headers keep their reading");
    }

    @Test
    void groqClientClosedRequest499IsTransient() {
        // https://console.groq.com/docs/errors: 499
        Classification c = call(null, reply(499).header("x-groq-region", "us-east-1").json("""
                {"error":{"message":"Client Closed Request","type":"invalid_request_error"}}"""));
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
    }

    // ---- OpenRouter ------------------------------------------------------------------------

    @Test
    void openRouterPerDayLimitResetsAtTheEpochMillisOfItsHeader() {
        // https://openrouter.ai/docs/api-reference/limits: X-RateLimit-Reset in epoch milliseconds
        Instant midnight = Instant.parse("2026-05-29T00:00:00Z");
        Classification c = call(null, reply(429).header("X-RateLimit-Limit", "50")
                .header("X-RateLimit-Remaining", "0").header("X-RateLimit-Reset", String.valueOf(midnight.toEpochMilli()))
                .header("x-generation-id", "gen-1779963330-abc").json("""
                        {"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 \
                        free model requests per day","code":429}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(midnight, c.resetAt());
        assertEquals(Provider.OPENROUTER, c.provider(), "x-generation-id names the server");
    }

    @Test
    void openRouterResetQuotedOnlyInTheErrorMetadataIsRead() {
        // openai-java keeps the error member, and with it metadata.headers
        Instant in42s = NOW.plusSeconds(42);
        Classification c = call(Provider.OPENROUTER, reply(429).json("""
                {"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429,"metadata":{"headers":\
                {"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"%d"}}}}"""
                .formatted(in42s.toEpochMilli())));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(42), c.retryAfter());
    }

    @Test
    void openRouterModerationRefusalIsRejectedNotAuth() {
        // https://openrouter.ai/docs/api-reference/errors: 403 "your input was flagged"
        Classification c = call(Provider.OPENROUTER, reply(403).json("""
                {"error":{"message":"meta-llama/llama-guard requires moderation on OpenRouter. Your input was \
                flagged for \\"violence\\". No credits were charged.","code":403,"metadata":{"reasons":["violence"],\
                "flagged_input":"...","provider_name":"OpenAI","model_slug":"openai/gpt-4o"}}}"""));
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
        assertTrue(c.toOutcome() instanceof Outcome.Rejected);
    }

    @Test
    void openRouterInsufficientCredits402IsQuota() {
        Classification c = call(Provider.OPENROUTER, reply(402).json("""
                {"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/credits","code":402}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.resetAt());
    }

    @Test
    void openRouterMidStreamErrorChunkIsTransient() {
        // errors: "emitted ... as an SSE data event", finish_reason "error"
        server.answer(reply(200).sse("""
                data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}

                data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","provider":"OpenAI","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}

                """));
        SseException e = assertThrows(SseException.class, () -> {
            try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(params())) {
                s.stream().forEach(chunk -> { });
            }
        });
        assertEquals(1, server.requests());
        Classification c = CLASSIFIER.classify(Provider.OPENROUTER, e).orElseThrow();
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
        assertEquals(200, c.httpStatus());
    }

    // ---- Mistral, DeepSeek, Together, Fireworks, xAI ------------------------------------------

    @Test
    void mistralCapacitySaidInWordsUnder429IsOverloaded() {
        // continuedev/continue#6185
        Classification c = call(Provider.MISTRAL, reply(429).json("""
                {"object":"error","message":"Service tier capacity exceeded for this model.",\
                "type":"invalid_request_error","param":null,"code":null}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
    }

    @Test
    void mistralIsNamedByItsCorrelationHeader() {
        Classification c = call(null, reply(401).header("mistral-correlation-id", "0195f8a2").json("""
                {"message":"Unauthorized","request_id":"933f233947ff6d346065bb297e4a4d56"}"""));
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
        assertEquals(Provider.MISTRAL, c.provider());
    }

    @Test
    void deepSeekInsufficientBalance402IsQuota() {
        // https://api-docs.deepseek.com/quick_start/error_codes
        Classification c = call(Provider.DEEPSEEK, reply(402).json("""
                {"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,\
                "code":"invalid_request_error"}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(Provider.DEEPSEEK, c.provider());
    }

    @Test
    void togetherContextLength403IsRejectedOnlyForTogether() {
        // https://docs.together.ai/docs/error-codes: "403 - Bad Request: input token count + max_tokens
        // must be less than the context length"
        String body = """
                {"error":{"message":"Forbidden","type":"invalid_request_error","param":null,"code":null}}""";
        assertEquals(FailureClass.BAD_REQUEST, call(Provider.TOGETHER, reply(403).json(body)).failureClass());
        assertEquals(FailureClass.AUTH_REFUSED, call(Provider.OPENAI, reply(403).json(body)).failureClass(),
                "Together's quirk does not change OpenAI's reading");
    }

    @Test
    void togetherResetSecondsIsTheWait() {
        Classification c = call(Provider.TOGETHER, reply(429).header("x-ratelimit-limit", "60")
                .header("x-ratelimit-remaining", "0").header("x-ratelimit-reset", "2").json("""
                        {"error":{"message":"You have been rate limited. Your rate limit is 60 queries per minute.",\
                        "type":"credit_limit","param":null,"code":null}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass(), "credit_limit typed, but a rate limit");
        assertEquals(Duration.ofSeconds(2), c.retryAfter());
    }

    @Test
    void fireworksSuspendedAccount412IsQuota() {
        // https://fireworks.ai/docs/guides/inference-error-codes: 412 account suspended
        Classification c = call(null, reply(412).json("""
                {"error":{"message":"Account acme is suspended, possibly due to reaching the monthly spending limit \
                or failure to pay past invoices. Please go to https://fireworks.ai/account/billing for more \
                information.","param":null,"code":"PRECONDITION_FAILED","type":"error"}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertTrue(c.toOutcome() instanceof Outcome.QuotaExhausted);
    }

    @Test
    void xaiSpendingLimit403IsQuotaThoughItsErrorIsAString() {
        // xAI answers {"code": <gRPC text>, "error": <message>}: openai-java keeps only the string
        Classification c = call(Provider.XAI, reply(403).json("""
                {"code":"The caller does not have permission to execute the specified operation","error":"Your \
                team 16f2 has either used all available credits or reached its monthly spending limit. To continue \
                making API requests, please purchase more credits or raise your spending limit."}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(Provider.XAI, c.provider());
    }

    @Test
    void xaiIncorrectApiKey400IsAuthRefused() {
        // https://docs.x.ai/docs/key-information/debugging: 400 for an incorrect API key
        Classification c = call(Provider.XAI, reply(400).json("""
                {"code":"Client specified an invalid argument","error":"Incorrect API key provided: xa***gw. You \
                can obtain an API key from https://console.x.ai."}"""));
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
    }

    // ---- vLLM, Ollama --------------------------------------------------------------------------

    @Test
    void vllmContextLengthInItsOwnShapeIsRejectedAndNamedByItsServerHeader() {
        // vllm-project/vllm#12886
        Classification c = call(null, reply(400).header("server", "vllm/0.9.1").json("""
                {"object":"error","message":"This model's maximum context length is 2048 tokens. However, you \
                requested 2723 tokens.","type":"BadRequestError","param":null,"code":400}"""));
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
        assertEquals(Provider.VLLM, c.provider());
    }

    @Test
    void ollamaBodyTooLarge413TypedApiErrorIsRejected() {
        // ollama openai/openai.go NewError: anything but 400 and 404 is api_error
        Classification c = call(Provider.OLLAMA, reply(413).json("""
                {"error":{"message":"http: request body too large","type":"api_error","param":null,"code":null}}"""));
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
    }

    @Test
    void ollamaServerBusy503IsOverloaded() {
        Classification c = call(Provider.OLLAMA, reply(503).json("""
                {"error":{"message":"server busy, please try again.  maximum pending requests exceeded",\
                "type":"api_error","param":null,"code":null}}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
    }

    // ---- OpenAI and Azure through the same client --------------------------------------------

    @Test
    void openAiEngineOverloadedUnder429IsOverloaded() {
        Classification c = call(null, reply(429).json("""
                {"error":{"message":"The engine is currently overloaded, please try again later",\
                "type":"server_error","param":null,"code":null}}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertEquals(Provider.OPENAI, c.provider());
    }

    @Test
    void openAiMaximumContentSize413IsNeverRetried() {
        Classification c = call(null, reply(413).json("""
                {"error":{"message":"Maximum content size limit (26214400) exceeded (26417812 bytes read)",\
                "type":"server_error","param":null,"code":null}}"""));
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
    }

    @Test
    void azureApiManagementQuota403IsQuotaUntilReplenished() {
        // https://learn.microsoft.com/azure/api-management/quota-policy
        Classification c = call(null, reply(403).header("apim-request-id", "8f0c").json("""
                {"statusCode": 403, "message": "Out of call volume quota. Quota will be replenished in 2.12:43:08."}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(Provider.AZURE_OPENAI, c.provider());
        assertEquals(NOW.plus(Duration.ofDays(2).plusHours(12).plusMinutes(43).plusSeconds(8)), c.resetAt());
    }
}
