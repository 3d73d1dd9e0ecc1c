package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Several workers on one database, graceful stop, and the revival of a dead worker's job. */
@DatabaseTest
class ClusterAndShutdownTest {

    record Item(int n) {}

    @Test
    void twoInstancesOnOneDatabaseRunEveryJobExactlyOnce(TestDatabase db) {
        Map<Integer, AtomicInteger> executions = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> byWorker = new ConcurrentHashMap<>();
        List<Layover> instances = new ArrayList<>();
        for (String name : new String[] {"worker-a", "worker-b"}) {
            JobType<Item> item = JobType.of("item", Item.class, (args, ctx) -> {
                executions.computeIfAbsent(args.n(), k -> new AtomicInteger()).incrementAndGet();
                byWorker.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
                return Outcome.done();
            });
            instances.add(TestLayovers.builder(db).register(item).workerName(name).threads(8).start());
        }
        try {
            List<Item> items = new ArrayList<>();
            for (int i = 0; i < 5000; i++) {
                items.add(new Item(i));
            }
            JobType<?> registered = instances.get(0).jobType("item").orElseThrow();
            @SuppressWarnings("unchecked")
            JobType<Item> type = (JobType<Item>) registered;
            instances.get(0).enqueueBatch(type, items);
            Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            assertEquals(5000, executions.size());
            assertTrue(executions.values().stream().allMatch(n -> n.get() == 1), "every job ran exactly once");
            assertEquals(2, byWorker.size(), "both workers took part: " + byWorker);
        } finally {
            instances.forEach(Layover::stop);
        }
    }

    @Test
    void stopLetsRunningJobsFinishAndLeavesTheRestQueued(TestDatabase db) throws Exception {
        AtomicInteger started = new AtomicInteger();
        AtomicInteger finished = new AtomicInteger();
        JobType<Item> slow = JobType.of("slow", Item.class, (args, ctx) -> {
            started.incrementAndGet();
            Thread.sleep(400); // a job's provider call (stands for its latency; not a wait)
            finished.incrementAndGet();
            return Outcome.done();
        });
        Layover first = TestLayovers.builder(db).register(slow).threads(4).start();
        List<Item> items = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            items.add(new Item(i));
        }
        first.enqueueBatch(slow, items);
        Await.until(Duration.ofSeconds(20), "some jobs running", () -> started.get() >= 4);
        first.stop();
        assertEquals(started.get(), finished.get(), "no job was cut off half-done");
        assertEquals(0, db.count("select count(*) from layover.scheduled_tasks where picked"),
                "no row is left picked");
        long left = db.count("select count(*) from layover.jobs");
        assertEquals(60 - finished.get(), left, "finished jobs are deleted, the others still queued");
        assertTrue(left > 0);

        Layover second = TestLayovers.builder(db).register(slow).threads(8).start();
        try {
            Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            assertEquals(60, finished.get(), "each job ran once across both instances");
        } finally {
            second.stop();
        }
    }

    @Test
    void aDeadWorkersJobRunsAgainFreeTheFirstTimeAndSpendsAnAttemptWhenLostTwiceInARow(TestDatabase db) throws Exception {
        Map<String, Integer> attemptSeen = new ConcurrentHashMap<>();
        JobType<Item> item = JobType.builder("item", Item.class)
                .policy(JobPolicy.defaults().withBackoff(Duration.ofMinutes(5), Duration.ofMinutes(10)))
                .handler((args, ctx) -> {
                    attemptSeen.put(ctx.jobId(), ctx.attempt());
                    return Outcome.retry("keep the row for inspection");
                })
                .build();
        // two jobs of a worker killed mid-run: picked, the heartbeat stopped a minute ago; the
        // second's run before this one had ended the same way
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,"
                + " picked_by, last_heartbeat, version, consecutive_failures)"
                + " values ('item', 'orphan', convert_to('{\"n\":1}', 'UTF8'), now() - interval '2 minutes', true,"
                + " 'killed-worker', now() - interval '1 minute', 7, 0)");
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,"
                + " picked_by, last_heartbeat, version, consecutive_failures, reschedules, last_reschedule_reason,"
                + " last_rescheduled_at)"
                + " values ('item', 'twice', convert_to('{\"n\":2}', 'UTF8'), now() - interval '2 minutes', true,"
                + " 'killed-worker', now() - interval '1 minute', 7, 0, 1, 'worker_lost', now() - interval '3 minutes')");
        assertEquals("running", db.value("select state from layover.jobs where id = 'orphan'"));
        Layover layover = TestLayovers.builder(db).register(item).heartbeat(Duration.ofMillis(200), 4).start();
        try {
            Await.until(Duration.ofSeconds(20), "both ran again",
                    () -> attemptSeen.containsKey("orphan") && attemptSeen.containsKey("twice"));
            assertEquals(1, attemptSeen.get("orphan"), "the first loss spent no attempt");
            assertEquals(2, attemptSeen.get("twice"), "the second loss in a row spent attempt 1");
            assertEquals("worker_lost", db.value("select reschedule_reason from layover.jobs where id = 'orphan'"));
            assertEquals(1, db.value("select reschedules from layover.jobs where id = 'orphan'"));
            assertTrue(((String) db.value("select reschedule_detail from layover.jobs where id = 'orphan'"))
                    .contains("stopped sending heartbeats"));
            Await.equal(Duration.ofSeconds(20), "attempts", 2, () -> db.value("select attempts from layover.jobs where id = 'twice'"));
            var errors = new ObjectMapper().readTree((String) db.value("select errors::text from layover.jobs where id = 'twice'"));
            assertEquals("worker_lost", errors.get(0).get("kind").asText());
            assertTrue(errors.get(0).get("message").asText().contains("second loss in a row"));
        } finally {
            layover.stop();
        }
    }

    @Test
    void anEnqueueOnlyClientOwnsNoBackgroundThread(TestDatabase db) {
        // Threads are told apart by the clients' own worker names: a count of every layover thread
        // in the JVM would also see threads that earlier tests' instances are still winding down.
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String name = "enqueue-only-" + i;
            names.add(name);
            Layover client = Layover.builder(db.dataSource()).workerName(name)
                    .register(JobType.of("c", Item.class, (a, c) -> null)).build();
            client.enqueue(client.jobType("c").map(t -> {
                @SuppressWarnings("unchecked")
                JobType<Item> typed = (JobType<Item>) t;
                return typed;
            }).orElseThrow(), new Item(i));
            client.stop();
        }
        assertEquals(List.of(), threadsOf(names), "building and stopping clients leaves no thread behind");
        assertEquals(5, db.count("select count(*) from layover.jobs"));
    }

    private static List<String> threadsOf(List<String> workerNames) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.startsWith("layover-") && workerNames.stream().anyMatch(n::contains))
                .sorted()
                .toList();
    }
}
