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
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Scenario 4 (schedulers): four Layover instances of eight threads each, each with its own
 * connection pool, fight for the same 20,000 rows (lock-and-fetch with {@code SKIP LOCKED}, the
 * batched completer deleting behind them): every job runs exactly once.
 */
@DatabaseTest
class ContentionReliabilityTest {

    record Item(int n) {}

    @Test
    void fourSchedulersFightingForTheSameRowsRunEveryJobExactlyOnce(TestDatabase db) {
        int jobs = 20_000;
        int instances = 4;
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> byWorker = new ConcurrentHashMap<>();
        List<Layover> all = new ArrayList<>();
        JobType<Item> enqueueType = null;
        try {
            for (int i = 0; i < instances; i++) {
                String worker = "w" + i;
                JobType<Item> item = JobType.of("item", Item.class, (args, ctx) -> {
                    runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
                    byWorker.computeIfAbsent(worker, k -> new AtomicInteger()).incrementAndGet();
                    return Outcome.done();
                });
                if (enqueueType == null) {
                    enqueueType = item;
                }
                all.add(Layover.builder(db.newDataSource(14)).register(item).workerName(worker).threads(8)
                        .pollInterval(Duration.ofMillis(50)).shutdownMaxWait(Duration.ofSeconds(5)).build());
            }
            List<Item> items = new ArrayList<>();
            for (int i = 0; i < jobs; i++) {
                items.add(new Item(i));
            }
            all.get(0).enqueueBatch(enqueueType, items);
            long t0 = System.nanoTime();
            all.forEach(Layover::start);
            Await.equal(Duration.ofSeconds(90), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            long twice = runs.values().stream().filter(n -> n.get() > 1).count();
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("jobs", jobs);
            f.put("instances x threads", instances + " x 8");
            f.put("jobs run", runs.size());
            f.put("jobs run more than once", twice);
            f.put("runs by worker", new TreeMap<>(byWorker));
            f.put("time (ms)", ms);
            f.put("dead letters", db.count("select count(*) from layover.dead_letters"));
            Reliability.report("scenario 4d: four schedulers fighting for 20,000 rows", f);
            assertEquals(jobs, runs.size(), "every job ran");
            assertEquals(0, twice, "none ran twice");
            assertEquals(instances, byWorker.size(), "all four took part: " + byWorker);
            assertTrue(byWorker.values().stream().allMatch(n -> n.get() > jobs / 20), "each took a real share: " + byWorker);
        } finally {
            all.forEach(Layover::stop);
        }
    }
}
