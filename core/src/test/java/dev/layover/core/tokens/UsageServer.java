package dev.layover.core.tokens;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A local HTTP server on 127.0.0.1 that answers every request 200 with one recorded success
 * response of a provider (headers and body), and counts the requests so a test can prove the SDK
 * made exactly one.
 */
final class UsageServer implements AutoCloseable {

    /** One recorded success response. */
    record Reply(String contentType, byte[] body, Map<String, String> headers) {

        static Reply json(String json) {
            return new Reply("application/json", json.getBytes(StandardCharsets.UTF_8), Map.of());
        }

        static Reply sse(String events) {
            return new Reply("text/event-stream", events.getBytes(StandardCharsets.UTF_8), Map.of());
        }

        static Reply eventStream(byte[] frames, Map<String, String> headers) {
            return new Reply("application/vnd.amazon.eventstream", frames, headers);
        }

        Reply withHeaders(Map<String, String> extra) {
            return new Reply(contentType, body, extra);
        }
    }

    private final HttpServer server;
    private final ExecutorService executor;
    private final AtomicInteger requests = new AtomicInteger();
    private volatile Reply reply = Reply.json("{}");
    private volatile String lastPath = "";

    UsageServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            requests.incrementAndGet();
            lastPath = exchange.getRequestURI().toString();
            Reply r = reply;
            try (InputStream in = exchange.getRequestBody()) {
                in.readAllBytes();
            }
            try (exchange) {
                exchange.getResponseHeaders().put("Content-Type", List.of(r.contentType()));
                r.headers().forEach((name, value) -> exchange.getResponseHeaders().put(name, List.of(value)));
                exchange.sendResponseHeaders(200, r.body().length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(r.body());
                }
            }
        });
        executor = Executors.newCachedThreadPool(runnable -> {
            Thread t = new Thread(runnable, "usage-server");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.start();
    }

    /** Answers every following request with {@code r}; resets the request count. */
    UsageServer answer(Reply r) {
        reply = r;
        requests.set(0);
        return this;
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    int requests() {
        return requests.get();
    }

    /** The body of the current reply, as text. */
    String replyText() {
        return new String(reply.body(), StandardCharsets.UTF_8);
    }

    String lastPath() {
        return lastPath;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
