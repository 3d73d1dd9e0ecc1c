package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.google.genai.Client;
import com.google.genai.types.HttpOptions;
import com.google.genai.types.HttpRetryOptions;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.metrics.MicrometerMetrics;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeBatches;
import dev.layover.testing.provider.FakeProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.bedrock.BedrockClient;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Deadline-aware batch routing end to end: a real Postgres, the fake provider's batch endpoints in
 * the providers' real shapes, and the real SDKs (retries off) under {@link OpenAiBatches},
 * {@link AnthropicBatches}, {@link GeminiBatches} and {@link BedrockBatches}. Every figure is read
 * back from the tables.
 */
@DatabaseTest
class BatchRoutingTest {

    record Doc(String id, String text) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    private final FakeProvider fake = FakeProvider.start();
    private final List<Layover> layovers = new ArrayList<>();
    private final AtomicInteger direct = new AtomicInteger();
    private final Map<String, String> answers = new ConcurrentHashMap<>();
    private final Set<String> directIds = ConcurrentHashMap.newKeySet();

    @AfterEach
    void stop() {
        layovers.forEach(Layover::stop);
        fake.close();
    }

    private OpenAIClient openAi() {
        return OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(fake.baseUri() + "/v1").maxRetries(0)
                .timeout(Duration.ofSeconds(10)).build();
    }

    private AnthropicClient anthropic() {
        return AnthropicOkHttpClient.builder().apiKey("test-key").baseUrl(fake.baseUri().toString()).maxRetries(0)
                .timeout(Duration.ofSeconds(10)).build();
    }

    private Client gemini() {
        return Client.builder().apiKey("fake-key").httpOptions(HttpOptions.builder().baseUrl(fake.baseUri().toString())
                .retryOptions(HttpRetryOptions.builder().attempts(1).httpStatusCodes(List.of()).build()).build()).build();
    }

    private BedrockBatches bedrock() {
        StaticCredentialsProvider credentials =
                StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG"));
        BedrockClient client = BedrockClient.builder().region(Region.US_EAST_1).credentialsProvider(credentials)
                .endpointOverride(fake.baseUri()).httpClient(UrlConnectionHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())).build();
        S3Client s3 = S3Client.builder().region(Region.US_EAST_1).credentialsProvider(credentials)
                .endpointOverride(java.net.URI.create(fake.baseUri() + "/s3")).forcePathStyle(true)
                .httpClient(UrlConnectionHttpClient.builder().build())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())).build();
        return BedrockBatches.builder(client, S3BatchStorage.of(s3)).modelId("anthropic.claude-3-5-haiku-20241022-v1:0")
                .roleArn("arn:aws:iam::000000000000:role/bedrock-batch")
                .location(java.net.URI.create("s3://layover-test/batches/")).build();
    }

    /** Anthropic Messages params as a line, the answer read from the Message's first text block. */
    private Batching<Doc> messagesLines(Map<String, Object> extra) {
        return Batching.<Doc>of(
                d -> {
                    Map<String, Object> body = new java.util.LinkedHashMap<>(extra);
                    body.put("max_tokens", 50);
                    body.put("messages", List.of(Map.of("role", "user", "content", "Summarise " + d.text())));
                    return body;
                },
                (d, r) -> {
                    answers.put(d.id(), r.json().path("content").path(0).path("text").asText());
                    return Outcome.done();
                });
    }

    /** A summary job type: by batch when deferrable, else its handler "calls" directly. */
    private JobType<Doc> type(JobPolicy policy, Batching<Doc> batching) {
        return JobType.builder("summary", Doc.class)
                .providerKey(d -> "openai:gpt-4o-mini")
                .policy(policy)
                .batchable(batching)
                .handler((d, ctx) -> {
                    direct.incrementAndGet();
                    directIds.add(d.id());
                    return Outcome.done();
                })
                .build();
    }

    private Batching<Doc> openAiLines() {
        return Batching.<Doc>of(
                d -> Map.of("model", "gpt-4o-mini", "max_tokens", 50,
                        "messages", List.of(Map.of("role", "user", "content", "Summarise " + d.text()))),
                (d, r) -> {
                    answers.put(d.id(), r.json().path("choices").path(0).path("message").path("content").asText());
                    return Outcome.done();
                });
    }

    private static BatchSettings fast(BatchTransport t) {
        return BatchSettings.of(t).withMaxGatherAge(Duration.ofMillis(300)).withPollInterval(Duration.ofMillis(200))
                .withLease(Duration.ofSeconds(2));
    }

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    private double lines(String kind) {
        Counter c = registry.find("layover.batch.lines").tag("kind", kind).counter();
        return c == null ? 0 : c.count();
    }

    private Layover start(TestDatabase db, JobType<Doc> type, BatchSettings settings) {
        Layover l = Layover.builder(db.dataSource()).threads(4).pollInterval(Duration.ofMillis(50))
                .metrics(MicrometerMetrics.of(registry))
                .shutdownMaxWait(Duration.ofSeconds(5)).register(type).batching("openai:*", settings).start();
        layovers.add(l);
        return l;
    }

    private static long left(TestDatabase db) {
        return db.count("select count(*) from layover.scheduled_tasks where task_name = 'summary'");
    }

    @Test
    void deferrableJobsGoByBatchWhileUrgentOnesAreCalledDirectly(TestDatabase db) {
        JobType<Doc> type = type(JobPolicy.defaults(), openAiLines());
        Layover l = start(db, type, fast(OpenAiBatches.of(openAi())));
        for (int i = 0; i < 30; i++) {
            l.enqueue(type, new Doc("d" + i, "document " + i), EnqueueOptions.key("d" + i).withDeadline(Duration.ofHours(2)));
        }
        for (int i = 0; i < 5; i++) {
            l.enqueue(type, new Doc("u" + i, "urgent " + i), EnqueueOptions.key("u" + i).withDeadline(Duration.ofMinutes(2)));
        }
        l.enqueue(type, new Doc("n0", "no deadline"), EnqueueOptions.key("n0"));
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(30, answers.size(), "every deferrable job answered by its batch line: " + answers.keySet());
        assertTrue(answers.keySet().stream().allMatch(id -> id.startsWith("d")), "only deferrable ones: " + answers.keySet());
        assertEquals(Set.of("u0", "u1", "u2", "u3", "u4", "n0"), directIds, "urgent jobs and the one without a deadline");
        assertEquals(6, direct.get());
        FakeBatches fb = fake.batches();
        assertEquals(0, fb.chargedMoreThanOnce(), "no line charged twice");
        long batches = db.count("select count(*) from layover.batch_status");
        assertEquals(batches, fb.created(), "every batch of Layover's was created once at the provider");
        assertEquals(30L, db.value("select sum(succeeded)::bigint from layover.batch_status where state = 'ended'"));
        assertEquals(0L, db.value("select coalesce(sum(pending), 0)::bigint from layover.batch_status"));
        assertTrue((Long) db.value("select sum(saved_tokens)::bigint from layover.batch_status") > 0, "a saving is shown");
        assertEquals(30L, db.count("""
                select count(*) from layover.job_history h
                join layover.batch_items i on i.task_name = h.job_type and i.task_instance = h.job_id
                where h.outcome = 'completed' and h.input_tokens > 0 and h.attempts = 0"""),
                "each batch job's history row has the line's tokens and no attempt spent");
        assertEquals(30.0, lines("gathered"), "metrics: jobs gathered");
        assertEquals(30.0, lines("submitted"));
        assertEquals(30.0, lines("collected"));
        docsQueriesAnswer(db);
    }

    /** Every query of docs/batches.md runs on the rows a real run left; the SELECTs find some. */
    private static void docsQueriesAnswer(TestDatabase db) {
        String doc;
        try {
            doc = Files.readString(Path.of("..", "docs", "batches.md"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Matcher m = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL).matcher(doc);
        int selects = 0;
        while (m.find()) {
            String q = m.group(1).strip();
            if (q.startsWith("SELECT")) {
                selects++;
                // the in-flight query finds nothing once every batch ended; the others find rows
                if (!q.contains("state IN ('open'")) {
                    assertFalse(db.rows(q).isEmpty(), "docs/batches.md query answers:\n" + q);
                } else {
                    db.rows(q);
                }
            } else {
                db.update(q);
            }
        }
        assertEquals(3, selects, "the doc's queries were found");
    }

    @Test
    void erroredLinesBecomeTheOutcomeADirectCallWouldHaveGiven(TestDatabase db) {
        JobType<Doc> type = type(JobPolicy.defaults().withMaxAttempts(2).withBackoff(Duration.ofMillis(1), Duration.ofMillis(5)),
                openAiLines());
        Layover l = start(db, type, fast(OpenAiBatches.of(openAi())));
        l.enqueue(type, new Doc("bad", "[fail:400] malformed"), EnqueueOptions.key("bad").withDeadline(Duration.ofHours(2)));
        l.enqueue(type, new Doc("flaky", "[fail:500] server trouble"), EnqueueOptions.key("flaky").withDeadline(Duration.ofHours(2)));
        l.enqueue(type, new Doc("fine", "all good"), EnqueueOptions.key("fine").withDeadline(Duration.ofHours(2)));
        Await.until(WAIT, "every job done or parked", () -> left(db) == 0);

        assertEquals(Set.of("fine"), answers.keySet());
        assertEquals(0, direct.get(), "no job was called directly");
        assertEquals("rejected", db.value("select failure_type from layover.dead_letters where job_id = 'bad'"));
        assertEquals("provider_unavailable", db.value("select failure_type from layover.dead_letters where job_id = 'flaky'"),
                "a 500 line is retried (by batch again) until its attempts run out");
        assertEquals(2, ((Number) db.value("select attempts from layover.dead_letters where job_id = 'flaky'")).intValue());
        assertEquals(2L, db.count("select count(*) from layover.batch_items where task_instance = 'flaky'"),
                "the retry went by batch again: a second item");
        assertEquals(1L, db.count("select count(*) from layover.batch_items where task_instance = 'bad'"));
    }

    @Test
    void expiredLinesGoBackToTheQueueWithoutSpendingAnAttempt(TestDatabase db) {
        JobType<Doc> type = type(JobPolicy.defaults(), openAiLines());
        fake.batches().expireNext();
        Layover l = start(db, type, fast(OpenAiBatches.of(openAi())));
        for (int i = 0; i < 10; i++) {
            l.enqueue(type, new Doc("d" + i, "document " + i), EnqueueOptions.key("d" + i).withDeadline(Duration.ofHours(3)));
        }
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(10, answers.size());
        assertEquals(0, direct.get());
        assertTrue(db.count("select count(*) from layover.batch_status where state = 'expired' and returned = 10") >= 1,
                "the first batch expired and gave its 10 jobs back");
        assertEquals(10L, db.count("select count(*) from layover.job_history where job_type = 'summary' and attempts = 0"),
                "no attempt spent by the expiry");
        assertEquals(20L, db.count("select count(*) from layover.batch_items"), "each job gathered twice");
    }

    @Test
    void aBatchStillRunningWithinTheRescueMarginIsCancelledAndItsJobsCalledDirectly(TestDatabase db) {
        JobType<Doc> type = type(JobPolicy.defaults(), openAiLines());
        fake.batches().processingDelay(Duration.ofHours(1)); // the provider is slow today
        BatchSettings s = fast(OpenAiBatches.of(openAi())).withExpectedCompletion(Duration.ofSeconds(3))
                .withRescueMargin(Duration.ofSeconds(2));
        Layover l = start(db, type, s);
        for (int i = 0; i < 5; i++) {
            l.enqueue(type, new Doc("d" + i, "document " + i), EnqueueOptions.key("d" + i).withDeadline(Duration.ofSeconds(8)));
        }
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(0, answers.size(), "no line came back");
        assertEquals(5, direct.get(), "every job was called directly before its deadline");
        assertEquals(0L, db.count("select count(*) from layover.dead_letters"), "none missed its deadline");
        assertEquals(1L, db.count("select count(*) from layover.batch_status where state = 'cancelled' and cancel_asked_at is not null"));
        assertEquals(0, fake.batches().chargedMoreThanOnce());
    }

    @Test
    void anthropicJobsWithoutADeadlineGoByBatchWithinTheirTolerance(TestDatabase db) {
        Batching<Doc> lines = Batching.<Doc>of(
                d -> Map.of("model", "claude-haiku", "max_tokens", 50,
                        "messages", List.of(Map.of("role", "user", "content", "Summarise " + d.text()))),
                (d, r) -> {
                    answers.put(d.id(), r.json().path("content").path(0).path("text").asText());
                    return Outcome.done();
                }).tolerance(Duration.ofHours(6));
        JobType<Doc> type = type(JobPolicy.defaults(), lines);
        Layover l = start(db, type, fast(AnthropicBatches.of(anthropic())));
        for (int i = 0; i < 8; i++) {
            l.enqueue(type, new Doc("a" + i, "document " + i), EnqueueOptions.key("a" + i));
        }
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(8, answers.size());
        assertTrue(answers.values().stream().noneMatch(String::isEmpty), "each answer read from its Message: " + answers);
        assertEquals(0, direct.get());
        assertEquals("anthropic", db.value("select provider from layover.batch_status limit 1"));
    }

    @Test
    void geminiJobsGoByTheGeminiBatchMode(TestDatabase db) {
        Batching<Doc> lines = Batching.<Doc>of(
                d -> Map.of("contents", List.of(Map.of("role", "user", "parts", List.of(Map.of("text", "Summarise " + d.text())))),
                        "generationConfig", Map.of("maxOutputTokens", 50)),
                (d, r) -> {
                    answers.put(d.id(), r.json().at("/candidates/0/content/parts/0/text").asText());
                    return Outcome.done();
                });
        JobType<Doc> type = type(JobPolicy.defaults(), lines);
        Layover l = start(db, type, fast(GeminiBatches.of(gemini(), "gemini-2.5-flash")));
        for (int i = 0; i < 8; i++) {
            l.enqueue(type, new Doc("g" + i, "document " + i), EnqueueOptions.key("g" + i).withDeadline(Duration.ofHours(6)));
        }
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(8, answers.size());
        assertTrue(answers.values().stream().allMatch(a -> a.contains("Summarise document")), "answers: " + answers);
        assertEquals(0, direct.get());
        assertEquals("gemini", db.value("select provider from layover.batch_status limit 1"));
        assertEquals(0, fake.batches().chargedMoreThanOnce());
    }

    @Test
    void bedrockJobsGoByBatchInferenceThroughS3(TestDatabase db) {
        fake.batches().bedrockMinimumRecords(1);
        JobType<Doc> type = type(JobPolicy.defaults(), messagesLines(Map.of("anthropic_version", "bedrock-2023-05-31")));
        Layover l = start(db, type, fast(bedrock()));
        for (int i = 0; i < 8; i++) {
            l.enqueue(type, new Doc("b" + i, "document " + i), EnqueueOptions.key("b" + i).withDeadline(Duration.ofHours(30)));
        }
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(8, answers.size());
        assertTrue(answers.values().stream().noneMatch(String::isEmpty), "each answer read from its output: " + answers);
        assertEquals(0, direct.get());
        assertEquals("bedrock", db.value("select provider from layover.batch_status limit 1"));
        assertEquals(8L, db.count("""
                select count(*) from layover.job_history h
                join layover.batch_items i on i.task_name = h.job_type and i.task_instance = h.job_id
                where h.outcome = 'completed' and h.input_tokens > 0"""), "the output's usage reached the history");
    }

    @Test
    void aBedrockJobBelowItsMinimumFailsAndItsJobsAreCalledDirectly(TestDatabase db) {
        // Bedrock's default minimum is 100 records: 6 jobs make a batch it refuses
        JobType<Doc> type = type(JobPolicy.defaults(), messagesLines(Map.of("anthropic_version", "bedrock-2023-05-31")));
        Layover l = start(db, type, fast(bedrock()));
        for (int i = 0; i < 6; i++) {
            l.enqueue(type, new Doc("b" + i, "document " + i), EnqueueOptions.key("b" + i).withDeadline(Duration.ofHours(30)));
        }
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(0, answers.size());
        assertEquals(6, direct.get(), "the refused batch's jobs were called directly");
        assertEquals(1L, db.count("select count(*) from layover.batch_status where state = 'failed'"));
    }

    @Test
    void anInstanceThatTakesOverALostSubmitRejoinsTheBatchInsteadOfSubmittingAgain(TestDatabase db) {
        JobType<Doc> type = type(JobPolicy.defaults(), openAiLines());
        FakeBatches fb = fake.batches().holdCreate(); // the first create is made, its reply held
        Layover first = start(db, type, fast(OpenAiBatches.of(openAi())));
        for (int i = 0; i < 12; i++) {
            first.enqueue(type, new Doc("d" + i, "document " + i), EnqueueOptions.key("d" + i).withDeadline(Duration.ofHours(2)));
        }
        Await.until(WAIT, "the create held", () -> fb.heldCreates() == 1);
        Layover second = start(db, type, fast(OpenAiBatches.of(openAi())));
        // the first instance's lease (2 s) runs out while its reply is held: the second takes over
        Await.until(WAIT, "the batch rejoined", () -> db.count(
                "select count(*) from layover.batch_status where state in ('submitted', 'ended') and submit_attempts >= 2") == 1);
        fb.releaseCreate();
        Await.until(WAIT, "every job done", () -> left(db) == 0);

        assertEquals(1, fb.created(), "the batch was created once at the provider");
        assertEquals(12, answers.size());
        assertEquals(0, fb.chargedMoreThanOnce());
        assertEquals(0, direct.get());
        assertTrue(second.isRunning());
    }
}
