package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.TenantTask;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What admission and control cost on the worker threads, counted statement by statement: nothing,
 * with or without limits of its own (pauses, cancels and deadlines are read from memory; the pick
 * admitted the job under its limit keys before a worker thread saw it).
 */
@DatabaseTest
class AdmissionCostTest {

    private static final Logger LOG = LoggerFactory.getLogger(AdmissionCostTest.class);
    private static final int JOBS = 200;

    /** Statements executed on the threads that run handlers, by SQL. */
    private final Map<String, AtomicLong> onWorkers = new ConcurrentHashMap<>();

    private long run(TestDatabase db, boolean limits) {
        onWorkers.clear();
        JobType<TenantTask> t = JobType.builder("cost", TenantTask.class)
                .limitKeys(a -> List.of("tenant:" + a.tenant()))
                .handler((a, ctx) -> Outcome.done())
                .build();
        // history off: its retention task would run on a worker thread too
        Layover.Builder b = Admission.builder(counting(db.newDataSource(12)), "w1").register(t).migrate(false).history(false);
        if (limits) {
            b.concurrencyLimit("tenant:*", 100);
        }
        Layover layover = b.build();
        List<TenantTask> args = new ArrayList<>();
        for (int i = 0; i < JOBS; i++) {
            args.add(new TenantTask("t" + (i % 5), "job " + i));
        }
        layover.enqueueBatch(t, args);
        onWorkers.clear();
        layover.start();
        try {
            Await.equal(Admission.WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            layover.awaitCompletions(Admission.WAIT);
        } finally {
            layover.stop();
        }
        long all = onWorkers.values().stream().mapToLong(AtomicLong::get).sum();
        LOG.info("MEASURED {} jobs {}: {} statements on worker threads: {}", JOBS, limits ? "with a tenant concurrency "
                + "limit" : "without limits", all, onWorkers);
        return all;
    }

    @Test
    void aJobCostsNoStatementOnTheWorkerThreadsWithOrWithoutLimits(TestDatabase db) {
        assertEquals(0, run(db, false), "no limits: cancel, deadline and pause checks read memory only");
        assertEquals(0, run(db, true), "a tenant's limit admits its jobs at the pick, not on the worker thread");
    }

    private DataSource counting(DataSource target) {
        return dev.layover.core.StatementWatch.of(target, sql -> {
            if (Thread.currentThread().getName().startsWith("db-scheduler-pool")) {
                onWorkers.computeIfAbsent(sql.strip().split("\n")[0], k -> new AtomicLong()).incrementAndGet();
            }
        });
    }
}
