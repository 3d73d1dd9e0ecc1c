package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A dead letter's stored steps on its page, and a replay from scratch through the JSON API (docs/steps.md). */
@DatabaseTest
class ConsoleStepsTest {

    private final AtomicInteger firstCalls = new AtomicInteger();
    private final AtomicBoolean broken = new AtomicBoolean(true);
    private final AtomicInteger done = new AtomicInteger();
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

    @Test
    void aSleepingJobSaysItSleeps(TestDatabase db) {
        JobType<Fixtures.Work> work = JobType.builder("work", Fixtures.Work.class)
                .handler((args, ctx) -> {
                    ctx.sleep("nap", java.time.Duration.ofHours(1));
                    return null;
                })
                .build();
        layover = Fixtures.layover(db, work).start();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
        String jobId = layover.enqueue(work, new Fixtures.Work("w", 1)).id();
        Await.until(Fixtures.WAIT, "the job sleeps", () -> "sleep".equals(db.value(
                "select reschedule_reason from layover.jobs where id = ?", jobId)));
        JsonNode jobs = api.get("/api/jobs?why=sleep").json();
        assertEquals(1, jobs.get("items").size(), jobs.toString());
        assertEquals(jobId, jobs.get("items").get(0).get("id").asText());
    }

    @Test
    void aDeadLetterShowsItsStepsAndAReplayFromScratchRunsThemAgain(TestDatabase db) {
        JobType<Fixtures.Work> work = JobType.builder("work", Fixtures.Work.class)
                .policy(dev.layover.core.JobPolicy.defaults().withMaxAttempts(1))
                .handler((args, ctx) -> {
                    ctx.step("first", String.class, () -> "first " + firstCalls.incrementAndGet());
                    ctx.step("second", String.class, () -> {
                        if (broken.get()) {
                            throw new IllegalStateException("not yet");
                        }
                        return "second";
                    });
                    done.incrementAndGet();
                    return null;
                })
                .build();
        layover = Fixtures.layover(db, work).start();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
        String jobId = layover.enqueue(work, new Fixtures.Work("w", 1)).id();
        Await.equal(Fixtures.WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        long id = (Long) db.value("select id from layover.dead_letters where job_id = ?", jobId);

        JsonNode d = api.get("/api/dead-letters/" + id).json();
        assertEquals(1, d.get("steps").size(), d.get("steps").toString());
        JsonNode s = d.get("steps").get(0);
        assertEquals("first", s.get("step").asText());
        assertEquals("call", s.get("kind").asText());
        assertEquals("finished", s.get("outcome").asText());
        assertTrue(s.get("result") == null, "results are not shown: they may hold what would need masking");
        assertTrue(d.get("errorMessage").asText().startsWith("step 'second': "), d.get("errorMessage").asText());
        assertEquals("second", d.get("stoppedAt").get("step").asText(), d.toString());
        assertTrue(d.get("stoppedAt").get("error").asText().contains("not yet"), d.get("stoppedAt").toString());
        JsonNode job = api.get("/api/job-runs/work/" + jobId).json();
        assertEquals(1, job.get("steps").size(), "the parked job's page lists its stored step: " + job);
        assertEquals("first", job.get("steps").get(0).get("step").asText());
        assertEquals("second", job.get("stoppedAt").get("step").asText(), job.toString());

        assertEquals(400, api.post("/api/dead-letters/" + id + "/replay", "{\"fromScratch\": \"yes\"}").status());

        broken.set(false);
        ApiClient.Resp r = api.post("/api/dead-letters/" + id + "/replay", "{\"fromScratch\": true, \"note\": \"again\"}");
        assertEquals(200, r.status(), r.body());
        Await.equal(Fixtures.WAIT, "the replayed job done", 1, done::get);
        assertEquals(2, firstCalls.get(), "from scratch: the first step ran again");
        Await.equal(Fixtures.WAIT, "its steps removed with the done job", 0L,
                () -> db.count("select count(*) from layover.job_steps where job_id = ?", jobId));
        JsonNode doneJob = api.get("/api/job-runs/work/" + jobId).json();
        assertEquals(0, doneJob.get("steps").size(), doneJob.toString());
        assertTrue(doneJob.get("stoppedAt").isNull(), "a replayed dead letter's error is not where it stopped now: " + doneJob);
        assertEquals(true, db.value("select (details->>'from_scratch')::boolean from layover.audit_log "
                + "where action = 'replay'"));
    }
}
