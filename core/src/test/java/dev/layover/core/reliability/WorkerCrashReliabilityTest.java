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
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Scenario 1: two worker JVMs share 10,000 jobs; one is killed with SIGKILL in the middle. Every
 * job completes, none is lost; the jobs the dead JVM held (running, or finished but not yet
 * deleted by its completer) run again on the survivor once their heartbeat is 40 s old (5 s x 8
 * missed) plus the survivor's dead-execution check (every 10 s); the repeated executions are at
 * most what the dead JVM held. Executions are counted by the handler itself in {@code exec_log}.
 */
@ProcessTest
class WorkerCrashReliabilityTest {

    private static final int JOBS = 10_000;

    @Test
    void killMinusNineOfOneOfTwoWorkersLosesNothingAndItsJobsRunAgainWithinAMinute(TestDatabase db) throws Exception {
        Reliability.createExecLog(db);
        JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> Outcome.done());
        Layover client = Layover.builder(db.dataSource()).register(rel).migrate(false).build();
        List<WorkerMain.Item> items = new ArrayList<>();
        for (int i = 0; i < JOBS; i++) {
            items.add(new WorkerMain.Item(i));
        }
        client.enqueueBatch(rel, items);

        try (JvmProcess a = JvmProcess.start(WorkerMain.class, "crash-worker-a", db.jdbcUrl(), "worker-a", "8", "20", "db");
                JvmProcess b = JvmProcess.start(WorkerMain.class, "crash-worker-b", db.jdbcUrl(), "worker-b", "8", "20", "db")) {
            a.awaitOutput("started worker-a", Duration.ofSeconds(60));
            b.awaitOutput("started worker-b", Duration.ofSeconds(60));
            Await.until(Duration.ofSeconds(60), "a third of the jobs ran, some on worker-a",
                    () -> db.count("select count(*) from public.exec_log") >= JOBS / 3
                            && db.count("select count(*) from public.exec_log where worker = 'worker-a'") > 100);
            a.kill();
            Timestamp killedAt = (Timestamp) db.value("select clock_timestamp()");
            // what the dead JVM held: rows it had picked (running, queued in its executor, or
            // finished and waiting for its completer's delete)
            Thread.sleep(200);
            Set<String> held = new HashSet<>();
            db.rows("select task_instance from layover.scheduled_tasks where picked and picked_by = 'worker-a'")
                    .forEach(r -> held.add((String) r.get("task_instance")));
            long executedOnA = db.count("select count(*) from public.exec_log where worker = 'worker-a'");
            long heldAndRan = db.count("select count(distinct job_id) from public.exec_log where worker = 'worker-a'"
                    + " and job_id = any(?)", (Object) held.toArray(new String[0]));

            Await.equal(Duration.ofSeconds(90), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            double revivalSeconds = held.isEmpty() ? 0 : ((Number) db.value(
                    "select extract(epoch from max(first_b) - ?::timestamptz) from (select min(at) first_b from public.exec_log"
                            + " where worker = 'worker-b' and at > ?::timestamptz and job_id = any(?) group by job_id) r",
                    killedAt, killedAt, held.toArray(new String[0]))).doubleValue();
            long distinct = Reliability.distinctExecuted(db);
            long repeatedJobs = Reliability.repeatedJobs(db);
            long extra = Reliability.extraExecutions(db);
            long repeatedOutsideHeld = db.count("select count(*) from (select job_id from public.exec_log group by job_id"
                    + " having count(*) > 1) r where not (job_id = any(?))", (Object) held.toArray(new String[0]));
            long revivedAttempts = db.count("select count(*) from layover.dead_letters");
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("jobs", JOBS);
            f.put("executions on worker-a before the kill", executedOnA);
            f.put("rows held by worker-a at the kill (in flight)", held.size());
            f.put("  of which its handler had already run", heldAndRan);
            f.put("jobs completed (distinct ids executed)", distinct);
            f.put("jobs lost", JOBS - distinct);
            f.put("jobs executed more than once", repeatedJobs);
            f.put("repeated executions", extra);
            f.put("repeats outside what worker-a held", repeatedOutsideHeld);
            f.put("held jobs re-run on worker-b, last one after (s)", String.format("%.1f", revivalSeconds));
            f.put("dead letters", revivedAttempts);
            f.put("worker-b output", b.outputFile());
            Reliability.report("scenario 1: kill -9 of one of two worker JVMs", f);

            assertEquals(JOBS, distinct, "no job lost");
            assertEquals(0, db.count("select count(*) from layover.scheduled_tasks"), "nothing left");
            assertEquals(0, revivedAttempts, "no job parked");
            assertTrue(!held.isEmpty(), "the kill hit jobs in flight");
            assertTrue(extra <= held.size(), "repeats (" + extra + ") at most what was in flight (" + held.size() + ")");
            assertEquals(0, repeatedOutsideHeld, "only jobs the dead worker held ran twice");
            assertEquals(heldAndRan, repeatedJobs, "exactly the held jobs whose handler had run, ran twice");
            assertTrue(revivalSeconds <= 60, "held jobs ran again within a minute: " + revivalSeconds + " s");
            assertEquals(held.size(), db.count("select count(distinct job_id) from public.exec_log where worker = 'worker-b'"
                    + " and at > ? and job_id = any(?)", killedAt, held.toArray(new String[0])),
                    "every held job ran again on worker-b");
        }
    }
}
