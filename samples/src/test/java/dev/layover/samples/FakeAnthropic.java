package dev.layover.samples;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A local server speaking Anthropic's Messages API ({@code POST /v1/messages}) the way the real one
 * answers: a message whose text echoes the last user message as {@code "<SUMMARY> " + text}, or,
 * while throttled, 429 {@code rate_limit_error} with Anthropic's rate-limit headers
 * (https://docs.anthropic.com/en/api/rate-limits): {@code retry-after}, and
 * {@code anthropic-ratelimit-requests-limit} / {@code -remaining: 0} / {@code -reset}.
 */
final class FakeAnthropic implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final AtomicBoolean throttled = new AtomicBoolean();
    private final AtomicInteger rateLimited = new AtomicInteger();
    private final AtomicInteger answered = new AtomicInteger();

    FakeAnthropic() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.createContext("/v1/messages", this::messages);
        server.start();
    }

    /** @return the base URL to give the client, {@code http://127.0.0.1:port} */
    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** @param on whether every request is answered 429 (a limit of 60 requests per minute, spent) */
    void throttled(boolean on) {
        throttled.set(on);
    }

    int rateLimited() {
        return rateLimited.get();
    }

    int answered() {
        return answered.get();
    }

    private void messages(HttpExchange ex) throws IOException {
        JsonNode request = JSON.readTree(ex.getRequestBody());
        ex.getResponseHeaders().set("content-type", "application/json");
        ex.getResponseHeaders().set("request-id", "req_fake_" + System.nanoTime());
        if (throttled.get()) {
            rateLimited.incrementAndGet();
            ex.getResponseHeaders().set("retry-after", "1");
            ex.getResponseHeaders().set("anthropic-ratelimit-requests-limit", "60");
            ex.getResponseHeaders().set("anthropic-ratelimit-requests-remaining", "0");
            ex.getResponseHeaders().set("anthropic-ratelimit-requests-reset",
                    Instant.now().plusSeconds(1).truncatedTo(ChronoUnit.SECONDS).toString());
            send(ex, 429, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
                    + "\"message\":\"This request would exceed the rate limit for your organization of 60 requests per minute.\"}}");
            return;
        }
        JsonNode messages = request.path("messages");
        String text = messages.isEmpty() ? "" : messages.get(messages.size() - 1).path("content").asText();
        ObjectNode answer = JSON.createObjectNode();
        answer.put("id", "msg_fake_" + answered.incrementAndGet());
        answer.put("type", "message");
        answer.put("role", "assistant");
        answer.put("model", request.path("model").asText());
        answer.putArray("content").addObject().put("type", "text").put("text", "<SUMMARY> " + text);
        answer.put("stop_reason", "end_turn");
        answer.putNull("stop_sequence");
        answer.putObject("usage").put("input_tokens", 12).put("output_tokens", 6);
        send(ex, 200, JSON.writeValueAsString(answer));
    }

    private static void send(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
    }
}
