package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Jobs picked ahead of busy threads (hung or slow handlers) go back to the fleet instead of
 * waiting for them: an idle worker runs them, and every job still runs exactly once.
 */
@DatabaseTest
class LifelineReliabilityTest {

    record Call(int n) {}

    @Test
    void jobsPickedBehindHungHandlersRunOnAnIdleWorkerOnce(TestDatabase db) throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Map<Integer, String> ranOn = new ConcurrentHashMap<>();
        AtomicInteger runs = new AtomicInteger();
        JobType<Call> hangsOnA = JobType.of("call", Call.class, (a, ctx) -> {
            runs.incrementAndGet();
            ranOn.put(a.n(), "a");
            release.await(60, TimeUnit.SECONDS); // a call that hangs
            return Outcome.done();
        });
        JobType<Call> quickOnB = JobType.of("call", Call.class, (a, ctx) -> {
            runs.incrementAndGet();
            ranOn.put(a.n(), "b");
            return Outcome.done();
        });
        List<Call> calls = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            calls.add(new Call(i));
        }
        try (Layover a = Reliability.builder(db).register(hangsOnA).workerName("a").threads(2).prefetch(3)
                .giveBackAfter(Duration.ofSeconds(1)).build()) {
            a.enqueueBatch(hangsOnA, calls);
            a.start();
            Await.equal(Duration.ofSeconds(30), "a holds all six, two running", 6L,
                    () -> db.count("select count(*) from layover.jobs where picked_by = 'a'"));
            long started = System.nanoTime();
            try (Layover b = Reliability.builder(db).register(quickOnB).workerName("b").threads(2).start()) {
                Await.equal(Duration.ofSeconds(30), "the four a could not start ran on b", 4L,
                        () -> ranOn.values().stream().filter("b"::equals).count());
                long ms = (System.nanoTime() - started) / 1_000_000;
                release.countDown();
                Await.equal(Duration.ofSeconds(30), "every job done", 0L, () -> db.count("select count(*) from layover.jobs"));
                a.awaitCompletions(Duration.ofSeconds(10));
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("handler runs", runs.get());
                f.put("ran on a (hung)", ranOn.values().stream().filter("a"::equals).count());
                f.put("ran on b", ranOn.values().stream().filter("b"::equals).count());
                f.put("ms until b ran the four", ms);
                Reliability.report("lifeline: jobs picked behind hung handlers", f);
                assertEquals(6, runs.get(), "each job ran once");
                assertEquals(2L, f.get("ran on a (hung)"));
                assertTrue(ms < 20_000, "given back within seconds, not when the hung calls end: " + ms + " ms");
            }
        }
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
        assertEquals(0, db.count("select count(*) from layover.job_history where attempts > 0"), "no attempt spent");
    }
}
