package dev.layover.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.console.ConsoleOptions;
import dev.layover.console.ReplayConsole;
import dev.layover.core.Enqueued;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The getting-started programs (docs/getting-started.md), as written there, against local servers
 * speaking OpenAI's and Anthropic's real answers and 429s.
 */
@DatabaseTest
class GettingStartedTest {

    @Test
    void theOpenAiJobWaitsOutTheProvidersRateLimitWithoutSpendingAttemptsAndParksARefusedKey(TestDatabase db)
            throws Exception {
        Map<String, String> summaries = new ConcurrentHashMap<>();
        try (FakeProvider fake = FakeProvider.start()) {
            fake.primary().throttledRetryAfter(Duration.ofSeconds(1)).phase(FakeProvider.Phase.THROTTLED);
            JobType<GettingStartedOpenAi.Summarize> summarize = GettingStartedOpenAi.summarize(
                    GettingStartedOpenAi.client(fake.baseUri() + "/v1", "sk-test"), summaries);
            try (Layover layover = GettingStartedOpenAi.start(db.dataSource(), summarize);
                    ReplayConsole console = ReplayConsole.start(layover, ConsoleOptions.defaults())) {
                List<Enqueued> jobs = new ArrayList<>();
                for (int i = 1; i <= 4; i++) {
                    jobs.add(layover.enqueue(summarize, new GettingStartedOpenAi.Summarize("doc-" + i, "text " + i)));
                }
                Await.until(Duration.ofSeconds(30), "the provider answered 429s", () -> fake.primary().rateLimited() >= 2);
                fake.primary().phase(FakeProvider.Phase.NORMAL);
                Await.until(Duration.ofSeconds(60), "every document summarized", () -> summaries.size() == 4);
                assertEquals("<ECHO> Summarize: text 3", summaries.get("doc-3"));
                layover.awaitCompletions(Duration.ofSeconds(10));
                Await.until(Duration.ofSeconds(10), "history of the four jobs",
                        () -> db.count("select count(*) from layover.job_history where job_type = 'summarize'") == 4);
                assertEquals(0, db.count("select coalesce(sum(attempts), 0) from layover.job_history "
                        + "where job_type = 'summarize'"), "a 429 spends no attempt");
                assertTrue(db.count("select sum(reschedules) from layover.job_history where job_type = 'summarize'") >= 1,
                        "the throttled jobs were rescheduled");

                // a revoked key: parked at once, waiting in the console for a person
                fake.primary().phase(FakeProvider.Phase.UNAUTHORIZED);
                Enqueued refused = layover.enqueue(summarize, new GettingStartedOpenAi.Summarize("doc-5", "text 5"));
                Await.until(Duration.ofSeconds(30), "the job parked",
                        () -> db.count("select count(*) from layover.dead_letters where job_id = ?", refused.id()) == 1);
                assertEquals("auth_refused",
                        db.value("select failure_type from layover.dead_letters where job_id = ?", refused.id()));
                HttpResponse<String> page = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                                URI.create(console.url() + "api/dead-letters?failureType=auth_refused"))
                        .header("Authorization", "Bearer " + console.token()).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(200, page.statusCode());
                assertTrue(page.body().contains(refused.id()), page.body());
                assertEquals(1, db.count("select count(*) from layover.scheduled_tasks where task_name = 'layover-recovery-sweep'"),
                        "the recovery sweep runs");
            }
        }
    }

    @Test
    void theAnthropicJobLearnsTheKeysPaceFromA429(TestDatabase db) throws Exception {
        Map<String, String> summaries = new ConcurrentHashMap<>();
        try (FakeAnthropic fake = new FakeAnthropic()) {
            fake.throttled(true);
            JobType<GettingStartedAnthropic.Summarize> summarize = GettingStartedAnthropic.summarize(
                    GettingStartedAnthropic.client(fake.baseUrl(), "sk-ant-test"), summaries);
            try (Layover layover = GettingStartedAnthropic.start(db.dataSource(), summarize)) {
                for (int i = 1; i <= 3; i++) {
                    layover.enqueue(summarize, new GettingStartedAnthropic.Summarize("doc-" + i, "text " + i));
                }
                Await.until(Duration.ofSeconds(30), "a 429 taught the key a pace", () -> db.count(
                        "select count(*) from layover.buckets where provider_key = 'anthropic:claude-haiku-4-5' "
                                + "and learned_until is not null") == 1);
                Number pace = (Number) db.value("select requests_per_minute from layover.buckets "
                        + "where provider_key = 'anthropic:claude-haiku-4-5'");
                assertNotNull(pace);
                assertEquals(57.0, pace.doubleValue(), 0.001, "95 % of the stated 60 requests per minute");
                fake.throttled(false);
                Await.until(Duration.ofSeconds(60), "every document summarized", () -> summaries.size() == 3);
                assertEquals("<SUMMARY> Summarize: text 2", summaries.get("doc-2"));
                layover.awaitCompletions(Duration.ofSeconds(10));
                Await.until(Duration.ofSeconds(10), "history of the three jobs", () -> db.count(
                        "select count(*) from layover.job_history where job_type = 'summarize-claude'") == 3);
                assertEquals(0, db.count("select coalesce(sum(attempts), 0) from layover.job_history "
                        + "where job_type = 'summarize-claude'"), "a 429 spends no attempt");
                assertTrue(fake.rateLimited() >= 1);
            }
        }
    }
}
