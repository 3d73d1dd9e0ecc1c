package dev.layover.bench;

import dev.layover.bench.EtiquetteWorker.Chat;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.Faults;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
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
 *
 * <p><b>Goodput under provider faults</b> (issue 50, {@link #measureFaults}): the bucket arm, refused
 * calls counting, against a provider that fails 0 %, 1 %, 3 % or 10 % of the calls its limit
 * admits ({@link Faults#mix}: half 503, a quarter 500, an eighth slow 2-8 s, an eighth dropped;
 * seeded), and an outage arm (every call 503 for 30 s mid-run, with the recovery bench's breaker
 * and sweep). Figures: goodput against the error-free arm's, the 429 share, the share of time the
 * key was cooling down and its breaker not closed (sampled every 250 ms), job-row writes per
 * success, attempts spent and jobs parked.
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
                workers.add(JvmProcess.start(EtiquetteWorker.class, name, EtiquetteWorker.jvmArgs(), List.of(arm.mode, jdbcUrl,
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

    // ---- goodput under provider faults (issue 50) -------------------------------------------------

    /** The outage arm's name in {@code -Dbench.etiquette.faults}. */
    static final String OUTAGE = "outage";

    /**
     * Settings of the faults comparison.
     *
     * @param rate R, the provider's limit in requests per second, and the workers' bucket
     * @param jvms worker JVMs
     * @param threads worker threads per JVM
     * @param warmUp time before the window
     * @param window the measured window of a fault arm
     * @param overload jobs are {@code overload * R * (the arm's whole run)} (the outage arm: 2)
     * @param pollInterval the workers' poll interval
     * @param arms the arms: percentages of failing calls, and {@value #OUTAGE}
     * @param beforeOutage the outage arm's normal service after the warm-up, before the outage
     * @param outage the outage arm's outage (every call 503)
     * @param afterOutage the outage arm's measured time after the outage
     * @param seed the seed of the fake provider's faults (each arm adds its percentage)
     */
    public record FaultSettings(int rate, int jvms, int threads, Duration warmUp, Duration window, int overload,
            Duration pollInterval, List<String> arms, Duration beforeOutage, Duration outage, Duration afterOutage,
            long seed) {
        /**
         * @param pollInterval the workers' poll interval
         * @return R = 50, 2 JVMs x 8 threads, a 40 s window after 5 s; the arms of
         *     {@code -Dbench.etiquette.faults} (default 0,1,3,10,outage; {@code none} for none)
         */
        public static FaultSettings full(Duration pollInterval) {
            return new FaultSettings(50, 2, 8, Duration.ofSeconds(5), Duration.ofSeconds(40), 5, pollInterval,
                    arms("0,1,3,10," + OUTAGE), Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(45),
                    Long.getLong("bench.etiquette.seed", 50));
        }

        /**
         * @param pollInterval the workers' poll interval
         * @return a smoke test: the 0 % and 3 % arms, a 2 s window
         */
        public static FaultSettings quick(Duration pollInterval) {
            return new FaultSettings(50, 2, 8, Duration.ofMillis(500), Duration.ofSeconds(2), 5, pollInterval,
                    arms("0,3"), Duration.ofSeconds(2), Duration.ofSeconds(3), Duration.ofSeconds(5),
                    Long.getLong("bench.etiquette.seed", 50));
        }

        private static List<String> arms(String dflt) {
            String v = System.getProperty("bench.etiquette.faults", dflt).trim();
            if (v.isEmpty() || v.equals("none")) {
                return List.of();
            }
            List<String> out = new ArrayList<>();
            for (String a : v.split(",")) {
                String arm = a.trim();
                if (!arm.equals(OUTAGE)) {
                    Double.parseDouble(arm); // a percentage
                }
                out.add(arm);
            }
            return List.copyOf(out);
        }

        Duration outageRun() {
            return warmUp.plus(beforeOutage).plus(outage).plus(afterOutage);
        }
    }

    /**
     * One arm of the faults comparison.
     *
     * @param arm {@code "3 %"} or {@value #OUTAGE}
     * @param percent the share of admitted calls failing, in percent (the outage arm: 0 outside it)
     * @param goodput successful calls per second in the window, over R (the outage arm: its whole
     *     run after the warm-up)
     * @param share429 429s over calls in the window
     * @param cooling share of the window's samples in which the key was cooling down
     * @param overloadCooling of them, the share in which the cooldown was an overload's (503, 529),
     *     not a 429's
     * @param breakerOpen share of the window's samples in which the key's breaker was not closed
     * @param writesPerSuccess rows of {@code layover.scheduled_tasks} written in the window per success
     * @param attemptsSpent Σ attempts of the key's jobs in {@code layover.job_history} and in
     *     {@code layover.jobs} at the end (whole run)
     * @param failedCalls calls the fake answered 503/500 or dropped (whole run)
     * @param parked the key's dead letters at the end
     * @param faults the faults the fake answered (whole run)
     * @param windowCalls calls in the window
     * @param goodputBefore the outage arm: goodput / R before the outage (NaN otherwise)
     * @param goodputAfter the outage arm: goodput / R in the time measured after the outage
     * @param breakerOpenedAfter the outage arm: seconds from the outage's start to the breaker seen
     *     open (NaN: never)
     * @param recoverySeconds the outage arm: seconds from the outage's end to the first second with
     *     goodput of at least 0.9 R (NaN: not within the run)
     * @param seed the faults' seed
     * @param note anything odd
     */
    public record FaultResult(String arm, double percent, double goodput, double share429, double cooling,
            double overloadCooling, double breakerOpen, double writesPerSuccess, long attemptsSpent, long failedCalls, long parked,
            Faults.Counts faults, long windowCalls, double goodputBefore, double goodputAfter,
            double breakerOpenedAfter, double recoverySeconds, long seed, String note) {
        /** @return whether this is the outage arm */
        public boolean outage() {
            return arm.equals(OUTAGE);
        }
    }

    /** One sample of the key's state and the fake's counters. */
    private record Sample(long nanos, boolean cooling, boolean overloadCooling, boolean breakerOpen, long successes,
            long parked) {}

    /**
     * Runs the faults arms, each with a fresh provider key.
     *
     * @param ds the database (migrated)
     * @param jdbcUrl its URL, for the worker JVMs
     * @param s the settings
     * @return one result per arm, in the order of {@link FaultSettings#arms()}
     * @throws Exception on failure
     */
    public static List<FaultResult> measureFaults(DataSource ds, String jdbcUrl, FaultSettings s) throws Exception {
        List<FaultResult> out = new ArrayList<>();
        try (FakeProvider fake = FakeProvider.start()) {
            for (String arm : s.arms()) {
                out.add(runFaults(ds, jdbcUrl, fake, arm, s));
            }
        }
        return out;
    }

    private static FaultResult runFaults(DataSource ds, String jdbcUrl, FakeProvider fake, String arm, FaultSettings s)
            throws Exception {
        boolean outage = arm.equals(OUTAGE);
        double percent = outage ? 0 : Double.parseDouble(arm);
        String key = "fake:goodput-" + (outage ? OUTAGE : arm.replace('.', '_') + "pct");
        long seed = s.seed() + (long) (percent * 100);
        ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name = '" + EtiquetteWorker.TYPE + "'");
        FakeProvider.Endpoint ep = fake.primary();
        ep.phase(FakeProvider.Phase.NORMAL).unlimited().statesNoLimit(false).faults(Faults.none());
        Duration run = outage ? s.outageRun() : s.warmUp().plus(s.window());
        int jobs = (int) ((outage ? 2 : s.overload()) * s.rate() * run.toMillis() / 1000);
        Path dir = Files.createTempDirectory("layover-goodput");
        Path go = dir.resolve("go");
        Path stop = dir.resolve("stop");
        List<JvmProcess> workers = new ArrayList<>();
        List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
        Thread sampler = null;
        try {
            for (int i = 0; i < s.jvms(); i++) {
                String name = "goodput-" + (outage ? OUTAGE : arm) + "-" + i;
                workers.add(JvmProcess.start(EtiquetteWorker.class, name, EtiquetteWorker.jvmArgs(), List.of(
                        outage ? "bucket-sweep" : "bucket", jdbcUrl, ep.url().toString(), name, String.valueOf(s.threads()),
                        key, String.valueOf(s.rate()), String.valueOf(jobs / s.jvms()), go.toString(), stop.toString(),
                        String.valueOf(s.pollInterval().toMillis()), FakeProvider.Api.OPENAI_CHAT.name())));
            }
            for (JvmProcess w : workers) {
                w.awaitOutput("ready", Duration.ofSeconds(120));
            }
            JobType<Chat> type = EtiquetteWorker.chatType(key, null);
            Layover client = Layover.builder(ds).register(type).migrate(false).build();
            List<Chat> args = new ArrayList<>();
            for (int i = 0; i < jobs; i++) {
                args.add(new Chat(i));
            }
            ep.limitPerSecond(s.rate()).countRefused(true); // a full bucket at the start
            if (outage) {
                ep.script(new FakeProvider.Stage(FakeProvider.Phase.NORMAL, s.warmUp().plus(s.beforeOutage())),
                        new FakeProvider.Stage(FakeProvider.Phase.OUTAGE, s.outage()),
                        new FakeProvider.Stage(FakeProvider.Phase.NORMAL, Duration.ofDays(1)));
            } else {
                ep.faults(Faults.mix(seed, percent / 100));
            }
            ep.resetCounters();
            long t0 = System.nanoTime();
            client.enqueueBatch(type, args);
            sampler = sampler(ds, ep, key, samples, t0 + run.toNanos() + 1_000_000_000L);
            if (TRACE) {
                trace(ds, ep, t0, t0 + run.toNanos());
            }
            sleepUntil(t0 + s.warmUp().toNanos());
            Counters a = Counters.of(ep);
            long writesA = rowWrites(ds);
            sleepUntil(t0 + run.toNanos());
            Counters b = Counters.of(ep);
            long writesB = rowWrites(ds);
            Files.createFile(stop);
            sampler.join(5_000);

            StringBuilder note = new StringBuilder();
            for (JvmProcess w : workers) {
                w.awaitOutput("RESULT", Duration.ofSeconds(60));
            }
            for (JvmProcess w : workers) {
                try {
                    w.waitFor(Duration.ofSeconds(20));
                } catch (AssertionError stillRunning) {
                    w.kill();
                    note.append(w.name()).append(" killed after its result; ");
                }
            }
            long attempts = value(ds, "select coalesce(sum(attempts), 0) from layover.job_history where provider_key = '"
                    + key + "'") + value(ds, "select coalesce(sum(attempts), 0) from layover.jobs where provider_key = '"
                    + key + "'");
            long parked = value(ds, "select count(*) from layover.dead_letters where provider_key = '" + key + "'");
            Faults.Counts fc = ep.faultCounts();
            long failed = fc.serverError() + fc.dropped() + ep.unavailable() + ep.overloaded();
            long calls = b.calls() - a.calls();
            double secs = (b.nanos() - a.nanos()) / 1e9;
            long ok = b.successes() - a.successes();
            double goodput = ok / secs / s.rate();
            double share = calls == 0 ? 0 : (double) (b.rateLimited() - a.rateLimited()) / calls;
            double writes = ok == 0 ? Double.NaN : (double) (writesB - writesA) / ok;
            List<Sample> in;
            synchronized (samples) {
                in = samples.stream().filter(x -> x.nanos() >= a.nanos() && x.nanos() <= b.nanos()).toList();
            }
            double cooling = in.isEmpty() ? Double.NaN : (double) in.stream().filter(Sample::cooling).count() / in.size();
            double overloadCooling = in.isEmpty() ? Double.NaN
                    : (double) in.stream().filter(Sample::overloadCooling).count() / in.size();
            double open = in.isEmpty() ? Double.NaN : (double) in.stream().filter(Sample::breakerOpen).count() / in.size();
            double before = Double.NaN;
            double after = Double.NaN;
            double openedAfter = Double.NaN;
            double recovery = Double.NaN;
            if (outage) {
                long outStart = t0 + s.warmUp().plus(s.beforeOutage()).toNanos();
                long outEnd = outStart + s.outage().toNanos();
                before = rate(in, a.nanos(), outStart) / s.rate();
                after = rate(in, outEnd, b.nanos()) / s.rate();
                for (Sample x : in) {
                    if (x.nanos() >= outStart && x.breakerOpen()) {
                        openedAfter = (x.nanos() - outStart) / 1e9;
                        break;
                    }
                }
                for (int i = 0; i < in.size() && Double.isNaN(recovery); i++) {
                    Sample x = in.get(i);
                    if (x.nanos() < outEnd) {
                        continue;
                    }
                    for (int j = i + 1; j < in.size(); j++) {
                        if (in.get(j).nanos() - x.nanos() >= 1_000_000_000L) {
                            double r = (in.get(j).successes() - x.successes()) / ((in.get(j).nanos() - x.nanos()) / 1e9);
                            if (r >= 0.9 * s.rate()) {
                                recovery = (x.nanos() - outEnd) / 1e9;
                            }
                            break;
                        }
                    }
                }
            }
            return new FaultResult(outage ? OUTAGE : arm + " %", percent, goodput, share, cooling, overloadCooling, open,
                    writes, attempts,
                    failed, parked, fc, calls, before, after, openedAfter, recovery, seed, note.toString());
        } finally {
            if (sampler != null) {
                sampler.interrupt();
            }
            for (JvmProcess w : workers) {
                w.close();
            }
            ep.faults(Faults.none()).phase(FakeProvider.Phase.NORMAL);
            ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name = '" + EtiquetteWorker.TYPE + "'");
            Files.deleteIfExists(go);
            Files.deleteIfExists(stop);
            Files.deleteIfExists(dir);
        }
    }

    /** Successful calls per second between two times, from the samples. */
    private static double rate(List<Sample> in, long from, long to) {
        Sample first = null;
        Sample last = null;
        for (Sample x : in) {
            if (x.nanos() >= from && x.nanos() <= to) {
                if (first == null) {
                    first = x;
                }
                last = x;
            }
        }
        if (first == null || last == first) {
            return Double.NaN;
        }
        return (last.successes() - first.successes()) / ((last.nanos() - first.nanos()) / 1e9);
    }

    /** Samples the key's cooldown and breaker and the fake's successes every 250 ms until {@code until}. */
    private static Thread sampler(DataSource ds, FakeProvider.Endpoint ep, String key, List<Sample> out, long until) {
        String sql = "select coalesce((select until > now() from layover.cooldowns where provider_key = ?), false), "
                + "coalesce((select until > now() and reason = 'overloaded' from layover.cooldowns where provider_key = ?), "
                + "false), "
                + "coalesce((select state <> 'closed' from layover.breakers where provider_key = ?), false), "
                + "(select count(*) from layover.dead_letters where provider_key = ?)";
        Thread t = new Thread(() -> {
            try (Connection c = ds.getConnection(); java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
                for (int i = 1; i <= 4; i++) {
                    ps.setString(i, key);
                }
                while (System.nanoTime() < until && !Thread.currentThread().isInterrupted()) {
                    long successes = ep.successes();
                    long now = System.nanoTime();
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        out.add(new Sample(now, rs.getBoolean(1), rs.getBoolean(2), rs.getBoolean(3), successes,
                                rs.getLong(4)));
                    }
                    Thread.sleep(250);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                System.out.println("goodput sampler: " + e);
            }
        }, "bench-goodput-sampler");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * The goals of issue 50 against the faults arms, one line each.
     *
     * @param rs the results
     * @return the lines, empty without a 0 % arm
     */
    static List<String> faultGoals(List<FaultResult> rs) {
        FaultResult base = rs.stream().filter(r -> !r.outage() && r.percent() == 0).findFirst().orElse(null);
        List<String> out = new ArrayList<>();
        if (base == null) {
            return out;
        }
        for (FaultResult r : rs) {
            if (r.outage() || r.percent() == 0) {
                continue;
            }
            double vs = r.goodput() / base.goodput();
            if (r.percent() <= 3) {
                out.add(String.format(Locale.ROOT, "%s: goodput %.3f of the 0 %% arm's (goal >= 0.9): %s; writes per "
                        + "success %.2f (goal <= 2.2): %s", r.arm(), vs, vs >= 0.9 ? "met" : "MISSED", r.writesPerSuccess(),
                        r.writesPerSuccess() <= 2.2 ? "met" : "MISSED"));
            } else {
                out.add(String.format(Locale.ROOT, "%s: goodput %.3f of the 0 %% arm's (goal >= 0.75): %s", r.arm(), vs,
                        vs >= 0.75 ? "met" : "MISSED"));
            }
        }
        return out;
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
