package dev.layover.bench;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * No-op job throughput: Layover against raw db-scheduler, same threads, same database, same
 * polling strategy (lock-and-fetch; db-scheduler with {@code pollUsingLockAndFetch(0.5, 2.0)},
 * Layover with its default, the adaptive prefetch; then the old default, a fixed prefetch of 2 ×
 * threads; the default with the finished-job history switched off, to show what the history row
 * costs; and a fixed prefetch 4), runs alternating. Each run
 * inserts N due jobs with one SQL statement, starts the scheduler, and times
 * until the table is empty (Layover's batched deletes included).
 */
public final class ThroughputBench {

    /** One measured run. */
    public record Run(String arm, int jobs, double seconds) {
        double perSecond() {
            return jobs / seconds;
        }
    }

    record NoOp(int n) {}

    private ThroughputBench() {}

    /**
     * @param ds the database (Layover's schema is migrated by the first Layover run)
     * @param jobs jobs per run
     * @param threads worker threads of both arms
     * @param rounds alternating rounds
     * @return every run, in order: per round db-scheduler, Layover (default: adaptive prefetch,
     *     history on), Layover prefetch 2 (the old default), Layover without history, Layover
     *     prefetch 4 ({@link #ARMS} runs per round)
     * @throws Exception on failure
     */
    public static List<Run> measure(DataSource ds, int jobs, int threads, int rounds) throws Exception {
        createRawTable(ds);
        // a discarded round first: the JIT compiles both engines' paths before anything is timed (the first
        // timed round used to catch db-scheduler cold, which flattered the ratio)
        int warmUp = Math.max(1_000, jobs / 5);
        raw(ds, warmUp, threads, RAW_PREFETCH);
        layover(ds, warmUp, threads, ADAPTIVE, true);
        layover(ds, warmUp, threads, 2.0, true);
        List<Run> runs = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            runs.add(raw(ds, jobs, threads, RAW_PREFETCH));
            runs.add(layover(ds, jobs, threads, ADAPTIVE, true));
            runs.add(layover(ds, jobs, threads, 2.0, true));
            runs.add(layover(ds, jobs, threads, ADAPTIVE, false));
            runs.add(layover(ds, jobs, threads, 4.0, true));
        }
        return runs;
    }

    /** Runs per round: db-scheduler, Layover, Layover prefetch 2, Layover without history, Layover prefetch 4. */
    static final int ARMS = 5;

    /** The prefetch argument meaning Layover's default (adaptive): {@code prefetch} not set. */
    static final double ADAPTIVE = 0;

    /** db-scheduler's lock-and-fetch upper limit (jobs held per thread), the same as Layover's default prefetch. */
    static double RAW_PREFETCH = Double.parseDouble(System.getProperty("bench.rawPrefetch", "2.0"));

    private static Run raw(DataSource ds, int jobs, int threads, double prefetch) throws Exception {
        AtomicLong executed = new AtomicLong();
        OneTimeTask<Void> task = Tasks.oneTime("noop").execute((inst, ctx) -> executed.incrementAndGet());
        exec(ds, "truncate bench_raw.scheduled_tasks");
        exec(ds, "insert into bench_raw.scheduled_tasks (task_name, task_instance, execution_time, picked, version)"
                + " select 'noop', 'j' || g, now(), false, 1 from generate_series(1, " + jobs + ") g");
        exec(ds, "analyze bench_raw.scheduled_tasks");
        Scheduler s = Scheduler.create(ds, task)
                .tableName("bench_raw.scheduled_tasks")
                .threads(threads)
                .pollUsingLockAndFetch(0.5, prefetch)
                .pollingInterval(Duration.ofMillis(500))
                .build();
        long t0 = System.nanoTime();
        s.start();
        waitEmpty(ds, "bench_raw.scheduled_tasks where task_name = 'noop'");
        double secs = (System.nanoTime() - t0) / 1e9;
        s.stop();
        return new Run("db-scheduler lock-and-fetch(0.5, " + prefetch + ")", jobs, secs);
    }

    private static Run layover(DataSource ds, int jobs, int threads, double prefetch, boolean history) throws Exception {
        AtomicLong executed = new AtomicLong();
        JobType<NoOp> noop = JobType.of("noop", NoOp.class, (a, c) -> {
            executed.incrementAndGet();
            return Outcome.done();
        });
        Layover.Builder b = Layover.builder(ds).register(noop).threads(threads).history(history)
                .pollInterval(Duration.ofMillis(500));
        if (prefetch != ADAPTIVE) {
            b.prefetch(prefetch);
        }
        Layover l = b.build();
        exec(ds, "truncate layover.scheduled_tasks, layover.job_history");
        exec(ds, "insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version)"
                + " select 'noop', 'j' || g, convert_to('{\"n\":' || g || '}', 'UTF8'), now(), false, 1"
                + " from generate_series(1, " + jobs + ") g");
        exec(ds, "analyze layover.scheduled_tasks");
        long t0 = System.nanoTime();
        l.start();
        waitEmpty(ds, "layover.scheduled_tasks where task_name = 'noop'"); // Layover's own recurring tasks stay
        double secs = (System.nanoTime() - t0) / 1e9;
        l.stop();
        return new Run("layover " + (prefetch == ADAPTIVE ? "adaptive prefetch" : "prefetch " + prefetch)
                + (history ? "" : ", history off"), jobs, secs);
    }

    private static void createRawTable(DataSource ds) throws Exception {
        exec(ds, """
                create schema if not exists bench_raw;
                create table if not exists bench_raw.scheduled_tasks (
                  task_name text not null, task_instance text not null, task_data bytea,
                  execution_time timestamptz not null, picked boolean not null, picked_by text,
                  last_success timestamptz, last_failure timestamptz, consecutive_failures int,
                  last_heartbeat timestamptz, version bigint not null, priority smallint,
                  primary key (task_name, task_instance));
                create index if not exists bench_raw_execution_time_idx on bench_raw.scheduled_tasks (execution_time);
                create index if not exists bench_raw_last_heartbeat_idx on bench_raw.scheduled_tasks (last_heartbeat);
                create index if not exists bench_raw_priority_execution_time_idx
                  on bench_raw.scheduled_tasks (priority desc, execution_time asc);
                """);
    }

    static void waitEmpty(DataSource ds, String rows) throws Exception {
        while (true) {
            try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("select exists (select 1 from " + rows + ")")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return;
                }
            }
            Thread.sleep(20);
        }
    }

    static void exec(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }
}
