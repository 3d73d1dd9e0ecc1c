package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.Task;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A fleet-wide concurrency limit holds across JVMs (observed by the fake provider's calls in
 * flight), and a killed worker's slot comes back within the heartbeat window.
 */
@ProcessTest
class ConcurrencyLimitTest {

    private static final Duration START = Duration.ofSeconds(60);
    private final FakeProvider fake = FakeProvider.start();
    private final List<Layover> instances = new ArrayList<>();
    private JvmProcess child;

    @AfterEach
    void stop() {
        if (child != null) {
            child.close();
        }
        instances.forEach(Layover::stop);
        fake.close();
    }

    private JvmProcess startChild(TestDatabase db, int limit) {
        child = JvmProcess.start(LimitWorkerMain.class, "limit-worker", db.jdbcUrl(), fake.primary().url().toString(),
                String.valueOf(limit), "worker-a");
        child.awaitOutput("started worker-a", START);
        return child;
    }

    @Test
    void twoJvmsSharingALimitNeverExceedIt(TestDatabase db) {
        fake.primary().latency(Duration.ofMillis(150));
        startChild(db, 3);
        AtomicInteger here = new AtomicInteger();
        JobType<Task> t = LimitWorkerMain.limitedType(fake.primary().url(), here::incrementAndGet);
        // two threads in each JVM, none held ahead: the limit of 3 is reached only with both JVMs calling
        Layover layover = Admission.builder(db, "worker-b").register(t).concurrencyLimit(LimitWorkerMain.KEY, 3)
                .threads(2).prefetch(1).start();
        instances.add(layover);
        List<Task> jobs = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            jobs.add(new Task("job " + i));
        }
        layover.enqueueBatch(t, jobs);
        Await.equal(Duration.ofSeconds(90), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(40, fake.primary().calls(), "every job called once");
        assertTrue(fake.primary().maxInFlight() <= 3, "never more than 3 calls in flight: " + fake.primary().maxInFlight());
        assertEquals(3, fake.primary().maxInFlight(), "and the limit was used");
        int there = child.output().split("calling the provider", -1).length - 1;
        assertTrue(here.get() > 0 && there > 0, "both JVMs ran jobs: here " + here.get() + ", there " + there);
        assertEquals(40, here.get() + there);
        assertEquals(0, db.count("select count(*) from layover.dead_letters"), "a busy limit parks nothing");
        assertTrue(db.count("select coalesce(sum(attempts), 0) from layover.job_history") == 0, "and spends no attempt");
        Map<String, Object> c = db.row("select * from layover.concurrency where limit_key = ?", LimitWorkerMain.KEY);
        assertEquals(3, c.get("max_in_flight"));
        assertEquals(0L, c.get("in_flight"));
    }

    @Test
    void aKilledWorkersSlotComesBackWithinTheHeartbeatWindow(TestDatabase db) {
        startChild(db, 1);
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger maxInFlight = new AtomicInteger();
        AtomicInteger ranHere = new AtomicInteger();
        JobType<Task> t = JobType.builder("limited", Task.class)
                .providerKey(LimitWorkerMain.KEY)
                .handler((args, ctx) -> {
                    int n = inFlight.incrementAndGet();
                    maxInFlight.accumulateAndGet(n, Math::max);
                    ranHere.incrementAndGet();
                    Thread.sleep(50); // the provider call's latency (stands for one; not a wait)
                    inFlight.decrementAndGet();
                    return dev.layover.core.outcome.Outcome.done();
                })
                .build();
        Layover client = Layover.builder(db.dataSource()).register(t).build(); // enqueues only
        client.enqueue(t, new Task("hold"));
        child.awaitOutput("holding the slot", START);
        assertEquals(1L, db.value("select in_flight from layover.concurrency where limit_key = ?", LimitWorkerMain.KEY));

        Layover layover = Admission.builder(db, "worker-b").register(t).concurrencyLimit(LimitWorkerMain.KEY, 1).start();
        instances.add(layover);
        for (int i = 0; i < 3; i++) {
            layover.enqueue(t, new Task("job " + i), EnqueueOptions.now());
        }
        Await.until(START, "the jobs here wait for the slot, untouched", () -> db.count(
                "select count(*) from layover.scheduled_tasks where not picked and version = 1") == 3
                && db.count("select count(*) from layover.jobs where waiting_for = 'concurrency'") == 3);
        Admission.sleep(1500);
        assertEquals(0, ranHere.get(), "nothing ran here while the other JVM held the only slot");
        assertEquals(0, db.count("select count(*) from layover.jobs where attempts > 0 or reschedules > 0"),
                "holding for a slot spends no attempt and is no reschedule");

        long killedAt = System.nanoTime();
        child.kill(); // kill -9: its slot is held by a job row whose heartbeat goes stale
        // what the dead JVM held: its job, and any job here it had just picked to tell it to hold (timing)
        long heldByKilled = db.count("select count(*) from layover.scheduled_tasks where picked and picked_by = 'worker-a'");
        assertTrue(heldByKilled >= 1, "the killed worker held its job");
        Await.equal(START, "jobs done here", 4, ranHere::get); // the three, and the killed worker's job revived here
        long took = System.nanoTime() - killedAt;
        assertTrue(took < Duration.ofSeconds(15).toNanos(), "the slot came back within the heartbeat window (2 s) "
                + "plus a hold: " + Duration.ofNanos(took));
        assertEquals(1, maxInFlight.get(), "one at a time here too");
        Await.equal(START, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(heldByKilled, db.count("select count(*) from layover.job_history where outcome = 'completed' "
                + "and attempts = 0 and reschedules = 1"),
                "the killed worker's jobs were revived here, each rescheduled once (worker_lost) without an attempt");
        assertEquals(4 - heldByKilled, db.count("select count(*) from layover.job_history where outcome = 'completed' "
                + "and attempts = 0 and reschedules = 0"), "the jobs enqueued here spent none");
    }
}
