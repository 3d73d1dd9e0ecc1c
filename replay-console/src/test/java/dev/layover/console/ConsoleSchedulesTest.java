package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.schedule.Schedule;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The console's schedules: the list, and pause, resume and trigger now, each audited with the operator. */
@DatabaseTest
class ConsoleSchedulesTest {

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

    private void start(TestDatabase db, boolean withApplication) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = withApplication ? ReplayConsole.start(layover, Fixtures.options())
                : ReplayConsole.start(db.dataSource(), Fixtures.options());
        api = new ApiClient(console);
        @SuppressWarnings("unchecked")
        JobType<Fixtures.Work> work = (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
        layover.schedules().create("acme", Schedule.every("sync", work, Duration.ofHours(1), new Fixtures.Work("a", 1)));
    }

    @Test
    void aScheduleIsListedPausedResumedAndTriggeredAndEachActionIsAudited(TestDatabase db) {
        start(db, true);
        JsonNode list = api.get("/api/schedules").json().get("items");
        assertEquals(1, list.size());
        assertEquals("sync", list.get(0).get("name").asText());
        assertEquals("acme", list.get(0).get("tenant").asText());
        assertEquals("every PT1H", list.get(0).get("timing").asText());
        assertFalse(list.get(0).get("nextAt").isNull());

        ApiClient.Resp p = api.post("/api/schedules/pause", "{\"tenant\": \"acme\", \"name\": \"sync\", \"reason\": \"vendor outage\"}");
        assertEquals(200, p.status(), p.body());
        assertTrue(p.json().get("changed").asBoolean());
        assertTrue(p.json().get("paused").asBoolean());
        assertTrue(p.json().get("nextAt").isNull());
        JsonNode audit = api.get("/api/audit").json().get("items").get(0);
        assertEquals("schedule_pause", audit.get("action").asText());
        assertEquals("alice", audit.get("actor").asText());
        assertEquals("schedule:acme/sync", audit.get("subject").asText());
        assertEquals("vendor outage", audit.get("note").asText());
        assertFalse(api.post("/api/schedules/pause", "{\"tenant\": \"acme\", \"name\": \"sync\"}").json()
                .get("changed").asBoolean(), "paused already");

        ApiClient.Resp t = api.post("/api/schedules/trigger", "{\"tenant\": \"acme\", \"name\": \"sync\"}");
        assertEquals(200, t.status(), t.body());
        String jobId = t.json().get("jobId").asText();
        assertTrue(jobId.startsWith("sched:acme/sync@manual-"), jobId);
        assertEquals(1, db.count("select count(*) from layover.jobs where id = ?", jobId));
        assertEquals("schedule_trigger", api.get("/api/audit").json().get("items").get(0).get("action").asText());
        assertEquals(jobId, api.get("/api/audit").json().get("items").get(0).at("/details/job_id").asText());

        ApiClient.Resp r = api.post("/api/schedules/resume", "{\"tenant\": \"acme\", \"name\": \"sync\"}");
        assertEquals(200, r.status(), r.body());
        assertFalse(r.json().get("paused").asBoolean());
        assertEquals("schedule_resume", api.get("/api/audit").json().get("items").get(0).get("action").asText());

        assertEquals(404, api.post("/api/schedules/pause", "{\"tenant\": \"acme\", \"name\": \"nope\"}").status());
        assertEquals(400, api.post("/api/schedules/pause", "{\"tenant\": \"acme\"}").status());
    }

    @Test
    void aStandaloneConsoleTriggersWithoutTheApplicationsJobTypes(TestDatabase db) {
        start(db, false);
        ApiClient.Resp t = api.post("/api/schedules/trigger", "{\"tenant\": \"acme\", \"name\": \"sync\"}");
        assertEquals(200, t.status(), t.body());
        String jobId = t.json().get("jobId").asText();
        assertEquals(Boolean.TRUE, db.value("select args = '{\"name\": \"a\", \"n\": 1}'::jsonb from layover.jobs "
                + "where id = ?", jobId), "the stored args, as they are");
    }
}
