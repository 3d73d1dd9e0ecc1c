package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.Model;
import com.anthropic.models.messages.RawMessageStreamEvent;
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
 * anthropic-java 3.14.0, retries off, against a local server answering Anthropic's documented
 * success shapes (https://docs.anthropic.com/en/api/messages,
 * https://docs.anthropic.com/en/docs/build-with-claude/streaming).
 */
@PureTest
class AnthropicUsageSdkTest {

    static UsageServer server;
    static AnthropicClient client;

    @BeforeAll
    static void start() throws Exception {
        server = new UsageServer();
        client = AnthropicOkHttpClient.builder().apiKey("test-key").baseUrl(server.url()).maxRetries(0)
                .timeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    static MessageCreateParams params() {
        return MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5).maxTokens(1024).addUserMessage("hi").build();
    }

    @Test
    void messageUsageKeepsInputApartFromCacheReadsAndWrites() {
        server.answer(UsageServer.Reply.json("""
                {"id":"msg_01","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",\
                "content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,\
                "usage":{"input_tokens":50,"cache_creation_input_tokens":1000,"cache_read_input_tokens":4000,\
                "cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":0},\
                "output_tokens":200,"service_tier":"standard"}}"""));
        Message m = client.messages().create(params());
        assertEquals(1, server.requests());
        TokenUsage u = TokenUsage.of(m).orElseThrow();
        assertEquals(new TokenUsage(Provider.ANTHROPIC, 50, 200, 4000, 1000), u);
        assertEquals(1050, u.tokensFor(TokenDimension.INPUT_TOKENS));
        assertEquals(5050, u.totalInputTokens());
        assertEquals(u, TokenUsage.of(m.usage()).orElseThrow());
    }

    @Test
    void messageWithoutCacheFieldsCountsThemAsZero() {
        server.answer(UsageServer.Reply.json("""
                {"id":"msg_02","type":"message","role":"assistant","model":"claude-haiku-4-5",\
                "content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,\
                "usage":{"input_tokens":12,"output_tokens":6}}"""));
        assertEquals(TokenUsage.of(Provider.ANTHROPIC, 12, 6), TokenUsage.of(client.messages().create(params())).orElseThrow());
    }

    @Test
    void streamUsageMergesMessageStartInputWithTheCumulativeDeltaOutput() {
        server.answer(UsageServer.Reply.sse("""
                event: message_start
                data: {"type":"message_start","message":{"id":"msg_03","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":2}}}

                event: content_block_start
                data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

                event: ping
                data: {"type": "ping"}

                event: content_block_delta
                data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

                event: content_block_stop
                data: {"type":"content_block_stop","index":0}

                event: message_delta
                data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}

                event: message_stop
                data: {"type":"message_stop"}

                """));
        StreamUsage stream = new StreamUsage();
        List<RawMessageStreamEvent> events = new ArrayList<>();
        try (StreamResponse<RawMessageStreamEvent> s = client.messages().createStreaming(params())) {
            s.stream().forEach(event -> {
                events.add(event);
                stream.add(event);
            });
        }
        assertEquals(1, server.requests());
        for (RawMessageStreamEvent event : events) {
            Optional<TokenUsage> u = TokenUsage.of(event);
            if (event.isMessageStart()) {
                assertEquals(new TokenUsage(Provider.ANTHROPIC, 472, 2, 2048, 0), u.orElseThrow());
            } else if (event.isMessageDelta()) {
                // the delta's usage alone (MessageDeltaUsage) has no input count in this API version
                assertEquals(TokenUsage.of(Provider.ANTHROPIC, 0, 15), u.orElseThrow());
            } else {
                assertTrue(u.isEmpty(), event.toString());
            }
        }
        assertTrue(events.stream().anyMatch(RawMessageStreamEvent::isMessageDelta));
        assertEquals(new TokenUsage(Provider.ANTHROPIC, 472, 15, 2048, 0), stream.usage().orElseThrow());
        // the same stream read as raw SSE text gives the same usage
        String raw = server.replyText();
        assertEquals(stream.usage(), TokenUsage.fromJson(Provider.ANTHROPIC, raw));
    }

    @Test
    void newerMessageDeltaCarriesTheInputCountsToo() {
        server.answer(UsageServer.Reply.sse("""
                event: message_start
                data: {"type":"message_start","message":{"id":"msg_04","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":1}}}

                event: message_delta
                data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":41}}

                event: message_stop
                data: {"type":"message_stop"}

                """));
        StreamUsage stream = new StreamUsage();
        try (StreamResponse<RawMessageStreamEvent> s = client.messages().createStreaming(params())) {
            s.stream().forEach(event -> {
                if (event.isMessageDelta()) {
                    assertEquals(TokenUsage.of(Provider.ANTHROPIC, 30, 41), TokenUsage.of(event.asMessageDelta().usage())
                            .orElseThrow());
                }
                stream.add(event);
            });
        }
        assertEquals(TokenUsage.of(Provider.ANTHROPIC, 30, 41), stream.usage().orElseThrow());
    }
}
