package dev.layover.bench;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.batch.Batching;
import dev.layover.core.batch.OpenAiBatches;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * A worker JVM of the batch routing benchmark ({@link BatchBench}), and the parts it shares with
 * the runner's own instance: the {@code batch-doc} job type and its batching. One Layover instance
 * with batching on the key {@value #KEY} (the OpenAI transport, {@link OpenAiBatches}, on the
 * official SDK pointed at the fake provider, retries off), {@code threads} worker threads and a
 * pool of {@code threads + 4} connections.
 *
 * <p>A deferrable job goes by batch (its line's answer is its outcome: done); any other job runs
 * the handler, which records the call in {@code bench_batch.direct} (job id, worker) before it
 * makes it, then calls the fake's chat completions endpoint with the SDK and reports the usage.
 *
 * <p>Arguments: JDBC URL, the fake provider's base URI, worker name, threads, stop file, then the
 * batch settings in milliseconds: gather age, poll interval, lease, and the lines per batch.
 * Prints {@code ready} once started; stops when the stop file exists (the benchmark kills it
 * instead, mid-submit).
 */
public final class BatchWorker {

    /** A document to summarise: its job id and text. */
    public record Doc(String id, String text) {}

    /** The job type's name. */
    static final String TYPE = "batch-doc";
    /** The provider key, with batching. */
    static final String KEY = "openai:gpt-4o-mini";
    /** The model named in every request. */
    static final String MODEL = "gpt-4o-mini";
    /** The output ceiling of every request, direct or by batch. */
    static final int MAX_TOKENS = 60;

    /** The batch settings both kinds of instance use. */
    record Timing(Duration gatherAge, Duration poll, Duration lease, int maxRequests) {
        List<String> args() {
            return List.of(String.valueOf(gatherAge.toMillis()), String.valueOf(poll.toMillis()),
                    String.valueOf(lease.toMillis()), String.valueOf(maxRequests));
        }

        static Timing of(String[] a, int from) {
            return new Timing(Duration.ofMillis(Long.parseLong(a[from])), Duration.ofMillis(Long.parseLong(a[from + 1])),
                    Duration.ofMillis(Long.parseLong(a[from + 2])), Integer.parseInt(a[from + 3]));
        }
    }

    private BatchWorker() {}

    /**
     * An OpenAI client on the fake provider, retries off (Layover retries), 30 s timeout.
     *
     * @param fakeBase the fake's base URI
     * @return the client
     */
    static OpenAIClient client(URI fakeBase) {
        return OpenAIOkHttpClient.builder().apiKey("sk-bench").baseUrl(fakeBase + "/v1").maxRetries(0)
                .timeout(Duration.ofSeconds(30)).build();
    }

    /** @return the chat completions request of a document, as a map (the batch line's body) */
    static Map<String, Object> request(Doc d) {
        return Map.of("model", MODEL, "max_tokens", MAX_TOKENS,
                "messages", List.of(Map.of("role", "user", "content", prompt(d))));
    }

    private static String prompt(Doc d) {
        return "Summarise in one line: " + d.text();
    }

    /**
     * The job type: by batch when deferrable, else a direct call.
     *
     * @param ds where direct calls are recorded ({@code bench_batch.direct}), or null for an
     *     enqueue-only client
     * @param client the SDK client of direct calls, or null for an enqueue-only client
     * @param worker this instance's name in the record
     * @return the job type
     */
    static JobType<Doc> docType(DataSource ds, OpenAIClient client, String worker) {
        return JobType.builder(TYPE, Doc.class)
                .providerKey(d -> KEY)
                .batchable(Batching.<Doc>of(BatchWorker::request, (d, line) -> {
                    String answer = line.json().path("choices").path(0).path("message").path("content").asText();
                    return answer.isEmpty() ? Outcome.retry("an empty answer in line " + line.customId()) : Outcome.done();
                }))
                .handler((d, ctx) -> {
                    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                            "insert into bench_batch.direct (job_id, worker) values (?, ?)")) {
                        ps.setString(1, d.id());
                        ps.setString(2, worker);
                        ps.executeUpdate();
                    }
                    ChatCompletion r = client.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL)
                            .maxCompletionTokens(MAX_TOKENS).addUserMessage(prompt(d)).build());
                    ctx.reportUsage(r);
                    return Outcome.done();
                })
                .build();
    }

    /**
     * The batching of {@value #KEY}: the OpenAI transport with short timings, so a run takes about
     * a minute (defaults otherwise: expected completion 1 h, rescue margin 15 min).
     *
     * @param client the SDK client
     * @param t the timings
     * @return the settings
     */
    static BatchSettings batching(OpenAIClient client, Timing t) {
        return BatchSettings.of(OpenAiBatches.of(client)).withMaxGatherAge(t.gatherAge()).withPollInterval(t.poll())
                .withLease(t.lease()).withMaxRequests(t.maxRequests());
    }

    /**
     * A Layover instance of the benchmark, not started.
     *
     * @param ds its pool
     * @param type the job type ({@link #docType}), the instance to enqueue with
     * @param client the SDK client
     * @param worker its name
     * @param threads its worker threads
     * @param t the batch timings
     * @return the instance
     */
    static Layover instance(DataSource ds, JobType<Doc> type, OpenAIClient client, String worker, int threads, Timing t) {
        return Layover.builder(ds)
                .register(type)
                .batching(KEY, batching(client, t))
                .threads(threads)
                .workerName(worker)
                .pollInterval(Duration.ofMillis(100))
                // a killed worker's picked jobs are taken for dead after 8 s (default 40 s)
                .heartbeat(Duration.ofSeconds(2), 4)
                .migrate(false)
                .shutdownMaxWait(Duration.ofSeconds(5))
                .build();
    }

    /**
     * @param jdbcUrl the database
     * @param name the pool's name
     * @param size its size (also its idle minimum, Hikari's default)
     * @return a pool on the database
     */
    static HikariDataSource pool(String jdbcUrl, String name, int size) {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(jdbcUrl);
        cfg.setMaximumPoolSize(size);
        cfg.setPoolName(name);
        return new HikariDataSource(cfg);
    }

    /**
     * @param args see the class description
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        String jdbcUrl = args[0];
        URI fake = URI.create(args[1]);
        String name = args[2];
        int threads = Integer.parseInt(args[3]);
        Path stop = Path.of(args[4]);
        Timing timing = Timing.of(args, 5);
        OpenAIClient client = client(fake);
        try (HikariDataSource ds = pool(jdbcUrl, name, threads + 4)) {
            Layover layover = instance(ds, docType(ds, client, name), client, name, threads, timing).start();
            System.out.println("ready " + name);
            while (!Files.exists(stop)) {
                Thread.sleep(20);
            }
            layover.stop();
        }
        System.exit(0);
    }
}
