package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Raw HTTP bodies in each provider's documented shape, and bodies that carry no readable usage. */
@PureTest
class UsageJsonTest {

    @Test
    void openAiChatCompletion() {
        // https://platform.openai.com/docs/api-reference/chat/object
        String body = """
                {"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,\
                "model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},\
                "finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,\
                "prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":\
                {"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,\
                "rejected_prediction_tokens":0}},"service_tier":"default"}""";
        assertEquals(Optional.of(new TokenUsage(Provider.OPENAI, 1117, 46, 1024, 0)),
                TokenUsage.fromJson(Provider.OPENAI, body));
        assertEquals(Optional.of(new TokenUsage(Provider.AZURE_OPENAI, 1117, 46, 1024, 0)),
                TokenUsage.fromJson(Provider.AZURE_OPENAI, body));
        assertEquals(Optional.of(new TokenUsage(Provider.OPENAI, 1117, 46, 1024, 0)),
                TokenUsage.fromJson(Provider.UNKNOWN, body), "the shape names the provider");
        assertEquals(TokenUsage.fromJson(Provider.UNKNOWN, body), TokenUsage.fromJson(null, body));
    }

    @Test
    void openAiResponsesApiSaysInputTokensAndIncludesTheCachedOnes() {
        // https://platform.openai.com/docs/api-reference/responses/object
        String body = """
                {"id":"resp_67ccd3a9","object":"response","status":"completed","model":"gpt-4.1-2025-04-14",\
                "output":[],"usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":256},\
                "output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":380}}""";
        TokenUsage expected = new TokenUsage(Provider.OPENAI, 328, 52, 256, 0);
        assertEquals(Optional.of(expected), TokenUsage.fromJson(Provider.OPENAI, body));
        assertEquals(Optional.of(expected), TokenUsage.fromJson(Provider.UNKNOWN, body));
    }

    @Test
    void openAiStreamTakesTheFinalUsageChunk() {
        String stream = """
                data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}

                data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}

                data: [DONE]

                """;
        assertEquals(Optional.of(TokenUsage.of(Provider.OPENAI, 9, 12)), TokenUsage.fromJson(Provider.OPENAI, stream));
        String responses = """
                event: response.created
                data: {"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","usage":null}}

                event: response.completed
                data: {"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":40,"input_tokens_details":{"cached_tokens":0},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":47}}}
                """;
        assertEquals(Optional.of(TokenUsage.of(Provider.OPENAI, 40, 7)), TokenUsage.fromJson(Provider.OPENAI, responses));
    }

    @Test
    void anthropicMessageAndStream() {
        // https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance
        String message = """
                {"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],\
                "model":"claude-sonnet-4-5","stop_reason":"end_turn","usage":{"input_tokens":21,\
                "cache_creation_input_tokens":188086,"cache_read_input_tokens":0,"output_tokens":393}}""";
        TokenUsage u = TokenUsage.fromJson(Provider.ANTHROPIC, message).orElseThrow();
        assertEquals(new TokenUsage(Provider.ANTHROPIC, 21, 393, 0, 188086), u);
        assertEquals(188107, u.tokensFor(TokenDimension.INPUT_TOKENS));
        assertEquals(Optional.of(u), TokenUsage.fromJson(Provider.UNKNOWN, message));
        assertEquals(Optional.of(new TokenUsage(Provider.ANTHROPIC_BEDROCK, 21, 393, 0, 188086)),
                TokenUsage.fromJson(Provider.BEDROCK, message), "Claude on Bedrock's InvokeModel");
        String stream = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
                + "\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":1000,\"output_tokens\":1}}}\r\n\r\n"
                + "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                + "\"delta\":{\"type\":\"text_delta\",\"text\":\"usage of words\"}}\r\n\r\n"
                + "event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                + "\"usage\":{\"output_tokens\":15}}\r\n\r\n"
                + "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";
        assertEquals(Optional.of(new TokenUsage(Provider.ANTHROPIC, 25, 15, 1000, 0)),
                TokenUsage.fromJson(Provider.ANTHROPIC, stream));
    }

    @Test
    void geminiResponseStreamAndArray() {
        // https://ai.google.dev/api/generate-content#UsageMetadata
        String body = """
                {"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}],\
                "usageMetadata":{"promptTokenCount":5000,"candidatesTokenCount":300,"totalTokenCount":5500,\
                "cachedContentTokenCount":4096,"thoughtsTokenCount":200},"modelVersion":"gemini-2.5-pro"}""";
        TokenUsage expected = new TokenUsage(Provider.GEMINI, 5000, 500, 4096, 0);
        assertEquals(Optional.of(expected), TokenUsage.fromJson(Provider.GEMINI, body));
        assertEquals(Optional.of(expected), TokenUsage.fromJson(Provider.UNKNOWN, body));
        // streamGenerateContent without alt=sse answers one JSON array of chunks
        String array = "[{\"usageMetadata\":{\"promptTokenCount\":5000,\"totalTokenCount\":5000}}," + body + "]";
        assertEquals(Optional.of(expected), TokenUsage.fromJson(Provider.GEMINI, array));
        // Gemini's OpenAI-compatible endpoint answers in OpenAI's shape; the counts mean the same
        assertEquals(Optional.of(new TokenUsage(Provider.GEMINI, 70, 10, 0, 0)), TokenUsage.fromJson(Provider.GEMINI,
                "{\"choices\":[],\"usage\":{\"prompt_tokens\":70,\"completion_tokens\":10,\"total_tokens\":80}}"));
    }

    @Test
    void bedrockConverseNovaLlamaTitanAndStreamMetrics() {
        assertEquals(Optional.of(new TokenUsage(Provider.BEDROCK, 100, 40, 900, 300)),
                TokenUsage.fromJson(Provider.BEDROCK, """
                        {"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn",\
                        "usage":{"inputTokens":100,"outputTokens":40,"totalTokens":1340,"cacheReadInputTokens":900,\
                        "cacheWriteInputTokens":300},"metrics":{"latencyMs":412}}"""));
        assertEquals(Optional.of(TokenUsage.of(Provider.BEDROCK, 17, 5)), TokenUsage.fromJson(Provider.BEDROCK,
                "{\"generation\":\"ok\",\"prompt_token_count\":17,\"generation_token_count\":5,\"stop_reason\":\"stop\"}"));
        assertEquals(Optional.of(TokenUsage.of(Provider.BEDROCK, 8, 11)), TokenUsage.fromJson(Provider.BEDROCK,
                "{\"inputTextTokenCount\":8,\"results\":[{\"tokenCount\":11,\"outputText\":\"ok\","
                        + "\"completionReason\":\"FINISH\"}]}"));
        // the last chunk of InvokeModelWithResponseStream, decoded
        assertEquals(Optional.of(new TokenUsage(Provider.BEDROCK, 31, 8, 0, 0)), TokenUsage.fromJson(Provider.BEDROCK,
                "{\"type\":\"message_stop\",\"amazon-bedrock-invocationMetrics\":{\"inputTokenCount\":31,"
                        + "\"outputTokenCount\":8,\"invocationLatency\":512,\"firstByteLatency\":230}}"));
    }

    @Test
    void bodiesWithoutUsageGiveEmpty() {
        for (String body : new String[] {
            null, "", "   ", "<html><body>502 Bad Gateway</body></html>", "{}", "[]", "null", "42", "\"text\"",
            "{\"usage\":null}", "{\"usage\":{}}", "{\"usage\":\"many\"}", "{\"usageMetadata\":{}}",
            "{\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
            "{\"usage\":{\"prompt_tokens\":12", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", "event: ping\n\n",
            "data: {\"usage\": broken json}\n\n"
        }) {
            for (Provider p : Provider.values()) {
                assertEquals(Optional.empty(), TokenUsage.fromJson(p, body), p + " " + body);
            }
        }
    }

    @Test
    void countsThatAreNotWholeTokenNumbersMakeTheUsageUnreadable() {
        for (String count : new String[] {
            "-1", "12.5", "\"12\"", "true", "1e300", "NaN", "Infinity", "-Infinity", "9223372036854775808",
            "99999999999999999999999", String.valueOf(TokenUsage.MAX_COUNT + 1), "{}", "[3]"
        }) {
            String body = "{\"usage\":{\"prompt_tokens\":" + count + ",\"completion_tokens\":3}}";
            assertEquals(Optional.empty(), TokenUsage.fromJson(Provider.OPENAI, body), body);
            String anthropic = "{\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":" + count + "}}";
            assertEquals(Optional.empty(), TokenUsage.fromJson(Provider.ANTHROPIC, anthropic), anthropic);
            String stream = "data: {\"usageMetadata\":{\"promptTokenCount\":5}}\n\ndata: {\"usageMetadata\":"
                    + "{\"promptTokenCount\":5,\"candidatesTokenCount\":" + count + "}}\n\n";
            assertEquals(Optional.empty(), TokenUsage.fromJson(Provider.GEMINI, stream), stream);
        }
        // a whole number written with a fraction is still a count
        assertEquals(Optional.of(TokenUsage.of(Provider.OPENAI, 12, 3)),
                TokenUsage.fromJson(Provider.OPENAI, "{\"usage\":{\"prompt_tokens\":12.0,\"completion_tokens\":3}}"));
        // the largest count is accepted in each field
        assertEquals(Optional.of(new TokenUsage(Provider.ANTHROPIC, TokenUsage.MAX_COUNT, 0, 5, 0)), TokenUsage.fromJson(
                Provider.ANTHROPIC, "{\"usage\":{\"input_tokens\":" + TokenUsage.MAX_COUNT
                        + ",\"cache_read_input_tokens\":5}}"));
    }

    @Test
    void deeplyNestedOrHugeBodiesDoNotThrow() {
        String deep = "[".repeat(100_000) + "]".repeat(100_000);
        assertEquals(Optional.empty(), TokenUsage.fromJson(Provider.UNKNOWN, deep));
        StringBuilder longStream = new StringBuilder();
        for (int i = 0; i < 50_000; i++) {
            longStream.append("data: {\"choices\":[{\"delta\":{\"content\":\"word \"}}],\"usage\":null}\n\n");
        }
        longStream.append("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":50000}}\n\n");
        assertEquals(Optional.of(TokenUsage.of(Provider.OPENAI, 3, 50_000)),
                TokenUsage.fromJson(Provider.OPENAI, longStream.toString()));
    }
}
