package dev.layover.core.batch;

import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * A Layover worker with batching in its own JVM, for {@link BatchKillTest}: job type
 * {@code summary} goes by batch through {@link OpenAiBatches} against the fake provider. Runs until
 * killed.
 *
 * <p>Arguments: JDBC URL, fake provider URL, worker name.
 */
public final class BatchWorkerMain {

    /** A summary job's args. */
    public record Doc(String id, String text) {}

    private BatchWorkerMain() {}

    /** The job type both processes register; {@code onLine} sees each answered job, {@code onDirect} each direct call. */
    static JobType<Doc> summaryType(BiConsumer<String, String> onLine, Runnable onDirect) {
        return JobType.builder("summary", Doc.class)
                .providerKey(d -> "openai:gpt-4o-mini")
                .batchable(Batching.<Doc>of(
                        d -> Map.of("model", "gpt-4o-mini", "max_tokens", 50,
                                "messages", List.of(Map.of("role", "user", "content", "Summarise " + d.text()))),
                        (d, r) -> {
                            onLine.accept(d.id(), r.body());
                            return Outcome.done();
                        }))
                .handler((d, ctx) -> {
                    onDirect.run();
                    return Outcome.done();
                })
                .build();
    }

    /** The batching both processes configure: short gathers, polls and leases. */
    static BatchSettings settings(String fakeUrl) {
        return BatchSettings.of(OpenAiBatches.of(OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(fakeUrl + "/v1")
                        .maxRetries(0).timeout(Duration.ofSeconds(60)).build()))
                .withMaxGatherAge(Duration.ofMillis(300)).withPollInterval(Duration.ofMillis(200))
                .withLease(Duration.ofSeconds(2));
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(5);
        HikariDataSource ds = new HikariDataSource(cfg);
        Layover layover = Layover.builder(ds)
                .register(summaryType((id, body) -> System.out.println("answered " + id),
                        () -> System.out.println("called directly")))
                .batching("openai:*", settings(args[1]))
                .workerName(args[2])
                .threads(2)
                .pollInterval(Duration.ofMillis(50))
                .start();
        System.out.println("started " + args[2]);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
