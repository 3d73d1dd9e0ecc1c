package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A 429 met by a worker in one JVM process makes a worker in another process wait without
 * calling: the cooldown lives in Postgres, not in memory.
 */
@ProcessTest
class TwoProcessesTest {

    private static final String KEY = "fake:primary";
    private static final Duration WAIT = Duration.ofSeconds(60);

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

    private JvmProcess startChild(TestDatabase db) {
        child = JvmProcess.start(ChildWorkerMain.class, "worker-a",
                db.jdbcUrl(), fake.primary().url().toString(), KEY, "worker-a");
        child.awaitOutput("started worker-a", WAIT);
        return child;
    }

    private static Instant cooldownUntil(TestDatabase db) {
        return ((Timestamp) db.value("select until from layover.cooldowns where provider_key = ?", KEY)).toInstant();
    }

    @Test
    void aRateLimitMetInAnotherProcessMakesThisOneWaitWithoutCalling(TestDatabase db) {
        fake.primary().throttledRetryAfter(Duration.ofSeconds(6)).phase(FakeProvider.Phase.THROTTLED);
        startChild(db);
        AtomicInteger calls = new AtomicInteger();
        JobType<Chat> chat = ChildWorkerMain.chatType(KEY, fake.primary().url(), calls::incrementAndGet);
        Layover client = Layover.builder(db.dataSource()).register(chat).build(); // enqueues, runs nothing
        String first = client.enqueue(chat, new Chat("met the 429")).id();
        Await.equal(WAIT, "cooldowns written by the other process", 1L,
                () -> db.count("select count(*) from layover.cooldowns where updated_by = 'worker-a'"));
        Await.equal(WAIT, "the other process's job rescheduled", 1L, () -> db.count(
                "select count(*) from layover.jobs where id = ? and reschedule_reason = 'rate_limited'", first));
        Instant until = cooldownUntil(db);
        child.kill(); // kill -9: the cooldown is all that is left of what it learnt
        fake.primary().phase(FakeProvider.Phase.NORMAL);

        Layover here = Workers.builder(db.dataSource(), "worker-b").register(chat).start();
        instances.add(here);
        for (int i = 0; i < 4; i++) {
            here.enqueue(chat, new Chat("job " + i));
        }
        Await.equal(WAIT, "jobs this process admits none of while the key cools down", 4L,
                () -> db.count("select count(*) from layover.jobs where waiting_for = 'cooldown'"));
        assertEquals(4L, db.count("select count(*) from layover.scheduled_tasks where not picked and version = 1"
                + " and task_instance <> ?", first), "they wait as they were enqueued: never written");
        assertTrue(Instant.now().isBefore(until), "seen before the cooldown ended");
        assertEquals(0, calls.get(), "this process called nothing");
        assertEquals(1, fake.primary().calls(), "only the other process's call reached the provider");

        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(5, calls.get(), "afterwards each job ran once here, the one of the killed process too");
        for (Instant a : fake.primary().arrivals().subList(1, 6)) {
            assertFalse(a.isBefore(until), "no call before the cooldown ended: " + a + " < " + until);
        }
    }

    @Test
    void aRunningInstanceAdmitsNothingOfAKeyAnotherProcessCooledDown(TestDatabase db) throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch holding = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        JobType<Chat> chat = JobType.builder("chat", Chat.class)
                .providerKey(KEY)
                .handler((args, ctx) -> {
                    calls.incrementAndGet();
                    FakeChat.complete(fake.primary().url(), args.text());
                    if (args.text().equals("blocker")) {
                        holding.countDown();
                        release.await(60, TimeUnit.SECONDS); // holds this instance's only thread
                    }
                    return Outcome.done();
                })
                .build();
        Layover here = Workers.builder(db.dataSource(), "worker-b").register(chat).threads(1).prefetch(1).start();
        instances.add(here);
        here.enqueue(chat, new Chat("warm")); // this instance now has the key's state cached: no cooldown
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        here.enqueue(chat, new Chat("blocker"));
        // past its provider call: a throttled answer must not end the blocker before it holds the thread
        Await.until(WAIT, "the blocker to hold the only thread", () -> holding.getCount() == 0);

        fake.primary().throttledRetryAfter(Duration.ofSeconds(8)).phase(FakeProvider.Phase.THROTTLED);
        startChild(db);
        String probe = here.enqueue(chat, new Chat("probe")).id(); // this instance's thread is busy: the other process takes it
        Await.equal(WAIT, "cooldowns written by the other process", 1L,
                () -> db.count("select count(*) from layover.cooldowns where updated_by = 'worker-a'"));
        Await.equal(WAIT, "the other process's job rescheduled", 1L, () -> db.count(
                "select count(*) from layover.jobs where id = ? and reschedule_reason = 'rate_limited'", probe));
        Instant until = cooldownUntil(db);
        child.kill();
        fake.primary().phase(FakeProvider.Phase.NORMAL);
        int providerCalls = fake.primary().calls(); // the pick reads the cooldown row: nothing to wait for

        here.enqueue(chat, new Chat("after"));
        release.countDown();
        Await.equal(WAIT, "the job waiting on the cooldown", 1L, () -> db.count(
                "select count(*) from layover.jobs where waiting_for = 'cooldown' and args->>'text' = 'after'"));
        assertTrue(Instant.now().isBefore(until), "seen before the cooldown ended");
        assertEquals(2, calls.get(), "the key admitted nothing while it cooled: the handler did not run");
        assertEquals(providerCalls, fake.primary().calls());
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        for (Instant a : fake.primary().arrivals().subList(providerCalls, fake.primary().calls())) {
            assertFalse(a.isBefore(until), "no call before the cooldown ended");
        }
    }
}
