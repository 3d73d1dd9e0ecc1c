package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.Task;
import dev.layover.core.outcome.FailureType;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Deadlines: past it a job is parked deadline_exceeded instead of being run, rescheduled or retried. */
@DatabaseTest
class DeadlineTest {

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
    void aDeadlineRelativeToTheEnqueueIsStored(TestDatabase db) {
        JobType<Task> t = JobType.of("t", Task.class, (a, ctx) -> Outcome.done());
        Layover layover = Layover.builder(db.dataSource()).register(t).build();
        Instant before = Instant.now();
        String rel = layover.enqueue(t, new Task("rel"), EnqueueOptions.now().withDeadline(Duration.ofMinutes(10))).id();
        Instant abs = Instant.parse("2030-01-01T00:00:00Z");
        String absId = layover.enqueue(t, new Task("abs"), EnqueueOptions.key("k1").withDeadline(abs)).id();
        layover.enqueueBatch(t, List.of(new Task("batch")), a -> EnqueueOptions.now().withDeadline(abs));
        Instant d = ((Timestamp) db.value("select deadline from layover.job_controls where id = ?", rel)).toInstant();
        assertTrue(!d.isBefore(before.plus(Duration.ofMinutes(10))) && d.isBefore(Instant.now().plus(Duration.ofMinutes(10))));
        assertEquals(abs, ((Timestamp) db.value("select deadline from layover.job_controls where id = ?", absId)).toInstant());
        assertEquals(abs, ((Timestamp) db.value("select deadline from layover.job_controls j join layover.jobs using (id) "
                + "where args->>'text' = 'batch'")).toInstant());
    }

    @Test
    void aJobThatWouldBeRetriedPastItsDeadlineIsParkedInsteadAndOneThatWaitsPastItToo(TestDatabase db) {
        AtomicInteger runs = new AtomicInteger();
        JobType<Task> t = JobType.builder("fragile", Task.class)
                .policy(Admission.fastRetries(10).withBackoff(Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .handler((a, ctx) -> {
                    runs.incrementAndGet();
                    // a failure whose retry comes no sooner than 30 s, after the deadline
                    throw new Outcome.Retry("flaky downstream", null, Duration.ofSeconds(30)).toException();
                })
                .build();
        Layover layover = start(Admission.builder(db, "w1").register(t));
        String retried = layover.enqueue(t, new Task("retry"), EnqueueOptions.now().withDeadline(Duration.ofSeconds(10))).id();
        String late = layover.enqueue(t, new Task("late"),
                EnqueueOptions.after(Duration.ofMinutes(1)).withDeadline(Duration.ofSeconds(20))).id();
        Await.equal(Admission.WAIT, "parked", 2L,
                () -> db.count("select count(*) from layover.dead_letters where failure_type = 'deadline_exceeded'"));
        assertEquals(1, runs.get(), "the failed job was not retried: its retry would come after its deadline");
        Map<String, Object> r = db.row("select * from layover.dead_letters where job_id = ?", retried);
        assertEquals(1, r.get("attempts"));
        assertTrue(((String) r.get("error_message")).contains("is after its deadline"), (String) r.get("error_message"));
        assertTrue(String.valueOf(r.get("errors")).contains("flaky downstream"), "the failure is kept");
        Map<String, Object> l = db.row("select * from layover.dead_letters where job_id = ?", late);
        assertEquals(0, l.get("attempts"), "the job due after its deadline never ran");
        assertEquals("DeadlineExceeded", l.get("error_class"));
        assertEquals(FailureType.DEADLINE_EXCEEDED, FailureType.fromCode("deadline_exceeded"));
        assertTrue(!FailureType.DEADLINE_EXCEEDED.autoReplayable());
        assertEquals("parked", db.value("select outcome from layover.job_history where job_id = ?", late));
    }

    @Test
    void aJobHeldByAPauseIsParkedWhenItsDeadlinePasses(TestDatabase db) {
        AtomicInteger runs = new AtomicInteger();
        JobType<Task> t = JobType.of("held", Task.class, (a, ctx) -> {
            runs.incrementAndGet();
            return Outcome.done();
        });
        Layover layover = start(Admission.builder(db, "w1").register(t));
        layover.control().pauseJobType("held", "ops", null);
        Admission.sleep(1200); // workers learn of a pause by NOTIFY, at worst within a second
        String id = layover.enqueue(t, new Task("x"), EnqueueOptions.now().withDeadline(Duration.ofSeconds(2))).id();
        Await.equal(Admission.WAIT, "parked", 1L,
                () -> db.count("select count(*) from layover.dead_letters where failure_type = 'deadline_exceeded'"));
        Map<String, Object> dl = db.row("select * from layover.dead_letters where job_id = ?", id);
        assertTrue(((String) dl.get("error_message")).contains("held by a pause"), (String) dl.get("error_message"));
        assertNotNull(dl.get("args"));
        assertEquals(0, runs.get());
    }
}
