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

    @Test
    void aPluginsTaskRunningLongerThanTheGiveBackWaitIsNotGivenBack(TestDatabase db) throws Exception {
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch running = new CountDownLatch(1);
        List<Boolean> pickedWhileRunning = new java.util.concurrent.CopyOnWriteArrayList<>();
        com.github.kagkarlsson.scheduler.task.Task<Void> slow = com.github.kagkarlsson.scheduler.task.helper.Tasks
                .recurring("layover-test-slow", com.github.kagkarlsson.scheduler.task.schedule.FixedDelay.ofHours(1))
                .execute((inst, ctx) -> {
                    runs.incrementAndGet();
                    running.countDown();
                    try {
                        Thread.sleep(1500); // the task's work: longer than giveBackAfter, with threads free
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
        JobType<Call> call = JobType.of("call", Call.class, (a, ctx) -> Outcome.done());
        try (Layover l = Reliability.builder(db).register(call).workerName("p").threads(2)
                .giveBackAfter(Duration.ofMillis(200)).plugin(layover -> List.of(slow)).start()) {
            assertTrue(running.await(30, TimeUnit.SECONDS), "the plugin's task started");
            Await.until(Duration.ofSeconds(10), "the task ended", () -> {
                pickedWhileRunning.add(Boolean.TRUE.equals(db.value(
                        "select picked from layover.scheduled_tasks where task_name = 'layover-test-slow'")));
                return db.count("select count(*) from layover.scheduled_tasks where task_name = 'layover-test-slow'"
                        + " and not picked and execution_time > now() + interval '50 minutes'") == 1;
            });
            assertEquals(1, runs.get(), "it ran once: not given back and picked again");
            assertTrue(pickedWhileRunning.subList(0, pickedWhileRunning.size() - 1).stream().allMatch(b -> b),
                    "its row stayed picked while it ran: " + pickedWhileRunning);
        }
    }

    @Test
    void aBreakerTrialPickedBehindAHungHandlerGoesBackWithItsJob(TestDatabase db) throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        JobType<Call> hang = JobType.of("hang", Call.class, (a, ctx) -> {
            release.await(60, TimeUnit.SECONDS); // a call that hangs
            return Outcome.done();
        });
        AtomicInteger trialsOnB = new AtomicInteger();
        JobType<Call> keyedOnA = JobType.builder("keyed", Call.class).providerKey("openai:lifeline-trial")
                .handler((a, ctx) -> Outcome.done()).build();
        JobType<Call> keyedOnB = JobType.builder("keyed", Call.class).providerKey("openai:lifeline-trial")
                .handler((a, ctx) -> {
                    trialsOnB.incrementAndGet();
                    return Outcome.done();
                }).build();
        try (Layover a = Reliability.builder(db).register(hang).register(keyedOnA).workerName("a").threads(1).prefetch(3)
                .giveBackAfter(Duration.ofSeconds(1)).start()) {
            a.enqueue(hang, new Call(0));
            Await.until(Duration.ofSeconds(30), "a's only thread hangs",
                    () -> db.count("select count(*) from layover.jobs where job_type = 'hang' and picked_by = 'a'") == 1);
            // the key's breaker is open and its open period over: the next pick of its job claims the trial
            db.update("insert into layover.breakers (provider_key, state, opened_at, open_until, open_count)"
                    + " values ('openai:lifeline-trial', 'open', now() - interval '1 minute', now() - interval '1 second', 1)");
            a.enqueue(keyedOnA, new Call(1));
            Await.until(Duration.ofSeconds(30), "a's pick claimed the trial for the job it holds behind the hung call",
                    () -> "a".equals(db.value("select trial_claimed_by from layover.breakers"
                            + " where provider_key = 'openai:lifeline-trial'")));
            try (Layover b = Reliability.builder(db).register(hang).register(keyedOnB).workerName("b").threads(2).start()) {
                // given back after a second, with its trial: b's pick claims the trial and the call closes the
                // breaker (a trial left with a would wait out the trial timeout, two minutes)
                Await.until(Duration.ofSeconds(30), "b ran the job as the trial and the breaker closed",
                        () -> trialsOnB.get() == 1 && "closed".equals(db.value(
                                "select state from layover.breakers where provider_key = 'openai:lifeline-trial'")));
                release.countDown();
                Await.equal(Duration.ofSeconds(30), "every job done", 0L, () -> db.count("select count(*) from layover.jobs"));
            }
        }
    }
}
