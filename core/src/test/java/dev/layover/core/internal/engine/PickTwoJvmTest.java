package dev.layover.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.core.internal.engine.LimitWorkerMain.Call;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The pick's admission with two worker JVMs sharing one provider key: each limit kind holds across
 * both, against a fake provider that enforces the same limit, and no waiting job is written.
 */
@ProcessTest
class PickTwoJvmTest {

    private static final String KEY = "openai:gpt-4o-mini";
    private static final Duration WAIT = Duration.ofSeconds(90);

    private final FakeProvider fake = FakeProvider.start();
    private final List<JvmProcess> children = new ArrayList<>();

    @AfterEach
    void stop() {
        children.forEach(JvmProcess::close);
        fake.close();
    }

    /** Two worker JVMs under the limit, then the jobs enqueued by a client that runs none. */
    private void run(TestDatabase db, String limit, int jobs) {
        for (String name : new String[] {"jvm-a", "jvm-b"}) {
            JvmProcess p = JvmProcess.start(LimitWorkerMain.class, name, db.jdbcUrl(), fake.primary().url().toString(), KEY,
                    name, limit);
            p.awaitOutput("started " + name, Duration.ofSeconds(60));
            children.add(p);
        }
        dev.layover.core.JobType<Call> type = LimitWorkerMain.type(KEY, fake.primary().url());
        Layover client = Layover.builder(db.newDataSource(4)).workerName("client").register(type).build();
        // warm both JVMs up (a fresh JVM's first calls take a second, and would arrive bunched), then let the limit
        // refill and count from zero
        List<Call> warm = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            warm.add(new Call("warm-up " + i));
        }
        client.enqueueBatch(type, warm);
        Await.equal(WAIT, "warm-up rows", 0L, () -> db.count("select count(*) from layover.scheduled_tasks"));
        Await.until(WAIT, "the limit refilled", () -> db.count("select count(*) from layover.scheduled_tasks") == 0
                && db.count("select count(*) from layover.buckets where request_tat > now()") == 0);
        fake.primary().resetCounters();
        db.update("delete from layover.job_history");
        List<Call> calls = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            calls.add(new Call("job " + i));
        }
        client.enqueueBatch(type, calls);
        Await.until(WAIT, "a third of the jobs done", () -> fake.primary().successes() >= jobs / 3);
        assertTrue(db.count("select count(*) from layover.scheduled_tasks where not picked") > 0, "jobs still wait");
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where not picked and version > 1"),
                "a waiting job is never written");
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.scheduled_tasks"));
        assertEquals(jobs, fake.primary().successes(), "each job called once");
        assertEquals(jobs, db.count("select count(*) from layover.job_history where job_type = 'limited' and attempts = 0"
                + " and reschedules = 0"), "none spent an attempt or was rescheduled");
        assertEquals(2L, db.count("select count(distinct worker) from layover.job_history where job_type = 'limited'"),
                "both JVMs ran jobs");
    }

    @Test
    void aRequestBucketHoldsAcrossTwoJvms(TestDatabase db) {
        // the provider counts at arrival, the bucket at admission: a burst of two seconds absorbs the jitter between
        fake.primary().limitPerSecond(20).burst(40);
        run(db, "bucket:20", 150);
        assertEquals(0, fake.primary().rateLimited(), "the provider, enforcing the same rate, never refused");
        // admitted at most its burst (20) plus 20 a second; counted at arrival, a few calls late of their pick
        int peak = fake.primary().maxInWindow(Duration.ofSeconds(1));
        assertTrue(peak <= 43, "at most the bucket's burst and a second's pace in any second: " + peak);
    }

    @Test
    void aConcurrencyLimitHoldsAcrossTwoJvms(TestDatabase db) {
        fake.primary().latency(Duration.ofMillis(100));
        run(db, "concurrency:3", 90);
        assertTrue(fake.primary().maxInFlight() <= 3, "at most 3 calls in flight, saw " + fake.primary().maxInFlight());
        assertEquals(3, fake.primary().maxInFlight(), "the limit was used");
    }
}
