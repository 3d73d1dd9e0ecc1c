package dev.layover.core.provider;

import static dev.layover.core.provider.ReplayServer.reply;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.azure.AzureOpenAIServiceVersion;
import com.openai.azure.AzureUrlPathMode;
import com.openai.azure.credential.AzureApiKeyCredential;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.HttpResponseFor;
import com.openai.core.http.StreamResponse;
import com.openai.errors.OpenAIIoException;
import com.openai.errors.RateLimitException;
import com.openai.errors.SseException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.PureTest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * openai-java 4.101.0 against a local server replaying OpenAI's documented error responses, with
 * the SDK's own retries off ({@code maxRetries(0)}): each case must reach the server exactly once.
 * {@code OpenAIServiceException} exposes status, headers and the error body (its {@code code()},
 * {@code type()}, {@code param()} are views of that body), and the adapter reads all of it.
 */
@PureTest
class OpenAiSdkAdapterTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    static ReplayServer server;
    static OpenAIClient client;

    @BeforeAll
    static void start() throws Exception {
        server = new ReplayServer();
        client = OpenAIOkHttpClient.builder()
                .apiKey("sk-test")
                .baseUrl(server.url() + "/v1")
                .maxRetries(0)
                .timeout(Duration.ofSeconds(5))
                .build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    static ChatCompletionCreateParams params() {
        return ChatCompletionCreateParams.builder().model("gpt-4o-mini").addUserMessage("hi").build();
    }

    private Classification call(ReplayServer.Reply r) {
        server.answer(r);
        RuntimeException e = assertThrows(RuntimeException.class, () -> client.chat().completions().create(params()));
        assertEquals(1, server.requests(), "the SDK must not retry");
        return CLASSIFIER.classify(new RuntimeException("handler failed", e)).orElseThrow();
    }

    @Test
    void openAiInsufficientQuota429IsQuotaNotRateLimit() {
        // https://platform.openai.com/docs/guides/error-codes
        Classification c = call(reply(429).json("""
                {"error":{"message":"You exceeded your current quota, please check your plan and billing details.",\
                "type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(Provider.OPENAI, c.provider());
        assertEquals(429, c.httpStatus());
        assertTrue(c.reason().startsWith("insufficient_quota: You exceeded your current quota"), c.reason());
    }

    @Test
    void openAiRateLimitWaitsForTheExhaustedResetHeader() {
        // https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers
        Classification c = call(reply(429)
                .header("x-ratelimit-remaining-requests", "499").header("x-ratelimit-reset-requests", "120ms")
                .header("x-ratelimit-remaining-tokens", "0").header("x-ratelimit-reset-tokens", "6m0s")
                .json("""
                        {"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM)",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofMinutes(6), c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(new Outcome.RateLimited(Duration.ofMinutes(6), c.reason()), c.toOutcome());
    }

    @Test
    void openAiRetryAfterHeaderIsReadAndNotSleptOnBySdk() {
        Classification c = call(reply(429).header("retry-after", "20").json("""
                {"error":{"message":"Rate limit reached for requests","type":"requests","param":null,\
                "code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(20), c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void openAiRequestsPerDayIsQuotaResettingAfterTheHint() {
        // https://community.openai.com/t/daily-request-limit-erroneously-exceeded/1201052
        Classification c = call(reply(429).json("""
                {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on requests per day \
                (RPD): Limit 10000, Used 10000, Requested 1. Please try again in 8.64s.","type":"requests",\
                "param":null,"code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(Duration.ofMillis(8640), c.retryAfter());
        assertEquals(NOW.plusMillis(8640), c.resetAt());
    }

    @Test
    void openAiRequestLargerThanTheTpmLimitIsRejected() {
        Classification c = call(reply(429).json("""
                {"error":{"message":"Request too large for gpt-4o-mini in organization org-abc on tokens per min \
                (TPM): Limit 30000, Requested 52344. The input or output tokens must be reduced in order to run \
                successfully.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
        assertTrue(c.toOutcome() instanceof Outcome.Rejected);
    }

    @Test
    void openAiInvalidApiKeyIsAuthRefused() {
        Classification c = call(reply(401).json("""
                {"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error",\
                "param":null,"code":"invalid_api_key"}}"""));
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void openAiServerError500IsTransient() {
        Classification c = call(reply(500).json("""
                {"error":{"message":"The server had an error while processing your request. Sorry about that!",\
                "type":"server_error","param":null,"code":null}}"""));
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void openAiOverloaded503IsOverloaded() {
        Classification c = call(reply(503).header("retry-after", "2").json("""
                {"error":{"message":"The engine is currently overloaded, please try again later",\
                "type":"server_error","param":null,"code":null}}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertEquals(Duration.ofSeconds(2), c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void htmlBadGatewayFromAProxyIsTransient() {
        Classification c = call(reply(502).body("text/html",
                "<html><body><h1>502 Bad Gateway</h1></body></html>".getBytes()));
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
        assertNull(c.retryAfter());
        assertEquals(502, c.httpStatus());
    }

    @Test
    void openAiErrorChunkInside200StreamIsClassifiedByTheChunk() {
        // openai-java SseHandler.kt raises SseException for a chunk carrying "error"
        server.answer(reply(200).sse("""
                data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}

                data: {"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM). Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}

                """));
        SseException e = assertThrows(SseException.class, () -> {
            try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(params())) {
                stream.stream().forEach(chunk -> { });
            }
        });
        assertEquals(1, server.requests());
        Classification c = CLASSIFIER.classify(e).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(2), c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(200, c.httpStatus());
    }

    @Test
    void openAiReadTimeoutIsTransient() {
        OpenAIClient impatient = OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(server.url() + "/v1")
                .maxRetries(0).timeout(Duration.ofMillis(300)).build();
        try {
            server.answer(reply(200).delay(2000).json("{}"));
            OpenAIIoException e = assertThrows(OpenAIIoException.class,
                    () -> impatient.chat().completions().create(params()));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, c.failureClass());
            assertNull(c.retryAfter());
            assertNull(c.resetAt());
            assertEquals(0, c.httpStatus());
            assertEquals(new Outcome.Transient(c.reason(), e), CLASSIFIER.outcomeOf(e).orElseThrow());
        } finally {
            impatient.close();
        }
    }

    @Test
    void azureOpenAiThroughOpenAiJavaIsRecognisedAndUsesRetryAfterMs() {
        // https://learn.microsoft.com/azure/ai-services/openai/quotas-limits
        OpenAIClient azure = OpenAIOkHttpClient.builder()
                .baseUrl(server.url() + "/openai")
                .credential(AzureApiKeyCredential.create("azure-key"))
                .azureServiceVersion(AzureOpenAIServiceVersion.fromString("2024-10-21"))
                .azureUrlPathMode(AzureUrlPathMode.LEGACY)
                .maxRetries(0)
                .build();
        try {
            server.answer(reply(429).header("retry-after-ms", "6000").header("retry-after", "6")
                    .header("apim-request-id", "8f0c6b2e-1").json("""
                            {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under \
                            Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current \
                            OpenAI S0 pricing tier. Please retry after 6 seconds."}}"""));
            RateLimitException e = assertThrows(RateLimitException.class,
                    () -> azure.chat().completions().create(params()));
            assertEquals(1, server.requests());
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
            assertEquals(Provider.AZURE_OPENAI, c.provider());
            assertEquals(Duration.ofSeconds(6), c.retryAfter());
            assertNull(c.resetAt());
        } finally {
            azure.close();
        }
    }

    // ---- stated limits, resets, hints and rate-limit headers through openai-java --------------

    @Test
    void openAiTpm429ThroughTheSdkStatesTheTokenLimit() {
        // https://platform.openai.com/docs/guides/rate-limits#error-mitigation
        Classification c = call(reply(429)
                .header("x-ratelimit-limit-tokens", "30000").header("x-ratelimit-remaining-tokens", "0")
                .header("x-ratelimit-reset-tokens", "1.4s").header("x-ratelimit-remaining-requests", "499")
                .json("""
                        {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on tokens per \
                        min (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s.",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(30_000.0, c.tokenLimitPerMinute());
        assertEquals(TokenDimension.TOKENS, c.tokenDimension());
        assertNull(c.requestLimitPerSecond());
        assertEquals(Duration.ofMillis(1400), c.retryAfter());
    }

    @Test
    void openAiRequestLargerThanTheTpmLimitKeepsTheLimitItCanNeverFit() {
        Classification c = call(reply(429).json("""
                {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min \
                (TPM): Limit 30000, Used 10000, Requested 40000. Please try again in 20s.","type":"tokens",\
                "param":null,"code":"rate_limit_exceeded"}}"""));
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
        assertEquals(30_000.0, c.tokenLimitPerMinute());
        assertTrue(c.reason().contains("Requested 40000"), c.reason());
    }

    @Test
    void openAiQuotaWithAMonthLongRetryAfterResetsExactlyThen() {
        // a monthly budget: 29 days 13 h away survives as stated, no 7-day cut
        long seconds = Duration.ofDays(29).plusHours(13).toSeconds();
        Classification c = call(reply(429).header("retry-after", String.valueOf(seconds)).json("""
                {"error":{"message":"You exceeded your current quota, please check your plan and billing details.",\
                "type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(NOW.plusSeconds(seconds), c.resetAt());
        assertEquals(WaitReading.AS_STATED, c.waitReading());
        assertEquals(new Outcome.QuotaExhausted(NOW.plusSeconds(seconds), c.reason()), c.toOutcome());
    }

    @Test
    void aProviderHintNamesAzureWhenAProxyDroppedItsHeaders() {
        server.answer(reply(429).header("retry-after", "6").json("""
                {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure \
                OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing \
                tier. Please retry after 6 seconds."}}"""));
        RateLimitException e = assertThrows(RateLimitException.class, () -> client.chat().completions().create(params()));
        assertEquals(Provider.OPENAI, CLASSIFIER.classify(e).orElseThrow().provider(), "guessed from the headers");
        Classification c = CLASSIFIER.classify(Provider.AZURE_OPENAI, e).orElseThrow();
        assertEquals(Provider.AZURE_OPENAI, c.provider());
        assertEquals(TokenDimension.TOKENS, c.tokenDimension());
        assertEquals(Duration.ofSeconds(6), c.retryAfter());
        assertEquals(new Outcome.RateLimited(Duration.ofSeconds(6), c.reason()),
                CLASSIFIER.outcomeOf(Provider.AZURE_OPENAI, e).orElseThrow());
    }

    @Test
    void aTimeoutThroughTheNoResponseFormIsTransientForTheProviderNamed() {
        OpenAIClient impatient = OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(server.url() + "/v1")
                .maxRetries(0).timeout(Duration.ofMillis(300)).build();
        try {
            server.answer(reply(200).delay(2000).json("{}"));
            OpenAIIoException e = assertThrows(OpenAIIoException.class,
                    () -> impatient.chat().completions().create(params()));
            Classification c = CLASSIFIER.classifyNoResponse(Provider.AZURE_OPENAI, e).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, c.failureClass());
            assertEquals(Provider.AZURE_OPENAI, c.provider());
            assertEquals(0, c.httpStatus());
        } finally {
            impatient.close();
        }
    }

    @Test
    void rateLimitHeadersOfASuccessfulResponseAreReadThroughTheSdk() {
        // https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers
        server.answer(reply(200)
                .header("x-ratelimit-limit-requests", "500").header("x-ratelimit-remaining-requests", "499")
                .header("x-ratelimit-reset-requests", "120ms").header("x-ratelimit-limit-tokens", "30000")
                .header("x-ratelimit-remaining-tokens", "29100").header("x-ratelimit-reset-tokens", "1.8s")
                .json("""
                        {"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[\
                        {"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],\
                        "usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10}}"""));
        try (HttpResponseFor<ChatCompletion> r = client.chat().completions().withRawResponse().create(params())) {
            assertEquals("hi", r.parse().choices().get(0).message().content().orElseThrow());
            Map<String, List<String>> headers = OpenAiSdkAdapter.headers(r.headers());
            RateLimitHeaders limits = RateLimitHeaders.read(headers, NOW).orElseThrow();
            assertEquals(new RateLimitHeaders.Window(500L, 499L, NOW.plusMillis(120)), limits.requests());
            assertEquals(new RateLimitHeaders.Window(30_000L, 29_100L, NOW.plusMillis(1800)), limits.tokens());
        }
    }
}
