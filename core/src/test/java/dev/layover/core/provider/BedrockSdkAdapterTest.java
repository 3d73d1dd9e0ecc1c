package dev.layover.core.provider;

import static dev.layover.core.provider.ReplayServer.reply;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.core.exception.ApiCallAttemptTimeoutException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.bedrockruntime.BedrockRuntimeAsyncClient;
import software.amazon.awssdk.services.bedrockruntime.BedrockRuntimeClient;
import software.amazon.awssdk.services.bedrockruntime.model.BedrockRuntimeException;
import software.amazon.awssdk.services.bedrockruntime.model.ContentBlock;
import software.amazon.awssdk.services.bedrockruntime.model.ConversationRole;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseRequest;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelRequest;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelWithResponseStreamRequest;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelWithResponseStreamResponseHandler;
import software.amazon.awssdk.services.bedrockruntime.model.Message;
import software.amazon.awssdk.services.bedrockruntime.model.ModelNotReadyException;
import software.amazon.awssdk.services.bedrockruntime.model.ServiceQuotaExceededException;
import software.amazon.awssdk.services.bedrockruntime.model.ThrottlingException;

/**
 * AWS SDK v2 bedrockruntime 2.57.8 against a local server replaying the InvokeModel errors
 * documented in the Bedrock API reference, with retries off ({@code AwsRetryStrategy.doNotRetry()}),
 * static fake credentials and {@code endpointOverride}. {@code AwsServiceException} exposes the
 * status, the error code and message, and the response headers ({@code awsErrorDetails()}); the
 * adapter reads all of them.
 */
@PureTest
class BedrockSdkAdapterTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();
    static final String MODEL = "anthropic.claude-3-haiku-20240307-v1:0";
    static final StaticCredentialsProvider CREDENTIALS =
            StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG"));

    static ReplayServer server;
    static BedrockRuntimeClient client;

    @BeforeAll
    static void start() throws Exception {
        server = new ReplayServer();
        client = BedrockRuntimeClient.builder()
                .region(Region.US_EAST_1)
                .credentialsProvider(CREDENTIALS)
                .endpointOverride(URI.create(server.url()))
                .httpClient(UrlConnectionHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())
                        .apiCallAttemptTimeout(Duration.ofSeconds(5)))
                .build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    static InvokeModelRequest request() {
        return InvokeModelRequest.builder().modelId(MODEL)
                .contentType("application/json")
                .body(SdkBytes.fromUtf8String("{\"anthropic_version\":\"bedrock-2023-05-31\",\"max_tokens\":16,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                .build();
    }

    /** An InvokeModel error as the service sends it: status, x-amzn-ErrorType and a JSON message. */
    static ReplayServer.Reply awsError(int status, String type, String message) {
        return reply(status)
                .header("x-amzn-RequestId", "5e4f9a3c-1")
                .header("x-amzn-ErrorType", type + ":http://internal.amazon.com/coral/com.amazon.bedrock/")
                .json("{\"message\":\"" + message + "\"}");
    }

    private <T extends Throwable> Classification call(ReplayServer.Reply r, Class<T> expected) {
        server.answer(r);
        T e = assertThrows(expected, () -> client.invokeModel(request()));
        assertEquals(1, server.requests(), "the SDK must not retry");
        return CLASSIFIER.classify(e).orElseThrow();
    }

    @Test
    void bedrockThrottlingExceptionIsRateLimited() {
        Classification c = call(awsError(429, "ThrottlingException",
                "Too many requests, please wait before trying again."), ThrottlingException.class);
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
        assertEquals(Provider.BEDROCK, c.provider());
        assertEquals(429, c.httpStatus());
    }

    @Test
    void bedrockInputTooLongIsRejected() {
        // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html: ValidationException
        Classification c = call(awsError(400, "ValidationException", "Input is too long for requested model."),
                software.amazon.awssdk.services.bedrockruntime.model.ValidationException.class);
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
    }

    @Test
    void bedrockThrottlingRetryAfterIsReadFromTheSdkResponse() {
        Classification c = call(awsError(429, "ThrottlingException", "Too many requests, please wait before trying again.")
                .header("Retry-After", "7"), ThrottlingException.class);
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(7), c.retryAfter());
    }

    @Test
    void bedrockThrottlingPerDayIsQuota() {
        Classification c = call(awsError(429, "ThrottlingException",
                "Too many tokens per day, please wait before trying again."), ThrottlingException.class);
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void bedrockServiceQuotaExceeded400IsQuota() {
        Classification c = call(awsError(400, "ServiceQuotaExceededException",
                "Your request exceeds the service quota for your account. You can resubmit your request later."),
                ServiceQuotaExceededException.class);
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertNull(c.retryAfter());
        assertNull(c.resetAt());
    }

    @Test
    void bedrockModelNotReadyIsOverloaded() {
        Classification c = call(awsError(429, "ModelNotReadyException",
                "Model is not ready to serve inference requests."), ModelNotReadyException.class);
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
        assertNull(c.retryAfter());
    }

    @Test
    void bedrockServiceUnavailableIsOverloaded() {
        Classification c = call(awsError(503, "ServiceUnavailableException", "Bedrock is unable to process your request."),
                BedrockRuntimeException.class);
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
    }

    @Test
    void bedrockInternalServerExceptionIsTransient() {
        Classification c = call(awsError(500, "InternalServerException", "An internal server error occurred."),
                BedrockRuntimeException.class);
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
    }

    @Test
    void bedrockModelTimeoutIsTransient() {
        Classification c = call(awsError(408, "ModelTimeoutException", "Model has timed out in processing the request."),
                BedrockRuntimeException.class);
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
    }

    @Test
    void bedrockAccessDeniedIsAuthRefused() {
        Classification c = call(awsError(403, "AccessDeniedException",
                "You don't have access to the model with the specified model ID."), BedrockRuntimeException.class);
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
    }

    @Test
    void bedrockUnrecognizedClientIsAuthRefused() {
        // not modeled by the SDK: a plain BedrockRuntimeException whose error code names it
        Classification c = call(awsError(403, "UnrecognizedClientException",
                "The security token included in the request is invalid."), BedrockRuntimeException.class);
        assertEquals(FailureClass.AUTH_REFUSED, c.failureClass());
    }

    @Test
    void bedrockValidationExceptionIsBadRequest() {
        Classification c = call(awsError(400, "ValidationException", "Malformed input request, please reformat your input and try again."),
                BedrockRuntimeException.class);
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
    }

    @Test
    void bedrockAttemptTimeoutIsTransient() {
        BedrockRuntimeClient impatient = BedrockRuntimeClient.builder()
                .region(Region.US_EAST_1).credentialsProvider(CREDENTIALS)
                .endpointOverride(URI.create(server.url()))
                .httpClient(UrlConnectionHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())
                        .apiCallAttemptTimeout(Duration.ofMillis(300)))
                .build();
        try {
            server.answer(reply(200).delay(2000).json("{}"));
            ApiCallAttemptTimeoutException e = assertThrows(ApiCallAttemptTimeoutException.class,
                    () -> impatient.invokeModel(request()));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, c.failureClass());
            assertEquals(0, c.httpStatus());
        } finally {
            impatient.close();
        }
    }

    @Test
    void bedrockRefusedConnectionIsTransientThroughItsCause() throws Exception {
        String closed;
        try (ReplayServer gone = new ReplayServer()) {
            closed = gone.url();
        }
        BedrockRuntimeClient nowhere = BedrockRuntimeClient.builder()
                .region(Region.US_EAST_1).credentialsProvider(CREDENTIALS)
                .endpointOverride(URI.create(closed))
                .httpClient(UrlConnectionHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
        try {
            SdkClientException e = assertThrows(SdkClientException.class, () -> nowhere.invokeModel(request()));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, c.failureClass());
        } finally {
            nowhere.close();
        }
    }

    @Test
    void bedrockStreamExceptionEventIsClassifiedByItsType() throws Exception {
        // InvokeModelWithResponseStream: a throttlingException message in the event stream of a 200
        ByteArrayOutputStream frames = new ByteArrayOutputStream();
        frames.write(AnthropicSdkAdapterTest.exceptionFrame("throttlingException",
                "{\"message\":\"Too many tokens per day, please wait before trying again.\"}"));
        server.answer(reply(200).header("x-amzn-RequestId", "5e4f9a3c-2")
                .header("x-amzn-bedrock-content-type", "application/json")
                .body("application/vnd.amazon.eventstream", frames.toByteArray()));
        BedrockRuntimeAsyncClient async = BedrockRuntimeAsyncClient.builder()
                .region(Region.US_EAST_1).credentialsProvider(CREDENTIALS)
                .endpointOverride(URI.create(server.url()))
                .httpClient(NettyNioAsyncHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
        try {
            InvokeModelWithResponseStreamRequest req = InvokeModelWithResponseStreamRequest.builder()
                    .modelId(MODEL).contentType("application/json")
                    .body(SdkBytes.fromString("{}", StandardCharsets.UTF_8)).build();
            CompletionException e = assertThrows(CompletionException.class, () -> async.invokeModelWithResponseStream(
                    req, InvokeModelWithResponseStreamResponseHandler.builder()
                            .subscriber(InvokeModelWithResponseStreamResponseHandler.Visitor.builder().build())
                            .build()).join());
            assertEquals(1, server.requests());
            assertTrue(e.getCause() instanceof ThrottlingException, String.valueOf(e.getCause()));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
            assertNull(c.retryAfter());
            assertNull(c.resetAt());
            assertEquals(Provider.BEDROCK, c.provider());
        } finally {
            async.close();
        }
    }

    // ---- stated limits and hints through the AWS SDK -----------------------------------------

    @Test
    void bedrockTooManyTokensNamesATokenLimitWithoutANumber() {
        Classification c = call(awsError(429, "ThrottlingException", "Too many tokens, please wait before trying again."),
                ThrottlingException.class);
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(TokenDimension.TOKENS, c.tokenDimension());
        assertNull(c.tokenLimitPerMinute(), "Bedrock states no number");
        assertNull(c.requestLimitPerSecond());
    }

    @Test
    void bedrockConverseThrottlingReadsXAmzRetryAfter() {
        // Converse errors: the same ThrottlingException; x-amz-retry-after (ms) as AWS SDK v2 reads it
        server.answer(awsError(429, "ThrottlingException", "Too many requests, please wait before trying again.")
                .header("x-amz-retry-after", "2500"));
        ThrottlingException e = assertThrows(ThrottlingException.class, () -> client.converse(ConverseRequest.builder()
                .modelId(MODEL).messages(Message.builder().role(ConversationRole.USER)
                        .content(ContentBlock.fromText("hi")).build()).build()));
        assertEquals(1, server.requests());
        Classification c = CLASSIFIER.classify(e).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofMillis(2500), c.retryAfter());
        assertNull(c.tokenDimension());
    }

    @Test
    void aProviderHintLabelsAnthropicModelsOnBedrock() {
        Classification c = CLASSIFIER.classify(Provider.ANTHROPIC_BEDROCK, assertThrows(ThrottlingException.class, () -> {
            server.answer(awsError(429, "ThrottlingException", "Too many requests, please wait before trying again."));
            client.invokeModel(request());
        })).orElseThrow();
        assertEquals(Provider.ANTHROPIC_BEDROCK, c.provider());
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
    }
}
