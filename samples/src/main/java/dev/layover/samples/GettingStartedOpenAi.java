package dev.layover.samples;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.console.ConsoleOptions;
import dev.layover.console.ReplayConsole;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.provider.FakeProvider;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Summaries by OpenAI as background jobs in Postgres that survive 429s. Run with {@code --fake}
 * for a local fake OpenAI (no key, nothing leaves the machine), else with {@code OPENAI_API_KEY}
 * (and {@code OPENAI_BASE_URL} for another OpenAI-compatible server). The database: {@code
 * --jdbc-url URL} or {@code LAYOVER_JDBC_URL}, else an embedded Postgres.
 */
public final class GettingStartedOpenAi {

    private static final Logger log = LoggerFactory.getLogger(GettingStartedOpenAi.class);

    /** A job's arguments: the document to summarize. */
    public record Summarize(String documentId, String text) {}

    /** The job type: one call to OpenAI per document; whatever the SDK throws escapes. */
    public static JobType<Summarize> summarize(OpenAIClient openai, Map<String, String> summaries) {
        return JobType.builder("summarize", Summarize.class)
                .providerKey("openai:gpt-4o-mini") // its breaker, cooldown and bucket are fleet-wide
                .handler((args, ctx) -> {
                    String summary = openai.chat().completions().create(ChatCompletionCreateParams.builder()
                            .model("gpt-4o-mini").addUserMessage("Summarize: " + args.text()).build())
                            .choices().get(0).message().content().orElse("");
                    summaries.put(args.documentId(), summary); // keyed by document: a second run is harmless
                    log.info("{} done: {}", args.documentId(), summary);
                    return Outcome.done();
                })
                .build();
    }

    /** An OpenAI client whose own retries are off: Layover is the only retry layer. */
    public static OpenAIClient client(String baseUrl, String apiKey) {
        return OpenAIOkHttpClient.builder().baseUrl(baseUrl).apiKey(apiKey).maxRetries(0).build();
    }

    /** Starts Layover on the database: migrates schema {@code layover}, then runs jobs. */
    public static Layover start(DataSource dataSource, JobType<Summarize> summarize) {
        return Layover.builder(dataSource)
                .register(summarize)
                .bucket("openai:gpt-4o-mini", BucketSettings.requestsPerMinute(500)) // your tier's limit
                .plugin(RecoverySweep.plugin()) // parked jobs come back when the breaker closes
                .metrics(new OutcomeLog()) // each outcome in the log as it happens
                .start();
    }

    /** What Layover decided after each run that did not end done (in production: MicrometerMetrics). */
    static final class OutcomeLog implements LayoverMetrics {
        @Override
        public void jobRescheduled(String jobType, String reason) {
            log.info("{}: rescheduled ({}), no attempt spent", jobType, reason);
        }

        @Override
        public void jobRetried(String jobType, String reason) {
            log.info("{}: retried ({}), one attempt spent", jobType, reason);
        }

        @Override
        public void jobParked(String jobType, String failureType) {
            log.info("{}: parked ({}), waiting in the console", jobType, failureType);
        }
    }

    /** Summarizes five documents with the console up; Enter stops it. */
    public static void main(String[] args) throws Exception {
        boolean fake = List.of(args).contains("--fake");
        String apiKey = fake ? "sk-fake" : System.getenv("OPENAI_API_KEY");
        if (apiKey == null) {
            System.err.println("Set OPENAI_API_KEY (and OPENAI_BASE_URL for another server), or run with --fake");
            return;
        }
        int at = List.of(args).indexOf("--jdbc-url");
        String jdbcUrl = at >= 0 ? args[at + 1] : System.getenv("LAYOVER_JDBC_URL");
        try (FakeProvider fakeOpenAi = fake ? FakeProvider.start() : null;
                EmbeddedPostgres embedded = jdbcUrl == null ? EmbeddedPostgres.start() : null) {
            String url = embedded != null ? embedded.getJdbcUrl("postgres", "postgres") : jdbcUrl;
            System.out.println("Database: " + url + "\n  psql \"" + url.substring("jdbc:".length()) + "\"");
            String baseUrl = fake ? fakeOpenAi.baseUri() + "/v1"
                    : System.getenv().getOrDefault("OPENAI_BASE_URL", "https://api.openai.com/v1");
            Map<String, String> summaries = new ConcurrentHashMap<>();
            JobType<Summarize> summarize = summarize(client(baseUrl, apiKey), summaries);
            HikariDataSource pool = new HikariDataSource();
            pool.setJdbcUrl(url);
            pool.setMaximumPoolSize(16); // Layover needs its threads (10) + 6
            try (pool; Layover layover = start(pool, summarize);
                    ReplayConsole console = ReplayConsole.start(layover, ConsoleOptions.defaults())) {
                System.out.println("Replay console: " + console.loginUrl());
                if (fake) {
                    fakeOpenAi.primary().throttleFirst(3); // three 429s (retry-after: 2 s), then summaries
                }
                for (int i = 1; i <= 5; i++) {
                    layover.enqueue(summarize, new Summarize("doc-" + i, "Document " + i + " of the getting started."));
                }
                System.out.println("Press Enter to stop.");
                System.in.read();
                System.out.println("Summaries: " + summaries);
            }
        }
    }
}
