package dev.layover.samples.interactive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.samples.GettingStartedOpenAi;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The chat endpoint beside a backlog of background jobs on one OpenAI key limited to 10 requests/s
 * (the fake counts refused calls): every question is answered, none meets a 429, the backlog is
 * done, and the time series counts the interactive calls.
 */
@DatabaseTest
class ChatEndpointTest {

    private static final String KEY = "openai:gpt-4o-mini";

    @Test
    void questionsAreAnsweredFirstWhileTheBacklogRunsAndNoneMeetsA429(TestDatabase db) throws Exception {
        Map<String, String> summaries = new ConcurrentHashMap<>();
        try (FakeProvider fake = FakeProvider.start()) {
            fake.primary().limitPerSecond(10);
            OpenAIClient openai = GettingStartedOpenAi.client(fake.baseUri() + "/v1", "sk-test");
            JobType<GettingStartedOpenAi.Summarize> summarize = GettingStartedOpenAi.summarize(openai, summaries);
            Layover layover = Layover.builder(db.dataSource()).register(summarize).threads(4)
                    .pollInterval(Duration.ofMillis(100))
                    .bucket(KEY, BucketSettings.requestsPerSecond(8).withBurst(Duration.ofMillis(500)))
                    .start();
            try (ChatEndpoint chat = ChatEndpoint.start(layover.interactive(), openai, KEY)) {
                for (int i = 0; i < 40; i++) {
                    layover.enqueue(summarize, new GettingStartedOpenAi.Summarize("doc-" + i, "text " + i));
                }
                HttpClient http = HttpClient.newHttpClient();
                Await.until(Duration.ofSeconds(10), "the backlog began", () -> summaries.size() >= 3);
                for (int i = 0; i < 8; i++) {
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(chat.url() + "?q="
                            + URLEncoder.encode("question " + i, StandardCharsets.UTF_8))).build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, r.statusCode(), r.body());
                    assertEquals("<ECHO> question " + i, r.body());
                }
                Await.until(Duration.ofSeconds(30), "the backlog is done", () -> summaries.size() == 40);
                assertEquals(0, fake.primary().rateLimited(), "no call met a 429, the questions' nor the jobs'");
            } finally {
                layover.stop(); // writes the time series' counts
            }
            assertEquals(8L, db.count("select coalesce(sum(amount), 0) from layover.time_series_counts "
                    + "where bucket_seconds = 10 and job_type = '(interactive)' and provider_key = ? "
                    + "and counter = 'interactive_call' and detail = 'done'", KEY));
            assertTrue(db.count("select coalesce(sum(amount), 0) from layover.time_series_counts where bucket_seconds = 10 "
                    + "and job_type = '(interactive)' and counter = 'output_tokens'") > 0, "the reported usage");
        }
    }
}
