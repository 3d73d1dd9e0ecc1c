package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The console's cancel, pause and resume: the JSON API, each action audited with the operator. */
@DatabaseTest
class ConsoleControlTest {

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
    }

    @SuppressWarnings("unchecked")
    private JobType<Fixtures.Work> work() {
        return (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    @Test
    void aWaitingJobIsCancelledFromTheJobsPageAndTheCancelIsAudited(TestDatabase db) {
        start(db, true);
        layover.enqueue(work(), new Fixtures.Work("a", 1), EnqueueOptions.key("job/1").withDelay(Duration.ofHours(1)));
        ApiClient.Resp r = api.post("/api/jobs/work/" + enc("job/1") + "/cancel", "{\"reason\": \"duplicate order\"}");
        assertEquals(200, r.status(), r.body());
        assertEquals("cancelled", r.json().get("status").asText());
        long dl = r.json().get("deadLetterId").asLong();
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        JsonNode d = api.get("/api/dead-letters/" + dl).json();
        assertEquals("cancelled", d.get("failureType").asText());
        assertEquals("cancelled by alice: duplicate order", d.get("errorMessage").asText());
        JsonNode audit = api.get("/api/audit").json().get("items").get(0);
        assertEquals("cancel", audit.get("action").asText());
        assertEquals("alice", audit.get("actor").asText());
        assertEquals("job:work/job/1", audit.get("subject").asText());
        assertEquals("duplicate order", audit.get("note").asText());
        assertEquals(dl, audit.at("/details/dead_letter_id").asLong());

        assertEquals(404, api.post("/api/jobs/work/" + enc("job/1") + "/cancel", "{}").status(), "gone already");
        assertEquals(400, api.post("/api/jobs/work/x/cancel", "{\"reason\": 5}").status());
    }

    @Test
    void jobTypesAndKeysArePausedAndResumedAndTheJobsPageShowsWhy(TestDatabase db) {
        start(db, false); // a standalone console: no application job types needed to pause
        layover.enqueue(work(), new Fixtures.Work("a", 1), EnqueueOptions.key("p1"));
        layover.enqueue(work(), new Fixtures.Work("b", 1), EnqueueOptions.key("p2").withDelay(Duration.ofMinutes(5)));

        ApiClient.Resp p = api.post("/api/pauses/job-type/work/pause", "{\"reason\": \"db migration\"}");
        assertEquals(200, p.status(), p.body());
        assertTrue(p.json().get("changed").asBoolean());
        assertEquals(2, p.json().get("heldJobs").asLong());
        assertEquals("alice", p.json().get("pausedBy").asText());
        assertFalse(api.post("/api/pauses/job-type/work/pause", "{}").json().get("changed").asBoolean(), "already paused");
        ApiClient.Resp k = api.post("/api/pauses/key/" + enc("test:provider") + "/pause", "{}");
        assertEquals(200, k.status(), k.body());
        assertEquals(0, k.json().get("heldJobs").asLong(), "held by the job type's pause already");

        JsonNode pauses = api.get("/api/pauses").json();
        assertEquals(2, pauses.get("active").size());
        assertEquals("job_type", pauses.get("active").get(0).get("scope").asText());
        assertEquals("db migration", pauses.get("active").get(0).get("reason").asText());
        JsonNode jobs = api.get("/api/jobs").json().get("items");
        assertEquals(2, jobs.size(), "paused jobs stay in the queue");
        assertEquals("paused", jobs.get(0).get("why").asText());
        assertEquals(1, api.get("/api/jobs?why=paused&limit=1").json().get("items").size());

        ApiClient.Resp r = api.post("/api/pauses/job-type/work/resume", "{}");
        assertEquals(200, r.status(), r.body());
        assertEquals(0, r.json().get("releasedJobs").asLong(), "the key's pause still holds them");
        ApiClient.Resp r2 = api.post("/api/pauses/key/" + enc("test:provider") + "/resume", "{}");
        assertEquals(2, r2.json().get("releasedJobs").asLong());
        assertEquals(0, api.get("/api/pauses").json().get("active").size());
        assertEquals(0, db.count("select count(*) from layover.jobs where run_at > now() + interval '1 hour'"));
        assertEquals(404, api.post("/api/pauses/job-type/work/resume", "{}").status(), "not paused");

        JsonNode audit = api.get("/api/audit").json().get("items");
        assertEquals("resume", audit.get(0).get("action").asText());
        assertEquals("key:test:provider", audit.get(0).get("subject").asText());
        assertEquals(2, audit.get(0).at("/details/released_jobs").asLong());
        assertEquals("pause", audit.get(4).get("action").asText());
        assertEquals("job_type:work", audit.get(4).get("subject").asText());
        assertEquals("db migration", audit.get(4).get("note").asText());
        assertEquals(404, api.post("/api/pauses/tenant/x/pause", "{}").status(), "only job types and keys");
    }
}
