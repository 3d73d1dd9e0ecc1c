package dev.layover.core.provider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.Model;
import com.google.genai.Client;
import com.google.genai.errors.ApiException;
import com.google.genai.types.GenerateContentConfig;
import com.google.genai.types.GenerateContentResponse;
import com.google.genai.types.GenerateContentResponseUsageMetadata;
import com.google.genai.types.HttpOptions;
import com.google.genai.types.HttpRetryOptions;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.HttpResponseFor;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.CompletionUsage;
import dev.layover.testing.PureTest;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.FakeProvider.Dimension;
import dev.layover.testing.provider.Faults;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.bedrockruntime.BedrockRuntimeClient;
import software.amazon.awssdk.services.bedrockruntime.model.ContentBlock;
import software.amazon.awssdk.services.bedrockruntime.model.ConversationRole;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseRequest;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseResponse;
import software.amazon.awssdk.services.bedrockruntime.model.InferenceConfiguration;
import software.amazon.awssdk.services.bedrockruntime.model.Message;
import software.amazon.awssdk.services.bedrockruntime.model.ThrottlingException;

/**
 * The fake provider through the four real SDKs, retries off: each reads the fake's usage from its
 * own response objects, and each SDK's exception for the fake's token-limit 429 is classified with
 * the limit the fake stated. The fake's clock stands still, so its buckets never refill.
 */
@PureTest
class FakeProviderSdkTest {

    static final Instant NOW = Instant.parse("2026-11-29T12:00:00Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    private final FakeProvider fake = FakeProvider.start(Clock.fixed(NOW, ZoneOffset.UTC));

    @AfterEach
    void close() {
        fake.close();
    }

    @Test
    void openAiJavaReadsTheUsageAndItsTokenLimitIsStated() {
        FakeProvider.Endpoint ep = fake.primary().tokenLimitPerMinute(200).outputShare(0.2, 1.0);
        OpenAIClient client = OpenAIOkHttpClient.builder().apiKey("sk-fake").baseUrl(ep.base() + "/v1")
                .maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        try {
            ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model("gpt-4o-mini")
                    .addUserMessage("u".repeat(200)).maxCompletionTokens(100).build();
            try (HttpResponseFor<ChatCompletion> r = client.chat().completions().withRawResponse().create(params)) {
                CompletionUsage usage = r.parse().usage().orElseThrow();
                assertEquals(50, usage.promptTokens());
                assertTrue(usage.completionTokens() >= 20 && usage.completionTokens() <= 100, usage.toString());
                assertEquals(0L, usage.promptTokensDetails().orElseThrow().cachedTokens().orElseThrow());
                RateLimitHeaders h = RateLimitHeaders.read(OpenAiSdkAdapter.headers(r.headers()), NOW).orElseThrow();
                assertEquals(200L, h.tokens().limit());
                assertEquals(50L, h.tokens().remaining(), "50 input and the ceiling of 100 taken");
            }
            RuntimeException e = assertThrows(RuntimeException.class, () -> client.chat().completions().create(params));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
            assertEquals(200.0, c.tokenLimitPerMinute());
            assertEquals(TokenDimension.TOKENS, c.tokenDimension());
            assertTrue(c.retryAfter().toSeconds() >= 1);
        } finally {
            client.close();
        }
    }

    @Test
    void openAiJavaMeetsTheFakesFaultsAsItMeetsAProvidersAndTheyAreClassified() {
        FakeProvider.Endpoint ep = fake.primary();
        OpenAIClient client = OpenAIOkHttpClient.builder().apiKey("sk-fake").baseUrl(ep.base() + "/v1")
                .maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        try {
            ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model("gpt-4o-mini")
                    .addUserMessage("hello").build();
            ep.faults(Faults.of(1).unavailable(1.0));
            RuntimeException unavailable = assertThrows(RuntimeException.class, () -> client.chat().completions().create(params));
            Classification c = CLASSIFIER.classify(unavailable).orElseThrow();
            assertEquals(FailureClass.OVERLOADED, c.failureClass());
            assertEquals(503, c.httpStatus());
            assertNull(c.retryAfter(), "a fault states no wait");

            ep.faults(Faults.of(1).serverError(1.0));
            RuntimeException serverError = assertThrows(RuntimeException.class, () -> client.chat().completions().create(params));
            assertEquals(FailureClass.TRANSIENT, CLASSIFIER.classify(serverError).orElseThrow().failureClass());
            assertEquals(500, CLASSIFIER.classify(serverError).orElseThrow().httpStatus());

            ep.faults(Faults.of(1).dropped(1.0));
            RuntimeException dropped = assertThrows(RuntimeException.class, () -> client.chat().completions().create(params));
            Classification d = CLASSIFIER.classify(dropped).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, d.failureClass());
            assertEquals(0, d.httpStatus(), "no answer at all: " + dropped);

            ep.faults(Faults.none());
            assertEquals("<ECHO> hello", client.chat().completions().create(params).choices().get(0).message().content()
                    .orElseThrow());
            assertEquals(new Faults.Counts(1, 1, 0, 1), ep.faultCounts());
        } finally {
            client.close();
        }
    }

    @Test
    void anthropicJavaMeetsA529FromTheFakesUnavailableFault() {
        FakeProvider.Endpoint ep = fake.secondary().faults(Faults.of(2).unavailable(1.0));
        AnthropicClient client = AnthropicOkHttpClient.builder().apiKey("k").baseUrl(ep.base().toString())
                .maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        try {
            MessageCreateParams params = MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5).maxTokens(16)
                    .addUserMessage("hi").build();
            RuntimeException e = assertThrows(RuntimeException.class, () -> client.messages().create(params));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.OVERLOADED, c.failureClass());
            assertEquals(529, c.httpStatus());
            assertEquals(1, ep.overloaded());
        } finally {
            client.close();
        }
    }

    @Test
    void anthropicJavaReadsTheUsageAndItsInputLimitIsStated() {
        FakeProvider.Endpoint ep = fake.secondary().inputTokenLimitPerMinute(100);
        AnthropicClient client = AnthropicOkHttpClient.builder().apiKey("k").baseUrl(ep.base().toString())
                .maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        try {
            MessageCreateParams params = MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5).maxTokens(16)
                    .system("s".repeat(40)).addUserMessage("a".repeat(200)).build();
            com.anthropic.models.messages.Message m = client.messages().create(params);
            assertEquals(60, m.usage().inputTokens(), "system and message, (40 + 200) / 4");
            assertEquals(16, m.usage().outputTokens(), "the echo cut at max_tokens");
            assertEquals(0L, m.usage().cacheReadInputTokens().orElseThrow());
            RuntimeException e = assertThrows(RuntimeException.class, () -> client.messages().create(params));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
            assertEquals(100.0, c.tokenLimitPerMinute());
            assertEquals(TokenDimension.INPUT_TOKENS, c.tokenDimension());
            assertEquals(Provider.ANTHROPIC, c.provider());
            assertEquals(1, ep.rateLimited(Dimension.INPUT_TOKENS));
            assertEquals(0, fake.primary().calls(), "the secondary answered below /secondary");
        } finally {
            client.close();
        }
    }

    @Test
    void googleGenAiReadsTheUsageAndItsQuotaDetailsStateTheLimit() {
        FakeProvider.Endpoint ep = fake.primary().tokenLimitPerMinute(40);
        Client client = genAi(ep.base());
        try {
            GenerateContentConfig config = GenerateContentConfig.builder().maxOutputTokens(8).build();
            GenerateContentResponse r = client.models.generateContent("gemini-2.5-flash", "g".repeat(80), config);
            GenerateContentResponseUsageMetadata usage = r.usageMetadata().orElseThrow();
            assertEquals(20, usage.promptTokenCount().orElseThrow());
            assertEquals(8, usage.candidatesTokenCount().orElseThrow());
            assertEquals(28, usage.totalTokenCount().orElseThrow());
            ApiException e = assertThrows(ApiException.class,
                    () -> client.models.generateContent("gemini-2.5-flash", "g".repeat(80), config));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass(), c.toString());
            assertEquals(40.0, c.tokenLimitPerMinute(), "the QuotaFailure's quotaValue, through the SDK");
            assertEquals(TokenDimension.INPUT_TOKENS, c.tokenDimension());
            assertTrue(c.retryAfter().toSeconds() >= 1, "RetryInfo through the SDK");
        } finally {
            client.close();
        }
    }

    @Test
    void googleGenAiAgainstAFakeThatStatesNoLimitLearnsNothing() {
        FakeProvider.Endpoint ep = fake.primary().limitPerSecond(1).statesNoLimit(true);
        Client client = genAi(ep.base());
        try {
            client.models.generateContent("gemini-2.5-flash", "one", null);
            ApiException e = assertThrows(ApiException.class,
                    () -> client.models.generateContent("gemini-2.5-flash", "two", null));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
            assertNull(c.requestLimitPerSecond());
            assertNull(c.tokenLimitPerMinute());
            assertNull(c.tokenDimension());
            assertNull(c.retryAfter());
        } finally {
            client.close();
        }
    }

    @Test
    void bedrockConverseReadsTheUsageAndItsThrottlingNamesTokens() {
        FakeProvider.Endpoint ep = fake.primary().outputTokenLimitPerMinute(40);
        BedrockRuntimeClient client = BedrockRuntimeClient.builder()
                .region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDEXAMPLE", "secret")))
                .endpointOverride(ep.base())
                .httpClient(UrlConnectionHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
        try {
            ConverseRequest request = ConverseRequest.builder().modelId("anthropic.claude-3-haiku-20240307-v1:0")
                    .messages(Message.builder().role(ConversationRole.USER).content(ContentBlock.fromText("b".repeat(40)))
                            .build())
                    .inferenceConfig(InferenceConfiguration.builder().maxTokens(30).build()).build();
            ConverseResponse r = client.converse(request);
            assertEquals(10, r.usage().inputTokens());
            assertEquals(12, r.usage().outputTokens(), "(7 + 40) / 4 rounded up");
            assertEquals(22, r.usage().totalTokens());
            assertEquals("<ECHO> " + "b".repeat(40), r.output().message().content().get(0).text());
            ThrottlingException e = assertThrows(ThrottlingException.class, () -> client.converse(request));
            Classification c = CLASSIFIER.classify(e).orElseThrow();
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
            assertEquals(TokenDimension.TOKENS, c.tokenDimension());
            assertNull(c.tokenLimitPerMinute(), "Bedrock states no number");
            assertEquals(List.of(10L), ep.usages().stream().map(FakeProvider.Usage::inputTokens).toList());
        } finally {
            client.close();
        }
    }

    private static Client genAi(URI base) {
        return Client.builder().apiKey("k").httpOptions(HttpOptions.builder().baseUrl(base.toString()).timeout(5000)
                .retryOptions(HttpRetryOptions.builder().attempts(1).httpStatusCodes(List.of()).build()).build()).build();
    }
}
