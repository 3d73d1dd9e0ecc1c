package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.Task;
import dev.layover.core.admission.Admission.TenantTask;
import dev.layover.core.control.JobControl;
import dev.layover.core.control.Pause;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Pause and resume: nothing paused starts; nothing is lost, parked or charged; resume runs it all. */
@DatabaseTest
class PauseTest {

    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private Layover start(Layover.Builder b) {
        Layover l = b.start();
        instances.add(l);
        return l;
    }

    @Test
    void aPausedJobTypeStartsNothingLosesNothingAndResumeRunsEverything(TestDatabase db) {
        Set<String> ran = ConcurrentHashMap.newKeySet();
        AtomicInteger otherRuns = new AtomicInteger();
        JobType<Task> t = JobType.of("report", Task.class, (a, ctx) -> {
            ran.add(a.text());
            return Outcome.done();
        });
        JobType<Task> other = JobType.of("other", Task.class, (a, ctx) -> {
            otherRuns.incrementAndGet();
            return Outcome.done();
        });
        Layover layover = start(Admission.builder(db, "w1").register(t, other));
        Instant soon = Instant.now().plusSeconds(2);
        for (int i = 0; i < 5; i++) {
            layover.enqueue(t, new Task("waiting-" + i), EnqueueOptions.at(soon));
        }
        Timestamp original = (Timestamp) db.value("select min(run_at) from layover.jobs");

        Pause p = layover.control().pauseJobType("report", "alice", "downstream maintenance");
        assertEquals(5, p.heldJobs(), "the waiting jobs were moved out of the pickers' way at once");
        assertEquals("alice", p.pausedBy());
        assertTrue(p.active());
        assertEquals(5, db.count("select count(*) from layover.jobs where run_at = '9999-12-31T00:00:00Z'"));
        assertEquals(original, db.value("select min(paused_run_at) from layover.job_controls"), "their run time is kept");
        assertEquals(p, layover.control().pauseJobType("report", "bob", "again"), "pausing twice changes nothing");
        Admission.sleep(1200); // workers learn of a pause by NOTIFY, at worst within a second

        for (int i = 0; i < 3; i++) { // enqueued during the pause: picked once, held without running
            layover.enqueue(t, new Task("new-" + i));
        }
        layover.enqueue(other, new Task("unaffected"));
        Await.equal(Admission.WAIT, "held jobs", 8L,
                () -> db.count("select count(*) from layover.job_controls where paused"));
        Admission.sleep(2500); // past the first run time: still nothing runs
        assertEquals(Set.of(), ran, "nothing of the paused type started");
        assertEquals(1, otherRuns.get(), "other job types run");
        assertEquals(8, db.count("select count(*) from layover.jobs where job_type = 'report'"), "nothing lost");
        assertEquals(0, db.count("select count(*) from layover.dead_letters"), "nothing parked");
        assertEquals(0, db.count("select count(*) from layover.jobs where attempts > 0 or reschedules > 0"),
                "no attempt, no reschedule charged");
        assertEquals(3, db.count("select count(*) from layover.jobs where reschedule_reason = 'paused' and id like '%' "
                + "and args->>'text' like 'new-%'"));

        Pause ended = JobControl.create(db.dataSource()).resumeJobType("report", "carol").orElseThrow();
        assertEquals("carol", ended.resumedBy());
        assertEquals(8L, ended.releasedJobs());
        assertFalse(ended.active());
        Await.equal(Admission.WAIT, "jobs run after the resume", 8, ran::size);
        Await.equal(Admission.WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertTrue(layover.control().resumeJobType("report", "carol").isEmpty(), "nothing to resume twice");
        assertEquals(1, db.count("select count(*) from layover.pauses where resumed_by = 'carol' and paused_by = 'alice'"),
                "the record stays; the second pause was not made: " + db.rows("select * from layover.pauses"));
    }

    @Test
    void aPausedKeyHoldsEveryJobWithThatProviderKeyOrLimitKeyAndOverlappingPausesEachHold(TestDatabase db) {
        Set<String> ran = ConcurrentHashMap.newKeySet();
        JobType<TenantTask> t = JobType.builder("chat", TenantTask.class)
                .providerKey("openai:gpt-4o")
                .limitKeys(a -> List.of("tenant:" + a.tenant()))
                .handler((a, ctx) -> {
                    ran.add(a.text());
                    return Outcome.done();
                })
                .build();
        Layover layover = start(Admission.builder(db, "w1").register(t));
        JobControl control = layover.control();
        control.pauseKey("tenant:a", "ops", "tenant a is over budget");
        Admission.sleep(1200); // workers learn of a pause by NOTIFY, at worst within a second
        layover.enqueue(t, new TenantTask("a", "a1"));
        layover.enqueue(t, new TenantTask("b", "b1"));
        Await.until(Admission.WAIT, "b1 runs", () -> ran.contains("b1"));
        Await.equal(Admission.WAIT, "held", 1L, () -> db.count("select count(*) from layover.job_controls where paused"));
        assertFalse(ran.contains("a1"));

        control.pauseKey("openai:gpt-4o", "ops", "provider incident");
        Admission.sleep(1200);
        layover.enqueue(t, new TenantTask("b", "b2"));
        Await.equal(Admission.WAIT, "held", 2L, () -> db.count("select count(*) from layover.job_controls where paused"));
        assertEquals(0, control.resumeKey("tenant:a", "ops").orElseThrow().releasedJobs(),
                "a1 is not released: its provider key is still paused (b2 neither)");
        assertEquals(0L, control.activePauses().stream().filter(x -> x.target().equals("tenant:a")).count());
        Admission.sleep(1000);
        assertEquals(Set.of("b1"), ran, "a1 and b2 wait for the provider key's pause");
        assertEquals(2, db.count("select count(*) from layover.job_controls where paused"));

        control.resumeKey("openai:gpt-4o", "ops");
        Await.equal(Admission.WAIT, "every job ran", Set.of("a1", "b1", "b2"), () -> Set.copyOf(ran));
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
        List<Map<String, Object>> pauses = db.rows("select * from layover.pauses order by id");
        assertEquals(2, pauses.size());
        assertTrue(pauses.stream().allMatch(m -> m.get("resumed_at") != null));
    }

    @Test
    void aJobRunningWhenItsTypeIsPausedFinishes(TestDatabase db) throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger done = new AtomicInteger();
        JobType<Task> t = JobType.of("slow", Task.class, (a, ctx) -> {
            if (a.text().equals("running")) {
                started.countDown();
                release.await(30, TimeUnit.SECONDS);
            }
            done.incrementAndGet();
            return Outcome.done();
        });
        Layover layover = start(Admission.builder(db, "w1").register(t));
        layover.enqueue(t, new Task("running"));
        assertTrue(started.await(30, TimeUnit.SECONDS));
        Pause p = layover.control().pauseJobType("slow", "ops", null);
        assertEquals(0, p.heldJobs(), "a running job is not held");
        Admission.sleep(1200);
        layover.enqueue(t, new Task("later"));
        release.countDown();
        Await.equal(Admission.WAIT, "the running job finished", 1, done::get);
        Await.equal(Admission.WAIT, "the other is held", 1L,
                () -> db.count("select count(*) from layover.job_controls where paused"));
        Admission.sleep(500);
        assertEquals(1, done.get());
        layover.control().resumeJobType("slow", "ops");
        Await.equal(Admission.WAIT, "both done", 2, done::get);
    }
}
