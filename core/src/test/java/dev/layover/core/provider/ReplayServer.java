package dev.layover.core.provider;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A local HTTP server on 127.0.0.1 that answers every request with one recorded response (status,
 * headers, body), and counts the requests, so a test can prove an SDK did not retry.
 */
final class ReplayServer implements AutoCloseable {

    /** One recorded response. */
    static final class Reply {
        final int status;
        final Map<String, List<String>> headers = new LinkedHashMap<>();
        byte[] body = new byte[0];
        long delayMillis;

        Reply(int status) {
            this.status = status;
        }

        Reply header(String name, String value) {
            headers.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
            return this;
        }

        Reply json(String json) {
            header("Content-Type", "application/json");
            body = json.getBytes(StandardCharsets.UTF_8);
            return this;
        }

        Reply sse(String events) {
            header("Content-Type", "text/event-stream");
            body = events.getBytes(StandardCharsets.UTF_8);
            return this;
        }

        Reply body(String contentType, byte[] bytes) {
            header("Content-Type", contentType);
            body = bytes;
            return this;
        }

        Reply delay(long millis) {
            delayMillis = millis;
            return this;
        }
    }

    static Reply reply(int status) {
        return new Reply(status);
    }

    private final HttpServer server;
    private final AtomicInteger requests = new AtomicInteger();
    private volatile Reply reply = new Reply(500);

    ReplayServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            requests.incrementAndGet();
            Reply r = reply;
            try (InputStream in = exchange.getRequestBody()) {
                in.readAllBytes();
            }
            try {
                if (r.delayMillis > 0) {
                    Thread.sleep(r.delayMillis); // the recorded response's latency (stands for the provider's)
                }
                r.headers.forEach((name, values) -> exchange.getResponseHeaders().put(name, values));
                // a status the JDK server refuses in a body-less reply still works with a body
                exchange.sendResponseHeaders(r.status, r.body.length == 0 ? -1 : r.body.length);
                if (r.body.length > 0) {
                    try (OutputStream out = exchange.getResponseBody()) {
                        out.write(r.body);
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException e) {
                // the client gave up (a timeout test): nothing to answer
            } finally {
                exchange.close();
            }
        });
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool(runnable -> {
            Thread t = new Thread(runnable, "replay-server");
            t.setDaemon(true);
            return t;
        }));
        server.start();
    }

    /** Answers every following request with {@code r}; resets the request count. */
    ReplayServer answer(Reply r) {
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

    @Override
    public void close() {
        server.stop(0);
    }
}
