package dev.layover.console;

import static dev.layover.console.ApiClient.enc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Every endpoint of the JSON API against a real Postgres, through HTTP. */
@DatabaseTest
class ConsoleApiTest {

    private Layover layover;
    private ReplayConsole console;
    private ApiClient api;

    @AfterEach
    void stop() {
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }

    /** A console over a Layover instance that registers {@code work} (built, not started). */
    private void start(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
    }

    private long jobs(TestDatabase db) {
        return db.count("select count(*) from layover.jobs");
    }

    // ------------------------------------------------------------------ reads

    @Test
    void theOverviewCountsJobsByStateParkedByFailureTypeAndShowsEachProviderKey(TestDatabase db) {
        start(db);
        layover.enqueue(jobType(), new Fixtures.Work("a", 1), EnqueueOptions.after(Duration.ofHours(1)));
        layover.enqueue(jobType(), new Fixtures.Work("b", 1), EnqueueOptions.after(Duration.ofHours(1)));
        Fixtures.deadLetter("p1").insert(db);
        Fixtures.deadLetter("p2").failure("auth_refused").provider("openai:gpt-4o-mini").insert(db);
        Fixtures.deadLetter("r1").state("review").insert(db);
        layover.providerStates().forceOpen("openai:gpt-4o-mini", null, "incident");
        db.update("INSERT INTO layover.cooldowns (provider_key, until, reason, detail, started_at, updated_at) "
                + "VALUES ('test:provider', now() + interval '5 minutes', 'rate_limited', 'slow down', now(), now())");
        db.update("INSERT INTO layover.buckets (provider_key, requests_per_minute, burst_ms, request_tat) "
                + "VALUES ('test:provider', 60, 1000, now() + interval '3 seconds')");
        db.update("INSERT INTO layover.buckets (provider_key, requests_per_minute, burst_ms, learned_until) "
                + "VALUES ('learned:in-force', 2850, 1000, now() + interval '10 minutes'), "
                + "('learned:lapsed', 2850, 1000, now() - interval '1 second')");

        ApiClient.Resp r = api.get("/api/overview");
        assertEquals(200, r.status(), r.body());
        JsonNode o = r.json();
        assertEquals(2, o.at("/jobs/byState/scheduled").asLong());
        assertEquals(0, o.at("/jobs/byState/running").asLong());
        assertEquals(2, o.at("/jobs/total").asLong());
        assertEquals(2, o.at("/deadLetters/byState/parked").asLong());
        assertEquals(1, o.at("/deadLetters/byState/review").asLong());
        assertEquals(1, o.at("/deadLetters/parkedByFailureType/provider_unavailable").asLong());
        assertEquals(1, o.at("/deadLetters/parkedByFailureType/auth_refused").asLong());
        assertEquals(1, o.at("/deadLetters/reviewByFailureType/provider_unavailable").asLong());

        JsonNode openai = key(o.get("providerKeys"), "openai:gpt-4o-mini");
        assertEquals("open", openai.get("breakerState").asText());
        assertEquals("infinity", openai.get("breakerOpenUntil").asText());
        assertEquals(1, openai.get("parked").asLong());
        JsonNode test = key(o.get("providerKeys"), "test:provider");
        assertEquals("closed", test.get("breakerState").asText());
        assertEquals("rate_limited", test.get("cooldownReason").asText());
        assertTrue(Instant.parse(test.get("cooldownUntil").asText()).isAfter(Instant.now()));
        assertEquals(60.0, test.get("requestsPerMinute").asDouble());
        assertTrue(test.get("bucketInUseMs").asLong() > 0);
        assertEquals(2, test.get("jobs").asLong());
        assertTrue(test.get("paceLearnedUntil").isNull(), "a configured bucket");
        JsonNode learned = key(o.get("providerKeys"), "learned:in-force");
        assertEquals(2850.0, learned.get("requestsPerMinute").asDouble());
        assertTrue(Instant.parse(learned.get("paceLearnedUntil").asText()).isAfter(Instant.now()));
        JsonNode lapsed = key(o.get("providerKeys"), "learned:lapsed");
        assertTrue(lapsed.get("requestsPerMinute").isNull() && lapsed.get("paceLearnedUntil").isNull(),
                "a lapsed pace limits nothing: " + lapsed);
    }

    @SuppressWarnings("unchecked")
    private JobType<Fixtures.Work> jobType() {
        return (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
    }

    private static JsonNode key(JsonNode keys, String key) {
        for (JsonNode k : keys) {
            if (k.get("providerKey").asText().equals(key)) {
                return k;
            }
        }
        throw new AssertionError("no provider key " + key + " in " + keys);
    }

    @Test
    void theDeadLetterListFiltersByEveryFieldAndWalksKeysetPages(TestDatabase db) {
        start(db);
        Instant t0 = Instant.parse("2025-03-01T12:00:00Z");
        for (int i = 0; i < 7; i++) {
            Fixtures.deadLetter("a" + i).parkedAt(t0.plusSeconds(i)).insert(db);
        }
        long other = Fixtures.deadLetter("x1").type("other").provider("anthropic:claude").failure("rejected")
                .state("review").error("ProviderRejected", "prompt too long for the context window")
                .parkedAt(t0.plusSeconds(100)).insert(db);

        List<Long> seen = new ArrayList<>();
        String cursor = null;
        int pages = 0;
        do {
            ApiClient.Resp r = api.get("/api/dead-letters?jobType=work&limit=3" + (cursor == null ? "" : "&cursor=" + enc(cursor)));
            assertEquals(200, r.status(), r.body());
            r.json().get("items").forEach(i -> seen.add(i.get("id").asLong()));
            cursor = r.json().get("nextCursor").isNull() ? null : r.json().get("nextCursor").asText();
            pages++;
        } while (cursor != null);
        assertEquals(3, pages);
        assertEquals(7, seen.size());
        assertEquals(7, new HashSet<>(seen).size(), "no dead letter twice");
        assertTrue(seen.get(0) > seen.get(6), "newest first");

        assertEquals(List.of(other), ids(api.get("/api/dead-letters?providerKey=" + enc("anthropic:claude"))));
        assertEquals(List.of(other), ids(api.get("/api/dead-letters?failureType=rejected")));
        assertEquals(List.of(other), ids(api.get("/api/dead-letters?state=review")));
        assertEquals(List.of(other), ids(api.get("/api/dead-letters?text=CONTEXT+window")));
        assertEquals(List.of(other), ids(api.get("/api/dead-letters?parkedFrom=" + enc(t0.plusSeconds(50).toString()))));
        assertEquals(3, ids(api.get("/api/dead-letters?parkedFrom=2025-03-01T12:00:02Z&parkedUntil=2025-03-01T12:00:05Z")).size());
        assertEquals(8, ids(api.get("/api/dead-letters?state=parked&state=review")).size());

        JsonNode item = api.get("/api/dead-letters?jobType=other").json().get("items").get(0);
        assertEquals("other", item.get("jobType").asText());
        assertEquals("anthropic:claude", item.get("providerKey").asText());
        assertEquals("review", item.get("state").asText());
        assertEquals("ProviderRejected", item.get("errorClass").asText());
        assertFalse(item.get("jobTypeRegistered").asBoolean(), "'other' is not registered in the app");
        assertFalse(item.get("replayable").asBoolean());
    }

    private static List<Long> ids(ApiClient.Resp r) {
        assertEquals(200, r.status(), r.body());
        List<Long> out = new ArrayList<>();
        r.json().get("items").forEach(i -> out.add(i.get("id").asLong()));
        return out;
    }

    @Test
    void facetsCountTheMatchingDeadLettersByStateFailureTypeJobTypeAndProviderKey(TestDatabase db) {
        start(db);
        Fixtures.deadLetter("a").insert(db);
        Fixtures.deadLetter("b").failure("auth_refused").insert(db);
        Fixtures.deadLetter("c").state("replayed").provider(null).insert(db);

        JsonNode f = api.get("/api/dead-letters/facets").json();
        assertEquals(3, f.get("total").asLong());
        assertEquals(Map.of("parked", 2L, "replayed", 1L), facet(f.get("byState")));
        assertEquals(Map.of("provider_unavailable", 2L, "auth_refused", 1L), facet(f.get("byFailureType")));
        assertEquals(Map.of("work", 3L), facet(f.get("byJobType")));
        Map<String, Long> byKey = facet(f.get("byProviderKey"));
        assertEquals(2L, byKey.get("test:provider"));
        assertEquals(1L, byKey.get("(none)"));

        JsonNode parked = api.get("/api/dead-letters/facets?state=parked").json();
        assertEquals(2, parked.get("total").asLong());
    }

    private static Map<String, Long> facet(JsonNode a) {
        Map<String, Long> out = new java.util.HashMap<>();
        a.forEach(e -> out.put(e.get("value").isNull() ? "(none)" : e.get("value").asText(), e.get("count").asLong()));
        return out;
    }

    @Test
    void thePreviewCountsOnlyTheDeadLettersTheActionWouldChange(TestDatabase db) {
        start(db);
        Fixtures.deadLetter("a").insert(db);
        Fixtures.deadLetter("b").insert(db);
        Fixtures.deadLetter("c").state("review").insert(db);
        Fixtures.deadLetter("d").state("replayed").insert(db);
        Fixtures.deadLetter("e").type("unregistered").insert(db);

        JsonNode replay = api.get("/api/dead-letters/preview?action=replay").json();
        assertEquals(5, replay.get("matching").asLong());
        assertEquals(3, replay.get("count").asLong(), "parked and review of registered types: " + replay);
        assertEquals(4, api.get("/api/dead-letters/preview?action=discard").json().get("count").asLong());
        assertEquals(1, api.get("/api/dead-letters/preview?action=move_back").json().get("count").asLong());
        assertEquals(0, api.get("/api/dead-letters/preview?action=move_back&state=parked").json().get("count").asLong());
        assertEquals(400, api.get("/api/dead-letters/preview?action=explode").status());
        assertFalse(replay.get("countMore").asBoolean());
        assertFalse(replay.get("matchingMore").asBoolean());
    }

    @Test
    void thePreviewCountsNoFurtherThanItsBoundAndSaysThereAreMore(TestDatabase db) {
        start(db);
        db.update("""
                INSERT INTO layover.dead_letters (job_type, job_id, provider_key, failure_type, error_class, error_message,
                                                  first_enqueued_at, state)
                SELECT 'work', 'many-' || g, 'test:provider', 'provider_unavailable', 'java.io.IOException',
                       'timed out ' || g, now(), CASE WHEN g % 2 = 0 THEN 'parked' ELSE 'discarded' END
                FROM generate_series(1, 20002) g""");

        JsonNode text = api.get("/api/dead-letters/preview?action=discard&text=timed%20out").json();
        assertEquals(10_000, text.get("bound").asLong());
        assertEquals(10_000, text.get("matching").asLong(), "20,002 match; counted up to the bound: " + text);
        assertTrue(text.get("matchingMore").asBoolean());
        assertEquals(10_000, text.get("count").asLong(), "10,001 parked ones can be discarded: " + text);
        assertTrue(text.get("countMore").asBoolean());

        JsonNode few = api.get("/api/dead-letters/preview?action=discard&text=timed%20out%2019999").json();
        assertEquals(1, few.get("matching").asLong());
        assertFalse(few.get("matchingMore").asBoolean());
        assertEquals(0, few.get("count").asLong(), "many-19999 is discarded already");
        assertFalse(few.get("countMore").asBoolean());

        JsonNode byState = api.get("/api/dead-letters/preview?action=discard&state=parked").json();
        assertEquals(10_000, byState.get("count").asLong(), "from the maintained counts, cut at the bound too");
        assertTrue(byState.get("countMore").asBoolean());
        assertEquals(10_001, api.get("/api/dead-letters/facets?state=parked").json().get("total").asLong(),
                "the facets stay exact");
    }

    @Test
    void oneDeadLetterHasItsArgsPrettyPrintedEveryAttemptsErrorItsReplayHistoryAndAudit(TestDatabase db) {
        start(db);
        long id = Fixtures.deadLetter("job-1").args("{\"name\":\"job-1\",\"n\":7}").insert(db);
        assertEquals(200, api.post("/api/dead-letters/" + id + "/replay", "{\"note\":\"provider is back\"}").status());

        ApiClient.Resp r = api.get("/api/dead-letters/" + id);
        assertEquals(200, r.status(), r.body());
        JsonNode d = r.json();
        assertEquals("job-1", d.get("jobId").asText());
        assertEquals("replayed", d.get("state").asText());
        assertEquals(7, d.at("/args/n").asInt());
        assertEquals("{\n  \"n\" : 7,\n  \"name\" : \"job-1\"\n}", d.get("argsPretty").asText());
        assertEquals(2, d.get("errors").size());
        assertEquals("read timed out", d.at("/errors/0/message").asText());
        assertEquals("java.net.SocketTimeoutException", d.at("/errors/0/errorClass").asText());
        assertEquals("connection reset", d.at("/errors/1/message").asText());
        assertEquals(1, d.get("replays").size());
        assertEquals("alice", d.at("/replays/0/by").asText());
        assertEquals("manual", d.at("/replays/0/kind").asText());
        assertEquals("job-1", d.at("/replays/0/jobId").asText());
        assertEquals("scheduled", d.at("/liveJob/state").asText(), "the replay's job is queued");
        assertEquals("replay", d.at("/history/0/action").asText());
        assertEquals("alice", d.at("/history/0/actor").asText());
        assertEquals("provider is back", d.at("/history/0/note").asText());
        assertFalse(d.at("/actions/replay").asBoolean(), "replayed: nothing to replay");
        assertTrue(d.at("/argsValidation/available").asBoolean());
    }

    @Test
    void anUnknownIdIs404(TestDatabase db) {
        start(db);
        assertEquals(404, api.get("/api/dead-letters/999999").status());
        assertEquals(404, api.get("/api/dead-letters/not-a-number").status());
        assertEquals(404, api.post("/api/dead-letters/999999/replay", "{}").status());
        assertEquals(404, api.post("/api/dead-letters/999999/discard", "{}").status());
        assertEquals(404, api.post("/api/dead-letters/999999/move-back", "{}").status());
        assertEquals(404, api.post("/api/breakers/" + enc("no:such") + "/force-close", "{}").status());
        assertEquals(404, api.get("/api/no-such-endpoint").status());
        ApiClient.Resp r = api.get("/api/dead-letters/999999");
        assertTrue(r.error().contains("999999"), r.body());
        assertEquals(404, r.json().get("status").asInt());
    }

    // ------------------------------------------------------------------ replay

    @Test
    void replayingOneCreatesOneJobAndTheAuditLogNamesTheOperator(TestDatabase db) {
        start(db);
        long id = Fixtures.deadLetter("job-7").insert(db);
        ApiClient.Resp r = api.post("/api/dead-letters/" + id + "/replay", "{}");
        assertEquals(200, r.status(), r.body());
        assertEquals("job-7", r.json().at("/replayed/jobId").asText());
        assertFalse(r.json().at("/replayed/argsEdited").asBoolean());
        assertEquals(1, jobs(db));
        assertEquals("alice", db.value("select actor from layover.audit_log where action = 'replay'"));

        ApiClient.Resp again = api.post("/api/dead-letters/" + id + "/replay", "{}");
        assertEquals(409, again.status(), again.body());
        assertTrue(again.error().contains("replayed"), again.error());
        assertEquals(1, jobs(db));
    }

    @Test
    void twoOperatorsReplayingTheSameDeadLetterAtOnceCreateOneJobAndTheLoserGets409(TestDatabase db) throws Exception {
        start(db);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 5; round++) {
                long id = Fixtures.deadLetter("race-" + round).insert(db);
                CountDownLatch go = new CountDownLatch(1);
                Callable<Integer> click = () -> {
                    go.await();
                    return api.post("/api/dead-letters/" + id + "/replay", "{}").status();
                };
                Future<Integer> a = pool.submit(click);
                Future<Integer> b = pool.submit(click);
                go.countDown();
                List<Integer> statuses = new ArrayList<>(List.of(a.get(), b.get()));
                statuses.sort(null);
                assertEquals(List.of(200, 409), statuses, "round " + round);
                assertEquals(1, db.count("select count(*) from layover.jobs where id = ?", "race-" + round));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void editedArgsThatDoNotReadAsTheJobTypeAre400WithTheMessageOnTheArgsField(TestDatabase db) {
        start(db);
        long id = Fixtures.deadLetter("job-e").insert(db);

        ApiClient.Resp wrongType = api.post("/api/dead-letters/" + id + "/replay",
                "{\"args\": \"{\\\"name\\\": \\\"x\\\", \\\"n\\\": \\\"not a number\\\"}\"}");
        assertEquals(400, wrongType.status(), wrongType.body());
        assertEquals("args", wrongType.json().get("field").asText());
        assertTrue(wrongType.error().contains("n"), wrongType.error());

        ApiClient.Resp unknownField = api.post("/api/dead-letters/" + id + "/replay",
                "{\"args\": {\"name\": \"x\", \"n\": 1, \"colour\": \"red\"}}");
        assertEquals(400, unknownField.status(), unknownField.body());
        assertTrue(unknownField.error().contains("colour"), unknownField.error());

        ApiClient.Resp notJson = api.post("/api/dead-letters/" + id + "/replay", "{\"args\": \"{name: \"}");
        assertEquals(400, notJson.status(), notJson.body());
        assertEquals("args", notJson.json().get("field").asText());
        assertTrue(notJson.error().startsWith("args are not valid JSON"), notJson.error());

        assertEquals(0, jobs(db), "nothing was replayed");
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
    }

    @Test
    void editedArgsAreValidatedReplayedAndRecordedBeforeAndAfter(TestDatabase db) {
        start(db);
        long id = Fixtures.deadLetter("job-f").insert(db);
        ApiClient.Resp r = api.post("/api/dead-letters/" + id + "/replay",
                "{\"args\": \"{\\n  \\\"name\\\": \\\"fixed\\\",\\n  \\\"n\\\": 2\\n}\", \"note\": \"typo\"}");
        assertEquals(200, r.status(), r.body());
        assertTrue(r.json().at("/replayed/argsEdited").asBoolean());
        assertEquals("{\"n\": 2, \"name\": \"fixed\"}",
                db.value("select args::text from layover.jobs where id = 'job-f'"));
        JsonNode edit = api.get("/api/audit").json().get("items").get(1);
        assertEquals("edit", edit.get("action").asText());
        assertEquals("job-f", edit.at("/details/before/name").asText());
        assertEquals("fixed", edit.at("/details/after/name").asText());
    }

    @Test
    void withoutTheApplicationsJobTypesAReplayRunsTheStoredArgsAndEditedArgsAre400(TestDatabase db) {
        console = ReplayConsole.start(db.dataSource(), Fixtures.options());
        api = new ApiClient(console);
        long id = Fixtures.deadLetter("job-s").insert(db);

        JsonNode session = api.get("/api/session").json();
        assertFalse(session.at("/argsValidation/available").asBoolean());
        assertTrue(session.at("/argsValidation/message").asText().contains("cannot be validated"));
        JsonNode d = api.get("/api/dead-letters/" + id).json();
        assertFalse(d.at("/actions/editArgs").asBoolean());
        assertTrue(d.at("/actions/replay").asBoolean());
        assertTrue(d.at("/argsValidation/message").asText().contains("job type 'work'"));

        ApiClient.Resp edited = api.post("/api/dead-letters/" + id + "/replay", "{\"args\": {\"name\": \"x\", \"n\": 1}}");
        assertEquals(400, edited.status(), edited.body());
        assertEquals("args", edited.json().get("field").asText());
        assertTrue(edited.error().contains("cannot be validated"), edited.error());
        assertEquals(0, jobs(db));

        assertEquals(200, api.post("/api/dead-letters/" + id + "/replay", "{}").status());
        assertEquals("{\"n\": 1, \"name\": \"job-s\"}", db.value("select args::text from layover.jobs where id = 'job-s'"));

        long later = Fixtures.deadLetter("job-t").type("arrived-later").insert(db);
        ApiClient.Resp newType = api.post("/api/dead-letters/" + later + "/replay", "{}");
        assertEquals(200, newType.status(), "a type first seen after the start is replayable too: " + newType.body());
        assertEquals(1, db.count("select count(*) from layover.jobs where job_type = 'arrived-later'"));
    }

    @Test
    void aDeadLetterOfATypeTheApplicationDoesNotRegisterIsRefusedWith409(TestDatabase db) {
        start(db);
        long id = Fixtures.deadLetter("old").type("retired").insert(db);
        ApiClient.Resp r = api.post("/api/dead-letters/" + id + "/replay", "{}");
        assertEquals(409, r.status(), r.body());
        assertTrue(r.error().contains("not registered"), r.error());
        ApiClient.Resp edited = api.post("/api/dead-letters/" + id + "/replay", "{\"args\": {\"a\": 1}}");
        assertEquals(400, edited.status(), edited.body());
        assertEquals(0, jobs(db));
    }

    // ------------------------------------------------------------------ bulk, discard, move back

    @Test
    void selectedIdsAndEverythingMatchingAFilterCanBeReplayedAndDiscarded(TestDatabase db) {
        start(db);
        long a = Fixtures.deadLetter("a").insert(db);
        long b = Fixtures.deadLetter("b").insert(db);
        long c = Fixtures.deadLetter("c").provider("openai:x").insert(db);
        long d = Fixtures.deadLetter("d").provider("openai:x").insert(db);
        long e = Fixtures.deadLetter("e").provider("openai:x").state("discarded").insert(db);

        ApiClient.Resp byIds = api.post("/api/dead-letters/replay", "{\"ids\": [" + a + ", " + b + ", 999999]}");
        assertEquals(200, byIds.status(), byIds.body());
        assertEquals(2, byIds.json().get("changed").asLong());
        assertEquals(1, byIds.json().at("/skipped/not_found").asLong());
        assertEquals(2, jobs(db));

        ApiClient.Resp byFilter = api.post("/api/dead-letters/discard",
                "{\"filter\": {\"providerKeys\": [\"openai:x\"]}, \"note\": \"bad prompts\"}");
        assertEquals(200, byFilter.status(), byFilter.body());
        assertEquals(2, byFilter.json().get("changed").asLong());
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", c));
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", d));
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", e));
        JsonNode audit = api.get("/api/audit").json().get("items").get(0);
        assertEquals("discard", audit.get("action").asText());
        assertEquals("alice", audit.get("actor").asText());
        assertEquals("bad prompts", audit.get("note").asText());
        assertEquals("openai:x", audit.at("/filter/provider_keys/0").asText());

        assertEquals(400, api.post("/api/dead-letters/replay", "{}").status(), "a selection is required");
        assertEquals(400, api.post("/api/dead-letters/replay", "{\"ids\": []}").status());
        assertEquals(400, api.post("/api/dead-letters/replay", "{\"ids\": [1], \"filter\": {}}").status());
        assertEquals(400, api.post("/api/dead-letters/replay", "{\"ids\": [\"x\"]}").status());
        assertEquals(400, api.post("/api/dead-letters/replay", "{\"filter\": {\"states\": [\"gone\"]}}").status());
    }

    @Test
    void aDeadLetterInReviewMovesBackAndAReplayedOneCannotBeDiscardedOrMovedBack(TestDatabase db) {
        start(db);
        long review = Fixtures.deadLetter("r").state("review").insert(db);
        long replayed = Fixtures.deadLetter("p").state("replayed").insert(db);

        ApiClient.Resp back = api.post("/api/dead-letters/" + review + "/move-back", "{\"note\": \"try again\"}");
        assertEquals(200, back.status(), back.body());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", review));
        ApiClient.Resp twice = api.post("/api/dead-letters/" + review + "/move-back", "{}");
        assertEquals(409, twice.status());
        assertTrue(twice.error().contains("parked"), twice.error());

        ApiClient.Resp discard = api.post("/api/dead-letters/" + replayed + "/discard", "{}");
        assertEquals(409, discard.status(), discard.body());
        assertEquals(200, api.post("/api/dead-letters/" + review + "/discard", "{}").status());
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", review));

        ApiClient.Resp bulkBack = api.post("/api/dead-letters/move-back", "{\"filter\": {}}");
        assertEquals(200, bulkBack.status());
        assertEquals(0, bulkBack.json().get("changed").asLong());
    }

    // ------------------------------------------------------------------ jobs, breakers, audit

    @Test
    void jobsWaitingShowRunAtAttemptsReschedulesAndWhy(TestDatabase db) {
        start(db);
        JobType<Fixtures.Work> work = jobType();
        layover.enqueue(work, new Fixtures.Work("new", 1), EnqueueOptions.key("j-new").withDelay(Duration.ofMinutes(1)));
        layover.enqueue(work, new Fixtures.Work("cool", 1), EnqueueOptions.key("j-cool").withDelay(Duration.ofMinutes(2)));
        layover.enqueue(work, new Fixtures.Work("retry", 1), EnqueueOptions.key("j-retry").withDelay(Duration.ofMinutes(3)));
        layover.enqueue(work, new Fixtures.Work("bucket", 1), EnqueueOptions.key("j-bucket").withDelay(Duration.ofMinutes(4)));
        db.update("UPDATE layover.scheduled_tasks SET reschedules = 2, last_reschedule_reason = 'cooldown', "
                + "last_reschedule_detail = 'test:provider cools down (Bearer abcdefgh1234)', last_rescheduled_at = now() "
                + "WHERE task_instance = 'j-cool'");
        db.update("UPDATE layover.scheduled_tasks SET consecutive_failures = 2, last_failure = now(), "
                + "errors = '[{\"attempt\":2,\"message\":\"503 from upstream\",\"error_class\":\"Overloaded\"}]' "
                + "WHERE task_instance = 'j-retry'");
        db.update("UPDATE layover.scheduled_tasks SET reschedules = 1, last_reschedule_reason = 'bucket', "
                + "last_rescheduled_at = now() WHERE task_instance = 'j-bucket'");

        ApiClient.Resp r = api.get("/api/jobs");
        assertEquals(200, r.status(), r.body());
        JsonNode items = r.json().get("items");
        assertEquals(4, items.size());
        assertEquals(List.of("j-new", "j-cool", "j-retry", "j-bucket"), jobIds(items), "oldest run time first");
        assertEquals("new", items.get(0).get("why").asText());
        assertEquals("cooldown", items.get(1).get("why").asText());
        assertEquals(2, items.get(1).get("reschedules").asInt());
        assertEquals("test:provider cools down (Bearer [masked])", items.get(1).get("rescheduleDetail").asText());
        assertEquals("retry", items.get(2).get("why").asText());
        assertEquals(2, items.get(2).get("attempts").asInt());
        assertEquals("503 from upstream", items.get(2).get("lastErrorMessage").asText());
        assertEquals("bucket", items.get(3).get("why").asText());
        assertNotNull(Instant.parse(items.get(0).get("runAt").asText()));

        assertEquals(List.of("j-retry"), jobIds(api.get("/api/jobs?why=retry").json().get("items")));
        assertEquals(List.of("j-cool", "j-bucket"), jobIds(api.get("/api/jobs?state=rescheduled").json().get("items")));
        JsonNode page1 = api.get("/api/jobs?limit=3").json();
        assertEquals(3, page1.get("items").size());
        JsonNode page2 = api.get("/api/jobs?limit=3&cursor=" + page1.get("nextCursor").asText()).json();
        assertEquals(List.of("j-bucket"), jobIds(page2.get("items")));
        assertTrue(page2.get("nextCursor").isNull());
        assertEquals(400, api.get("/api/jobs?state=sleeping").status());
        assertEquals(400, api.get("/api/jobs?cursor=garbage").status());
    }

    private static List<String> jobIds(JsonNode items) {
        List<String> out = new ArrayList<>();
        items.forEach(i -> out.add(i.get("id").asText()));
        return out;
    }

    @Test
    void breakersCanBeForcedOpenAndClosedAndBothAreAudited(TestDatabase db) {
        start(db);
        AtomicInteger closings = new AtomicInteger();
        layover.providerStates().addListener(e -> {
            if (e.to().code().equals("closed")) {
                closings.incrementAndGet();
            }
        });
        ApiClient.Resp open = api.post("/api/breakers/" + enc("openai:gpt-4o") + "/force-open",
                "{\"holdForSeconds\": 600, \"reason\": \"incident 42\"}");
        assertEquals(200, open.status(), open.body());
        assertTrue(open.json().get("changed").asBoolean());
        assertEquals("open", open.json().get("state").asText());

        JsonNode b = api.get("/api/breakers").json().get("items").get(0);
        assertEquals("openai:gpt-4o", b.get("providerKey").asText());
        assertEquals("open", b.get("state").asText());
        assertTrue(b.get("reason").asText().contains("incident 42"), b.toString());
        assertTrue(b.get("reason").asText().contains("alice"), b.toString());
        assertTrue(b.has("calls") && b.has("failures") && b.has("openCount"), b.toString());
        assertTrue(Instant.parse(b.get("openUntil").asText()).isAfter(Instant.now().plusSeconds(500)));

        assertFalse(api.post("/api/breakers/" + enc("openai:gpt-4o") + "/force-open", "{}").json().get("changed").asBoolean());
        ApiClient.Resp close = api.post("/api/breakers/" + enc("openai:gpt-4o") + "/force-close", "{\"reason\": \"fixed\"}");
        assertEquals(200, close.status(), close.body());
        assertEquals("closed", close.json().get("state").asText());
        Await.until(Duration.ofSeconds(5), "the instance's listeners hear the closing", () -> closings.get() == 1);

        JsonNode audit = api.get("/api/audit").json().get("items");
        assertEquals("force_close", audit.get(0).get("action").asText());
        assertEquals("openai:gpt-4o", audit.get(0).get("subject").asText());
        assertEquals("fixed", audit.get(0).get("note").asText());
        assertEquals("force_open", audit.get(2).get("action").asText());
        assertEquals(600, audit.get(2).at("/details/hold_for_seconds").asLong());
        assertEquals("alice", audit.get(2).get("actor").asText());

        assertEquals(400, api.post("/api/breakers/k/force-open", "{\"holdForSeconds\": -5}").status());
        assertEquals(400, api.post("/api/breakers/k/force-open", "{\"holdForSeconds\": \"soon\"}").status());
    }

    @Test
    void theAuditLogPagesNewestFirst(TestDatabase db) {
        start(db);
        for (int i = 0; i < 5; i++) {
            long id = Fixtures.deadLetter("a" + i).insert(db);
            api.post("/api/dead-letters/" + id + "/discard", "{\"note\": \"n" + i + "\"}");
        }
        JsonNode p1 = api.get("/api/audit?limit=3").json();
        assertEquals(3, p1.get("items").size());
        assertEquals("n4", p1.at("/items/0/note").asText());
        JsonNode p2 = api.get("/api/audit?limit=3&before=" + p1.get("nextBefore").asLong()).json();
        assertEquals(2, p2.get("items").size());
        assertEquals("n0", p2.at("/items/1/note").asText());
        assertTrue(p2.get("nextBefore").isNull());
        assertEquals(400, api.get("/api/audit?limit=0").status());
        assertEquals(400, api.get("/api/audit?before=yesterday").status());
    }

    // ------------------------------------------------------------------ input

    @Test
    void filterValuesThatLookLikeSqlInjectionReturnOrdinaryResults(TestDatabase db) {
        start(db);
        Fixtures.deadLetter("a").insert(db);
        long quote = Fixtures.deadLetter("b").error("E", "it's 100% broken_here \\ really").insert(db);
        String[] probes = {
            "' OR '1'='1", "'; DROP TABLE layover.dead_letters; --", "work' --", "\" OR 1=1 --",
            "1); DELETE FROM layover.audit_log; --", "$$; SELECT pg_sleep(5); $$",
        };
        for (String p : probes) {
            for (String field : List.of("jobType", "providerKey", "failureType", "text")) {
                ApiClient.Resp r = api.get("/api/dead-letters?" + field + "=" + enc(p));
                assertEquals(200, r.status(), field + "=" + p + ": " + r.body());
                assertEquals(0, r.json().get("items").size(), field + "=" + p + " matches nothing");
            }
            assertEquals(0, api.get("/api/dead-letters/preview?action=discard&jobType=" + enc(p)).json().get("count").asLong());
            ApiClient.Resp jobs = api.get("/api/jobs?jobType=" + enc(p) + "&providerKey=" + enc(p) + "&why=" + enc(p));
            assertEquals(200, jobs.status(), jobs.body());
        }
        assertEquals(List.of(quote), ids(api.get("/api/dead-letters?text=" + enc("it's 100% broken_here \\"))));
        assertEquals(List.of(quote), ids(api.get("/api/dead-letters?text=" + enc("%"))), "% is taken literally");
        assertEquals(List.of(quote), ids(api.get("/api/dead-letters?text=" + enc("_"))), "_ is taken literally");
        ApiClient.Resp bulk = api.post("/api/dead-letters/discard", "{\"filter\": {\"jobTypes\": [\"' OR '1'='1\"]}}");
        assertEquals(0, bulk.json().get("changed").asLong());
        assertEquals(2, db.count("select count(*) from layover.dead_letters where state = 'parked'"));
    }

    @Test
    void invalidInputIs400WithAMessage(TestDatabase db) {
        start(db);
        assertEquals(400, api.get("/api/dead-letters?state=lost").status());
        assertEquals(400, api.get("/api/dead-letters?parkedFrom=yesterday").status());
        assertEquals(400, api.get("/api/dead-letters?parkedFrom=2025-02-01T00:00:00Z&parkedUntil=2025-01-01T00:00:00Z").status());
        assertEquals(400, api.get("/api/dead-letters?limit=0").status());
        assertEquals(400, api.get("/api/dead-letters?limit=abc").status());
        assertEquals(400, api.get("/api/dead-letters?cursor=nonsense").status());
        assertEquals(400, api.get("/api/dead-letters?text=" + "x".repeat(201)).status());
        long id = Fixtures.deadLetter("a").insert(db);
        assertEquals(400, api.post("/api/dead-letters/" + id + "/discard", "[1, 2]").status());
        assertEquals(400, api.post("/api/dead-letters/" + id + "/discard", "{not json").status());
        assertEquals(400, api.post("/api/dead-letters/" + id + "/discard", "{\"note\": 5}").status());
        ApiClient.Resp r = api.get("/api/dead-letters?state=lost");
        assertTrue(r.error().contains("state"), r.body());
        assertEquals("state", r.json().get("field").asText());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
    }

    // ------------------------------------------------------------------ masking

    @Test
    void sensitiveArgsAndErrorSecretsAreMaskedUntilRevealedAndTheRevealIsAudited(TestDatabase db) {
        start(db);
        long id = Fixtures.deadLetter("m1")
                .args("{\"name\":\"m1\",\"n\":1,\"apiKey\":\"sk-live-abcdefghijkl\",\"max_tokens\":512,"
                        + "\"headers\":{\"Authorization\":\"Bearer xyz-secret-123\",\"accept\":\"json\"},"
                        + "\"nested\":[{\"client_secret\":\"s3cr3t\",\"PASSWORD\":\"hunter2\",\"access_token\":42}]}")
                .error("ProviderAuthRefused", "401 Unauthorized: invalid key sk-proj-1234567890abcdef; sent Authorization: Bearer tok_abcdef12345")
                .insert(db);

        JsonNode d = api.get("/api/dead-letters/" + id).json();
        String shown = d.toString();
        for (String secret : List.of("sk-live-abcdefghijkl", "xyz-secret-123", "s3cr3t", "hunter2", "1234567890abcdef",
                "tok_abcdef12345")) {
            assertFalse(shown.contains(secret), secret + " leaked: " + shown);
        }
        assertEquals("[masked]", d.at("/args/apiKey").asText());
        assertEquals("[masked]", d.at("/args/headers/Authorization").asText());
        assertEquals("json", d.at("/args/headers/accept").asText());
        assertEquals("[masked]", d.at("/args/nested/0/client_secret").asText());
        assertEquals("[masked]", d.at("/args/nested/0/PASSWORD").asText());
        assertEquals("[masked]", d.at("/args/nested/0/access_token").asText());
        assertEquals(512, d.at("/args/max_tokens").asInt(), "a token count is not a secret");
        assertTrue(d.get("argsPretty").asText().contains("[masked]"));
        assertTrue(d.get("errorMessage").asText().contains("sk-proj-[masked]"), d.get("errorMessage").asText());
        assertTrue(d.get("errorMessage").asText().contains("Bearer [masked]"), d.get("errorMessage").asText());
        assertTrue(d.get("masked").asBoolean());
        assertTrue(d.at("/actions/reveal").asBoolean());
        String list = api.get("/api/dead-letters").body();
        assertFalse(list.contains("1234567890abcdef"), list);

        assertEquals(0, db.count("select count(*) from layover.audit_log where action = 'reveal'"));
        JsonNode revealed = api.get("/api/dead-letters/" + id + "?reveal=true").json();
        assertEquals("sk-live-abcdefghijkl", revealed.at("/args/apiKey").asText());
        assertEquals("hunter2", revealed.at("/args/nested/0/PASSWORD").asText());
        assertTrue(revealed.get("errorMessage").asText().contains("sk-proj-1234567890abcdef"));
        assertTrue(revealed.get("revealed").asBoolean());
        Map<String, Object> audit = db.row("select actor, subject from layover.audit_log where action = 'reveal'");
        assertEquals("alice", audit.get("actor"));
        assertEquals("dead_letter:" + id, audit.get("subject"));
    }

    @Test
    void editingOtherFieldsOfMaskedArgsKeepsTheStoredSecret(TestDatabase db) {
        JobType<Secret> type = JobType.builder("secret", Secret.class).handler((a, c) -> null).build();
        layover = Fixtures.layover(db, type).build();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
        long id = Fixtures.deadLetter("s1").type("secret").args("{\"prompt\":\"hi\",\"apiKey\":\"sk-real-key-123456\"}").insert(db);

        String masked = api.get("/api/dead-letters/" + id).json().get("argsPretty").asText();
        assertTrue(masked.contains("[masked]"), masked);
        String edited = masked.replace("\"hi\"", "\"hello\"");
        ApiClient.Resp r = api.post("/api/dead-letters/" + id + "/replay",
                "{\"args\": " + ApiClient.JSON.getNodeFactory().textNode(edited) + "}");
        assertEquals(200, r.status(), r.body());
        assertEquals("{\"apiKey\": \"sk-real-key-123456\", \"prompt\": \"hello\"}",
                db.value("select args::text from layover.jobs where id = 's1'"));
        String audit = api.get("/api/audit").body();
        assertFalse(audit.contains("sk-real-key-123456"), "the audit log's before/after are masked too: " + audit);
    }

    /** Args with a secret. */
    record Secret(String prompt, String apiKey) {}

    @Test
    void theSessionEndpointDescribesTheConsole(TestDatabase db) {
        start(db);
        JsonNode s = api.get("/api/session").json();
        assertFalse(s.get("readOnly").asBoolean());
        assertEquals("bearer", s.get("auth").asText());
        assertTrue(s.get("csrfToken").isNull(), "a bearer client needs no CSRF token");
        assertEquals("X-Layover-Operator", s.get("operatorHeader").asText());
        assertTrue(s.at("/argsValidation/available").asBoolean());
        assertEquals(Set.of("work"), Set.of(s.at("/argsValidation/jobTypes/0").asText()));
    }
}
