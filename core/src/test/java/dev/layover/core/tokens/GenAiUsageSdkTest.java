package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.genai.Client;
import com.google.genai.ResponseStream;
import com.google.genai.types.GenerateContentResponse;
import com.google.genai.types.HttpOptions;
import com.google.genai.types.HttpRetryOptions;
import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * google-genai 2.3.0, retries off ({@code attempts(1)}), against a local server answering the
 * Gemini API's documented {@code GenerateContentResponse}
 * (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse).
 */
@PureTest
class GenAiUsageSdkTest {

    static final String MODEL = "gemini-2.5-flash";
    static UsageServer server;
    static Client client;

    @BeforeAll
    static void start() throws Exception {
        server = new UsageServer();
        client = Client.builder().apiKey("test-key")
                .httpOptions(HttpOptions.builder().baseUrl(server.url()).timeout(5000)
                        .retryOptions(HttpRetryOptions.builder().attempts(1).httpStatusCodes(List.of()).build())
                        .build())
                .build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    @Test
    void usageMetadataPromptIncludesCachedContentAndThoughtsAreOutput() {
        server.answer(UsageServer.Reply.json("""
                {"candidates":[{"content":{"parts":[{"text":"Hello!"}],"role":"model"},"finishReason":"STOP",\
                "index":0}],"usageMetadata":{"promptTokenCount":3000,"candidatesTokenCount":120,\
                "totalTokenCount":3560,"cachedContentTokenCount":2048,"toolUsePromptTokenCount":40,\
                "thoughtsTokenCount":400,"promptTokensDetails":[{"modality":"TEXT","tokenCount":3000}],\
                "cacheTokensDetails":[{"modality":"TEXT","tokenCount":2048}]},\
                "modelVersion":"gemini-2.5-flash","responseId":"abc123"}"""));
        GenerateContentResponse r = client.models.generateContent(MODEL, "hi", null);
        assertEquals(1, server.requests());
        TokenUsage u = TokenUsage.of(r).orElseThrow();
        assertEquals(new TokenUsage(Provider.GEMINI, 3040, 520, 2048, 0), u);
        assertEquals(3560, u.totalTokens(), "equals the reported totalTokenCount");
        assertEquals(3040, u.tokensFor(TokenDimension.INPUT_TOKENS));
        assertEquals(u, TokenUsage.of(r.usageMetadata().orElseThrow()).orElseThrow());
    }

    @Test
    void responseWithoutUsageMetadataGivesEmpty() {
        server.answer(UsageServer.Reply.json("""
                {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP"}]}"""));
        assertEquals(Optional.empty(), TokenUsage.of(client.models.generateContent(MODEL, "hi", null)));
    }

    @Test
    void streamedChunksCarryTheCountsSoFarAndTheLastOneIsTheCallsUsage() {
        server.answer(UsageServer.Reply.sse("""
                data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":812,"totalTokenCount":812},"modelVersion":"gemini-2.5-flash"}

                data: {"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":812,"candidatesTokenCount":3,"totalTokenCount":815},"modelVersion":"gemini-2.5-flash"}

                data: {"candidates":[{"content":{"parts":[{"text":"!"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":812,"candidatesTokenCount":9,"thoughtsTokenCount":64,"totalTokenCount":885},"modelVersion":"gemini-2.5-flash"}

                """));
        StreamUsage stream = new StreamUsage();
        List<TokenUsage> perChunk = new ArrayList<>();
        try (ResponseStream<GenerateContentResponse> s = client.models.generateContentStream(MODEL, "hi", null)) {
            for (GenerateContentResponse chunk : s) {
                perChunk.add(TokenUsage.of(chunk).orElseThrow());
                stream.add(chunk);
            }
        }
        assertEquals(1, server.requests());
        assertTrue(server.lastPath().contains("streamGenerateContent"), server.lastPath());
        assertEquals(3, perChunk.size());
        assertEquals(TokenUsage.of(Provider.GEMINI, 812, 0), perChunk.get(0));
        assertEquals(TokenUsage.of(Provider.GEMINI, 812, 73), stream.usage().orElseThrow());
        assertEquals(stream.usage(), TokenUsage.fromJson(Provider.GEMINI, server.replyText()));
    }
}
