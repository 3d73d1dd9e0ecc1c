package dev.layover.samples;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.Model;
import com.anthropic.models.messages.TextBlock;
import dev.layover.console.ConsoleOptions;
import dev.layover.console.ReplayConsole;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.dlq.RecoverySweep;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * docs/getting-started.md, with Anthropic: the same summary job on anthropic-java (its own
 * retries off; anthropic-java would otherwise sleep any retry-after, even a day's). No bucket:
 * the learned pace instead — a 429 whose headers state the key's request limit
 * ({@code anthropic-ratelimit-requests-limit} with {@code -remaining: 0}) gives the key a
 * fleet-wide pace at 95 % of it for 10 minutes. Run by {@code GettingStartedTest}.
 */
public final class GettingStartedAnthropic {

    /**
     * The job's arguments.
     *
     * @param documentId the document
     * @param text what to summarize
     */
    public record Summarize(String documentId, String text) {}

    /**
     * The job type: one call to Anthropic per document; whatever the SDK throws escapes.
     *
     * @param claude the Anthropic client, its own retries off
     * @param summaries where summaries go (the application's own storage)
     * @return the job type
     */
    public static JobType<Summarize> summarize(AnthropicClient claude, Map<String, String> summaries) {
        return JobType.builder("summarize-claude", Summarize.class)
                .providerKey("anthropic:claude-haiku-4-5") // its breaker, cooldown and learned pace are fleet-wide
                .handler((args, ctx) -> {
                    String summary = claude.messages().create(MessageCreateParams.builder()
                                    .model(Model.CLAUDE_HAIKU_4_5).maxTokens(512)
                                    .addUserMessage("Summarize: " + args.text()).build())
                            .content().stream().flatMap(b -> b.text().stream()).map(TextBlock::text)
                            .collect(Collectors.joining());
                    summaries.put(args.documentId(), summary); // keyed by document: a second run is harmless
                    return Outcome.done();
                })
                .build();
    }

    /**
     * Starts Layover: migrates schema {@code layover}, then runs jobs.
     *
     * @param dataSource the application's Postgres
     * @param summarize the job type
     * @return the running instance
     */
    public static Layover start(DataSource dataSource, JobType<Summarize> summarize) {
        return Layover.builder(dataSource)
                .register(summarize)
                .plugin(RecoverySweep.plugin()) // parked jobs come back when the breaker closes
                .start();
    }

    /**
     * @param baseUrl the API, e.g. {@code https://api.anthropic.com}
     * @param apiKey the provider key
     * @return a client whose own retries are off: Layover is the only retry layer
     */
    public static AnthropicClient client(String baseUrl, String apiKey) {
        return AnthropicOkHttpClient.builder().baseUrl(baseUrl).apiKey(apiKey).maxRetries(0).build();
    }

    /**
     * Summarizes one document, with the console up, until Enter is pressed.
     *
     * @param args {@code --jdbc-url URL} (or {@code LAYOVER_JDBC_URL}); default: an embedded Postgres.
     *     {@code ANTHROPIC_API_KEY} is read from the environment, {@code ANTHROPIC_BASE_URL} too
     *     (default {@code https://api.anthropic.com})
     * @throws Exception when it cannot run
     */
    public static void main(String[] args) throws Exception {
        String baseUrl = System.getenv().getOrDefault("ANTHROPIC_BASE_URL", "https://api.anthropic.com");
        Map<String, String> summaries = new ConcurrentHashMap<>();
        JobType<Summarize> summarize = summarize(client(baseUrl, System.getenv("ANTHROPIC_API_KEY")), summaries);
        try (SampleDatabase db = SampleDatabase.open(args, 16);
                Layover layover = start(db.dataSource(), summarize);
                ReplayConsole console = ReplayConsole.start(layover, ConsoleOptions.defaults().withPort(7070))) {
            System.out.println("Replay console: " + console.loginUrl());
            layover.enqueue(summarize, new Summarize("doc-1", "Layover is a job queue on Postgres."));
            System.out.println("Press Enter to stop; summaries so far are printed.");
            System.in.read();
            System.out.println(summaries);
        }
    }
}
