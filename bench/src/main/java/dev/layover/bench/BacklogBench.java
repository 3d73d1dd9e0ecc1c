package dev.layover.bench;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * A deep backlog behind rate-limited keys (issue 23, part 3): {@code jobs} jobs spread over
 * {@code keys} provider keys, each with a bucket of {@code rate} requests/s, enqueued at once with
 * {@code enqueueBatch} ({@value #ENQUEUE_CHUNK} a call, the buckets' rows written before), then one
 * Layover worker (no-op handler) runs for a fixed time. Measured from the database: goodput (jobs
 * done per second, against the keys' total rate R), job-row writes per success
 * ({@code pg_stat_user_tables}: updates + deletes of {@code scheduled_tasks} per done job), jobs
 * parked, the job table's size and its growth over the run (table and indexes at the end against
 * right after the enqueue: the table's size itself is its rows), and how long the worker's picks
 * took (p50, p99: each lock-and-fetch as the worker sent it, {@link PickTimer}); printed beside them,
 * the server's WAL bytes and full-page images per done job ({@code pg_stat_wal}: the whole server's,
 * so on a server of its own, {@code bench/stock-postgres.sh}). The same run with
 * a small backlog is the reference: the goal is a ratio of at most 1.2 on every figure. Held (the
 * runner's default), each arm keeps its backlog at its size by enqueuing as many jobs as its worker
 * ran, so a 10,000-job arm runs as long as a million-job one and its p99 comes from as many picks
 * over the same checkpoints and autovacuums. Printed too: the autovacuums of the job table and the
 * server's checkpoints during the run, and when the picks at or above p99 were sent.
 */
public final class BacklogBench {

    /** One arm's figures. */
    public record Arm(int jobs, int keys, boolean held, double rate, double seconds, long done, long parked, long writes,
            long tableBytes, long indexBytes, long bytesAtStart, int picks, double pickP50Ms, double pickP99Ms) {

        /** The job table and its indexes at the end, against right after the enqueue: what the run's writes left. */
        double growth() {
            return (double) (tableBytes + indexBytes) / bytesAtStart;
        }

        double goodputShare() {
            return done / seconds / (rate * keys);
        }

        double writesPerSuccess() {
            return done == 0 ? Double.NaN : (double) writes / done;
        }

        String row() {
            return String.format(Locale.ROOT,
                    "| %,d jobs%s, %d key%s | %.3f R (%,d done in %.0f s) | %.2f | %.2f / %.2f ms (%,d picks) | %,d"
                            + " | %.1f MB + %.1f MB idx | %.2f× |",
                    jobs, held ? " held" : "", keys, keys == 1 ? "" : "s", goodputShare(), done, seconds, writesPerSuccess(),
                    pickP50Ms, pickP99Ms, picks, parked, tableBytes / 1e6, indexBytes / 1e6, growth());
        }
    }

    record Noop(int n) {}

    /** Jobs per {@code enqueueBatch} call. */
    static final int ENQUEUE_CHUNK = 5_000;

    /**
     * The arms of one run: a small and a deep backlog, behind one key and behind several.
     *
     * @param small the reference backlog
     * @param deep the deep backlog
     * @param manyKeys the keys of the many-keys arms
     * @param run how long each arm's worker runs
     * @param threads the worker's threads
     * @param hold whether each arm holds its backlog at its size for the whole run ({@link #run})
     */
    public record Settings(int small, int deep, int manyKeys, Duration run, int threads, boolean hold) {
        /**
         * @return the full run: 10,000 against 1,000,000 jobs, 1 and 10 keys, {@code -Dlayover.bench.backlog.seconds}
         *     (120) each, backlogs held
         */
        public static Settings full() {
            return new Settings(10_000, 1_000_000, 10, Duration.ofSeconds(Long.getLong("layover.bench.backlog.seconds", 120)), 8,
                    true);
        }

        /** @return a smoke run: 1,000 against 20,000 jobs, 15 s each, backlogs held */
        public static Settings quick() {
            return new Settings(1_000, 20_000, 4, Duration.ofSeconds(15), 4, true);
        }
    }

    private BacklogBench() {}

    /**
     * Runs the four arms, each in a scratch database of its own on the server of {@code args}'
     * {@code --jdbc-url} (else an embedded Postgres): small and deep behind one key, small and deep
     * behind {@code manyKeys} keys.
     *
     * @param args the runner's arguments (for the database)
     * @param s the settings
     * @return the arms, in that order
     * @throws Exception on failure
     */
    public static List<Arm> measure(String[] args, Settings s) throws Exception {
        List<Arm> arms = new ArrayList<>();
        for (int[] a : new int[][] {{s.small(), 1}, {s.deep(), 1}, {s.small(), s.manyKeys()}, {s.deep(), s.manyKeys()}}) {
            try (BenchDatabase db = BenchDatabase.open(args, 12, "_backlog")) {
                arms.add(run(db.dataSource(), a[0], a[1], 50, s.run(), s.threads(), s.hold()));
            }
        }
        return arms;
    }

    /**
     * Runs one arm in {@code ds} (Layover's schema is migrated here; the job table must hold no
     * other jobs of type {@code backlog}).
     *
     * @param ds a database of its own
     * @param jobs backlog size
     * @param keys provider keys the backlog is spread over (round robin)
     * @param rate each key's bucket, requests/s
     * @param run how long the worker runs
     * @param threads the worker's threads
     * @param hold whether the backlog stays at {@code jobs} for the whole run: each second the bench
     *     enqueues as many jobs as the worker ran (so a small backlog does not run out, and a small and a
     *     deep arm take in the same checkpoints, autovacuums and job history over the same time);
     *     otherwise the backlog drains and the arm ends when it runs out
     * @return the arm's figures
     * @throws Exception on failure
     */
    public static Arm run(DataSource ds, int jobs, int keys, double rate, Duration run, int threads, boolean hold)
            throws Exception {
        AtomicLong handled = new AtomicLong();
        JobType<Noop> type = JobType.builder("backlog", Noop.class).providerKey(n -> "bk:" + (n.n() % keys))
                .handler((a, ctx) -> {
                    handled.incrementAndGet();
                    return Outcome.done();
                }).build();
        PickTimer picks = new PickTimer();
        Layover.Builder b = Layover.builder(picks.wrap(ds)).register(type).threads(threads);
        for (int k = 0; k < keys; k++) {
            b.bucket("bk:" + k, BucketSettings.requestsPerSecond(rate));
        }
        Layover layover = b.build(); // migrates
        // the bucket rows exist before the enqueue, as they do once a worker of the keys has run: one that runs
        // no job of the backlog's type writes them at its start
        Layover.Builder configurer = Layover.builder(ds).migrate(false).workerName("bucket-configurer")
                .register(JobType.builder("backlog-none", Noop.class).handler((a, ctx) -> Outcome.done()).build());
        for (int k = 0; k < keys; k++) {
            configurer.bucket("bk:" + k, BucketSettings.requestsPerSecond(rate));
        }
        configurer.build().start().stop();
        long e0 = System.nanoTime();
        enqueue(layover, type, 1, jobs);
        double enqueueSeconds = (System.nanoTime() - e0) / 1e9;
        BenchDatabase.exec(ds, "analyze layover.scheduled_tasks");
        if (!rows(ds, "show autovacuum").equals("on")) {
            System.out.println("  WARNING: autovacuum is off on this server: the pick latency and table growth of a long run"
                    + " are not those of a server at its defaults");
        }
        long bytesAtStart = BenchDatabase.count(ds, "select pg_table_size('layover.scheduled_tasks')"
                + " + pg_indexes_size('layover.scheduled_tasks')");
        System.out.println("  enqueued " + jobs + " in " + String.format(Locale.ROOT, "%.1f s", enqueueSeconds) + ": " + rows(ds,
                "select s || '=' || n from (select coalesce(last_reschedule_reason, 'due') as s, count(*) as n"
                + " from layover.scheduled_tasks where task_name = 'backlog' group by 1) x order by 1"));
        long writes0 = writes(ds);
        long walBytes0 = BenchDatabase.count(ds, "select wal_bytes::bigint from pg_stat_wal");
        long walFpi0 = BenchDatabase.count(ds, "select wal_fpi from pg_stat_wal");
        long vacuums0 = autovacuums(ds);
        long checkpoints0 = checkpoints(ds);
        String started = rows(ds, "select now()::text");
        long startedAtMillis = System.currentTimeMillis();
        long t0 = System.nanoTime();
        layover.start();
        long doneBefore = 0;
        long enqueued = jobs;
        long toppedUp = 0;
        List<String> trace = new ArrayList<>();
        long end = t0 + run.toNanos();
        long nextTrace = t0 + 10_000_000_000L;
        while (System.nanoTime() < end) {
            Thread.sleep(Math.min(1_000, Math.max(1, (end - System.nanoTime()) / 1_000_000)));
            if (hold) {
                long owed = handled.get() - toppedUp;
                enqueue(layover, type, enqueued + 1, enqueued + owed);
                enqueued += owed;
                toppedUp += owed;
            }
            if (System.nanoTime() < nextTrace && System.nanoTime() < end) {
                continue;
            }
            nextTrace += 10_000_000_000L;
            long done = BenchDatabase.count(ds, "select count(*) from layover.job_history where job_type = 'backlog' and outcome = 'completed'");
            trace.add(String.format(Locale.ROOT, "%.0fs:%d", (System.nanoTime() - t0) / 1e9, done - doneBefore));
            doneBefore = done;
            if (!hold && ranOut(ds)) {
                break; // the rest of the run would measure an idle worker
            }
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        if (!hold && ranOut(ds)) {
            // the backlog ran out: its goodput is over the time it had work
            secs = Double.parseDouble(rows(ds, "select extract(epoch from max(finished_at) - '" + started
                    + "'::timestamptz) from layover.job_history where job_type = 'backlog'"));
        }
        System.out.println("  jobs at the end: " + rows(ds, """
                select state || '=' || n from (
                    select coalesce(last_reschedule_reason, 'new')
                           || case when execution_time <= now() then ' due' when execution_time <= now() + interval '1 minute'
                                   then ' <1min' when execution_time <= now() + interval '1 hour' then ' <1h' else ' later' end
                           AS state, count(*) AS n
                    from layover.scheduled_tasks where task_name = 'backlog' group by 1) s order by 1"""));
        System.out.println("  bucket: " + rows(ds, "select provider_key || ' tat ' || round(extract(epoch from request_tat - now()))"
                + " || 's ahead' from layover.buckets where provider_key like 'bk:%' order by 1 limit 3"));
        layover.stop();
        long done = BenchDatabase.count(ds, "select count(*) from layover.job_history where job_type = 'backlog' and outcome = 'completed'");
        long parked = BenchDatabase.count(ds, "select count(*) from layover.dead_letters where job_type = 'backlog'");
        long writes = writes(ds) - writes0;
        // the server's, not the arm's alone: a dedicated server (bench/stock-postgres.sh) runs nothing else
        System.out.println(String.format(Locale.ROOT, "  WAL per done job (whole server): %.0f bytes, %.2f full-page images",
                (double) (BenchDatabase.count(ds, "select wal_bytes::bigint from pg_stat_wal") - walBytes0) / Math.max(1, done),
                (double) (BenchDatabase.count(ds, "select wal_fpi from pg_stat_wal") - walFpi0) / Math.max(1, done)));
        long table = BenchDatabase.count(ds, "select pg_table_size('layover.scheduled_tasks')");
        long index = BenchDatabase.count(ds, "select pg_indexes_size('layover.scheduled_tasks')");
        System.out.println("  done per 10 s: " + String.join(" ", trace));
        if (hold) {
            System.out.println(String.format(Locale.ROOT, "  held: %,d jobs enqueued during the run to keep the backlog at %,d",
                    toppedUp, jobs));
        }
        // what a long run takes in that a short one mostly misses, and when the slowest picks were sent
        System.out.println("  started at " + started + " (the database's clock); during the run: "
                + (autovacuums(ds) - vacuums0) + " autovacuums of the job table, " + (checkpoints(ds) - checkpoints0) + " checkpoints");
        List<PickTimer.Pick> slow = picks.atOrAbove(0.99);
        System.out.println("  picks at or above p99, s into the run (ms): " + String.join(" ", slow.stream().limit(100)
                .map(p -> String.format(Locale.ROOT, "%.0f(%.0f)", (p.startedAtMillis() - startedAtMillis) / 1e3, p.nanos() / 1e6))
                .toList()));
        // how often each job was moved before it ran: its place or permit kept (0), or told to wait (1, 2, ...)
        System.out.println("  done jobs by reschedules: " + rows(ds, "select reschedules || ': ' || count(*) from layover.job_history"
                + " where job_type = 'backlog' group by reschedules order by reschedules"));
        // and the jobs told to wait that have not run again yet (a place at the line's end is far behind)
        System.out.println("  waiting jobs by reschedules: " + rows(ds, "select reschedules || ': ' || count(*) from"
                + " layover.scheduled_tasks where task_name = 'backlog' and reschedules > 0 group by reschedules order by reschedules"));
        return new Arm(jobs, keys, hold, rate, secs, done, parked, writes, table, index, bytesAtStart, picks.count(),
                picks.quantile(0.5), picks.quantile(0.99));
    }

    /** Enqueues the jobs numbered {@code from..to} (none when {@code to < from}), {@value #ENQUEUE_CHUNK} a call. */
    private static void enqueue(Layover layover, JobType<Noop> type, long from, long to) {
        List<Noop> chunk = new ArrayList<>(ENQUEUE_CHUNK);
        for (long i = from; i <= to; i++) {
            chunk.add(new Noop((int) i));
            if (chunk.size() == ENQUEUE_CHUNK || i == to) {
                layover.enqueueBatch(type, chunk);
                chunk.clear();
            }
        }
    }

    /** @return the job table's autovacuums so far */
    private static long autovacuums(DataSource ds) throws Exception {
        return BenchDatabase.count(ds, "select autovacuum_count from pg_stat_user_tables where schemaname = 'layover'"
                + " and relname = 'scheduled_tasks'");
    }

    /** @return the server's checkpoints so far, -1 where {@code pg_stat_bgwriter} no longer counts them (PostgreSQL 17+) */
    private static long checkpoints(DataSource ds) throws Exception {
        try {
            return BenchDatabase.count(ds, "select checkpoints_timed + checkpoints_req from pg_stat_bgwriter");
        } catch (java.sql.SQLException e) {
            return BenchDatabase.count(ds, "select num_timed + num_requested from pg_stat_checkpointer");
        }
    }

    /** @return whether no job of the backlog is left (one index probe, not a count of a million rows) */
    private static boolean ranOut(DataSource ds) throws Exception {
        return BenchDatabase.count(ds, "select count(*) from (select 1 from layover.scheduled_tasks"
                + " where task_name = 'backlog' limit 1) x") == 0;
    }

    /** Updates and deletes of the job table so far (the statistics collector's counters). */
    private static long writes(DataSource ds) throws Exception {
        Thread.sleep(600); // the counters reach pg_stat after the backend reports (at most every 500 ms)
        return BenchDatabase.count(ds, "select n_tup_upd + n_tup_del from pg_stat_user_tables where schemaname = 'layover'"
                + " and relname = 'scheduled_tasks'");
    }

    private static String rows(DataSource ds, String sql) throws Exception {
        List<String> out = new ArrayList<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return String.join(", ", out);
    }

    /**
     * Runs arms from the command line, each in a scratch database: {@code --jdbc-url URL --arm
     * JOBS:KEYS [--arm ...] --seconds S [--hold]} ({@code --hold}: each arm keeps its backlog at its size).
     *
     * @param args the arguments
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        List<int[]> arms = new ArrayList<>();
        int seconds = 120;
        boolean hold = List.of(args).contains("--hold");
        for (int i = 0; i < args.length - 1; i++) {
            if (args[i].equals("--arm")) {
                String[] p = args[i + 1].split(":");
                arms.add(new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1])});
            } else if (args[i].equals("--seconds")) {
                seconds = Integer.parseInt(args[i + 1]);
            }
        }
        List<Arm> results = new ArrayList<>();
        for (int[] a : arms) {
            try (BenchDatabase db = BenchDatabase.open(args, 12)) {
                System.out.println("arm " + a[0] + " jobs, " + a[1] + " keys");
                results.add(run(db.dataSource(), a[0], a[1], 50, Duration.ofSeconds(seconds), 8, hold));
                System.out.println(results.get(results.size() - 1).row());
            }
        }
        System.out.println("| arm | goodput | writes/success | pick p50 / p99 | parked | job table | growth |");
        results.forEach(r -> System.out.println(r.row()));
    }
}
