package dev.layover.samples.interactive;

import com.openai.client.OpenAIClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.CallFailedException;
import dev.layover.core.InteractiveCalls;
import dev.layover.core.Layover;
import dev.layover.core.NotAdmittedException;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.samples.GettingStartedOpenAi;
import dev.layover.samples.SampleDatabase;
import dev.layover.testing.provider.FakeProvider;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A chat endpoint on the JDK's HTTP server whose OpenAI calls share their provider key with
 * Layover's background jobs ({@code docs/interactive.md}): {@code GET /chat?q=...} answers through
 * {@link InteractiveCalls#call}, waiting at most {@link #MAX_WAIT} for the key. While questions
 * arrive, the jobs of the same key leave them a share of its bucket; a question the key cannot
 * admit in time is answered 503 with {@code Retry-After} without calling the provider; a failed call
 * (a 429, an overload) is a 502, and what it taught (a cooldown) holds the jobs back too.
 *
 * <p>Run by hand with {@code ./mvnw -q -pl samples -am -DskipTests package exec:java
 * -Dlayover.main=dev.layover.samples.interactive.ChatEndpoint}: a local fake OpenAI limited to 10
 * requests a second, the key's bucket at 8, an embedded Postgres (or {@code --jdbc-url URL}), 500
 * background summaries on the key, and the endpoint's address to ask questions at while they run.
 */
public final class ChatEndpoint implements AutoCloseable {

    /** The longest a person waits for the key before being told to come back. */
    public static final Duration MAX_WAIT = Duration.ofMillis(500);

    private final HttpServer server;
    private final ExecutorService threads = Executors.newFixedThreadPool(8);
    private final InteractiveCalls calls;
    private final OpenAIClient openai;
    private final String providerKey;

    private ChatEndpoint(InteractiveCalls calls, OpenAIClient openai, String providerKey) throws IOException {
        this.calls = calls;
        this.openai = openai;
        this.providerKey = providerKey;
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/chat", this::chat);
        server.setExecutor(threads);
    }

    /**
     * Serves {@code /chat} on a free port of 127.0.0.1.
     *
     * @param calls the Layover instance's interactive calls ({@code layover.interactive()})
     * @param openai an OpenAI client with its own retries off ({@code maxRetries(0)})
     * @param providerKey the key the background jobs of the same model use
     * @return the running endpoint
     * @throws IOException when no port can be bound
     */
    public static ChatEndpoint start(InteractiveCalls calls, OpenAIClient openai, String providerKey) throws IOException {
        ChatEndpoint e = new ChatEndpoint(calls, openai, providerKey);
        e.server.start();
        return e;
    }

    /** @return the endpoint's address, {@code http://127.0.0.1:port/chat} */
    public URI url() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/chat");
    }

    private void chat(HttpExchange ex) throws IOException {
        String q = query(ex.getRequestURI().getRawQuery());
        try {
            // the estimate: the question's characters / 4 plus the answer's ceiling; settled by the reported usage
            ChatCompletion answer = calls.call(providerKey, q.length() / 4 + 256, MAX_WAIT,
                    () -> openai.chat().completions().create(ChatCompletionCreateParams.builder()
                            .model("gpt-4o-mini").addUserMessage(q).maxCompletionTokens(256).build()));
            reply(ex, 200, answer.choices().get(0).message().content().orElse(""));
        } catch (NotAdmittedException e) {
            // not called: tell the person when to come back
            long seconds = e.until() == null ? 1 : Math.max(1, Duration.between(Instant.now(), e.until()).toSeconds() + 1);
            ex.getResponseHeaders().add("Retry-After", String.valueOf(seconds));
            reply(ex, 503, "busy (" + e.reason().name().toLowerCase(java.util.Locale.ROOT) + "), try again in "
                    + seconds + " s");
        } catch (CallFailedException e) {
            reply(ex, 502, "the provider failed: " + e.kind().tag());
        }
    }

    private static String query(String raw) {
        if (raw != null) {
            for (String part : raw.split("&")) {
                if (part.startsWith("q=")) {
                    return URLDecoder.decode(part.substring(2), StandardCharsets.UTF_8);
                }
            }
        }
        return "";
    }

    private static void reply(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "text/plain; charset=utf-8");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    /**
     * Serves the endpoint beside a backlog of summaries, against a local fake OpenAI; Enter stops it.
     *
     * @param args {@code --jdbc-url URL} for a database of yours, else an embedded Postgres
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        String key = "openai:gpt-4o-mini";
        int at = List.of(args).indexOf("--jdbc-url");
        try (FakeProvider fake = FakeProvider.start();
                EmbeddedPostgres embedded = at < 0 ? EmbeddedPostgres.start() : null;
                HikariDataSource pool = SampleDatabase.pool(
                        at >= 0 ? args[at + 1] : embedded.getJdbcUrl("postgres", "postgres"), 16)) {
            fake.primary().limitPerSecond(10);
            OpenAIClient openai = GettingStartedOpenAi.client(fake.baseUri() + "/v1", "sk-fake");
            var summarize = GettingStartedOpenAi.summarize(openai, new ConcurrentHashMap<>());
            try (Layover layover = Layover.builder(pool).register(summarize)
                    // below the provider's 10/s: room for the jitter between admission and arrival
                    .bucket(key, BucketSettings.requestsPerSecond(8).withBurst(Duration.ofMillis(500)))
                    .pollInterval(Duration.ofMillis(200))
                    .start();
                    ChatEndpoint chat = start(layover.interactive(), openai, key)) {
                for (int i = 0; i < 500; i++) {
                    layover.enqueue(summarize, new GettingStartedOpenAi.Summarize("doc-" + i, "text " + i));
                }
                System.out.println("Ask while 500 summaries run on the same key (8 requests/s):\n  curl '" + chat.url()
                        + "?q=hello'\nPress Enter to stop.");
                System.in.read();
            }
        }
    }

    /** Stops serving at once. */
    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }
}
