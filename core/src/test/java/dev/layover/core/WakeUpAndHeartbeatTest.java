package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Jobs enqueued elsewhere start at once, and jobs picked ahead of a free thread stay alive. */
@DatabaseTest
class WakeUpAndHeartbeatTest {

    record Ping(int n) {}

    @Test
    void aJobEnqueuedByAnotherInstanceStartsWithoutWaitingForThePoll(TestDatabase db) throws Exception {
        Map<Integer, Long> startedAt = new ConcurrentHashMap<>();
        JobType<Ping> ping = JobType.of("ping", Ping.class, (a, c) -> {
            startedAt.put(a.n(), System.nanoTime());
            return Outcome.done();
        });
        Layover worker = Layover.builder(db.dataSource()).register(ping).threads(2)
                .pollInterval(Duration.ofSeconds(30)).start();
        Layover client = Layover.builder(db.dataSource()).register(JobType.of("ping", Ping.class, (a, c) -> null)).build();
        @SuppressWarnings("unchecked")
        JobType<Ping> clientPing = (JobType<Ping>) client.jobType("ping").orElseThrow();
        try {
            // the worker listens for new jobs (its LISTEN connection is up): an enqueue now wakes it
            Await.until(Duration.ofSeconds(10), "the worker's LISTEN", () -> db.count("select count(*) from pg_stat_activity "
                    + "where datname = current_database() and query = 'LISTEN layover_jobs'") >= 1);
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                client.enqueue(clientPing, new Ping(i));
                int n = i;
                Await.until(Duration.ofSeconds(5), "job " + i + " started", () -> startedAt.containsKey(n));
                long ms = (startedAt.get(i) - t0) / 1_000_000;
                assertTrue(ms < 2000, "started " + ms + " ms after the enqueue in another instance, with a 30 s poll");
            }
            // a job enqueued in a transaction wakes the worker when it commits
            long t0;
            try (Connection c = db.dataSource().getConnection()) {
                c.setAutoCommit(false);
                client.enqueue(c, clientPing, new Ping(99), EnqueueOptions.now());
                Thread.sleep(300);
                assertTrue(!startedAt.containsKey(99), "not visible before the commit");
                t0 = System.nanoTime();
                c.commit();
            }
            Await.until(Duration.ofSeconds(5), "the committed job started", () -> startedAt.containsKey(99));
            assertTrue((startedAt.get(99) - t0) / 1_000_000 < 2000);
        } finally {
            worker.stop();
            client.stop();
        }
    }

    @Test
    void jobsPickedAheadOfAFreeThreadAreKeptAliveByTheBulkHeartbeat(TestDatabase db) {
        Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
        JobType<Ping> slow = JobType.of("slow", Ping.class, (a, c) -> {
            runs.computeIfAbsent(a.n(), k -> new AtomicInteger()).incrementAndGet();
            Thread.sleep(700); // a slow provider call (stands for its latency; not a wait)
            return Outcome.done();
        });
        // one thread picks four jobs; each waits up to 2.1 s for the thread, while a job is dead
        // after 4 missed heartbeats of 150 ms (600 ms)
        Layover worker = Layover.builder(db.dataSource()).register(slow).threads(1).prefetch(4)
                .heartbeat(Duration.ofMillis(150), 4).pollInterval(Duration.ofMillis(50)).build();
        for (int i = 0; i < 4; i++) {
            worker.enqueue(slow, new Ping(i));
        }
        worker.start();
        try {
            Await.equal(Duration.ofSeconds(30), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            assertEquals(4, runs.size());
            runs.forEach((n, count) -> assertEquals(1, count.get(), "job " + n + " ran once"));
        } finally {
            worker.stop();
        }
    }
}
