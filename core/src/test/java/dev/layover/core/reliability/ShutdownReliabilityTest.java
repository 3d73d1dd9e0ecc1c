package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Scenario 6: {@code stop()} in the middle of a burst of short jobs leaves no job half-done (every
 * handler that started finished and its outcome is written, no row stays picked) and the jobs
 * still queued run on a second instance, each exactly once. A job still running when the shutdown
 * wait ends is interrupted; its outcome is written too, without spending an attempt.
 */
@ProcessTest
class ShutdownReliabilityTest {

    record Item(int n) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void stopDuringABurstLeavesNoJobHalfDoneAndASecondInstanceFinishesTheRest(TestDatabase db) throws Exception {
        int jobs = 5000;
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Map<String, String> runBy = new ConcurrentHashMap<>();
        AtomicInteger startedA = new AtomicInteger();
        AtomicInteger finishedA = new AtomicInteger();
        JobType<Item> a = JobType.of("burst", Item.class, (args, ctx) -> {
            startedA.incrementAndGet();
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            runBy.put(ctx.jobId(), "a");
            Thread.sleep(2); // the provider call's latency (stands for one; not a wait)
            finishedA.incrementAndGet();
            return Outcome.done();
        });
        Layover first = Reliability.builder(db).register(a).threads(8).workerName("first").build();
        List<Item> items = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            items.add(new Item(i));
        }
        first.enqueueBatch(a, items);
        first.start();
        Await.until(WAIT, "a fifth of the burst done", () -> finishedA.get() >= jobs / 5);
        long t0 = System.nanoTime();
        first.stop();
        long stopMs = (System.nanoTime() - t0) / 1_000_000;

        long picked = db.count("select count(*) from layover.scheduled_tasks where picked");
        long left = db.count("select count(*) from layover.jobs");
        assertEquals(startedA.get(), finishedA.get(), "every handler that started finished");
        assertEquals(0, picked, "no row is left picked");
        assertEquals(jobs - finishedA.get(), left, "finished jobs are deleted, the others are still queued");
        assertEquals(0, db.count("select count(*) from layover.jobs where attempts > 0 or reschedules > 0"));

        AtomicInteger ranB = new AtomicInteger();
        JobType<Item> b = JobType.of("burst", Item.class, (args, ctx) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            runBy.put(ctx.jobId(), "b");
            ranB.incrementAndGet();
            return Outcome.done();
        });
        Layover second = Reliability.builder(db).register(b).threads(8).workerName("second").start();
        try {
            Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            assertTrue(second.awaitCompletions(Duration.ofSeconds(10)));
        } finally {
            second.stop();
        }
        long twice = runs.values().stream().filter(n -> n.get() > 1).count();
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("jobs", jobs);
        f.put("done by the first instance before stop()", finishedA.get());
        f.put("handlers started / finished on the first", startedA.get() + " / " + finishedA.get());
        f.put("rows left picked after stop()", picked);
        f.put("rows left queued after stop()", left);
        f.put("stop() took (ms)", stopMs);
        f.put("run by the second instance", ranB.get());
        f.put("jobs run", runs.size());
        f.put("jobs run more than once", twice);
        Reliability.report("scenario 6: stop() during a burst", f);
        assertEquals(jobs, runs.size(), "every job ran");
        assertEquals(0, twice, "none ran twice");
        assertEquals(left, ranB.get());
    }

    @Test
    void aJobStillRunningWhenTheShutdownWaitEndsIsInterruptedAndRunsAgainWithoutSpendingAnAttempt(TestDatabase db) {
        Map<String, List<Integer>> attempts = new ConcurrentHashMap<>();
        AtomicInteger interrupted = new AtomicInteger();
        JobType<Item> slow = JobType.of("slow", Item.class, (args, ctx) -> {
            attempts.computeIfAbsent(ctx.jobId(), k -> new java.util.concurrent.CopyOnWriteArrayList<>()).add(ctx.attempt());
            if (args.n() == 1) {
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    interrupted.incrementAndGet();
                    throw e;
                }
            }
            return Outcome.done();
        });
        Layover first = Reliability.builder(db).register(slow).shutdownMaxWait(Duration.ofMillis(500)).build();
        String id = first.enqueue(slow, new Item(1)).id();
        first.start();
        Await.until(WAIT, "the slow job started", () -> attempts.containsKey(id));
        first.stop();
        Map<String, Object> row = db.row("select state, attempts, reschedules, reschedule_reason, run_at <= now() + interval '1 second' as soon"
                + " from layover.jobs where id = ?", id);
        assertEquals(1, interrupted.get(), "the handler was interrupted");
        assertEquals(0, db.count("select count(*) from layover.scheduled_tasks where picked"), "not left picked");
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("interrupted job after stop()", row);
        Reliability.report("scenario 6b: a job cut off by the shutdown wait", f);
        assertEquals(0, row.get("attempts"), "a shutdown is not the job's failure");
        assertEquals(true, row.get("soon"), "it may run again at once");
        JobType<Item> quick = JobType.of("slow", Item.class, (args, ctx) -> {
            attempts.get(ctx.jobId()).add(ctx.attempt());
            return Outcome.done();
        });
        Layover second = Reliability.builder(db).register(quick).start();
        try {
            Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            assertEquals(List.of(1, 1), attempts.get(id));
        } finally {
            second.stop();
        }
    }

    @Test
    void aShutdownHookLetsTheRunningJobFinishWhenAPlainProgramExits(TestDatabase db) {
        try (JvmProcess p = JvmProcess.start(ShutdownHookMain.class, "shutdown-hook", List.of("-Xmx128m"),
                List.of(db.jdbcUrl()))) {
            assertEquals(0, p.waitFor(Duration.ofSeconds(60)), p.output());
            assertTrue(p.output().contains("exiting"), p.output());
            assertTrue(p.output().contains("finishing hooked"), "the job ran to its end after exit was called:\n" + p.output());
        }
        assertEquals(1, db.count("select count(*) from layover.job_history where job_id = 'hooked' and outcome = 'completed'"),
                "it completed, written before the JVM ended");
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }
}
