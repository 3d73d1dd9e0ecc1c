package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The job's fallback trail on the dead-letter page and the jobs-waiting page of the JSON API. */
@DatabaseTest
class ConsoleTrailTest {

    private static final String TRAIL = """
            [{"at": "2025-01-01T10:00:00Z", "attempt": 1, "key": "openai:gpt-4o", "result": "rate_limited",
              "detail": "429 for api_key=sk-live-0123456789abcdef", "wait_ms": 1200},
             {"at": "2025-01-01T10:00:00.2Z", "attempt": 1, "key": "anthropic:claude", "result": "answered",
              "detail": null, "wait_ms": null}]""";

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

    private void start(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
    }

    @Test
    void aDeadLettersTrailIsShownLineByLineWithProviderWordsMasked(TestDatabase db) {
        start(db);
        long id = Fixtures.deadLetter("t1").insert(db);
        db.update("update layover.dead_letters set provider_trail = ?::jsonb where id = ?", TRAIL, id);

        JsonNode t = api.get("/api/dead-letters/" + id).json().get("providerTrail");
        assertEquals(2, t.size(), t.toString());
        assertEquals("openai:gpt-4o", t.get(0).get("key").asText());
        assertEquals("rate_limited", t.get(0).get("result").asText());
        assertEquals(1, t.get(0).get("attempt").asInt());
        assertEquals(1200, t.get(0).get("waitMs").asLong());
        assertTrue(t.get(0).get("detail").asText().contains("[masked]"), t.get(0).get("detail").asText());
        assertTrue(!t.get(0).get("detail").asText().contains("0123456789abcdef"), "a key in the provider's words is masked");
        assertEquals("answered", t.get(1).get("result").asText());
        assertTrue(t.get(1).get("detail").isNull());

        JsonNode revealed = api.get("/api/dead-letters/" + id + "?reveal=true").json().get("providerTrail");
        assertTrue(revealed.get(0).get("detail").asText().contains("sk-live-0123456789abcdef"));

        long none = Fixtures.deadLetter("t2").insert(db);
        assertEquals(0, api.get("/api/dead-letters/" + none).json().get("providerTrail").size());
    }

    @SuppressWarnings("unchecked")
    @Test
    void aWaitingJobShowsTheNewestLinesOfItsTrail(TestDatabase db) {
        start(db);
        JobType<Fixtures.Work> work = (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
        String id = layover.enqueue(work, new Fixtures.Work("w", 1), EnqueueOptions.after(Duration.ofHours(1))).id();
        String plain = layover.enqueue(work, new Fixtures.Work("p", 1), EnqueueOptions.after(Duration.ofHours(2))).id();
        // 12 lines: the page shows the newest 10
        StringBuilder many = new StringBuilder("[");
        for (int i = 1; i <= 12; i++) {
            many.append(i > 1 ? "," : "").append("{\"at\":\"2025-01-01T10:00:00Z\",\"attempt\":").append(i)
                    .append(",\"key\":\"k").append(i).append("\",\"result\":\"overloaded\",\"detail\":\"529\",\"wait_ms\":null}");
        }
        many.append(']');
        db.update("update layover.scheduled_tasks set provider_trail = ?::jsonb where task_instance = ?", many.toString(), id);

        JsonNode items = api.get("/api/jobs?limit=10").json().get("items");
        assertEquals(2, items.size());
        JsonNode trail = items.get(0).get("providerTrail");
        assertEquals(id, items.get(0).get("id").asText());
        assertEquals(10, trail.size(), trail.toString());
        assertEquals("k3", trail.get(0).get("key").asText());
        assertEquals("k12", trail.get(9).get("key").asText());
        assertEquals(plain, items.get(1).get("id").asText());
        assertEquals(0, items.get(1).get("providerTrail").size());
    }
}
