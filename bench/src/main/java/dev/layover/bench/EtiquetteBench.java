package dev.layover.bench;

import dev.layover.bench.EtiquetteWorker.Chat;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import javax.sql.DataSource;

/**
 * Provider etiquette: how much of a provider's limit turns into useful work. The fake provider
 * allows R requests per second (a token bucket holding one second, 429 with {@code retry-after}
 * beyond it); {@code jvms} child JVMs of {@code threads} workers each have five times more work
 * than the limit allows in the run, and these arms are compared:
 *
 * <ul>
 *   <li><b>Layover, bucket</b>: the limit configured as a fleet-wide bucket (BucketSettings at R);
 *   <li><b>Layover, 429s only</b>: no bucket; the fleet learns from 429s: a cooldown per
 *       retry-after, and the pace the 429 states (OpenAI's message names the limit), shared by the
 *       fleet as a learned bucket;
 *   <li><b>per-call backoff</b>: plain threads, no queue; each call retried with exponential
 *       backoff and full jitter, retry-after as a floor (the usual approach);
 *   <li><b>Layover, 429s stating nothing</b> and <b>per-call backoff, 429s stating nothing</b>: the
 *       same two approaches against a provider whose 429s carry no limit, no headers and no
 *       retry-after (one JVM speaks Gemini, the other Bedrock): Layover discovers the pace
 *       ({@code DiscoverySettings}), after a longer warm-up for its slow start.
 * </ul>
 *
 * Each arm runs twice: once where a refused call costs the provider nothing, once where it also
 * takes from the limit ({@link FakeProvider.Endpoint#countRefused}). Figures are taken in a steady
 * window (after a warm-up) from the fake provider's counters: goodput (successful calls per
 * second) over R, the share of calls answered 429; from the workers: successes per worker thread;
 * from the database and the handlers: attempts spent.
 */
public final class EtiquetteBench {

    /**
     * @param rate R, the provider's limit in requests per second
     * @param jvms worker JVMs
     * @param threads worker threads per JVM
     * @param warmUp time before the window
     * @param window the measured window
     * @param overload jobs are {@code overload * R * (warmUp + window)}
     * @param pollInterval the Layover workers' poll interval
     */
    public record Settings(int rate, int jvms, int threads, Duration warmUp, Duration window, int overload,
            Duration pollInterval) {
        /**
         * @param pollInterval the Layover workers' poll interval
         * @return the issue's settings: R = 50, 2 JVMs x 8 threads, 5x overload, a 16 s window
         */
        public static Settings full(Duration pollInterval) {
            return new Settings(50, 2, 8, Duration.ofSeconds(4), Duration.ofSeconds(16), 5, pollInterval);
        }

        /**
         * @param pollInterval the Layover workers' poll interval
         * @return a smoke test (run in one mode only, see {@link EtiquetteBench#measure})
         */
        public static Settings quick(Duration pollInterval) {
            return new Settings(50, 2, 8, Duration.ofMillis(500), Duration.ofMillis(1500), 5, pollInterval);
        }

        boolean isQuick() {
            return window.compareTo(Duration.ofSeconds(5)) < 0;
        }

        int jobs() {
            return (int) (overload * rate * (warmUp.toMillis() + window.toMillis()) / 1000);
        }
    }

    /** The arms. */
    enum Arm {
        BUCKET("bucket", "Layover, bucket at R"),
        LEARN("learn", "Layover, 429s only (no bucket)"),
        BACKOFF("backoff", "per-call backoff + jitter"),
        DISCOVER("discover", "Layover, 429s stating nothing (discovered pace)"),
        BACKOFF_SILENT("backoff-silent", "per-call backoff + jitter, 429s stating nothing");

        final String mode;
        final String label;

        Arm(String mode, String label) {
            this.mode = mode;
            this.label = label;
        }

        /** @return whether the provider's 429s state nothing in this arm (Gemini's and Bedrock's real shapes) */
        boolean silent() {
            return this == DISCOVER || this == BACKOFF_SILENT;
        }

        /** @return whether this arm is plain threads with per-call backoff */
        boolean backoff() {
            return this == BACKOFF || this == BACKOFF_SILENT;
        }
    }

    /**
     * The warm-up of the arms whose 429s state nothing: the discovered pace's slow start from
     * 1 request/s takes about log2(R) intervals before the window.
     */
    static Duration warmUp(Arm arm, Settings s) {
        return arm.silent() ? s.warmUp().plus(s.isQuick() ? Duration.ofSeconds(5) : Duration.ofSeconds(8)) : s.warmUp();
    }

    /**
     * One arm in one mode.
     *
     * @param arm the arm's label
     * @param refusedCounts whether a refused call took from the limit
     * @param goodput successful calls per second in the window, over R
     * @param goodputSecondHalf the same in the second half of the window (the steady state)
     * @param share429 429s over calls in the window
     * @param share429Run 429s over calls from start to stop
     * @param attemptsSpent attempts spent on rate limits (Layover: attempts in {@code layover.jobs}
     *     plus dead letters plus runs started after a spent attempt; backoff: retries after a 429)
     * @param perThread successful calls of each worker thread, whole run, sorted
     * @param windowCalls calls in the window
     * @param writesPerSuccess Layover: rows of {@code layover.scheduled_tasks} inserted, updated or
     *     deleted (picks, reschedules, heartbeats, completions; Postgres' statistics) in the window,
     *     per successful call; NaN for the backoff arm
     * @param note anything odd
     */
    public record Result(String arm, boolean refusedCounts, double goodput, double goodputSecondHalf, double share429,
            double share429Run, long attemptsSpent, List<Integer> perThread, long windowCalls, double writesPerSuccess,
            String note) {
        int minPerThread() {
            return perThread.isEmpty() ? 0 : perThread.get(0);
        }

        int maxPerThread() {
            return perThread.isEmpty() ? 0 : perThread.get(perThread.size() - 1);
        }

        /** @return max / min successes per thread; infinite when a thread had none */
        double spread() {
            return minPerThread() == 0 ? Double.POSITIVE_INFINITY : (double) maxPerThread() / minPerThread();
        }
    }

    private record Counters(long calls, long rateLimited, long successes, long nanos) {
        static Counters of(FakeProvider.Endpoint e) {
            long t = System.nanoTime();
            return new Counters(e.calls(), e.rateLimited(), e.successes(), t);
        }
    }

    private EtiquetteBench() {}

    /**
     * Runs every arm in both modes.
     *
     * @param ds the database (migrated)
     * @param jdbcUrl its URL, for the worker JVMs
     * @param s the settings
     * @return ten results: five arms with refused calls free, then the five with refused calls
     *     counted (quick settings: only the last five); {@code -Dbench.etiquette.arms} picks arms
     * @throws Exception on failure
     */
    public static List<Result> measure(DataSource ds, String jdbcUrl, Settings s) throws Exception {
        List<Result> out = new ArrayList<>();
        try (FakeProvider fake = FakeProvider.start()) {
            java.util.Set<String> arms = java.util.Set.of(System.getProperty("bench.etiquette.arms",
                    "bucket,learn,backoff,discover,backoff-silent").split(","));
            // --quick: the three arms once, in the mode that uses more of the fake provider
            String modes = System.getProperty("bench.etiquette.refused", s.isQuick() ? "counts" : "free,counts");
            for (boolean refusedCounts : new boolean[] {false, true}) {
                if (!modes.contains(refusedCounts ? "counts" : "free")) {
                    continue;
                }
                for (Arm arm : Arm.values()) {
                    if (arms.contains(arm.mode)) {
                        out.add(run(ds, jdbcUrl, fake, arm, refusedCounts, s));
                    }
                }
            }
        }
        return out;
    }

    private static Result run(DataSource ds, String jdbcUrl, FakeProvider fake, Arm arm, boolean refusedCounts,
            Settings s) throws Exception {
        String key = "fake:etiquette-" + arm.mode + (refusedCounts ? "-refused-counts" : "-refused-free");
        ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name = '" + EtiquetteWorker.TYPE + "'");
        FakeProvider.Endpoint ep = fake.primary();
        ep.phase(FakeProvider.Phase.NORMAL).unlimited().statesNoLimit(arm.silent());
        Duration warmUp = warmUp(arm, s);
        Path dir = Files.createTempDirectory("layover-etiquette");
        Path go = dir.resolve("go");
        Path stop = dir.resolve("stop");
        int jobs = (int) (s.overload() * s.rate() * (warmUp.toMillis() + s.window().toMillis()) / 1000);
        List<JvmProcess> workers = new ArrayList<>();
        try {
            for (int i = 0; i < s.jvms(); i++) {
                String name = "etq-" + arm.mode + "-" + (refusedCounts ? "c" : "f") + "-" + i;
                // 429s stating nothing: one JVM speaks Gemini, the other Bedrock (the fake's limit is the endpoint's)
                FakeProvider.Api api = !arm.silent() ? FakeProvider.Api.OPENAI_CHAT
                        : i % 2 == 0 ? FakeProvider.Api.GEMINI_GENERATE_CONTENT : FakeProvider.Api.BEDROCK_CONVERSE;
                workers.add(JvmProcess.start(EtiquetteWorker.class, name, List.of("-Xmx256m"), List.of(arm.mode, jdbcUrl,
                        ep.url(api).toString(), name, String.valueOf(s.threads()), key, String.valueOf(s.rate()),
                        String.valueOf(jobs / s.jvms()), go.toString(), stop.toString(), String.valueOf(s.pollInterval().toMillis()),
                        api.name())));
            }
            for (JvmProcess w : workers) {
                w.awaitOutput("ready", Duration.ofSeconds(120));
            }
            Layover client = null;
            JobType<Chat> type = EtiquetteWorker.chatType(key, null);
            List<Chat> args = new ArrayList<>();
            if (!arm.backoff()) {
                client = Layover.builder(ds).register(type).migrate(false).build();
                for (int i = 0; i < jobs; i++) {
                    args.add(new Chat(i));
                }
            }
            ep.limitPerSecond(s.rate()).countRefused(refusedCounts); // a full bucket at the start
            ep.resetCounters();
            long t0 = System.nanoTime();
            if (client != null) {
                client.enqueueBatch(type, args);
            } else {
                Files.createFile(go);
            }
            if (TRACE) {
                trace(ds, ep, t0, t0 + warmUp.toNanos() + s.window().toNanos());
            }
            sleepUntil(t0 + warmUp.toNanos());
            Counters a = Counters.of(ep);
            long writesA = rowWrites(ds);
            sleepUntil(a.nanos() + s.window().toNanos() / 2);
            Counters mid = Counters.of(ep);
            sleepUntil(a.nanos() + s.window().toNanos());
            Counters b = Counters.of(ep);
            long writesB = rowWrites(ds);
            Files.createFile(stop);
            Counters end = Counters.of(ep);

            List<Integer> perThread = new ArrayList<>();
            long lateAttempts = 0;
            long retries = 0;
            StringBuilder note = new StringBuilder();
            for (JvmProcess w : workers) {
                w.awaitOutput("RESULT", Duration.ofSeconds(60));
                String line = w.output().lines().filter(l -> l.startsWith("RESULT")).findFirst().orElseThrow();
                lateAttempts += field(line, "lateAttempts");
                retries += field(line, "rateLimited");
                long other = field(line, "other");
                if (other > 0) {
                    note.append(w.name()).append(": ").append(other).append(" other errors; ");
                }
                int threads = (int) field(line, "threads");
                String list = line.substring(line.indexOf("successes=") + "successes=".length()).trim();
                int seen = 0;
                if (!list.isEmpty()) {
                    for (String n : list.split(",")) {
                        perThread.add(Integer.parseInt(n));
                        seen++;
                    }
                }
                for (int i = Math.max(seen, threads); i < s.threads(); i++) {
                    perThread.add(0); // a worker thread that never had a success
                }
            }
            for (JvmProcess w : workers) {
                try {
                    w.waitFor(Duration.ofSeconds(20));
                } catch (AssertionError stillRunning) {
                    w.kill();
                }
            }
            long spent;
            if (arm.backoff()) {
                spent = retries;
            } else {
                spent = lateAttempts + value(ds, "select coalesce(sum(attempts), 0) from layover.jobs where job_type = '"
                        + EtiquetteWorker.TYPE + "'") + value(ds,
                        "select count(*) from layover.dead_letters where provider_key = '" + key + "'");
            }
            Collections.sort(perThread);
            long calls = b.calls() - a.calls();
            double secs = (b.nanos() - a.nanos()) / 1e9;
            double goodput = (b.successes() - a.successes()) / secs / s.rate();
            double share = calls == 0 ? 0 : (double) (b.rateLimited() - a.rateLimited()) / calls;
            double shareRun = end.calls() == 0 ? 0 : (double) end.rateLimited() / end.calls();
            double secondHalf = (b.successes() - mid.successes()) / ((b.nanos() - mid.nanos()) / 1e9) / s.rate();
            long ok = b.successes() - a.successes();
            double writes = arm.backoff() || ok == 0 ? Double.NaN : (double) (writesB - writesA) / ok;
            return new Result(arm.label, refusedCounts, goodput, secondHalf, share, shareRun, spent, perThread, calls,
                    writes, note.toString());
        } finally {
            for (JvmProcess w : workers) {
                w.close();
            }
            ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name = '" + EtiquetteWorker.TYPE + "'");
            Files.deleteIfExists(go);
            Files.deleteIfExists(stop);
            Files.deleteIfExists(dir);
        }
    }

    /** {@code -Dbench.trace=true}: prints each second's calls, 429s, successes and queue states (diagnosis). */
    static final boolean TRACE = Boolean.getBoolean("bench.trace");

    static void trace(DataSource ds, FakeProvider.Endpoint ep, long t0, long until) {
        Thread t = new Thread(() -> {
            Counters last = Counters.of(ep);
            try {
                while (System.nanoTime() < until) {
                    Thread.sleep(1000);
                    Counters c = Counters.of(ep);
                    StringBuilder q = new StringBuilder();
                    try (Connection con = ds.getConnection(); Statement st = con.createStatement();
                            ResultSet rs = st.executeQuery("select state, coalesce(reschedule_reason, '-'), "
                                    + "count(*) filter (where run_at <= now()), count(*), "
                                    + "round(extract(epoch from max(run_at) - now())::numeric, 1) "
                                    + "from layover.jobs group by 1, 2 order by 1, 2")) {
                        while (rs.next()) {
                            q.append(rs.getString(1)).append('/').append(rs.getString(2)).append(": due ")
                                    .append(rs.getLong(3)).append(" of ").append(rs.getLong(4)).append(" (last +")
                                    .append(rs.getString(5)).append("s); ");
                        }
                    }
                    System.out.printf(java.util.Locale.ROOT, "t=%5.1f calls %3d  429 %3d  ok %3d | %s%n",
                            (c.nanos() - t0) / 1e9, c.calls() - last.calls(), c.rateLimited() - last.rateLimited(),
                            c.successes() - last.successes(), q);
                    last = c;
                }
            } catch (Exception e) {
                System.out.println("trace: " + e);
            }
        }, "bench-trace");
        t.setDaemon(true);
        t.start();
    }

    private static long field(String line, String name) {
        for (String part : line.split(" ")) {
            if (part.startsWith(name + "=")) {
                return Long.parseLong(part.substring(name.length() + 1));
            }
        }
        throw new IllegalStateException("no " + name + " in " + line);
    }

    /** Rows of the job table written so far, from Postgres' statistics (flushed at least every second). */
    private static long rowWrites(DataSource ds) throws Exception {
        return value(ds, "select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) from pg_stat_user_tables "
                + "where schemaname = 'layover' and relname = 'scheduled_tasks'");
    }

    static long value(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void sleepUntil(long nanos) throws InterruptedException {
        long left;
        while ((left = nanos - System.nanoTime()) > 0) {
            Thread.sleep(Math.max(1, Math.min(100, left / 1_000_000)));
        }
    }
}
