package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.Faults;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.HashMap;
import java.util.Map;

/**
 * Steps (issue 45, docs/steps.md): jobs of several provider calls against the fake provider
 * limited to R calls/s (refused calls counting), a share of calls answered 503, all jobs enqueued
 * at once, on {@code jvms} worker JVMs ({@link StepsWorker}) with threads enough to call 5 times
 * faster than R (the fake answers after a fixed latency), one of them killed (kill -9) mid-run and
 * the others finishing. Two arms, one after the other, each on a fresh provider key and fake
 * provider: the handler with every call a step ({@code ctx.step} with the key), and the same
 * handler without steps (each run starts over). No bucket is configured: the fleet learns the
 * key's pace from the 429s.
 *
 * <p>Measured: successful provider calls per completed job (ideal: the calls of a job), calls made
 * again after a success and their tokens (from the workers' call logs; those whose first success
 * was in the killed JVM, or was answered to it and never logged, are "cut by the kill"),
 * attempts spent and how many of them a 503 or the kill explains (the rest would be spent on rate
 * limits: goal 0), job-row and step-row writes per job ({@code pg_stat_user_tables}, read once
 * every worker's connections are closed), and the wall time from the enqueue to the last job's
 * end against the ideal (calls / R).
 */
final class StepsBench {

    private StepsBench() {}

    /**
     * @param jobs jobs per arm
     * @param calls provider calls per job
     * @param rate R: the fake provider's limit, calls per second
     * @param unavailable the share of admitted calls answered 503
     * @param jvms worker JVMs (one is killed)
     * @param threads worker threads per JVM
     * @param latency the fake's answer time: {@code jvms * threads / latency} is the fleet's call rate
     * @param poll poll interval
     * @param heartbeat heartbeat interval (8 missed: a killed worker's jobs run again)
     * @param killAt when the first worker JVM is killed, as a share of the ideal wall time
     * @param patienceWith the arm with steps is stopped after this many ideal wall times (plus one
     *     more, at most 30 s)
     * @param patienceWithout the same for the arm without steps (which is expected to be slow)
     */
    record Settings(int jobs, int calls, int rate, double unavailable, int jvms, int threads, Duration latency,
            Duration poll, Duration heartbeat, double killAt, double patienceWith, double patienceWithout) {
        /** @return a smoke test: 30 jobs, heartbeats of 250 ms so that the killed worker's jobs come back within 2 s */
        static Settings quick() {
            return new Settings(30, 5, 50, 0.02, 2, 10, Duration.ofMillis(80), Duration.ofMillis(200),
                    Duration.ofMillis(250), 0.5, 5, 5);
        }

        /**
         * @return the measurement: 2,000 jobs of 5 calls at R = 50/s (ideal 200 s), 2 % of calls
         *     503, 2 JVMs x 10 threads at 80 ms a call (250 calls/s, 5 R), the first JVM killed at
         *     40 % of the ideal; Layover's default heartbeat (5 s); the arm without steps stopped
         *     after twice the ideal
         */
        static Settings full() {
            return new Settings(2_000, 5, 50, 0.02, 2, 10, Duration.ofMillis(80), Duration.ofMillis(200),
                    Duration.ofSeconds(5), 0.4, 3, 2);
        }

        /**
         * @param steps the arm
         * @return how long the arm may run before it is stopped and its unfinished jobs counted
         */
        Duration limit(boolean steps) {
            double patience = steps ? patienceWith : patienceWithout;
            return Duration.ofMillis((long) (idealSeconds() * patience * 1000 + Math.min(30_000, idealSeconds() * 1000)));
        }

        double idealSeconds() {
            return (double) jobs * calls / rate;
        }

        /** @return the fleet's call rate over R (5: oversubscribed five times) */
        double oversubscribed() {
            return jvms * threads * 1000.0 / latency.toMillis() / rate;
        }
    }

    /**
     * One arm's figures.
     *
     * @param name with or without steps
     * @param completed jobs completed
     * @param parked jobs parked
     * @param unfinished jobs still queued when the arm's limit stopped it
     * @param successes successful provider calls (the fake's count)
     * @param refused calls answered 429
     * @param unavailable calls answered 503
     * @param repeated successful calls of a job's call that had already succeeded (logged)
     * @param tokensDiscarded tokens of successful calls whose result no run kept: every success
     *     of a job's call but one
     * @param tokensCutByKill of them, the calls cut by the kill: answered to the killed JVM and
     *     never logged, or logged there and made again
     * @param attempts attempts spent, summed over the jobs (history and queue)
     * @param orphans jobs held by the killed JVM when it died (each runs again with an attempt spent)
     * @param jobRowWrites inserts, updates and deletes of the job table
     * @param stepRowWrites inserts, updates and deletes of the step table
     * @param seconds wall time from the enqueue to the last job's end (or to the arm's limit)
     * @param killedAt seconds from the enqueue to the kill
     * @param parkedAs the dead letters by failure type
     * @param calls every call the fake answered (successes, 429s, 503s: each took from its limit)
     * @param firstCall seconds from the enqueue to the first call
     * @param unused where the provider's limit went unused: R minus the calls of each whole second
     *     from the enqueue to the arm's end, summed, over R (seconds of the limit lost), split into
     *     before the kill, the 60 s after it, and the rest
     */
    record Arm(String name, long completed, long parked, long unfinished, long successes, long refused, long unavailable,
            long repeated, long tokensDiscarded, long tokensCutByKill, long attempts, long orphans, long jobRowWrites,
            long stepRowWrites, double seconds, double killedAt, String parkedAs, long calls, double firstCall,
            double[] unused) {
        /** @return attempts neither a 503 nor the kill explains: spent on rate limits (goal 0) */
        long attemptsOnRateLimits() {
            return Math.max(0, attempts - unavailable - orphans);
        }
    }

    static List<Arm> measure(String jdbcUrl, Settings s) throws Exception {
        List<Arm> arms = new ArrayList<>();
        arms.add(arm(jdbcUrl, s, true));
        arms.add(arm(jdbcUrl, s, false));
        return arms;
    }

    private static Arm arm(String jdbcUrl, Settings s, boolean steps) throws Exception {
        String name = StepsWorker.typeName(steps);
        String key = "fake:" + name;
        Path dir = Files.createTempDirectory("layover-steps");
        Path stop = dir.resolve("stop");
        List<JvmProcess> workers = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(jdbcUrl);
        cfg.setMaximumPoolSize(4);
        try (FakeProvider fake = FakeProvider.start(); HikariDataSource pool = new HikariDataSource(cfg)) {
            FakeProvider.Endpoint ep = fake.primary().limitPerSecond(s.rate()).countRefused(true).latency(s.latency())
                    .faults(Faults.none().unavailable(s.unavailable()).seed(45));
            long[] before = writes(pool);
            for (int i = 0; i < s.jvms(); i++) {
                String worker = name + "-" + i;
                Path log = dir.resolve(worker + ".log");
                logs.add(log);
                workers.add(JvmProcess.start(StepsWorker.class, worker, List.of("-Xmx256m"), List.of(steps ? "steps" : "plain",
                        jdbcUrl, ep.url().toString(), worker, String.valueOf(s.threads()), key, String.valueOf(s.calls()),
                        log.toString(), stop.toString(), String.valueOf(s.poll().toMillis()),
                        String.valueOf(s.heartbeat().toMillis()))));
            }
            for (JvmProcess w : workers) {
                w.awaitOutput("ready", Duration.ofSeconds(120));
            }
            JobType<StepsWorker.Args> type = StepsWorker.type(steps, key, s.calls(), null, null);
            Layover client = Layover.builder(pool).register(type).migrate(false).build();
            List<StepsWorker.Args> all = new ArrayList<>();
            for (int i = 0; i < s.jobs(); i++) {
                all.add(new StepsWorker.Args(i));
            }
            String left = "SELECT count(*) FROM layover.jobs WHERE job_type = '" + name + "'";
            long start = System.nanoTime();
            Instant startedAt = Instant.now();
            client.enqueueBatch(type, all);
            long killAt = start + (long) (s.idealSeconds() * s.killAt() * 1e9);
            long deadline = start + s.limit(steps).toNanos();
            long unfinished;
            while ((unfinished = BenchDatabase.count(pool, left)) > 0 && System.nanoTime() < killAt) {
                Thread.sleep(100);
            }
            JvmProcess killed = workers.get(0);
            killed.kill();
            double killedAt = (System.nanoTime() - start) / 1e9;
            // what it held stays picked in its name until its heartbeats are missed
            long orphans = BenchDatabase.count(pool, "SELECT count(*) FROM layover.jobs WHERE job_type = '" + name
                    + "' AND picked_by = '" + killed.name() + "'");
            while ((unfinished = BenchDatabase.count(pool, left)) > 0 && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            Files.createFile(stop);
            for (JvmProcess w : workers.subList(1, workers.size())) {
                w.awaitOutput("RESULT", Duration.ofSeconds(60));
                try {
                    w.waitFor(Duration.ofSeconds(20));
                } catch (AssertionError stillRunning) {
                    w.kill();
                }
            }
            long completed = BenchDatabase.count(pool, "SELECT count(*) FROM layover.job_history WHERE job_type = '" + name
                    + "' AND outcome = 'completed'");
            long parked = BenchDatabase.count(pool, "SELECT count(*) FROM layover.dead_letters WHERE job_type = '" + name + "'");
            String parkedAs = parkedAs(pool, name);
            long attempts = BenchDatabase.count(pool, "SELECT coalesce(sum(attempts), 0) FROM layover.job_history WHERE job_type = '"
                    + name + "'") + BenchDatabase.count(pool, "SELECT coalesce(sum(attempts), 0) FROM layover.jobs WHERE job_type = '"
                    + name + "'");
            pool.getHikariPoolMXBean().softEvictConnections(); // its backends flush their table counters on exit
            long[] after = settledWrites(pool, before);
            CallLog calls = CallLog.read(logs, killed.name(), ep.inputTokens() + ep.outputTokens());
            return new Arm(steps ? "with steps" : "without steps (today)", completed, parked, unfinished, ep.successes(),
                    ep.rateLimited(), ep.unavailable(), calls.repeated(), calls.discarded(), calls.cutByKill(), attempts,
                    orphans, after[0] - before[0], after[1] - before[1], seconds, killedAt, parkedAs, ep.calls(),
                    firstCall(ep, startedAt), unused(ep, startedAt, seconds, killedAt, s.rate()));
        } finally {
            for (JvmProcess w : workers) {
                w.close();
            }
            for (Path log : logs) {
                Files.deleteIfExists(log);
            }
            Files.deleteIfExists(stop);
            Files.deleteIfExists(dir);
        }
    }

    private static double firstCall(FakeProvider.Endpoint ep, Instant start) {
        List<Instant> a = ep.arrivals();
        return a.isEmpty() ? Double.NaN : Duration.between(start, a.get(0)).toNanos() / 1e9;
    }

    /** Seconds of the limit unused: before the kill, in the 60 s after it, after those (see {@link Arm#unused}). */
    private static double[] unused(FakeProvider.Endpoint ep, Instant start, double seconds, double killedAt, int rate) {
        int whole = (int) Math.floor(seconds);
        int[] perSecond = new int[Math.max(whole, 0)];
        for (Instant a : ep.arrivals()) {
            long ms = Duration.between(start, a).toMillis();
            if (ms >= 0 && ms / 1000 < whole) {
                perSecond[(int) (ms / 1000)]++;
            }
        }
        double[] out = new double[3];
        for (int i = 0; i < whole; i++) {
            double lost = Math.max(0, rate - perSecond[i]) / (double) rate;
            out[i + 1 <= killedAt ? 0 : i < killedAt + 60 ? 1 : 2] += lost;
        }
        return out;
    }

    /**
     * The workers' call logs, read together.
     *
     * @param repeated successes of a job's call after its first
     * @param discarded tokens of every success of a job's call but its first, plus those the fake
     *     answered but no worker logged (answered to the killed JVM)
     * @param cutByKill of them: the unlogged, and those whose earlier success was the killed JVM's
     */
    record CallLog(long repeated, long discarded, long cutByKill) {
        static CallLog read(List<Path> logs, String killed, long paidTokens) throws Exception {
            Map<String, String> firstBy = new HashMap<>();
            long logged = 0;
            long kept = 0;
            long repeated = 0;
            long cut = 0;
            for (Path log : logs) {
                if (!Files.exists(log)) {
                    continue;
                }
                for (String line : Files.readAllLines(log)) {
                    String[] f = line.trim().split(" ");
                    if (f.length < 4) {
                        continue; // a line the kill cut short
                    }
                    long tokens = Long.parseLong(f[2]);
                    logged += tokens;
                    String call = f[0] + " " + f[1];
                    String first = firstBy.putIfAbsent(call, f[3]);
                    if (first == null) {
                        kept += tokens;
                    } else {
                        repeated++;
                        if (first.equals(killed)) {
                            cut += tokens;
                        }
                    }
                }
            }
            long unlogged = Math.max(0, paidTokens - logged);
            return new CallLog(repeated, paidTokens - kept, cut + unlogged);
        }
    }

    /** The dead letters of a job type by failure type, e.g. {@code rate_limit_exhausted 12}; empty when none. */
    private static String parkedAs(HikariDataSource pool, String jobType) throws Exception {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT failure_type, count(*) FROM layover.dead_letters WHERE job_type = '"
                        + jobType + "' GROUP BY 1 ORDER BY 2 DESC")) {
            List<String> parts = new ArrayList<>();
            while (rs.next()) {
                parts.add(rs.getString(1) + " " + rs.getLong(2));
            }
            return String.join(", ", parts);
        }
    }

    /** Job-table and step-table rows written (inserted + updated + deleted) so far, by the tables' counters. */
    private static long[] writes(HikariDataSource pool) throws Exception {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute("SELECT pg_stat_clear_snapshot()");
            try (ResultSet rs = st.executeQuery("SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables "
                    + "WHERE schemaname = 'layover' AND relname IN ('scheduled_tasks', 'job_steps')")) {
                long[] w = new long[2];
                while (rs.next()) {
                    w[rs.getString(1).equals("scheduled_tasks") ? 0 : 1] = rs.getLong(2);
                }
                return w;
            }
        }
    }

    /** The counters once they stop moving (backends report theirs as they exit). */
    private static long[] settledWrites(HikariDataSource pool, long[] before) throws Exception {
        long[] last = writes(pool);
        for (int i = 0; i < 20; i++) {
            Thread.sleep(500);
            long[] now = writes(pool);
            if (now[0] == last[0] && now[1] == last[1] && now[0] > before[0]) {
                return now;
            }
            last = now;
        }
        return last;
    }
}
