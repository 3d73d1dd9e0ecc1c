package dev.layover.core.provider;

import static dev.layover.core.provider.ReplayServer.reply;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.genai.Client;
import com.google.genai.ResponseStream;
import com.google.genai.errors.ApiException;
import com.google.genai.errors.GenAiIOException;
import com.google.genai.types.GenerateContentResponse;
import com.google.genai.types.HttpOptions;
import com.google.genai.types.HttpRetryOptions;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.PureTest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * google-genai 2.3.0 against a local server replaying the Gemini API's documented errors, with the
 * SDK's retries off: {@code HttpRetryOptions.attempts(1)} and no retryable status codes.
 *
 * <p>google-genai 2.x writes the error's {@code details} (QuotaFailure, RetryInfo, ErrorInfo) into
 * {@code ApiException.message()} after a "Details:" line; the adapter reads them back, so a per-day
 * quota through the SDK is a quota, and RetryInfo is the wait. An error chunk inside a stream keeps
 * only its message and status.
 */
@PureTest
class GenAiSdkAdapterTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();
    static final String MODEL = "gemini-2.5-flash";

    static ReplayServer server;
    static Client client;

    @BeforeAll
    static void start() throws Exception {
        server = new ReplayServer();
        client = client(HttpRetryOptions.builder().attempts(1).httpStatusCodes(List.of()).build(), 5000);
    }

    static Client client(HttpRetryOptions retry, int timeoutMillis) {
        return Client.builder()
                .apiKey("test-key")
                .httpOptions(HttpOptions.builder()
                        .baseUrl(server.url())
                        .timeout(timeoutMillis)
                        .retryOptions(retry)
                        .build())
                .build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    private Classification call(ReplayServer.Reply r) {
        server.answer(r);
        ApiException e = assertThrows(ApiException.class, () -> client.models.generateContent(MODEL, "hi", null));
        assertEquals(1, server.requests(), "the SDK must not retry");
        return CLASSIFIER.classify(e).orElseThrow();
    }

    @Test
    void geminiPerMinuteQuotaThroughSdkIsRateLimitedWaitingForRetryInfo() {
        // https://ai.google.dev/gemini-api/docs/troubleshooting (429 RESOURCE_EXHAUSTED); RetryInfo
        // comes first among the waits, before the message's "Please retry in ..."
        Classification c = call(reply(429).json("""
                {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                billing details. * Quota exceeded for metric: \
                generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 15, model: \
                gemini-2.5-flash Please retry in 10.689924287s.","status":"RESOURCE_EXHAUSTED","details":[\
                {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                "generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":\
                "GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"15"}]},{"@type":\
                "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"10s"}]}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(10), c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(15 / 60.0, c.requestLimitPerSecond(), 1e-9, "the quotaValue of a per-minute request quota");
        assertNull(c.tokenDimension());
        assertEquals(Provider.GEMINI, c.provider());
        assertEquals(429, c.httpStatus());
        assertTrue(c.reason().startsWith("RESOURCE_EXHAUSTED: You exceeded your current quota"), c.reason());
        assertFalse(c.reason().contains("Details:"), c.reason());
    }

    @Test
    void geminiPerDayQuotaThroughSdkIsQuotaUntilPacificMidnight() {
        // https://ai.google.dev/gemini-api/docs/rate-limits : RPD resets at midnight Pacific
        Classification c = call(reply(429).json("""
                {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                billing details. For more information on this error, head to: \
                https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED",\
                "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[\
                {"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests",\
                "quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":\
                {"location":"global","model":"gemini-2.5-flash"},"quotaValue":"250"}]},\
                {"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about \
                Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},\
                {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"22s"}]}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(Duration.ofSeconds(22), c.retryAfter());
        assertEquals(Instant.parse("2026-05-29T07:00:00Z"), c.resetAt());
        assertTrue(c.toOutcome() instanceof Outcome.QuotaExhausted);
    }

    @Test
    void geminiInputTokenQuotaThroughSdkStatesTheTokenLimit() {
        // quota shape as returned by the API, https://github.com/google-gemini/gemini-cli-action/issues/36
        Classification c = call(reply(429).json("""
                {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                billing details. For more information on this error, head to: \
                https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED","details":[\
                {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count","quotaId":\
                "GenerateContentInputTokensPerModelPerMinute-FreeTier","quotaDimensions":{"location":"global",\
                "model":"gemini-2.5-pro"},"quotaValue":"250000"}]},{"@type":"type.googleapis.com/google.rpc.Help",\
                "links":[{"description":"Google developers documentation.","url":\
                "https://ai.google.dev/gemini-api/docs/rate-limits."}]},{"@type":\
                "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"59s"}]}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(59), c.retryAfter());
        assertEquals(250_000.0, c.tokenLimitPerMinute());
        assertEquals(TokenDimension.INPUT_TOKENS, c.tokenDimension());
        assertNull(c.requestLimitPerSecond(), "a token limit refused: no request pace");
    }

    @Test
    void geminiErrorInfoReasonThroughSdkIsRead() {
        // ErrorInfo API_KEY_EXPIRED with a message that names no key problem in words
        Classification c = call(reply(400).json("""
                {"error":{"code":400,"message":"Request could not be served.","status":"INVALID_ARGUMENT",\
                "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_EXPIRED",\
                "domain":"googleapis.com"}]}}"""));
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
    }

    @Test
    void aProviderHintLabelsTheSdkException() {
        server.answer(reply(503).json("""
                {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"""));
        ApiException e = assertThrows(ApiException.class, () -> client.models.generateContent(MODEL, "hi", null));
        assertEquals(Provider.GEMINI, CLASSIFIER.classify(e).orElseThrow().provider());
        Classification hinted = CLASSIFIER.classify(Provider.UNKNOWN, e).orElseThrow();
        assertEquals(Provider.GEMINI, hinted.provider(), "UNKNOWN is no hint");
        assertEquals(FailureClass.OVERLOADED, hinted.failureClass());
    }

    @Test
    void geminiDepletedPrepaymentThroughSdkIsQuota() {
        Classification c = call(reply(429).json("""
                {"error":{"code":429,"message":"Your prepayment credits are depleted. Please go to AI Studio at \
                https://ai.studio/projects to manage your project and billing.","status":"RESOURCE_EXHAUSTED"}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void geminiInvalidApiKeyThroughSdkIsAuthRefused() {
        Classification c = call(reply(400).json("""
                {"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":\
                "INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":\
                "API_KEY_INVALID","domain":"googleapis.com"}]}}"""));
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void geminiInvalidArgumentThroughSdkIsBadRequest() {
        Classification c = call(reply(400).json("""
                {"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}"""));
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
    }

    @Test
    void geminiUnavailableThroughSdkIsOverloaded() {
        Classification c = call(reply(503).json("""
                {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertNull(c.retryAfter());
    }

    @Test
    void geminiInternal500SayingOverloadedThroughSdkIsOverloaded() {
        // overload said in words under another status: the words decide, not INTERNAL
        Classification c = call(reply(500).json("""
                {"error":{"code":500,"message":"The model is overloaded. Please try again later.","status":"INTERNAL"}}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertEquals(500, c.httpStatus());
    }

    @Test
    void geminiBillingDisabledThroughSdkIsQuotaNotAuth() {
        // PERMISSION_DENIED with ErrorInfo BILLING_DISABLED: money, not a refused key
        Classification c = call(reply(403).json("""
                {"error":{"code":403,"message":"This API method requires billing to be enabled.","status":\
                "PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":\
                "BILLING_DISABLED","domain":"googleapis.com"}]}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
    }

    @Test
    void geminiInternalThroughSdkIsTransient() {
        Classification c = call(reply(500).json("""
                {"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}"""));
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
    }

    @Test
    void geminiErrorChunkInsideTheStreamIsClassifiedByItsCode() {
        server.answer(reply(200).sse("""
                data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}]}

                data: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}

                """));
        ApiException e = assertThrows(ApiException.class, () -> {
            try (ResponseStream<GenerateContentResponse> s = client.models.generateContentStream(MODEL, "hi", null)) {
                for (GenerateContentResponse chunk : s) {
                    chunk.text();
                }
            }
        });
        assertEquals(1, server.requests());
        Classification c = CLASSIFIER.classify(e).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void anErrorChunkInsideTheStreamLosesItsDetailsInTheSdk() {
        // ApiException.throwFromErrorNode keeps only the chunk's message and status: a per-day quota
        // in a stream chunk reads as a rate limit through the SDK (the HTTP-level vector sees it)
        server.answer(reply(200).sse("""
                data: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"22s"}]}}

                """));
        ApiException e = assertThrows(ApiException.class, () -> {
            try (ResponseStream<GenerateContentResponse> s = client.models.generateContentStream(MODEL, "hi", null)) {
                for (GenerateContentResponse chunk : s) {
                    chunk.text();
                }
            }
        });
        assertFalse(e.message().contains("Details:"), e.message());
        Classification c = CLASSIFIER.classify(e).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertNull(c.retryAfter());
    }

    @Test
    void geminiTimeoutIsTransient() {
        Client impatient = client(HttpRetryOptions.builder().attempts(1).httpStatusCodes(List.of()).build(), 300);
        try {
            server.answer(reply(200).delay(2000).json("{}"));
            GenAiIOException e = assertThrows(GenAiIOException.class,
                    () -> impatient.models.generateContent(MODEL, "hi", null));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, c.failureClass());
            assertEquals(0, c.httpStatus());
            assertNull(c.retryAfter());
        } finally {
            impatient.close();
        }
    }

    @Test
    void genAiAttemptsOneAloneStillSleepsAfterTheOnlyAttempt() {
        // RetryInterceptor sleeps after a retryable status even on the last attempt; with jitter 0 the
        // sleep is exactly initialDelay. Hence docs/sdk-retries.md also empties httpStatusCodes.
        Client sleepy = client(HttpRetryOptions.builder().attempts(1).initialDelay(1.0).jitter(0.0).build(), 5000);
        try {
            server.answer(reply(429).json("{\"error\":{\"code\":429,\"message\":\"slow down\",\"status\":\"RESOURCE_EXHAUSTED\"}}"));
            long start = System.nanoTime();
            assertThrows(ApiException.class, () -> sleepy.models.generateContent(MODEL, "hi", null));
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertEquals(1, server.requests());
            assertTrue(millis >= 900, "slept " + millis + " ms");
        } finally {
            sleepy.close();
        }
    }
}
