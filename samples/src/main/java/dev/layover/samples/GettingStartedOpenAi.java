package dev.layover.samples;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.console.ConsoleOptions;
import dev.layover.console.ReplayConsole;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.dlq.RecoverySweep;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * docs/getting-started.md: OpenAI jobs that survive 429s. A summary job calls the real openai-java
 * client (its own retries off); whatever the SDK throws escapes, and Layover's default classifier
 * decides: a 429 reschedules the job without spending an attempt and cools the key down for the
 * whole fleet, a 5xx retries it with backoff, a broken key or request parks it. A bucket keeps
 * the fleet under the key's limit; parked jobs come back by themselves when the key's breaker
 * closes (the recovery sweep); the console shows all of it. Run by {@code GettingStartedTest}.
 */
public final class GettingStartedOpenAi {

    /**
     * The job's arguments.
     *
     * @param documentId the document
     * @param text what to summarize
     */
    public record Summarize(String documentId, String text) {}

    /**
     * The job type: one call to OpenAI per document. Nothing is caught: a 429, a 5xx, a timeout
     * escape as openai-java's exceptions, and Layover's default classifier turns them into outcomes.
     *
     * @param openai the OpenAI client, its own retries off
     * @param summaries where summaries go (the application's own storage)
     * @return the job type
     */
    public static JobType<Summarize> summarize(OpenAIClient openai, Map<String, String> summaries) {
        return JobType.builder("summarize", Summarize.class)
                .providerKey("openai:gpt-4o-mini") // its breaker, cooldown and bucket are fleet-wide
                .handler((args, ctx) -> {
                    String summary = openai.chat().completions().create(ChatCompletionCreateParams.builder()
                            .model("gpt-4o-mini").addUserMessage("Summarize: " + args.text()).build())
                            .choices().get(0).message().content().orElse("");
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
                .bucket("openai:gpt-4o-mini", BucketSettings.requestsPerMinute(500)) // your tier's limit
                .plugin(RecoverySweep.plugin()) // parked jobs come back when the breaker closes
                .start();
    }

    /**
     * @param baseUrl the API, e.g. {@code https://api.openai.com/v1}
     * @param apiKey the provider key
     * @return a client whose own retries are off: Layover is the only retry layer
     */
    public static OpenAIClient client(String baseUrl, String apiKey) {
        return OpenAIOkHttpClient.builder().baseUrl(baseUrl).apiKey(apiKey).maxRetries(0).build();
    }

    /**
     * Summarizes one document, with the console up, until Enter is pressed.
     *
     * @param args {@code --jdbc-url URL} (or {@code LAYOVER_JDBC_URL}); default: an embedded Postgres.
     *     {@code OPENAI_API_KEY} is read from the environment, {@code OPENAI_BASE_URL} too (default
     *     {@code https://api.openai.com/v1})
     * @throws Exception when it cannot run
     */
    public static void main(String[] args) throws Exception {
        String baseUrl = System.getenv().getOrDefault("OPENAI_BASE_URL", "https://api.openai.com/v1");
        Map<String, String> summaries = new ConcurrentHashMap<>();
        JobType<Summarize> summarize = summarize(client(baseUrl, System.getenv("OPENAI_API_KEY")), summaries);
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
