package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.bedrockruntime.BedrockRuntimeAsyncClient;
import software.amazon.awssdk.services.bedrockruntime.BedrockRuntimeClient;
import software.amazon.awssdk.services.bedrockruntime.model.ConversationRole;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseRequest;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseResponse;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseStreamOutput;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseStreamRequest;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseStreamResponseHandler;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelRequest;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelResponse;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelWithResponseStreamRequest;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelWithResponseStreamResponseHandler;
import software.amazon.awssdk.services.bedrockruntime.model.Message;
import software.amazon.awssdk.services.bedrockruntime.model.ContentBlock;
import software.amazon.awssdk.services.bedrockruntime.model.ResponseStream;
import software.amazon.eventstream.HeaderValue;

/**
 * AWS SDK v2 bedrockruntime 2.57.8, retries off ({@code AwsRetryStrategy.doNotRetry()}), against a
 * local server answering the Bedrock runtime's documented success shapes
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html,
 * https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html).
 */
@PureTest
class BedrockUsageSdkTest {

    static final String CLAUDE = "anthropic.claude-3-haiku-20240307-v1:0";
    static final StaticCredentialsProvider CREDENTIALS =
            StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG"));

    static UsageServer server;
    static BedrockRuntimeClient client;
    static BedrockRuntimeAsyncClient async;

    @BeforeAll
    static void start() throws Exception {
        server = new UsageServer();
        client = BedrockRuntimeClient.builder().region(Region.US_EAST_1).credentialsProvider(CREDENTIALS)
                .endpointOverride(URI.create(server.url()))
                .httpClient(UrlConnectionHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())
                        .apiCallAttemptTimeout(Duration.ofSeconds(5)))
                .build();
        async = BedrockRuntimeAsyncClient.builder().region(Region.US_EAST_1).credentialsProvider(CREDENTIALS)
                .endpointOverride(URI.create(server.url()))
                .httpClient(NettyNioAsyncHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
    }

    @AfterAll
    static void stop() {
        client.close();
        async.close();
        server.close();
    }

    static ConverseRequest converse() {
        return ConverseRequest.builder().modelId(CLAUDE).messages(Message.builder().role(ConversationRole.USER)
                .content(ContentBlock.fromText("hi")).build()).build();
    }

    static InvokeModelRequest invoke(String model) {
        return InvokeModelRequest.builder().modelId(model).contentType("application/json")
                .body(SdkBytes.fromUtf8String("{}")).build();
    }

    @Test
    void converseUsageExcludesCacheReadsAndWritesFromInputTokens() {
        server.answer(UsageServer.Reply.json("""
                {"output":{"message":{"role":"assistant","content":[{"text":"Hello!"}]}},"stopReason":"end_turn",\
                "usage":{"inputTokens":100,"outputTokens":40,"totalTokens":1340,"cacheReadInputTokens":900,\
                "cacheWriteInputTokens":300},"metrics":{"latencyMs":412}}"""));
        ConverseResponse r = client.converse(converse());
        assertEquals(1, server.requests());
        TokenUsage u = TokenUsage.of(r).orElseThrow();
        assertEquals(new TokenUsage(Provider.BEDROCK, 100, 40, 900, 300), u);
        assertEquals(1340, u.totalTokens(), "equals the reported totalTokens");
        assertEquals(440, u.tokensFor(TokenDimension.TOKENS));
    }

    @Test
    void converseWithoutUsageGivesEmpty() {
        server.answer(UsageServer.Reply.json("""
                {"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn",\
                "metrics":{"latencyMs":40}}"""));
        assertEquals(Optional.empty(), TokenUsage.of(client.converse(converse())));
    }

    @Test
    void invokeModelOfAnAnthropicModelIsReadInAnthropicsShape() {
        server.answer(UsageServer.Reply.json("""
                {"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-3-haiku-20240307",\
                "content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,\
                "usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":1500,\
                "output_tokens":12}}""").withHeaders(Map.of("X-Amzn-Bedrock-Input-Token-Count", "20",
                "X-Amzn-Bedrock-Output-Token-Count", "12")));
        InvokeModelResponse r = client.invokeModel(invoke(CLAUDE));
        assertEquals(1, server.requests());
        TokenUsage u = TokenUsage.of(r).orElseThrow();
        assertEquals(new TokenUsage(Provider.ANTHROPIC_BEDROCK, 20, 12, 1500, 0), u);
        assertEquals(32, u.tokensFor(TokenDimension.TOKENS));
    }

    @Test
    void invokeModelOfLlamaAndNovaReadTheirOwnShapes() {
        server.answer(UsageServer.Reply.json("""
                {"generation":"Hello!","prompt_token_count":17,"generation_token_count":5,"stop_reason":"stop"}"""));
        assertEquals(TokenUsage.of(Provider.BEDROCK, 17, 5),
                TokenUsage.of(client.invokeModel(invoke("meta.llama3-8b-instruct-v1:0"))).orElseThrow());
        server.answer(UsageServer.Reply.json("""
                {"output":{"message":{"content":[{"text":"Hello!"}],"role":"assistant"}},"stopReason":"end_turn",\
                "usage":{"inputTokens":7,"outputTokens":3,"totalTokens":10,"cacheReadInputTokenCount":0,\
                "cacheWriteInputTokenCount":0}}"""));
        assertEquals(TokenUsage.of(Provider.BEDROCK, 7, 3),
                TokenUsage.of(client.invokeModel(invoke("amazon.nova-lite-v1:0"))).orElseThrow());
    }

    @Test
    void invokeModelBodyWithoutUsageFallsBackOnBedrocksTokenCountHeaders() {
        // Mistral's InvokeModel body carries no usage; Bedrock still reports the counts in headers
        String mistral = "{\"outputs\":[{\"text\":\"Hello!\",\"stop_reason\":\"stop\"}]}";
        server.answer(UsageServer.Reply.json(mistral).withHeaders(Map.of("X-Amzn-Bedrock-Input-Token-Count", "14",
                "X-Amzn-Bedrock-Output-Token-Count", "6")));
        assertEquals(TokenUsage.of(Provider.BEDROCK, 14, 6),
                TokenUsage.of(client.invokeModel(invoke("mistral.mistral-7b-instruct-v0:2"))).orElseThrow());
        server.answer(UsageServer.Reply.json(mistral));
        assertEquals(Optional.empty(), TokenUsage.of(client.invokeModel(invoke("mistral.mistral-7b-instruct-v0:2"))));
        server.answer(UsageServer.Reply.json(mistral).withHeaders(Map.of("X-Amzn-Bedrock-Input-Token-Count", "lots")));
        assertEquals(Optional.empty(), TokenUsage.of(client.invokeModel(invoke("mistral.mistral-7b-instruct-v0:2"))));
    }

    @Test
    void converseStreamUsageComesFromItsMetadataEvent() throws Exception {
        ByteArrayOutputStream frames = new ByteArrayOutputStream();
        frames.write(frame("messageStart", "{\"role\":\"assistant\"}"));
        frames.write(frame("contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hello!\"}}"));
        frames.write(frame("contentBlockStop", "{\"contentBlockIndex\":0}"));
        frames.write(frame("messageStop", "{\"stopReason\":\"end_turn\"}"));
        frames.write(frame("metadata", "{\"usage\":{\"inputTokens\":25,\"outputTokens\":9,\"totalTokens\":34},"
                + "\"metrics\":{\"latencyMs\":321}}"));
        server.answer(UsageServer.Reply.eventStream(frames.toByteArray(), Map.of()));
        StreamUsage stream = new StreamUsage();
        List<ConverseStreamOutput> events = new CopyOnWriteArrayList<>();
        async.converseStream(ConverseStreamRequest.builder().modelId(CLAUDE).messages(Message.builder()
                        .role(ConversationRole.USER).content(ContentBlock.fromText("hi")).build()).build(),
                ConverseStreamResponseHandler.builder().subscriber(ConverseStreamResponseHandler.Visitor.builder()
                        .onDefault(e -> {
                            events.add(e);
                            stream.add(e);
                        }).build()).build())
                .join();
        assertEquals(1, server.requests());
        assertEquals(5, events.size());
        assertEquals(1, events.stream().filter(e -> TokenUsage.of(e).isPresent()).count());
        assertEquals(TokenUsage.of(Provider.BEDROCK, 25, 9), stream.usage().orElseThrow());
    }

    @Test
    void invokeModelStreamOfClaudeMergesItsChunksAndInvocationMetrics() throws Exception {
        ByteArrayOutputStream frames = new ByteArrayOutputStream();
        frames.write(chunk("{\"type\":\"message_start\",\"message\":{\"id\":\"msg_bdrk_02\",\"type\":\"message\","
                + "\"role\":\"assistant\",\"model\":\"claude-3-haiku-20240307\",\"content\":[],\"stop_reason\":null,"
                + "\"stop_sequence\":null,\"usage\":{\"input_tokens\":31,\"output_tokens\":1}}}"));
        frames.write(chunk("{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
                + "\"text\":\"Hello!\"}}"));
        frames.write(chunk("{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
                + "\"stop_sequence\":null},\"usage\":{\"output_tokens\":8}}"));
        frames.write(chunk("{\"type\":\"message_stop\",\"amazon-bedrock-invocationMetrics\":{\"inputTokenCount\":31,"
                + "\"outputTokenCount\":8,\"invocationLatency\":512,\"firstByteLatency\":230}}"));
        server.answer(UsageServer.Reply.eventStream(frames.toByteArray(),
                Map.of("x-amzn-bedrock-content-type", "application/json")));
        StreamUsage stream = new StreamUsage();
        List<Optional<TokenUsage>> perChunk = new CopyOnWriteArrayList<>();
        async.invokeModelWithResponseStream(InvokeModelWithResponseStreamRequest.builder().modelId(CLAUDE)
                        .contentType("application/json").body(SdkBytes.fromUtf8String("{}")).build(),
                InvokeModelWithResponseStreamResponseHandler.builder().subscriber(
                        InvokeModelWithResponseStreamResponseHandler.Visitor.builder().onDefault((ResponseStream e) -> {
                            perChunk.add(TokenUsage.of(e));
                            stream.add(e);
                        }).onChunk(part -> {
                            perChunk.add(TokenUsage.of(part));
                            stream.add(part);
                        }).build()).build())
                .join();
        assertEquals(1, server.requests());
        assertEquals(4, perChunk.size());
        assertTrue(perChunk.get(1).isEmpty());
        assertEquals(new TokenUsage(Provider.ANTHROPIC_BEDROCK, 31, 1, 0, 0), perChunk.get(0).orElseThrow());
        assertEquals(new TokenUsage(Provider.ANTHROPIC_BEDROCK, 31, 8, 0, 0), stream.usage().orElseThrow());
    }

    /** One event of an {@code application/vnd.amazon.eventstream} body. */
    static byte[] frame(String eventType, String payload) throws IOException {
        Map<String, HeaderValue> h = new LinkedHashMap<>();
        h.put(":message-type", HeaderValue.fromString("event"));
        h.put(":event-type", HeaderValue.fromString(eventType));
        h.put(":content-type", HeaderValue.fromString("application/json"));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new software.amazon.eventstream.Message(h, payload.getBytes(StandardCharsets.UTF_8)).encode(out);
        return out.toByteArray();
    }

    /** An InvokeModelWithResponseStream {@code chunk} event: the model's JSON, base64 in "bytes". */
    static byte[] chunk(String modelJson) throws IOException {
        return frame("chunk", "{\"bytes\":\""
                + Base64.getEncoder().encodeToString(modelJson.getBytes(StandardCharsets.UTF_8)) + "\"}");
    }
}
