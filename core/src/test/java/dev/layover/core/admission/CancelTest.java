package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.Task;
import dev.layover.core.control.CancelResult;
import dev.layover.core.control.JobControl;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Cancel: a waiting job leaves the queue at once, recorded; a running one is asked to stop and stops. */
@DatabaseTest
class CancelTest {

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
    void aWaitingJobIsCancelledAtOnceAndRecordedWithWhoAndWhy(TestDatabase db) {
        AtomicInteger runs = new AtomicInteger();
        JobType<Task> t = JobType.of("cancel-me", Task.class, (a, ctx) -> {
            runs.incrementAndGet();
            return Outcome.done();
        });
        Layover layover = Layover.builder(db.dataSource()).register(t).build(); // runs nothing
        String id = layover.enqueue(t, new Task("later"), EnqueueOptions.after(Duration.ofMinutes(5))).id();
        String other = layover.enqueue(t, new Task("stays"), EnqueueOptions.after(Duration.ofMinutes(5))).id();

        CancelResult r = layover.control().cancel("cancel-me", id, "alice", "wrong customer");
        assertEquals(CancelResult.Status.CANCELLED, r.status());
        assertNotNull(r.deadLetterId());
        assertEquals(0, db.count("select count(*) from layover.jobs where id = ?", id), "it left the queue");
        assertEquals(1, db.count("select count(*) from layover.jobs where id = ?", other), "only that one");
        Map<String, Object> dl = db.row("select * from layover.dead_letters where id = ?", r.deadLetterId());
        assertEquals("cancelled", dl.get("failure_type"));
        assertEquals("parked", dl.get("state"), "a person may replay it (undo) or discard it");
        assertEquals("cancelled by alice: wrong customer", dl.get("error_message"));
        assertTrue(String.valueOf(dl.get("errors")).contains("\"by\": \"alice\""), String.valueOf(dl.get("errors")));
        assertTrue(String.valueOf(dl.get("args")).contains("later"));
        Map<String, Object> h = db.row("select * from layover.job_history where job_id = ?", id);
        assertEquals("cancelled", h.get("outcome"));
        assertEquals("cancelled by alice: wrong customer", h.get("detail"));
        assertEquals(0, runs.get());

        assertEquals(CancelResult.Status.NOT_FOUND, layover.control().cancel("cancel-me", id, "alice", null).status(),
                "cancelling twice finds nothing the second time");
        assertEquals(CancelResult.Status.NOT_FOUND,
                JobControl.create(db.dataSource()).cancel("cancel-me", "no-such-job", "bob", null).status());
    }

    @Test
    void aRetryingOrRescheduledJobIsCancelledToo(TestDatabase db) {
        AtomicInteger runs = new AtomicInteger();
        JobType<Task> t = JobType.builder("flaky", Task.class)
                .policy(Admission.fastRetries(10).withBackoff(Duration.ofMinutes(5), Duration.ofMinutes(10)))
                .handler((a, ctx) -> {
                    runs.incrementAndGet();
                    if (a.text().equals("snooze")) {
                        return Outcome.snooze(Duration.ofMinutes(5));
                    }
                    throw new IllegalStateException("boom");
                })
                .build();
        Layover layover = start(Admission.builder(db, "w1").register(t));
        String retrying = layover.enqueue(t, new Task("fail")).id();
        String snoozed = layover.enqueue(t, new Task("snooze")).id();
        Await.equal(Admission.WAIT, "states", List.of("rescheduled", "retrying"), () -> db.rows(
                "select state from layover.jobs order by state").stream().map(m -> (String) m.get("state")).toList());
        JobControl control = JobControl.create(db.dataSource()); // another JVM's console would do the same
        assertEquals(CancelResult.Status.CANCELLED, control.cancel("flaky", retrying, "ops", "stop retrying").status());
        assertEquals(CancelResult.Status.CANCELLED, control.cancel("flaky", snoozed, "ops", null).status());
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        Map<String, Object> dl = db.row("select * from layover.dead_letters where job_id = ?", retrying);
        assertEquals(1, dl.get("attempts"), "the attempt it spent is kept");
        assertTrue(String.valueOf(dl.get("errors")).contains("boom"), "with its error");
        assertEquals(2, runs.get());
    }

    @Test
    void aRunningJobIsAskedToStopAndItsCancelIsRecordedWhenItReturns(TestDatabase db) throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean sawCancel = new AtomicBoolean();
        JobType<Task> t = JobType.builder("long", Task.class).handler((a, ctx) -> {
            started.countDown();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < end) {
                if (ctx.isCancelled()) { // the cooperative check, between steps
                    sawCancel.set(true);
                    return Outcome.snooze(Duration.ZERO);
                }
                Thread.sleep(20); // a step of a long provider call (stands for its latency; not a wait)
            }
            return Outcome.done();
        }).build();
        Layover layover = start(Admission.builder(db, "w1").register(t));
        String id = layover.enqueue(t, new Task("long")).id();
        assertTrue(started.await(30, TimeUnit.SECONDS));

        CancelResult r = JobControl.create(db.dataSource()).cancel("long", id, "carol", "customer left");
        assertEquals(CancelResult.Status.REQUESTED, r.status());
        Map<String, Object> c = db.row("select * from layover.job_controls where id = ?", id);
        assertEquals("carol", c.get("cancel_requested_by"));
        assertNotNull(c.get("cancel_requested_at"));
        Await.equal(Admission.WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertTrue(sawCancel.get(), "the handler saw JobContext.isCancelled()");
        Map<String, Object> dl = db.row("select * from layover.dead_letters where job_id = ?", id);
        assertEquals("cancelled", dl.get("failure_type"));
        assertEquals("cancelled by carol: customer left", dl.get("error_message"));
        assertEquals("cancelled", db.value("select outcome from layover.job_history where job_id = ?", id));
    }

    @Test
    void aRunningJobThatFinishesAnywayIsDone(TestDatabase db) throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        JobType<Task> t = JobType.builder("finishes", Task.class).handler((a, ctx) -> {
            started.countDown();
            release.await(30, TimeUnit.SECONDS);
            return Outcome.done(); // ignores the cancel: its work is done
        }).build();
        Layover layover = start(Admission.builder(db, "w1").register(t));
        String id = layover.enqueue(t, new Task("x")).id();
        assertTrue(started.await(30, TimeUnit.SECONDS));
        assertEquals(CancelResult.Status.REQUESTED, layover.control().cancel("finishes", id, "dave", null).status());
        Admission.sleep(1500); // the worker learns of the request
        release.countDown();
        Await.equal(Admission.WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        layover.awaitCompletions(Admission.WAIT);
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
        assertEquals("completed", db.value("select outcome from layover.job_history where job_id = ?", id));
        assertFalse(db.rows("select 1 from layover.job_history where outcome = 'cancelled'").size() > 0);
    }
}
