package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.HttpResponseFor;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseStreamEvent;
import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * openai-java 4.101.0, retries off, against a local server answering OpenAI's documented success
 * shapes (https://platform.openai.com/docs/api-reference/chat/object,
 * https://platform.openai.com/docs/api-reference/responses/object): the usage is read from the
 * SDK's own response objects.
 */
@PureTest
class OpenAiUsageSdkTest {

    static UsageServer server;
    static OpenAIClient client;

    @BeforeAll
    static void start() throws Exception {
        server = new UsageServer();
        client = OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(server.url() + "/v1").maxRetries(0)
                .timeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    static ChatCompletionCreateParams chat() {
        return ChatCompletionCreateParams.builder().model("gpt-4o-mini").addUserMessage("hi").build();
    }

    static final String COMPLETION = """
            {"id":"chatcmpl-1","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini-2024-07-18",\
            "choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null,\
            "annotations":[]},"logprobs":null,"finish_reason":"stop"}],\
            "usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,\
            "prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},\
            "completion_tokens_details":{"reasoning_tokens":192,"audio_tokens":0,\
            "accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},\
            "service_tier":"default","system_fingerprint":"fp_06737a9306"}""";

    @Test
    void chatCompletionUsageIncludesCachedAndReasoningTokens() {
        server.answer(UsageServer.Reply.json(COMPLETION));
        ChatCompletion completion = client.chat().completions().create(chat());
        assertEquals(1, server.requests());
        TokenUsage u = TokenUsage.of(completion).orElseThrow();
        assertEquals(new TokenUsage(Provider.OPENAI, 2006, 300, 1920, 0), u);
        assertEquals(2306, u.tokensFor(TokenDimension.TOKENS));
        assertEquals(u, TokenUsage.of(completion.usage().orElseThrow()).orElseThrow());
    }

    @Test
    void chatCompletionWithoutUsageGivesEmpty() {
        server.answer(UsageServer.Reply.json("""
                {"id":"chatcmpl-2","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini",\
                "choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}"""));
        ChatCompletion completion = client.chat().completions().create(chat());
        assertEquals(Optional.empty(), TokenUsage.of(completion));
    }

    @Test
    void rawResponseIsParsedByTheSdkThenRead() {
        server.answer(UsageServer.Reply.json(COMPLETION));
        HttpResponseFor<ChatCompletion> raw = client.chat().completions().withRawResponse().create(chat());
        assertEquals(new TokenUsage(Provider.OPENAI, 2006, 300, 1920, 0), TokenUsage.of(raw).orElseThrow());
    }

    @Test
    void streamedChatCompletionUsageComesFromTheFinalChunk() {
        // stream_options.include_usage: every chunk has "usage":null but the last, whose choices are empty
        server.answer(UsageServer.Reply.sse("""
                data: {"id":"chatcmpl-3","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}

                data: {"id":"chatcmpl-3","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":"stop"}],"usage":null}

                data: {"id":"chatcmpl-3","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}

                data: [DONE]

                """));
        StreamUsage stream = new StreamUsage();
        List<Optional<TokenUsage>> perChunk = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(chat())) {
            s.stream().forEach(chunk -> {
                perChunk.add(TokenUsage.of(chunk));
                stream.add(chunk);
            });
        }
        assertEquals(1, server.requests());
        assertEquals(3, perChunk.size());
        assertTrue(perChunk.get(0).isEmpty() && perChunk.get(1).isEmpty());
        assertEquals(TokenUsage.of(Provider.OPENAI, 19, 10), stream.usage().orElseThrow());
    }

    static ResponseCreateParams responses() {
        return ResponseCreateParams.builder().model("gpt-4.1").input("hi").build();
    }

    static final String RESPONSE = """
            {"id":"resp_1","object":"response","created_at":1741476542,"status":"completed","error":null,\
            "incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1-2025-04-14",\
            "output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[\
            {"type":"output_text","text":"Hi!","annotations":[]}]}],"parallel_tool_calls":true,\
            "previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,\
            "temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,\
            "truncation":"disabled","usage":{"input_tokens":3328,"input_tokens_details":{"cached_tokens":3072},\
            "output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":3380},\
            "user":null,"metadata":{}}""";

    @Test
    void responsesApiUsageIncludesCachedTokens() {
        server.answer(UsageServer.Reply.json(RESPONSE));
        Response r = client.responses().create(responses());
        assertEquals(1, server.requests());
        assertEquals(new TokenUsage(Provider.OPENAI, 3328, 52, 3072, 0), TokenUsage.of(r).orElseThrow());
    }

    @Test
    void streamedResponsesApiUsageComesFromResponseCompleted() {
        String created = RESPONSE.replace("\"status\":\"completed\"", "\"status\":\"in_progress\"")
                .replaceAll("\"usage\":\\{.*?\"total_tokens\":3380\\}", "\"usage\":null");
        server.answer(UsageServer.Reply.sse("event: response.created\ndata: {\"type\":\"response.created\","
                + "\"sequence_number\":0,\"response\":" + created + "}\n\n"
                + "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
                + "\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
                + "\"delta\":\"Hi!\",\"logprobs\":[]}\n\n"
                + "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,"
                + "\"response\":" + RESPONSE + "}\n\n"));
        StreamUsage stream = new StreamUsage();
        List<Optional<TokenUsage>> perEvent = new ArrayList<>();
        try (StreamResponse<ResponseStreamEvent> s = client.responses().createStreaming(responses())) {
            s.stream().forEach(event -> {
                perEvent.add(TokenUsage.of(event));
                stream.add(event);
            });
        }
        assertEquals(3, perEvent.size());
        assertTrue(perEvent.get(0).isEmpty() && perEvent.get(1).isEmpty(), perEvent.toString());
        assertEquals(new TokenUsage(Provider.OPENAI, 3328, 52, 3072, 0), stream.usage().orElseThrow());
    }
}
