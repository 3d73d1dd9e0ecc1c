package dev.layover.console;

import static dev.layover.console.ApiClient.enc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The history, job and provider key endpoints, and the truthful state of breakers and cooldowns. */
@DatabaseTest
class ConsolePagesApiTest {

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

    private void start(TestDatabase db, boolean run) {
        Layover.Builder b = Fixtures.layover(db, Fixtures.work());
        layover = run ? b.start() : b.build();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
    }

    /** A finished job, written as the engine writes it. */
    static void history(TestDatabase db, String type, String id, String outcome, String key, Instant finishedAt,
            String trailJson) {
        db.update("""
                INSERT INTO layover.job_history (job_type, job_id, outcome, failure_type, detail, attempts, provider_key,
                    worker, enqueued_at, started_at, finished_at, duration_ms, provider_trail)
                VALUES (?, ?, ?, CASE WHEN ? = 'parked' THEN 'provider_unavailable' END,
                        CASE WHEN ? = 'parked' THEN '503 from upstream, api_key=sk-abcdefghijklmnopqrstuv' END,
                        0, ?, 'worker-1', ?, ?, ?, 1234.5, ?::jsonb)""",
                type, id, outcome, outcome, outcome, key, java.sql.Timestamp.from(finishedAt.minusSeconds(5)),
                java.sql.Timestamp.from(finishedAt.minusSeconds(2)), java.sql.Timestamp.from(finishedAt), trailJson);
    }

    private static List<String> jobIds(ApiClient.Resp r) {
        assertEquals(200, r.status(), r.body());
        List<String> out = new ArrayList<>();
        r.json().get("items").forEach(i -> out.add(i.get("jobId").asText()));
        return out;
    }

    @Test
    void theHistoryListsFinishedJobsNewestFirstFiltersAndWalksKeysetPages(TestDatabase db) {
        start(db, false);
        Instant t0 = Instant.parse("2025-04-01T10:00:00Z");
        for (int i = 0; i < 7; i++) {
            history(db, "work", "w" + i, "completed", "test:provider", t0.plusSeconds(i), null);
        }
        // two jobs finished in one statement share the same instant: the keyset still sees both once
        history(db, "work", "same-a", "completed", "test:provider", t0.plusSeconds(3), null);
        history(db, "mail", "m1", "parked", "smtp:relay", t0.plusSeconds(100), null);
        history(db, "mail", "w3", "cancelled", null, t0.plusSeconds(200), null);
        history(db, "work", "routed", "completed", "openai:gpt-4o", t0.plusSeconds(300), """
                [{"at": "2025-04-01T10:04:59Z", "attempt": 1, "key": "openai:gpt-4o", "result": "rate_limited"},
                 {"at": "2025-04-01T10:05:00Z", "attempt": 1, "key": "azure:gpt-4o", "result": "answered"}]""");

        List<String> seen = new ArrayList<>();
        String cursor = null;
        int pages = 0;
        do {
            ApiClient.Resp r = api.get("/api/history?jobType=work&limit=3" + (cursor == null ? "" : "&cursor=" + enc(cursor)));
            seen.addAll(jobIds(r));
            cursor = r.json().get("nextCursor").isNull() ? null : r.json().get("nextCursor").asText();
            pages++;
        } while (cursor != null);
        assertEquals(3, pages);
        assertEquals(9, seen.size());
        assertEquals(9, new HashSet<>(seen).size(), "no row twice, none lost");
        assertEquals("routed", seen.get(0), "newest first");
        assertEquals("w0", seen.get(8));

        assertEquals(List.of("m1"), jobIds(api.get("/api/history?outcome=parked")));
        assertEquals(List.of("m1"), jobIds(api.get("/api/history?providerKey=" + enc("smtp:relay"))));
        assertEquals(List.of("w3", "w3"), jobIds(api.get("/api/history?q=w3")), "a job id of any type");
        assertEquals(List.of("w3"), jobIds(api.get("/api/history?q=w3&jobType=work")));
        assertEquals(List.of("w2", "w1"), jobIds(api.get("/api/history?jobType=work&from=2025-04-01T10:00:01Z"
                + "&until=2025-04-01T10:00:03Z")));

        JsonNode routed = api.get("/api/history?q=routed").json().at("/items/0");
        assertEquals("azure:gpt-4o", routed.get("answeredBy").asText(), "which endpoint answered");
        assertEquals(2, routed.get("trailLength").asInt());
        assertEquals(1234.5, routed.get("durationMs").asDouble());
        JsonNode parked = api.get("/api/history?outcome=parked").json().at("/items/0");
        assertFalse(parked.get("detail").asText().contains("sk-abcdefghij"), "masked: " + parked);

        assertEquals(400, api.get("/api/history?outcome=done").status());
        assertEquals(400, api.get("/api/history?from=yesterday").status());
        assertEquals(400, api.get("/api/history?cursor=nonsense").status());
    }

    @Test
    void aJobsPageShowsEveryRunWithItsTrailItsDeadLettersAndWhetherItIsQueued(TestDatabase db) {
        start(db, true);
        @SuppressWarnings("unchecked")
        JobType<Fixtures.Work> work = (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
        layover.enqueue(work, new Fixtures.Work("x", 1), EnqueueOptions.key("order-17"));
        Await.equal(Fixtures.WAIT, "order-17 finished", 1L,
                () -> db.count("select count(*) from layover.job_history where job_id = 'order-17'"));

        JsonNode j = api.get("/api/job-runs/work/order-17").json();
        assertEquals("work", j.get("jobType").asText());
        assertTrue(j.get("queued").isNull(), "it ran and left the queue");
        assertEquals(1, j.get("runs").size());
        JsonNode run = j.at("/runs/0");
        assertEquals("completed", run.get("outcome").asText());
        assertTrue(run.get("durationMs").isNumber(), run.toString());
        assertTrue(Instant.parse(run.get("finishedAt").asText()).isAfter(Instant.parse(run.get("enqueuedAt").asText()))
                || run.get("finishedAt").asText().equals(run.get("enqueuedAt").asText()));

        layover.enqueue(work, new Fixtures.Work("y", 1), EnqueueOptions.key("order-18").withDelay(Duration.ofHours(1)));
        long dl = Fixtures.deadLetter("order-18").insert(db);
        JsonNode waiting = api.get("/api/job-runs/work/order-18").json();
        assertEquals("scheduled", waiting.at("/queued/state").asText());
        assertEquals("new", waiting.at("/queued/why").asText());
        assertEquals(0, waiting.get("runs").size());
        assertEquals(dl, waiting.at("/deadLetters/0/id").asLong());
        assertEquals(0, api.get("/api/job-runs/work/never-was").json().get("runs").size());
    }

    @Test
    void aProviderKeysPageHasItsStateJobsDeadLettersFinishedJobsAndItsApiKeyPool(TestDatabase db) {
        start(db, false);
        @SuppressWarnings("unchecked")
        JobType<Fixtures.Work> work = (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
        layover.enqueue(work, new Fixtures.Work("a", 1), EnqueueOptions.after(Duration.ofHours(1)));
        layover.enqueue(work, new Fixtures.Work("b", 1), EnqueueOptions.after(Duration.ofHours(2)));
        Fixtures.deadLetter("p1").insert(db);
        history(db, "work", "done-1", "completed", "test:provider", Instant.now().minusSeconds(60), null);
        layover.providerStates().forceOpen("test:provider", Duration.ofMinutes(5), "incident");
        db.update("INSERT INTO layover.cooldowns (provider_key, until, reason, detail, started_at, updated_at) "
                + "VALUES ('test:provider', now() - interval '5 seconds', 'rate_limited', 'token=abc123secret', now(), now())");
        db.update("INSERT INTO layover.buckets (provider_key, requests_per_minute, burst_ms, request_tat, learned_until) "
                + "VALUES ('test:provider', 500, 1000, now() + interval '2 seconds', now() + interval '10 minutes')");
        db.update("INSERT INTO layover.cooldowns (provider_key, until, reason, started_at, updated_at) VALUES "
                + "('test#team-a', now() + interval '1 hour', 'quota_exhausted', now(), now())");
        db.update("INSERT INTO layover.breakers (provider_key) VALUES ('test#team-b'), ('other#x')");

        ApiClient.Resp r = api.get("/api/provider-keys/" + enc("test:provider"));
        assertEquals(200, r.status(), r.body());
        JsonNode k = r.json();
        assertEquals("open", k.at("/breaker/state").asText());
        assertEquals("open", k.at("/breaker/effectiveState").asText());
        assertFalse(k.at("/cooldown/active").asBoolean(), "a cooldown that has ended reads as ended");
        assertFalse(k.at("/cooldown/detail").asText().contains("abc123secret"), k.at("/cooldown").toString());
        assertTrue(k.at("/bucket/learned").asBoolean());
        assertTrue(k.at("/bucket/inForce").asBoolean());
        assertEquals(500.0, k.at("/bucket/requestsPerMinute").asDouble());
        assertTrue(k.at("/bucket/inUseMs").asLong() > 0);
        assertEquals(2, k.at("/jobs/total").asLong());
        assertEquals("new", k.at("/jobs/byWhy/0/why").asText());
        assertEquals(2, k.at("/jobs/items").size());
        assertEquals(1, k.at("/deadLetters/total").asLong());
        assertEquals("p1", k.at("/deadLetters/recent/0/jobId").asText());
        assertEquals(1, k.at("/finishedLastHour/completed").asLong());
        assertEquals("test", k.at("/pool/name").asText(), "keys test#... form the pool named after the provider");
        List<String> members = new ArrayList<>();
        k.at("/pool/members").forEach(m -> members.add(m.get("providerKey").asText()));
        assertEquals(List.of("test#team-a", "test#team-b"), members);

        JsonNode member = api.get("/api/provider-keys/" + enc("test#team-a")).json();
        assertTrue(member.at("/pool/memberOf").asBoolean());
        assertTrue(member.at("/cooldown/active").asBoolean());
        assertEquals(2, member.at("/pool/members").size());
        JsonNode unknown = api.get("/api/provider-keys/" + enc("never:seen")).json();
        assertTrue(unknown.get("breaker").isNull() && unknown.get("cooldown").isNull() && unknown.get("pool").isNull());
        assertEquals(0, unknown.at("/jobs/total").asLong());
    }

    @Test
    void aBreakerWhoseOpenPeriodEndedReadsHalfOpenDueEverywhere(TestDatabase db) {
        start(db, false);
        layover.providerStates().forceOpen("lapsed:key", Duration.ofSeconds(1), "brief incident");
        db.update("UPDATE layover.breakers SET open_until = now() - interval '3 minutes' WHERE provider_key = 'lapsed:key'");
        JsonNode overview = api.get("/api/overview").json();
        JsonNode key = null;
        for (JsonNode k : overview.get("providerKeys")) {
            if (k.get("providerKey").asText().equals("lapsed:key")) {
                key = k;
            }
        }
        assertEquals("half_open_due", key.get("breakerEffectiveState").asText(), String.valueOf(key));
        assertEquals("half_open_due", api.get("/api/breakers").json().at("/items/0/effectiveState").asText());
        assertTrue(Instant.parse(overview.get("at").asText()).isAfter(Instant.parse(key.get("breakerOpenUntil").asText())),
                "the page compares with the database's clock, which it is given");
    }
}
