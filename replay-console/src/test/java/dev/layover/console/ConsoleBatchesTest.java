package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.batch.Batching;
import dev.layover.core.batch.OpenAiBatches;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The batch endpoints ({@code GET /api/batches}, {@code GET /api/batches/{id}}, issue 24): batches
 * a real Layover gathered and sent to the fake provider's batch endpoints through the real OpenAI
 * SDK, read back with their counts, saving and lines, and the job page's batch; fixture rows for
 * the filters, the pages and the masking; bad input answered 4xx, never 5xx.
 */
@DatabaseTest
class ConsoleBatchesTest {

    record Doc(String id, String text) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    private FakeProvider fake;
    private final List<Layover> layovers = new ArrayList<>();
    private ReplayConsole console;
    private ApiClient api;

    @AfterEach
    void stop() {
        if (console != null) {
            console.close();
        }
        layovers.forEach(Layover::stop);
        if (fake != null) {
            fake.close();
        }
    }

    private void console(TestDatabase db) {
        console = ReplayConsole.start(db.dataSource(), Fixtures.options());
        api = new ApiClient(console);
    }

    /** A summary job type that goes by OpenAI batch when its deadline allows; its handler counts direct calls. */
    static JobType<Doc> summary(AtomicInteger direct) {
        return JobType.builder("summary", Doc.class)
                .providerKey(d -> "openai:gpt-4o-mini")
                .batchable(Batching.<Doc>of(
                        d -> Map.of("model", "gpt-4o-mini", "max_tokens", 50,
                                "messages", List.of(Map.of("role", "user", "content", "Summarise " + d.text()))),
                        (d, line) -> Outcome.done()))
                .handler((d, ctx) -> {
                    direct.incrementAndGet();
                    return Outcome.done();
                })
                .build();
    }

    /**
     * A Layover (not started) batching {@code openai:*} through the fake provider with fast loop
     * settings; the caller enqueues, then starts it, so that the jobs are gathered into one batch.
     */
    static Layover batchingLayover(TestDatabase db, FakeProvider fake, JobType<Doc> type) {
        BatchSettings settings = BatchSettings.of(OpenAiBatches.of(OpenAIOkHttpClient.builder().apiKey("sk-test")
                        .baseUrl(fake.baseUri() + "/v1").maxRetries(0).timeout(Duration.ofSeconds(10)).build()))
                .withMaxGatherAge(Duration.ofMillis(300)).withPollInterval(Duration.ofMillis(200))
                .withLease(Duration.ofSeconds(2));
        return Layover.builder(db.dataSource()).threads(2).pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5)).register(type).batching("openai:*", settings).build();
    }

    /**
     * Inserts a batch row as core's batch loop would have left it (a test fixture: the architecture
     * test's table owners cover main code only); its provider is the key's part before {@code :}.
     */
    static long batch(TestDatabase db, String key, String state, int lines, int succeeded, int errored, int returned,
            long tokens, String lastError) {
        boolean finished = List.of("ended", "expired", "cancelled", "failed").contains(state);
        return ((Number) db.value("""
                INSERT INTO layover.batches (provider_key, provider, state, lines, bytes, succeeded, errored, returned,
                                             input_tokens, output_tokens, discount, last_error, created_at, finished_at)
                VALUES (?, split_part(?, ':', 1), ?, ?, ? * 120, ?, ?, ?, ?, ?, 0.5, ?, now() - interval '2 hours',
                        CASE WHEN ? THEN now() - interval '1 hour' END)
                RETURNING id""", key, key, state, lines, lines, succeeded, errored, returned, tokens, tokens, lastError,
                finished)).longValue();
    }

    /** Inserts {@code n} succeeded lines of jobs {@code <prefix>-1..n} (gone: done) into a batch. */
    static void lines(TestDatabase db, long batchId, String prefix, int n) {
        db.update("""
                INSERT INTO layover.batch_items (batch_id, task_name, task_instance, request, state, result_kind,
                                                 result_status, result, input_tokens, output_tokens, answered_at)
                SELECT ?, 'summary', ? || '-' || g, '{"model":"gpt-4o-mini"}', 'result', 'succeeded', 200, '{}', 10, 5,
                       now()
                FROM generate_series(1, ?) g""", batchId, prefix, n);
    }

    @Test
    void batchesTheEngineMadeAreShownWithTheirCountsLinesSavingAndJobs(TestDatabase db) {
        fake = FakeProvider.start();
        fake.batches().manual(); // submitted batches stay running until the test completes them
        AtomicInteger direct = new AtomicInteger();
        JobType<Doc> type = summary(direct);
        Layover l = batchingLayover(db, fake, type);
        layovers.add(l);
        for (int i = 0; i < 4; i++) {
            l.enqueue(type, new Doc("d" + i, "document " + i), EnqueueOptions.key("d" + i).withDeadline(Duration.ofHours(2)));
        }
        l.enqueue(type, new Doc("bad", "[fail:400] malformed"), EnqueueOptions.key("bad").withDeadline(Duration.ofHours(2)));
        l.start();
        console(db);
        Await.until(WAIT, "the batch submitted", () -> db.count(
                "select count(*) from layover.batch_status where state = 'submitted' and lines = 5") == 1);

        JsonNode list = api.get("/api/batches").json();
        assertEquals(1, list.get("items").size(), list.toString());
        JsonNode b = list.at("/items/0");
        long id = b.get("id").asLong();
        assertEquals("submitted", b.get("state").asText());
        assertEquals("openai:gpt-4o-mini", b.get("providerKey").asText());
        assertEquals("openai", b.get("provider").asText());
        assertEquals("lo-batch-" + id, b.get("ref").asText());
        assertEquals(5, b.get("lines").asInt());
        assertEquals(5, b.get("pending").asInt());
        assertEquals(0, b.get("succeeded").asInt());
        assertTrue(b.get("providerBatchId").asText().startsWith("batch_"), b.toString());
        assertTrue(b.get("ageMs").asLong() > 0, b.toString());
        assertEquals("openai:gpt-4o-mini", list.at("/inFlight/0/providerKey").asText());
        assertEquals("submitted", list.at("/inFlight/0/state").asText());
        assertEquals(5, list.at("/inFlight/0/pending").asLong());

        // a job waiting for its line: the job page names its batch, the jobs page says why it waits
        JsonNode job = api.get("/api/job-runs/summary/d0").json();
        assertEquals(id, job.at("/queued/batchId").asLong(), job.toString());
        assertEquals("gathered", job.at("/queued/batchItemState").asText());
        assertEquals("batch", job.at("/queued/why").asText());
        assertEquals(id, job.at("/batches/0/batchId").asLong());
        assertEquals("submitted", job.at("/batches/0/batchState").asText());
        assertEquals(5, api.get("/api/jobs?why=batch").json().get("items").size());

        JsonNode running = api.get("/api/batches/" + id).json();
        assertEquals(5, running.get("items").size());
        assertTrue(running.get("items").findValues("queued").stream().allMatch(JsonNode::asBoolean), running.toString());
        assertTrue(running.get("items").findValues("state").stream().allMatch(s -> s.asText().equals("gathered")));

        fake.batches().completeAll();
        Await.until(WAIT, "every job done or parked",
                () -> db.count("select count(*) from layover.scheduled_tasks where task_name = 'summary'") == 0);
        Await.until(WAIT, "the batch ended", () -> db.count(
                "select count(*) from layover.batch_status where id = ? and state = 'ended'", id) == 1);

        JsonNode done = api.get("/api/batches/" + id).json();
        JsonNode row = done.get("batch");
        assertEquals("ended", row.get("state").asText());
        assertEquals(4, row.get("succeeded").asInt());
        assertEquals(1, row.get("errored").asInt());
        assertEquals(0, row.get("pending").asInt());
        assertNotNull(row.get("finishedAt").textValue());
        long saved = row.get("savedTokens").asLong();
        assertTrue(saved > 0, "a saving is shown: " + row);
        assertEquals(db.value("select saved_tokens from layover.batch_status where id = ?", id), saved);
        assertEquals(fake.batches().inputTokens(), row.get("inputTokens").asLong(), "the tokens the lines reported");
        JsonNode items = done.get("items");
        assertEquals(5, items.size());
        long inputs = 0;
        for (JsonNode i : items) {
            assertEquals("summary", i.get("jobType").asText());
            assertEquals("result", i.get("state").asText());
            assertFalse(i.get("queued").asBoolean(), "the job is gone: " + i);
            if (i.get("jobId").asText().equals("bad")) {
                assertEquals("errored", i.get("resultKind").asText());
                assertEquals(400, i.get("resultStatus").asInt());
                assertTrue(i.get("error").asText().contains("invalid_request_error"), i.toString());
            } else {
                assertEquals("succeeded", i.get("resultKind").asText());
                assertEquals(200, i.get("resultStatus").asInt());
                assertTrue(i.get("error").isNull());
                inputs += i.get("inputTokens").asLong();
            }
        }
        assertEquals(row.get("inputTokens").asLong(), inputs);
        assertEquals(0, api.get("/api/batches").json().get("inFlight").size());
        assertEquals(0, direct.get(), "no job was called directly");

        // finished: the job is no longer queued, its page still shows the batch it went by
        JsonNode finished = api.get("/api/job-runs/summary/d0").json();
        assertTrue(finished.get("queued").isNull());
        assertEquals(id, finished.at("/batches/0/batchId").asLong());
        assertEquals("succeeded", finished.at("/batches/0/resultKind").asText());
        assertEquals("completed", finished.at("/runs/0/outcome").asText());
        assertEquals("rejected", api.get("/api/job-runs/summary/bad").json().at("/deadLetters/0/failureType").asText());
    }

    @Test
    void batchesAreListedNewestFirstFilteredByStateAndKeyAndPaged(TestDatabase db) {
        console(db);
        long a = batch(db, "openai:gpt-4o", "ended", 10, 9, 1, 0, 1000, null);
        long b = batch(db, "anthropic:claude", "expired", 4, 0, 0, 4, 0, null);
        long c = batch(db, "openai:gpt-4o", "submitted", 6, 0, 0, 0, 0, null);
        long d = batch(db, "openai:gpt-4o-mini", "open", 2, 0, 0, 0, 0, null);

        JsonNode all = api.get("/api/batches").json();
        assertEquals(List.of(d, c, b, a), ids(all.get("items")), "newest first");
        JsonNode ended = all.get("items").get(3);
        assertEquals(1000, ended.get("savedTokens").asLong(), "(1000 + 1000) x 0.5");
        assertEquals(0, ended.get("pending").asInt());
        assertEquals(7_200_000 - 3_600_000, ended.get("ageMs").asLong(), 60_000, "created 2 h ago, finished 1 h ago");
        assertEquals(6, all.get("items").get(1).get("pending").asInt());
        assertEquals(2, all.get("inFlight").size(), "open and submitted batches: " + all.get("inFlight"));

        assertEquals(List.of(c, a), ids(api.get("/api/batches?providerKey=" + ApiClient.enc("openai:gpt-4o")).json().get("items")));
        assertEquals(List.of(b), ids(api.get("/api/batches?state=expired").json().get("items")));
        assertEquals(List.of(d, b), ids(api.get("/api/batches?state=open&state=expired").json().get("items")));
        JsonNode both = api.get("/api/batches?state=ended&providerKey=" + ApiClient.enc("openai:gpt-4o")).json();
        assertEquals(List.of(a), ids(both.get("items")));
        assertEquals("ended", both.at("/filter/state/0").asText());
        assertEquals(0, api.get("/api/batches?providerKey=nobody").json().get("items").size());

        JsonNode p1 = api.get("/api/batches?limit=3").json();
        assertEquals(List.of(d, c, b), ids(p1.get("items")));
        String cursor = p1.get("nextCursor").asText();
        JsonNode p2 = api.get("/api/batches?limit=3&cursor=" + cursor).json();
        assertEquals(List.of(a), ids(p2.get("items")));
        assertTrue(p2.get("nextCursor").isNull());
        JsonNode exact = api.get("/api/batches?limit=4").json();
        assertTrue(exact.get("nextCursor").isNull(), "four batches fill the page: no next page");
    }

    @Test
    void aBatchsLinesArePagedAndItsErrorsMasked(TestDatabase db) {
        console(db);
        long id = batch(db, "openai:gpt-4o", "failed", 250, 250, 0, 0, 2500,
                "401 Incorrect API key provided: Bearer sk-live-0123456789abcdef");
        lines(db, id, "doc", 250);
        long other = batch(db, "openai:gpt-4o-mini", "ended", 3, 3, 0, 0, 30, null);
        lines(db, other, "other", 3);
        db.update("""
                INSERT INTO layover.batch_items (batch_id, task_name, task_instance, request, state, result_kind,
                                                 result_status, result)
                VALUES (?, 'summary', 'leaky', '{}', 'result', 'errored', 401,
                        '{"error":{"message":"Authorization: Bearer sk-live-0123456789abcdef refused"}}')""", other);

        JsonNode first = api.get("/api/batches/" + id).json();
        assertEquals(100, first.get("items").size(), "the default page of lines");
        assertEquals(100, first.get("limit").asInt());
        assertEquals("doc-1", first.at("/items/0/jobId").asText());
        assertEquals(10, first.at("/items/0/inputTokens").asLong());
        assertEquals(5, first.at("/items/0/outputTokens").asLong());
        assertEquals(2500, first.at("/batch/savedTokens").asLong());
        String lastError = first.at("/batch/lastError").asText();
        assertTrue(lastError.contains("[masked]") && !lastError.contains("sk-live"), lastError);

        List<String> seen = new ArrayList<>();
        String cursor = null;
        int pages = 0;
        do {
            JsonNode page = api.get("/api/batches/" + id + "?limit=100" + (cursor == null ? "" : "&cursor=" + cursor)).json();
            page.get("items").forEach(i -> seen.add(i.get("jobId").asText()));
            cursor = page.get("nextCursor").isNull() ? null : page.get("nextCursor").asText();
            pages++;
        } while (cursor != null);
        assertEquals(3, pages);
        assertEquals(250, seen.size());
        assertEquals(250, seen.stream().distinct().count(), "no line twice across pages");
        assertTrue(seen.stream().allMatch(s -> s.startsWith("doc-")), "only this batch's lines");

        JsonNode leaky = api.get("/api/batches/" + other + "?limit=1000").json();
        assertEquals(4, leaky.get("items").size());
        String error = leaky.at("/items/3/error").asText();
        assertTrue(error.contains("[masked]") && !error.contains("sk-live"), error);
        assertEquals(401, leaky.at("/items/3/resultStatus").asInt());
    }

    @Test
    void badInputIsAClear4xxNeverA5xx(TestDatabase db) {
        console(db);
        long id = batch(db, "openai:gpt-4o", "ended", 1, 1, 0, 0, 10, null);
        expect(404, null, "/api/batches/abc", "a batch id is a whole number");
        expect(404, null, "/api/batches/99999999999999999999", "a batch id is a whole number");
        expect(404, null, "/api/batches/" + (id + 1000), "does not exist");
        expect(404, null, "/api/batches/-1", "does not exist");
        expect(400, "state", "/api/batches?state=done", "state must be one of [open, sealed");
        expect(400, "limit", "/api/batches?limit=0", "limit must be 1-500");
        expect(400, "limit", "/api/batches?limit=x", "limit must be a whole number");
        expect(400, "cursor", "/api/batches?cursor=not-a-cursor", "not a batches page cursor");
        expect(400, "cursor", "/api/batches?cursor=" + java.util.Base64.getUrlEncoder().withoutPadding()
                .encodeToString("[\"x\"]".getBytes(java.nio.charset.StandardCharsets.UTF_8)), "not a batches page cursor");
        expect(400, "providerKey", "/api/batches?providerKey=" + "k".repeat(201), "at most 200 characters");
        expect(400, "cursor", "/api/batches/" + id + "?cursor=%7B", "not a batch lines page cursor");
        expect(400, "limit", "/api/batches/" + id + "?limit=1001", "limit must be 1-1000");
        expect(400, "state", "/api/batches?state=" + ApiClient.enc("a\u0000b"), "cannot store");
        expect(405, null, "POST /api/batches", "is not allowed");
        assertEquals(200, api.get("/api/batches/" + id).status());
    }

    private void expect(int status, String field, String path, String words) {
        ApiClient.Resp r = path.startsWith("POST ") ? api.post(path.substring(5), "{}") : api.get(path);
        assertEquals(status, r.status(), path + " -> " + r.body());
        assertEquals(status, r.json().path("status").asInt(), r.body());
        if (field != null) {
            assertEquals(field, r.json().path("field").asText(), path + " -> " + r.body());
        }
        assertTrue(r.error().contains(words), path + " -> " + r.error());
        assertFalse(r.error().contains("ERROR:") || r.error().contains("Exception"), r.error());
    }

    private static List<Long> ids(JsonNode items) {
        List<Long> out = new ArrayList<>();
        items.forEach(i -> out.add(i.get("id").asLong()));
        return out;
    }
}
