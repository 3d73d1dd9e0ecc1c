package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The default prefetch follows the handler durations: a worker that has seen no job end yet (or
 * only slow ones) holds no job beyond its threads, so a burst of slow calls spreads over the fleet
 * without the lifeline; and its picks, lowered below db-scheduler's limit, are taken up again as
 * soon as threads free, not at the next poll.
 */
@DatabaseTest
class AdaptivePrefetchTest {

    record Call(int n) {}

    @Test
    void freshWorkersHoldNoCallBeyondTheirThreads(TestDatabase db) throws Exception {
        CountDownLatch allStarted = new CountDownLatch(4);
        Map<String, AtomicInteger> ranOn = new ConcurrentHashMap<>();
        AtomicInteger runs = new AtomicInteger();
        List<Call> calls = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            calls.add(new Call(i));
        }
        // the lifeline off: only the pick limit can spread the calls (a fixed prefetch 2 lets one worker hold all
        // four, two of them unstarted while the other worker idles, and the latch below never opens)
        JobType<Call> onA = slow("a", allStarted, ranOn, runs);
        try (Layover a = Reliability.builder(db).register(onA).workerName("a").threads(2)
                .giveBackAfter(Duration.ZERO).build()) {
            a.enqueueBatch(onA, calls);
            a.start();
            Await.equal(Duration.ofSeconds(30), "a runs two calls", 2L,
                    () -> db.count("select count(*) from layover.jobs where picked_by = 'a'"));
            try (Layover b = Reliability.builder(db).register(slow("b", allStarted, ranOn, runs)).workerName("b")
                    .threads(2).giveBackAfter(Duration.ZERO).start()) {
                Await.until(Duration.ofSeconds(30), "all four calls running at once, two per worker",
                        () -> allStarted.getCount() == 0);
                Await.equal(Duration.ofSeconds(30), "every call done", 0L,
                        () -> db.count("select count(*) from layover.jobs"));
            }
        }
        assertEquals(4, runs.get(), "each call ran once");
        assertEquals(2, ranOn.get("a").get());
        assertEquals(2, ranOn.get("b").get());
    }

    @Test
    void aLoweredPickIsTakenUpAgainWhenThreadsFreeNotAtTheNextPoll(TestDatabase db) throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger started = new AtomicInteger();
        JobType<Call> call = JobType.of("call", Call.class, (a, ctx) -> {
            if (started.incrementAndGet() <= 2) {
                release.await(60, TimeUnit.SECONDS);
            }
            return Outcome.done();
        });
        List<Call> calls = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            calls.add(new Call(i));
        }
        // no poll for an hour and no NOTIFY: after the first pick only the runs leaving the pool wake the worker
        try (Layover a = Reliability.builder(db).register(call).threads(2).pollInterval(Duration.ofHours(1))
                .notifications(false).build()) {
            a.enqueueBatch(call, calls);
            a.start();
            Await.equal(Duration.ofSeconds(30), "two calls running", 2, started::get);
            assertEquals(2L, db.count("select count(*) from layover.jobs where picked_by is not null"),
                    "nothing observed yet: one job per thread picked");
            release.countDown();
            Await.equal(Duration.ofSeconds(30), "the other two picked and run once threads are free", 0L,
                    () -> db.count("select count(*) from layover.jobs"));
        }
        assertEquals(4, started.get());
    }

    private static JobType<Call> slow(String worker, CountDownLatch allStarted, Map<String, AtomicInteger> ranOn,
            AtomicInteger runs) {
        return JobType.of("call", Call.class, (a, ctx) -> {
            runs.incrementAndGet();
            ranOn.computeIfAbsent(worker, w -> new AtomicInteger()).incrementAndGet();
            allStarted.countDown();
            allStarted.await(60, TimeUnit.SECONDS); // a slow call: until all four run at once
            return Outcome.done();
        });
    }
}
