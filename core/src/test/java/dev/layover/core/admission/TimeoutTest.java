package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.Task;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Execution timeouts: an overrunning handler is interrupted and its run counts as TRANSIENT. */
@DatabaseTest
class TimeoutTest {

    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    @Test
    void aHandlerThatRunsTooLongIsInterruptedAndRetriedAsTransient(TestDatabase db) {
        AtomicInteger interrupted = new AtomicInteger();
        JobType<Task> t = JobType.builder("hangs", Task.class)
                .providerKey("fake:slow")
                .policy(Admission.fastRetries(2).withTimeout(Duration.ofMillis(300)))
                .handler((a, ctx) -> {
                    try {
                        Thread.sleep(30_000); // a provider call that hangs
                    } catch (InterruptedException e) {
                        interrupted.incrementAndGet();
                        throw e;
                    }
                    return Outcome.done();
                })
                .build();
        Layover layover = Admission.builder(db, "w1").register(t).start();
        instances.add(layover);
        long started = System.nanoTime();
        String id = layover.enqueue(t, new Task("x")).id();
        Await.equal(Admission.WAIT, "parked", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        assertTrue(System.nanoTime() - started < Duration.ofSeconds(15).toNanos(), "it did not wait for the handler");
        assertEquals(2, interrupted.get(), "each run was interrupted");
        Map<String, Object> dl = db.row("select * from layover.dead_letters where job_id = ?", id);
        assertEquals("provider_unavailable", dl.get("failure_type"), "a timeout is TRANSIENT: attempts ran out");
        assertEquals(2, dl.get("attempts"));
        assertEquals("java.util.concurrent.TimeoutException", dl.get("error_class"));
        assertTrue(((String) dl.get("error_message")).contains("timed out after PT0.3S"), (String) dl.get("error_message"));
        assertTrue(String.valueOf(dl.get("errors")).contains("\"kind\": \"transient\""), String.valueOf(dl.get("errors")));
        Map<String, Object> b = db.row("select * from layover.breakers where provider_key = 'fake:slow'");
        assertTrue(((String) b.get("last_failure")).contains("timed out"), "a breaker failure of the key: " + b);
    }

    @Test
    void aHandlerThatOverrunsButFinishesIsDone(TestDatabase db) {
        AtomicInteger runs = new AtomicInteger();
        JobType<Task> t = JobType.builder("stubborn", Task.class)
                .policy(Admission.fastRetries(3).withTimeout(Duration.ofMillis(100)))
                .handler((a, ctx) -> {
                    runs.incrementAndGet();
                    long end = System.nanoTime() + Duration.ofMillis(400).toNanos();
                    while (System.nanoTime() < end) {
                        Thread.onSpinWait(); // ignores the interrupt
                    }
                    return Outcome.done();
                })
                .build();
        Layover layover = Admission.builder(db, "w1").register(t).start();
        instances.add(layover);
        String id = layover.enqueue(t, new Task("x")).id();
        Await.equal(Admission.WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        layover.awaitCompletions(Admission.WAIT);
        assertEquals(1, runs.get());
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
        assertEquals("completed", db.value("select outcome from layover.job_history where job_id = ?", id));
    }
}
