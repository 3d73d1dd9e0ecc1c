package dev.layover.bench;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import java.lang.management.ManagementFactory;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * Many provider keys (issue 23, part 4): the same due jobs spread over one key and over
 * {@code manyKeys} keys, each key with a bucket (a {@code prefix*} pattern, one bucket row per key)
 * or a concurrency limit (one limit row per key), none of them binding, run by one worker with a
 * no-op handler. Measured from the database ({@code pg_stat_database} of the arm's own database):
 * its active time per admitted job while the jobs run (every statement of every connection:
 * pick, admission, completion, history, the provider-state refresh), and while the worker idles
 * afterwards (after a vacuum, so that autovacuum's clean-up is not counted), the database time and
 * transactions per second (the refresh of every key in use), and again once the keys went unused
 * past the cache's refresh window.
 * Heap after a full collection, with the worker still running, against before it met a key.
 */
public final class KeysBench {

    /** What limits each key. */
    public enum Limit {
        /** a bucket per key, far above what the worker runs */
        BUCKET,
        /** a concurrency limit per key, at the worker's thread count */
        CONCURRENCY
    }

    /**
     * One arm's figures.
     *
     * @param limit what limits each key
     * @param keys the keys the jobs were spread over
     * @param jobs the jobs
     * @param done jobs completed
     * @param seconds from the worker's start to the last completion
     * @param activeMs database active time while the jobs ran (every key met before, by a first pass of one job per key)
     * @param xacts transactions committed in the database while the jobs ran (a count the machine's load does not change)
     * @param firstMsPerJob database active time per job of the first pass (each job meets its key for the first time)
     * @param idleActiveMsPerSecond database active time per second while idle afterwards, just after the run
     * @param idleXactsPerSecond transactions per second while idle, just after the run
     * @param laterActiveMsPerSecond the same, after the keys were idle for the cache's refresh window (or NaN when not measured)
     * @param heapBytes heap in use after the run minus before it (after a full collection each time)
     */
    public record Arm(Limit limit, int keys, int jobs, long done, double seconds, double activeMs, double xacts,
            double firstMsPerJob, double idleActiveMsPerSecond, double idleXactsPerSecond, double laterActiveMsPerSecond, long heapBytes) {

        /** @return database active time per admitted job, ms, once every key was met */
        public double msPerJob() {
            return done == 0 ? Double.NaN : activeMs / done;
        }

        /** @return transactions per admitted job, once every key was met */
        public double xactsPerJob() {
            return done == 0 ? Double.NaN : xacts / done;
        }

        String row() {
            return String.format(Locale.ROOT, "| %s, %,d key%s | %,d in %.1f s (%.0f/s), %.2f tx/job | %.3f ms | %s | %.1f ms/s, %.1f tx/s | %s | %.1f MB |",
                    limit.name().toLowerCase(Locale.ROOT), keys, keys == 1 ? "" : "s", done, seconds, done / seconds, xactsPerJob(),
                    msPerJob(), keys == 1 ? "–" : String.format(Locale.ROOT, "%.3f ms", firstMsPerJob),
                    idleActiveMsPerSecond, idleXactsPerSecond,
                    Double.isNaN(laterActiveMsPerSecond) ? "-" : String.format(Locale.ROOT, "%.1f ms/s", laterActiveMsPerSecond),
                    heapBytes / 1e6);
        }
    }

    /**
     * @param jobs jobs per arm
     * @param manyKeys the keys of the many-keys arms
     * @param threads the worker's threads
     * @param idle how long the idle figures are measured over
     * @param later whether to wait out the cache's refresh window and measure the idle cost again
     * @param statsWait how long to wait before each read of the statistics: a busy backend reports
     *     its counters at most every second, an idle one within 10 s (PostgreSQL 15)
     */
    public record Settings(int jobs, int manyKeys, int threads, Duration idle, boolean later, Duration statsWait) {
        /** @return the full run: 20,000 jobs over 1 and over 10,000 keys */
        public static Settings full() {
            return new Settings(20_000, 10_000, 8, Duration.ofSeconds(10), true, Duration.ofSeconds(11));
        }

        /** @return a smoke run: 2,000 jobs over 1 and over 500 keys */
        public static Settings quick() {
            return new Settings(2_000, 500, 4, Duration.ofSeconds(3), false, Duration.ofMillis(600));
        }
    }

    record Noop(int n) {}

    private KeysBench() {}

    /**
     * Runs the four arms (bucket and concurrency limit, one key and many), each in a scratch
     * database of its own on the server of {@code args}' {@code --jdbc-url} (else an embedded Postgres).
     *
     * @param args the runner's arguments (for the database)
     * @param s the settings
     * @return bucket 1 key, bucket many, concurrency 1 key, concurrency many
     * @throws Exception on failure
     */
    public static List<Arm> measure(String[] args, Settings s) throws Exception {
        List<Arm> arms = new ArrayList<>();
        for (Limit limit : Limit.values()) {
            for (int keys : new int[] {1, s.manyKeys()}) {
                try (BenchDatabase db = BenchDatabase.open(args, 12, "_keys")) {
                    arms.add(run(db.dataSource(), limit, keys, s));
                }
            }
        }
        return arms;
    }

    /**
     * Runs one arm in {@code ds}, a database of its own (its statistics are the arm's figures).
     *
     * @param ds the database
     * @param limit what limits each key
     * @param keys the keys
     * @param s the settings
     * @return the arm's figures
     * @throws Exception on failure
     */
    public static Arm run(DataSource ds, Limit limit, int keys, Settings s) throws Exception {
        JobType<Noop> type = JobType.builder("keys", Noop.class).providerKey(n -> "kk:" + (n.n() % keys))
                .handler((a, ctx) -> Outcome.done()).build();
        Layover.Builder b = Layover.builder(ds).register(type).threads(s.threads());
        if (limit == Limit.BUCKET) {
            b.bucket("kk:*", BucketSettings.requestsPerSecond(1_000_000));
        } else {
            b.concurrencyLimit("kk:*", s.threads());
        }
        Layover layover = b.build(); // migrates
        long heap0 = heapAfterGc();
        // the first pass: one job per key, each meeting its key for the first time (rows created, state read)
        insert(ds, "w", keys, keys);
        double[] first0 = stats(ds, s.statsWait());
        layover.start();
        awaitDone(ds);
        double[] first1 = stats(ds, s.statsWait());
        double[] stat0 = first1; // the worker runs what is inserted at once: the insert is inside the measured run
        long t0 = System.nanoTime();
        insert(ds, "k", s.jobs(), keys);
        awaitDone(ds);
        double seconds = (System.nanoTime() - t0) / 1e9;
        double[] stat1 = stats(ds, s.statsWait());
        long heap = heapAfterGc() - heap0;
        BenchDatabase.exec(ds, "vacuum analyze"); // else autovacuum, cleaning up after the run, is most of the idle figure
        double[] idle = idle(ds, s);
        double later = Double.NaN;
        if (s.later()) {
            Thread.sleep(70_000); // past the cache's refresh window (60 s without use)
            later = idle(ds, s)[0];
        }
        layover.stop();
        long done = BenchDatabase.count(ds, "select count(*) from layover.job_history where job_type = 'keys' and outcome = 'completed'");
        return new Arm(limit, keys, s.jobs(), done - keys, seconds, stat1[0] - stat0[0], stat1[1] - stat0[1],
                (first1[0] - first0[0]) / keys,
                idle[0], idle[1], later, heap);
    }

    private static void insert(DataSource ds, String prefix, int jobs, int keys) throws Exception {
        BenchDatabase.exec(ds, "insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,"
                + " version, provider_key, first_enqueued_at)"
                + " select 'keys', '" + prefix + "' || g, convert_to('{\"n\":' || g || '}', 'UTF8'), now(), false, 1,"
                + " 'kk:' || (g % " + keys + "), now() from generate_series(1, " + jobs + ") g");
        BenchDatabase.exec(ds, "analyze layover.scheduled_tasks");
    }

    private static void awaitDone(DataSource ds) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
        while (BenchDatabase.count(ds, "select count(*) from layover.scheduled_tasks where task_name = 'keys'") > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the jobs did not finish within 10 minutes");
            }
            Thread.sleep(200);
        }
    }

    /** Database active time (ms) and transactions per second over the idle window (the reads' own waits included). */
    private static double[] idle(DataSource ds, Settings s) throws Exception {
        double[] a = stats(ds, s.statsWait());
        long t = System.nanoTime();
        Thread.sleep(s.idle().toMillis());
        double[] b = stats(ds, s.statsWait());
        double secs = (System.nanoTime() - t) / 1e9;
        return new double[] {(b[0] - a[0]) / secs, (b[1] - a[1]) / secs};
    }

    /** This database's active time (ms) and committed transactions, as the statistics collector has them. */
    private static double[] stats(DataSource ds, Duration wait) throws Exception {
        Thread.sleep(wait.toMillis()); // until the backends have reported their counters
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select active_time, xact_commit from pg_stat_database"
                        + " where datname = current_database()")) {
            rs.next();
            return new double[] {rs.getDouble(1), rs.getDouble(2)};
        }
    }

    private static long heapAfterGc() throws InterruptedException {
        System.gc();
        Thread.sleep(200);
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /**
     * Runs arms from the command line: {@code --jdbc-url URL [--jobs N] [--keys K] [--limit bucket|concurrency]}.
     *
     * @param args the arguments
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        Settings s = Settings.full();
        int keys = s.manyKeys();
        List<Limit> limits = List.of(Limit.values());
        for (int i = 0; i < args.length - 1; i++) {
            switch (args[i]) {
                case "--jobs" -> s = new Settings(Integer.parseInt(args[i + 1]), s.manyKeys(), s.threads(), s.idle(), s.later(),
                        s.statsWait());
                case "--keys" -> keys = Integer.parseInt(args[i + 1]);
                case "--limit" -> limits = List.of(Limit.valueOf(args[i + 1].toUpperCase(Locale.ROOT)));
                default -> { }
            }
        }
        s = new Settings(s.jobs(), keys, s.threads(), s.idle(), !List.of(args).contains("--no-later"), s.statsWait());
        List<Arm> results = new ArrayList<>();
        for (Limit limit : limits) {
            for (int k : new int[] {1, keys}) {
                try (BenchDatabase db = BenchDatabase.open(args, 12, "_keys")) {
                    results.add(run(db.dataSource(), limit, k, s));
                    System.out.println(results.get(results.size() - 1).row());
                }
            }
        }
        System.out.println("| arm | jobs done | database time per job | per job meeting its key | idle after | idle after 70 s | heap |");
        results.forEach(r -> System.out.println(r.row()));
    }
}
