package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.provider.state.FairWorkerMain.Work;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Fair share across two worker JVMs: a child process and this one run the same fairness-keyed job
 * type under one 20/s bucket (or one concurrency limit of 2); the tenants' permits interleave
 * whichever process runs them, because the fair queue (its tags, its clock, its bookings) lives in
 * Postgres.
 */
@ProcessTest
class FairnessTwoJvmTest {

    private static final Duration WAIT = Duration.ofSeconds(60);

    private JvmProcess child;
    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        if (child != null) {
            child.close();
        }
        instances.forEach(Layover::stop);
    }

    private static List<Work> jobs(String tenant, int n) {
        List<Work> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new Work(tenant, i));
        }
        return out;
    }

    @Test
    void twoProcessesShareTheKeysPermitsAmongTheTenants(TestDatabase db) throws Exception {
        child = JvmProcess.start(FairWorkerMain.class, "fair-child", db.jdbcUrl(), "worker-child");
        child.awaitOutput("started worker-child", WAIT);
        Layover here = FairWorkerMain.worker(db.newDataSource(6), "worker-here").start();
        instances.add(here);
        JobType<Work> type = FairWorkerMain.TYPE;
        List<Work> all = jobs("a", 100);
        all.addAll(jobs("b", 40));
        all.addAll(jobs("c", 10));
        try (Connection c = db.dataSource().getConnection()) { // the three tenants arrive together
            c.setAutoCommit(false);
            here.enqueueBatch(c, type, all, w -> dev.layover.core.EnqueueOptions.now());
            c.commit();
        }
        Await.equal(WAIT, "all done", 150L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'fair-work'"));

        assertFairFirst30(db, "fair-work");
        assertEquals(2L, db.count("select count(distinct worker) from layover.job_history where job_type = 'fair-work'"),
                "both processes ran jobs");
        assertEquals(0L, db.count("select count(*) from layover.job_history where job_type = 'fair-work' and attempts > 0"));
    }

    @Test
    void twoProcessesShareAConcurrencyLimitsSlotsAmongTheTenants(TestDatabase db) throws Exception {
        child = JvmProcess.start(FairWorkerMain.class, "fair-slot-child", db.jdbcUrl(), "worker-child", "slots");
        child.awaitOutput("started worker-child", WAIT);
        Layover here = FairWorkerMain.slotWorker(db.newDataSource(6), "worker-here").build();
        instances.add(here);
        List<Work> all = jobs("a", 60);
        all.addAll(jobs("b", 20));
        all.addAll(jobs("c", 10));
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            here.enqueueBatch(c, FairWorkerMain.SLOT_TYPE, all, w -> dev.layover.core.EnqueueOptions.now());
            c.commit();
        }
        // this process joins once the child has run some: a warm worker that frees a slot picks the
        // next job at once and could otherwise take every slot before a cold JVM's first poll
        Await.until(WAIT, "the child ran jobs", () -> db.count(
                "select count(*) from layover.job_history where job_type = 'fair-slot-work' and worker = 'worker-child'") > 0);
        here.start();
        Await.equal(WAIT, "all done", 90L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'fair-slot-work'"));
        assertFairFirst30(db, "fair-slot-work");
        assertEquals(2L, db.count("select count(distinct worker) from layover.job_history where job_type = 'fair-slot-work'"),
                () -> "both processes ran jobs: " + db.rows("select worker, count(*) from layover.job_history"
                        + " where job_type = 'fair-slot-work' group by worker"));
        assertEquals(0L, db.count("select count(*) from layover.job_history where job_type = 'fair-slot-work' and attempts > 0"));
    }

    /** Of the first 30 runs (by start), each of the three tenants had 7 to 13. */
    private static void assertFairFirst30(TestDatabase db, String jobType) {
        List<Map<String, Object>> first = db.rows("select args->>'tenant' as tenant from layover.job_history"
                + " where job_type = ? order by started_at, job_id limit 30", jobType);
        Map<String, Integer> perTenant = new HashMap<>();
        for (Map<String, Object> r : first) {
            perTenant.merge(r.get("tenant").toString(), 1, Integer::sum);
        }
        for (String t : List.of("a", "b", "c")) {
            int got = perTenant.getOrDefault(t, 0);
            assertTrue(got >= 7 && got <= 13, "tenant " + t + " had " + got + " of the first 30 runs: " + perTenant);
        }
    }
}
