package dev.layover.core.provider;

import static dev.layover.core.provider.ReplayServer.reply;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.anthropic.bedrock.backends.BedrockBackend;
import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.http.HttpResponseFor;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.errors.AnthropicIoException;
import com.anthropic.errors.SseException;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.Model;
import com.anthropic.models.messages.RawMessageStreamEvent;
import dev.layover.testing.PureTest;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.regions.Region;
import software.amazon.eventstream.HeaderValue;
import software.amazon.eventstream.Message;

/**
 * anthropic-java 3.14.0 (and its Bedrock backend) against a local server replaying Anthropic's
 * documented error responses, with the SDK's own retries off ({@code maxRetries(0)}).
 * {@code AnthropicServiceException} exposes status, headers and the whole error body (its typed
 * {@code errorType()}, {@code errorCode()}, {@code errorDetails()} are views of that body), and the
 * adapter reads all of it.
 */
@PureTest
class AnthropicSdkAdapterTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    static ReplayServer server;
    static AnthropicClient client;
    static AnthropicClient bedrock;

    @BeforeAll
    static void start() throws Exception {
        server = new ReplayServer();
        client = AnthropicOkHttpClient.builder()
                .apiKey("test-key")
                .baseUrl(server.url())
                .maxRetries(0)
                .timeout(Duration.ofSeconds(5))
                .build();
        bedrock = AnthropicOkHttpClient.builder()
                .backend(BedrockBackend.builder()
                        .awsCredentials(AwsBasicCredentials.create("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG"))
                        .region(Region.US_EAST_1)
                        .baseUrl(server.url())
                        .build())
                .maxRetries(0)
                .timeout(Duration.ofSeconds(5))
                .build();
    }

    @AfterAll
    static void stop() {
        client.close();
        bedrock.close();
        server.close();
    }

    static MessageCreateParams params() {
        return MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5).maxTokens(16).addUserMessage("hi").build();
    }

    private Classification call(AnthropicClient c, ReplayServer.Reply r) {
        server.answer(r);
        RuntimeException e = assertThrows(RuntimeException.class, () -> c.messages().create(params()));
        assertEquals(1, server.requests(), "the SDK must not retry");
        return CLASSIFIER.classify(e).orElseThrow();
    }

    private Classification stream(AnthropicClient c, ReplayServer.Reply r) {
        server.answer(r);
        RuntimeException e = assertThrows(RuntimeException.class, () -> {
            try (StreamResponse<RawMessageStreamEvent> s = c.messages().createStreaming(params())) {
                s.stream().forEach(event -> { });
            }
        });
        assertEquals(1, server.requests(), "the SDK must not retry");
        return CLASSIFIER.classify(e).orElseThrow();
    }

    @Test
    void anthropicRateLimitErrorUsesRetryAfter() {
        // https://docs.anthropic.com/en/api/rate-limits
        Classification c = call(client, reply(429).header("retry-after", "20")
                .header("anthropic-ratelimit-requests-remaining", "0")
                .header("anthropic-ratelimit-requests-reset", "2026-05-28T10:16:30Z")
                .json("""
                        {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has \
                        exceeded your per-minute rate limit"},"request_id":"req_011"}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(20), c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(Provider.ANTHROPIC, c.provider());
    }

    @Test
    void anthropicResetHeaderOfTheExhaustedLimitIsTheWaitWithoutRetryAfter() {
        Classification c = call(client, reply(429)
                .header("anthropic-ratelimit-requests-remaining", "12")
                .header("anthropic-ratelimit-requests-reset", "2026-05-28T10:15:31Z")
                .header("anthropic-ratelimit-output-tokens-remaining", "0")
                .header("anthropic-ratelimit-output-tokens-reset", "2026-05-28T10:16:00Z")
                .json("""
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the \
                        rate limit for your organization of 8,000 output tokens per minute."}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(30), c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void anthropicEnforcedSpendLimitIsQuotaUntilTheFirstOfNextMonth() {
        // https://docs.anthropic.com/en/api/errors ; anthropic-java EnforcedSpendLimitReachedException
        Classification c = call(client, reply(429).json("""
                {"type":"error","error":{"type":"rate_limit_error","message":"Your organization has reached the \
                monthly spend limit of its usage tier.","details":{"error_code":"enforced_spend_limit_reached"}}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertEquals(Instant.parse("2026-06-01T00:00:00Z"), c.resetAt());
    }

    @Test
    void anthropicCreditBalanceTooLow400IsQuota() {
        Classification c = call(client, reply(400).json("""
                {"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low \
                to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void anthropicWorkspaceUsageLimitIsQuotaUntilTheRegainDate() {
        // https://github.com/anthropics/claude-code/issues/55998
        Classification c = call(client, reply(400).json("""
                {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified \
                workspace API usage limits. You will regain access on 2026-06-01 at 00:00 UTC."}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertEquals(Instant.parse("2026-06-01T00:00:00Z"), c.resetAt());
    }

    @Test
    void anthropicOverloaded529IsOverloaded() {
        Classification c = call(client, reply(529).json("""
                {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(529, c.httpStatus());
    }

    @Test
    void anthropicApiError500SayingOverloadedIsOverloaded() {
        // anthropics/claude-code#8118: a 500 api_error whose message is "Overloaded"
        Classification c = call(client, reply(500).json("""
                {"type":"error","error":{"type":"api_error","message":"Overloaded"},"request_id":null}"""));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertEquals(500, c.httpStatus());
        assertEquals(Provider.ANTHROPIC, c.provider());
    }

    @Test
    void anthropicAuthenticationErrorIsAuthRefused() {
        Classification c = call(client, reply(401).json("""
                {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"""));
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void plainTextGatewayErrorIsTransient() {
        // anthropic-java ErrorHandler.kt keeps a non-JSON body as a string
        Classification c = call(client, reply(502).body("text/plain", "upstream connect error".getBytes()));
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
        assertNull(c.retryAfter());
    }

    @Test
    void anthropicOverloadedErrorEventInside200StreamIsOverloaded() {
        // https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events
        Classification c = stream(client, reply(200).sse("""
                event: message_start
                data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}

                event: ping
                data: {"type": "ping"}

                event: error
                data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

                """));
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(200, c.httpStatus());
    }

    @Test
    void anthropicReadTimeoutIsTransient() {
        AnthropicClient impatient = AnthropicOkHttpClient.builder().apiKey("k").baseUrl(server.url())
                .maxRetries(0).timeout(Duration.ofMillis(300)).build();
        try {
            server.answer(reply(200).delay(2000).json("{}"));
            AnthropicIoException e = assertThrows(AnthropicIoException.class,
                    () -> impatient.messages().create(params()));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, c.failureClass());
            assertNull(c.retryAfter());
            assertEquals(0, c.httpStatus());
        } finally {
            impatient.close();
        }
    }

    // ---- stated limits, resets, hints and rate-limit headers through anthropic-java ---------

    @Test
    void anthropicInputTokenLimitThroughTheSdkIsStated() {
        // verbatim in https://github.com/bhouston/mycoder/issues/62
        Classification c = call(client, reply(429).header("retry-after", "12")
                .header("anthropic-ratelimit-input-tokens-limit", "40000")
                .header("anthropic-ratelimit-input-tokens-remaining", "0")
                .header("anthropic-ratelimit-input-tokens-reset", "2026-05-28T10:15:42Z")
                .json("""
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the \
                        rate limit for your organization (d3f27ff7-9afe-4ee2-9645-76ecfc73c2b7) of 40,000 input \
                        tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits."}}"""));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(40_000.0, c.tokenLimitPerMinute());
        assertEquals(TokenDimension.INPUT_TOKENS, c.tokenDimension());
        assertEquals(Duration.ofSeconds(12), c.retryAfter());
        assertNull(c.requestLimitPerSecond());
    }

    @Test
    void anthropicOutputTokenHeaderThroughTheSdkStatesTheLimit() {
        Classification c = call(client, reply(429)
                .header("anthropic-ratelimit-output-tokens-limit", "8000")
                .header("anthropic-ratelimit-output-tokens-remaining", "0")
                .header("anthropic-ratelimit-output-tokens-reset", "2026-05-28T10:16:00Z")
                .json("""
                        {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}"""));
        assertEquals(8_000.0, c.tokenLimitPerMinute());
        assertEquals(TokenDimension.OUTPUT_TOKENS, c.tokenDimension());
        assertEquals(Duration.ofSeconds(30), c.retryAfter());
    }

    @Test
    void anthropicRegainDateTwoMonthsAwaySurvivesThroughTheSdk() {
        // https://github.com/anthropics/claude-code/issues/55998 ; no 7-day cut any more
        Classification c = call(client, reply(400).json("""
                {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified \
                workspace API usage limits. You will regain access on 2026-08-01 at 00:00 UTC."}}"""));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(Instant.parse("2026-08-01T00:00:00Z"), c.resetAt());
        assertEquals(WaitReading.AS_STATED, c.waitReading());
    }

    @Test
    void aProviderHintOverridesTheBackendGuess() {
        Classification c;
        server.answer(reply(529).json("""
                {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"""));
        RuntimeException e = assertThrows(RuntimeException.class, () -> client.messages().create(params()));
        c = CLASSIFIER.classify(Provider.ANTHROPIC_BEDROCK, e).orElseThrow();
        assertEquals(Provider.ANTHROPIC_BEDROCK, c.provider());
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
    }

    @Test
    void rateLimitHeadersOfASuccessfulResponseAreReadThroughTheSdk() {
        // https://docs.anthropic.com/en/api/rate-limits#response-headers
        server.answer(reply(200)
                .header("anthropic-ratelimit-requests-limit", "50").header("anthropic-ratelimit-requests-remaining", "49")
                .header("anthropic-ratelimit-requests-reset", "2026-05-28T10:15:31Z")
                .header("anthropic-ratelimit-input-tokens-limit", "40000")
                .header("anthropic-ratelimit-input-tokens-remaining", "39000")
                .header("anthropic-ratelimit-input-tokens-reset", "2026-05-28T10:15:32Z")
                .header("anthropic-ratelimit-output-tokens-limit", "8000")
                .header("anthropic-ratelimit-output-tokens-remaining", "8000")
                .header("anthropic-ratelimit-output-tokens-reset", "2026-05-28T10:15:30Z")
                .json("""
                        {"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[\
                        {"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":\
                        {"input_tokens":8,"output_tokens":2,"cache_read_input_tokens":0,\
                        "cache_creation_input_tokens":0}}"""));
        try (HttpResponseFor<com.anthropic.models.messages.Message> r = client.messages().withRawResponse().create(params())) {
            assertEquals(8, r.parse().usage().inputTokens());
            Map<String, List<String>> headers = new LinkedHashMap<>();
            for (String name : r.headers().names()) {
                headers.put(name, r.headers().values(name));
            }
            RateLimitHeaders limits = RateLimitHeaders.read(headers, NOW).orElseThrow();
            assertEquals(new RateLimitHeaders.Window(50L, 49L, Instant.parse("2026-05-28T10:15:31Z")), limits.requests());
            assertEquals(new RateLimitHeaders.Window(40_000L, 39_000L, Instant.parse("2026-05-28T10:15:32Z")),
                    limits.inputTokens());
            assertEquals(new RateLimitHeaders.Window(8_000L, 8_000L, NOW), limits.outputTokens());
            assertNull(limits.tokens());
        }
    }

    // ---- Anthropic on Bedrock, through anthropic-java-bedrock's BedrockBackend --------------

    @Test
    void anthropicOnBedrockTokensPerDayThrottlingIsQuota() {
        // InvokeModel errors: ThrottlingException 429 with x-amzn-ErrorType; message from
        // https://github.com/Ivy-Interactive/Ivy-Tendril/issues/1756
        Classification c = call(bedrock, reply(429)
                .header("x-amzn-RequestId", "0b5c6f1e-1")
                .header("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
                .json("{\"message\":\"Too many tokens per day, please wait before trying again.\"}"));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(Provider.ANTHROPIC_BEDROCK, c.provider());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void anthropicOnBedrockThrottlingIsRateLimited() {
        Classification c = call(bedrock, reply(429)
                .header("x-amzn-RequestId", "0b5c6f1e-2")
                .header("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
                .json("{\"message\":\"Too many tokens, please wait before trying again.\"}"));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Provider.ANTHROPIC_BEDROCK, c.provider());
        assertNull(c.retryAfter());
    }

    @Test
    void anthropicOnBedrockServiceQuotaExceeded400IsQuota() {
        Classification c = call(bedrock, reply(400)
                .header("x-amzn-RequestId", "0b5c6f1e-3")
                .header("x-amzn-ErrorType", "ServiceQuotaExceededException:http://internal.amazon.com/coral/com.amazon.bedrock/")
                .json("{\"message\":\"Your request exceeds the service quota for your account. You can resubmit your request later.\"}"));
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void anthropicOnBedrockStreamExceptionFrameIsRateLimited() throws Exception {
        // InvokeModelWithResponseStream: an event-stream "exception" message mid-stream;
        // BedrockBackend.kt turns it into an SSE error event that the SDK raises
        ByteArrayOutputStream frames = new ByteArrayOutputStream();
        String start = "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
                + "\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":null,"
                + "\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}";
        frames.write(eventFrame("chunk", "{\"bytes\":\"" + Base64.getEncoder().encodeToString(
                start.getBytes(StandardCharsets.UTF_8)) + "\"}"));
        frames.write(exceptionFrame("throttlingException",
                "{\"message\":\"Too many tokens, please wait before trying again.\"}"));
        Classification c = stream(bedrock, reply(200)
                .header("x-amzn-RequestId", "0b5c6f1e-4")
                .header("x-amzn-bedrock-content-type", "application/json")
                .body("application/vnd.amazon.eventstream", frames.toByteArray()));
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Provider.ANTHROPIC_BEDROCK, c.provider());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    static byte[] eventFrame(String eventType, String payload) {
        Map<String, HeaderValue> h = new LinkedHashMap<>();
        h.put(":message-type", HeaderValue.fromString("event"));
        h.put(":event-type", HeaderValue.fromString(eventType));
        h.put(":content-type", HeaderValue.fromString("application/json"));
        return encode(h, payload);
    }

    static byte[] exceptionFrame(String exceptionType, String payload) {
        Map<String, HeaderValue> h = new LinkedHashMap<>();
        h.put(":message-type", HeaderValue.fromString("exception"));
        h.put(":exception-type", HeaderValue.fromString(exceptionType));
        h.put(":content-type", HeaderValue.fromString("application/json"));
        return encode(h, payload);
    }

    private static byte[] encode(Map<String, HeaderValue> headers, String payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new Message(headers, payload.getBytes(StandardCharsets.UTF_8)).encode(out);
        return out.toByteArray();
    }
}
