package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A rate limit learned by one job makes every job of its key wait, without calling. */
@DatabaseTest
class CooldownTest {

    private static final String KEY = "fake:primary";
    private final FakeProvider fake = FakeProvider.start();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
        fake.close();
    }

    @Test
    void aRateLimitMakesTheOtherJobsOfItsKeyWaitForTheCooldownWithoutCalling(TestDatabase db) {
        AtomicInteger handlerRuns = new AtomicInteger();
        JobType<Chat> chat = ChildWorkerMain.chatType(KEY, fake.primary().url(), handlerRuns::incrementAndGet);
        layover = Workers.builder(db.dataSource(), "worker-a").register(chat).start();
        fake.primary().throttledRetryAfter(Duration.ofSeconds(4)).phase(FakeProvider.Phase.THROTTLED);

        String first = layover.enqueue(chat, new Chat("first")).id();
        Await.equal(Duration.ofSeconds(10), "cooldowns", 1L, () -> db.count("select count(*) from layover.cooldowns"));
        Instant until = ((Timestamp) db.value("select until from layover.cooldowns where provider_key = ?", KEY)).toInstant();
        fake.primary().phase(FakeProvider.Phase.NORMAL);

        for (int i = 0; i < 5; i++) {
            layover.enqueue(chat, new Chat("later " + i));
        }
        Await.equal(Duration.ofSeconds(10), "jobs waiting on the cooldown", 5L, () -> db.count(
                "select count(*) from layover.jobs where waiting_for = 'cooldown'"));
        assertTrue(Instant.now().isBefore(until), "checked before the cooldown ended");
        assertEquals(1, fake.primary().calls(), "only the job that met the 429 called");
        assertEquals(1, handlerRuns.get(), "the others were not picked: their key admits none while it cools");
        for (Map<String, Object> job : db.rows("select * from layover.jobs where waiting_for = 'cooldown'")) {
            assertEquals(0, job.get("attempts"), "a cooldown spends no attempt");
            assertEquals(0, job.get("reschedules"), "nor a reschedule");
            Instant runAt = ((Timestamp) job.get("run_at")).toInstant();
            assertTrue(runAt.isBefore(until), "run_at " + runAt + " stays as enqueued");
            assertTrue(((String) job.get("waiting_detail")).contains(KEY + ": cooling down until"),
                    String.valueOf(job.get("waiting_detail")));
        }
        assertEquals(5L, db.count("select count(*) from layover.scheduled_tasks where not picked and version = 1"),
                "the waiting jobs were never written");
        Map<String, Object> firstJob = db.row("select * from layover.jobs where id = ?", first);
        assertEquals("rate_limited", firstJob.get("reschedule_reason"));

        Await.equal(Duration.ofSeconds(20), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        List<Instant> arrivals = fake.primary().arrivals();
        assertEquals(7, arrivals.size(), "the 429, then each of the six jobs once");
        for (Instant a : arrivals.subList(1, arrivals.size())) {
            assertFalse(a.isBefore(until), "no call before the cooldown ended: " + a + " < " + until);
        }
    }
}
