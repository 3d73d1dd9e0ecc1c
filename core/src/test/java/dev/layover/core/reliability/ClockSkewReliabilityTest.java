package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Workers and applications whose clocks are off (libfaketime shifts a child JVM's wall clock):
 * time that decides ownership and due-ness is the database's, so a worker 90 s ahead does not take
 * a healthy worker's running jobs for dead, and an application 10 minutes ahead enqueues "now" for
 * now. Without libfaketime the test is skipped (CI installs it: .ci/run).
 */
@ProcessTest
class ClockSkewReliabilityTest {

    @Test
    void aWorkerWhoseClockRunsAheadDoesNotRunAHealthyWorkersJobsAgain(TestDatabase db) throws Exception {
        Optional<Map<String, String>> ahead = JvmProcess.faketime(Duration.ofSeconds(90));
        assumeTrue(ahead.isPresent(), "libfaketime (Debian's faketime) is not installed");
        Reliability.createExecLog(db);
        JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> Outcome.done());
        try (Layover client = Layover.builder(db.dataSource()).register(rel).migrate(false).build()) {
            List<WorkerMain.Item> longJobs = new ArrayList<>();
            for (int i = 1; i <= 4; i++) {
                longJobs.add(new WorkerMain.Item(-i));
            }
            client.enqueueBatch(rel, longJobs);
        }
        // dead after 4 missed 1 s heartbeats: a worker 90 s ahead would see the others' heartbeats as 90 s old
        List<String> jvm = List.of("-Xmx256m", "-Drel.heartbeatMs=1000", "-Drel.missed=4", "-Drel.longMs=10000");
        try (JvmProcess a = JvmProcess.start(WorkerMain.class, "skew-worker-a", jvm,
                List.of(db.jdbcUrl(), "worker-a", "4", "0", "db"))) {
            a.awaitOutput("started worker-a", Duration.ofSeconds(60));
            Await.equal(Duration.ofSeconds(60), "the four long jobs running on worker-a", 4L,
                    () -> db.count("select count(*) from public.exec_log where worker = 'worker-a'"));
            try (JvmProcess b = JvmProcess.start(WorkerMain.class, "skew-worker-b", jvm,
                    List.of(db.jdbcUrl(), "worker-b", "4", "0", "db"), ahead.get())) {
                b.awaitOutput("started worker-b", Duration.ofSeconds(60));
                Await.equal(Duration.ofSeconds(60), "every job finished", 0L,
                        () -> db.count("select count(*) from layover.jobs"));
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("runs", db.count("select count(*) from public.exec_log"));
                f.put("runs on worker-b (clock +90 s)", db.count("select count(*) from public.exec_log where worker = 'worker-b'"));
                f.put("worker-b warned of its clock", b.output().contains("ahead of the database's"));
                Reliability.report("clock skew: a worker 90 s ahead", f);
                assertEquals(4L, f.get("runs"), "each job ran once: " + f + "\n" + b.output());
                assertEquals(0L, f.get("runs on worker-b (clock +90 s)"));
                assertTrue(b.output().contains("ahead of the database's"), "the skewed worker says its clock is off:\n"
                        + b.output());
            }
        }
        assertEquals(0, db.count("select count(*) from layover.dead_letters"), "no revival spent an attempt or parked");
    }

    @Test
    void anApplicationWhoseClockRunsAheadEnqueuesNowForNow(TestDatabase db) {
        Optional<Map<String, String>> ahead = JvmProcess.faketime(Duration.ofMinutes(10));
        assumeTrue(ahead.isPresent(), "libfaketime (Debian's faketime) is not installed");
        try (JvmProcess app = JvmProcess.start(EnqueueMain.class, "skew-app", List.of("-Xmx128m"),
                List.of(db.jdbcUrl(), "now-from-the-future"), ahead.get())) {
            app.awaitOutput("enqueued now-from-the-future", Duration.ofSeconds(60));
            assertTrue(app.output().contains("enqueued now-from-the-future 2"), app.output());
        }
        double late = ((Number) db.value("select extract(epoch from run_at - now()) from layover.jobs"
                + " where id = 'now-from-the-future'")).doubleValue();
        assertTrue(Math.abs(late) < 5, "the job is due now by the database's clock, not in 10 minutes: " + late + " s");
    }
}
