package dev.layover.bench;

import dev.layover.testing.provider.Faults;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The benchmark runner: every comparison of issue 11 measured in the same run, printed as markdown
 * tables, then the issue's goals with the figures that decide them.
 *
 * <ol>
 *   <li>throughput, no-op jobs: Layover against raw db-scheduler ({@link ThroughputBench});
 *   <li>wake-up latency, same JVM and another JVM ({@link LatencyBench});
 *   <li>tail latency of multi-second calls at two worker JVMs, by prefetch ({@link TailBench});
 *   <li>enqueue, single and batch ({@link EnqueueBench});
 *   <li>provider etiquette, two worker JVMs against a rate-limited fake provider
 *       ({@link EtiquetteBench});
 *   <li>recovery of 10,000 jobs parked by an outage ({@link RecoveryBench});
 *   <li>the console's API with 1,000,000 dead letters and 10,000,000 history rows ({@link ConsoleBench});
 *   <li>token limits ({@link TokenBench});
 *   <li>1,000 slow calls in flight in one worker JVM, platform against virtual threads ({@link InflightBench});
 *   <li>fair share among the tenants of one provider key ({@link FairnessBench});
 *   <li>batch routing: deferrable jobs by batch, urgent ones directly, a worker JVM killed
 *       mid-submit ({@link BatchBench});
 *   <li>a deep backlog behind rate-limited keys ({@link BacklogBench});
 *   <li>10,000 provider keys with buckets or concurrency limits against one ({@link KeysBench});
 *   <li>what traces, the MDC and token counts cost a run ({@link ObserveBench});
 *   <li>interactive calls beside a background backlog on one key, through the handle and direct
 *       ({@link InteractiveBench});
 *   <li>jobs of several provider calls with steps and without ({@link StepsBench}).
 * </ol>
 *
 * <p>Usage: {@code mvn -q -pl bench -am -DskipTests package exec:java -Dexec.args="[--quick]
 * [--jdbc-url URL] [--only throughput,latency,tail,enqueue,etiquette,recovery,console,tokens,inflight,fairness,batch,backlog,keys,observe,interactive,steps] [--poll-ms 200]"}. Without a URL (or
 * {@code LAYOVER_JDBC_URL}) an embedded Postgres is started; with one, a scratch database is
 * created on that server and dropped afterwards. {@code --quick} runs small sizes in under a
 * minute: a smoke test, no figure worth quoting.
 */
public final class Bench {

    /**
     * The Layover workers' poll interval in the etiquette and recovery benchmarks unless
     * {@code --poll-ms} says otherwise: 200 ms. Jobs rescheduled to a bucket permit (or a cooldown's
     * end) are picked at the next poll; with the default 1 s the permits of a whole second are
     * spent together at each poll and meet a provider whose own bucket holds one second with
     * occasional 429s (see docs/benchmarks.md).
     */
    static final long DEFAULT_POLL_MS = 200;

    /** The sections, in the order they run. */
    static final List<String> SECTIONS = List.of("throughput", "latency", "tail", "enqueue", "etiquette", "recovery", "console",
            "tokens", "inflight", "fairness", "batch", "backlog", "keys", "observe", "interactive", "steps");

    /** Everything one run measured (null where a section was not run). */
    public static final class Report {
        List<ThroughputBench.Run> throughput;
        List<LatencyBench.Result> latency;
        List<TailBench.Result> tail;
        List<EnqueueBench.Result> enqueue;
        List<EtiquetteBench.Result> etiquette;
        List<EtiquetteBench.FaultResult> etiquetteFaults;
        DiscoveryChangeBench.Result discoveryChange;
        RecoveryBench.Result recovery;
        ConsoleBench.Result console;
        List<TokenBench.Result> tokens;
        List<FairnessBench.Arm> fairness;
        List<InflightBench.Result> inflight;
        BatchBench.Result batch;
        List<BacklogBench.Arm> backlog;
        List<KeysBench.Arm> keys;
        List<ObserveBench.Run> observe;
        List<InteractiveBench.Arm> interactive;
        List<StepsBench.Arm> steps;

        /** @return the steps arms (issue 45): with steps, then without; or null */
        public List<StepsBench.Arm> steps() {
            return steps;
        }

        /** @return the interactive arms (issue 48): through the handle, then direct; or null */
        public List<InteractiveBench.Arm> interactive() {
            return interactive;
        }

        /** @return the observability arms (issue 49), every round in turn, or null */
        public List<ObserveBench.Run> observe() {
            return observe;
        }
        double seconds;

        /** @return the many-keys arms (bucket and concurrency limit, one key and many), or null */
        public List<KeysBench.Arm> keys() {
            return keys;
        }

        /** @return the deep backlog arms (small and deep, one key and many), or null */
        public List<BacklogBench.Arm> backlog() {
            return backlog;
        }

        /** @return the batch routing figures, or null */
        public BatchBench.Result batch() {
            return batch;
        }

        /** @return the slow-calls arms, platform and virtual threads, in the order run */
        public List<InflightBench.Result> inflight() {
            return inflight;
        }

        /** @return the console's API timings */
        public ConsoleBench.Result console() {
            return console;
        }

        /** @return the token-limit arms */
        public List<TokenBench.Result> tokens() {
            return tokens;
        }

        /** @return the fair share arms, or null */
        public List<FairnessBench.Arm> fairness() {
            return fairness;
        }

        /** @return the throughput runs */
        public List<ThroughputBench.Run> throughput() {
            return throughput;
        }

        /** @return the tail-latency bursts */
        public List<TailBench.Result> tail() {
            return tail;
        }

        /** @return the latency results */
        public List<LatencyBench.Result> latency() {
            return latency;
        }

        /** @return the enqueue results */
        public List<EnqueueBench.Result> enqueue() {
            return enqueue;
        }

        /** @return the etiquette results */
        public List<EtiquetteBench.Result> etiquette() {
            return etiquette;
        }

        /** @return the etiquette's arms under provider faults (issue 50), or null */
        public List<EtiquetteBench.FaultResult> etiquetteFaults() {
            return etiquetteFaults;
        }

        /** @return the recovery result */
        public RecoveryBench.Result recovery() {
            return recovery;
        }

        /** @return the run's duration */
        public double seconds() {
            return seconds;
        }
    }

    private Bench() {}

    /**
     * @param args {@code --quick}, {@code --jdbc-url URL}, {@code --only a,b}
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        run(args, System.out);
        System.exit(0);
    }

    /**
     * Runs the benchmarks and prints the tables.
     *
     * @param args {@code --quick}, {@code --jdbc-url URL}, {@code --only a,b}
     * @param out where the tables go
     * @return the figures
     * @throws Exception on failure
     */
    public static Report run(String[] args, PrintStream out) throws Exception {
        boolean quick = Arrays.asList(args).contains("--quick");
        Set<String> only = new LinkedHashSet<>(SECTIONS);
        java.time.Duration poll = java.time.Duration.ofMillis(DEFAULT_POLL_MS);
        for (int i = 0; i < args.length - 1; i++) {
            if (args[i].equals("--poll-ms")) {
                poll = java.time.Duration.ofMillis(Long.parseLong(args[i + 1]));
            }
            if (args[i].equals("--only")) {
                only = new LinkedHashSet<>(Arrays.asList(args[i + 1].split(",")));
                if (!SECTIONS.containsAll(only)) {
                    throw new IllegalArgumentException("--only takes some of " + SECTIONS + ", was " + only);
                }
            }
        }
        long start = System.nanoTime();
        Report report = new Report();
        int threads = 16;
        // the batch section opens its own pools (at most 10 connections per Layover instance)
        int poolSize = Set.of("batch", "interactive").containsAll(only) ? 4 : threads + 8;
        try (BenchDatabase db = BenchDatabase.open(args, poolSize)) {
            header(out, db, quick);
            // Layover's schema (the first Layover run migrates; the etiquette workers do not)
            dev.layover.migrations.LayoverMigrations.migrate(db.dataSource());
            if (only.contains("throughput")) {
                int jobs = quick ? 5_000 : 50_000;
                int rounds = quick ? 1 : 3;
                long t = System.nanoTime();
                report.throughput = ThroughputBench.measure(db.dataSource(), jobs, threads, rounds);
                throughput(out, report.throughput, jobs, threads, rounds, t);
            }
            if (only.contains("latency")) {
                int samples = quick ? 100 : 1000;
                long t = System.nanoTime();
                report.latency = LatencyBench.measure(db.dataSource(), db.jdbcUrl(), samples);
                out.println("### Wake-up latency, enqueue to handler start (" + samples + " jobs, 10 ms apart, 8 threads, after " + LatencyBench.WARM_UP + " warm-up jobs)");
                out.println();
                out.println("| enqueued in | p50 ms | p95 ms | p99 ms |");
                out.println("|---|---|---|---|");
                for (LatencyBench.Result r : report.latency) {
                    out.printf(Locale.ROOT, "| %s | %.2f | %.2f | %.2f |%n", r.arm(), r.p50(), r.p95(), r.p99());
                }
                took(out, t);
            }
            if (only.contains("tail")) {
                long t = System.nanoTime();
                TailBench.Settings s = quick ? TailBench.Settings.quick() : TailBench.Settings.full();
                report.tail = TailBench.measure(db.dataSource(), db.jdbcUrl(), s);
                tail(out, report.tail, s, t);
            }
            if (only.contains("enqueue")) {
                long t = System.nanoTime();
                int single = quick ? 400 : 4_000;
                int batch = quick ? 5_000 : 50_000;
                report.enqueue = EnqueueBench.measure(db.dataSource(), single, batch, threads, quick ? 1 : 3);
                out.println("### Enqueue, enqueue-only client, jobs/s (median of " + (quick ? 1 : 3) + " rounds)");
                out.println();
                out.println("| how | jobs per run | jobs/s |");
                out.println("|---|---|---|");
                for (EnqueueBench.Result r : report.enqueue) {
                    out.printf(Locale.ROOT, "| %s | %,d | %,.0f |%n", r.arm(), r.jobs(), r.perSecond());
                }
                took(out, t);
            }
            if (only.contains("etiquette")) {
                long t = System.nanoTime();
                EtiquetteBench.Settings s = quick ? EtiquetteBench.Settings.quick(poll) : EtiquetteBench.Settings.full(poll);
                report.etiquette = EtiquetteBench.measure(db.dataSource(), db.jdbcUrl(), s);
                if (!report.etiquette.isEmpty()) {
                    etiquette(out, report.etiquette, s, t);
                }
                EtiquetteBench.FaultSettings fs = quick ? EtiquetteBench.FaultSettings.quick(poll)
                        : EtiquetteBench.FaultSettings.full(poll);
                if (!fs.arms().isEmpty()) {
                    long t3 = System.nanoTime();
                    report.etiquetteFaults = EtiquetteBench.measureFaults(db.dataSource(), db.jdbcUrl(), fs);
                    etiquetteFaults(out, report.etiquetteFaults, fs, t3);
                }
                if (!quick && !"false".equals(System.getProperty("bench.discovery.change"))) {
                    long t2 = System.nanoTime();
                    DiscoveryChangeBench.Settings ds = DiscoveryChangeBench.Settings.full(poll);
                    report.discoveryChange = DiscoveryChangeBench.measure(db.dataSource(), db.jdbcUrl(), ds);
                    discoveryChange(out, report.discoveryChange, ds, t2);
                }
            }
            if (only.contains("recovery")) {
                long t = System.nanoTime();
                RecoveryBench.Settings s = quick ? RecoveryBench.Settings.quick(poll) : RecoveryBench.Settings.full(poll);
                report.recovery = RecoveryBench.measure(db.dataSource(), s);
                recovery(out, report.recovery, s, t);
            }
            if (only.contains("console")) {
                long t = System.nanoTime();
                report.console = ConsoleBench.measure(db.dataSource(), quick, out);
                ConsoleBench.print(out, report.console);
                out.printf(Locale.ROOT, "(%.0f s)%n%n", (System.nanoTime() - t) / 1e9);
            }
            if (only.contains("fairness")) {
                long t = System.nanoTime();
                FairnessBench.Settings s = quick ? FairnessBench.Settings.quick(poll)
                        : FairnessBench.Settings.full(poll);
                report.fairness = FairnessBench.measure(db.dataSource(), s);
                FairnessBench.print(out, report.fairness, s);
                if (report.fairness.size() == 8) { // all arms (-Dlayover.bench.fairness.arms=0,4 runs some)
                    double[] few = FairnessBench.scale(db.dataSource(), 10, quick ? 5 : 200);
                    double[] many = FairnessBench.scale(db.dataSource(), quick ? 1000 : 10_000, quick ? 5 : 200);
                    FairnessBench.printScale(out, few, many);
                    fairnessGoals(out, report.fairness, many[2] / few[2]);
                }
                took(out, t);
            }
            if (only.contains("tokens")) {
                long t = System.nanoTime();
                TokenBench.Settings s = quick ? TokenBench.Settings.quick(poll) : TokenBench.Settings.full(poll);
                report.tokens = TokenBench.measure(db.dataSource(), s);
                tokens(out, report.tokens, s, t);
            }
            if (only.contains("inflight")) {
                long t = System.nanoTime();
                InflightBench.Settings s = quick ? InflightBench.Settings.quick() : InflightBench.Settings.full();
                List<String> notes = new ArrayList<>();
                report.inflight = InflightBench.measure(db.dataSource(), db.jdbcUrl(), s, notes);
                inflight(out, report.inflight, s, notes, t);
            }
            if (only.contains("batch")) {
                long t = System.nanoTime();
                BatchBench.Settings s = quick ? BatchBench.Settings.quick() : BatchBench.Settings.full();
                report.batch = BatchBench.measure(db.dataSource(), db.jdbcUrl(), s);
                batch(out, report.batch, s, t);
            }
            if (only.contains("backlog")) {
                long t = System.nanoTime();
                BacklogBench.Settings s = quick ? BacklogBench.Settings.quick() : BacklogBench.Settings.full();
                report.backlog = BacklogBench.measure(args, s);
                backlog(out, report.backlog, s, t);
            }
            if (only.contains("keys")) {
                long t = System.nanoTime();
                KeysBench.Settings s = quick ? KeysBench.Settings.quick() : KeysBench.Settings.full();
                report.keys = KeysBench.measure(args, s);
                keys(out, report.keys, s, t);
            }
            if (only.contains("observe")) {
                int jobs = quick ? 3_000 : 20_000;
                int rounds = quick ? 1 : 3;
                long t = System.nanoTime();
                report.observe = ObserveBench.measure(db.dataSource(), jobs, threads, rounds);
                observe(out, report.observe, jobs, threads, rounds, t);
            }
            if (only.contains("interactive")) {
                long t = System.nanoTime();
                InteractiveBench.Settings s = quick ? InteractiveBench.Settings.quick() : InteractiveBench.Settings.full();
                report.interactive = InteractiveBench.measure(db.dataSource(), db.jdbcUrl(), s);
                interactive(out, report.interactive, s, t);
            }
            if (only.contains("steps")) {
                long t = System.nanoTime();
                StepsBench.Settings s = quick ? StepsBench.Settings.quick() : StepsBench.Settings.full();
                report.steps = StepsBench.measure(db.jdbcUrl(), s);
                steps(out, report.steps, s, t);
            }
        }
        report.seconds = (System.nanoTime() - start) / 1e9;
        goals(out, report, quick);
        out.printf(Locale.ROOT, "%nwhole run: %.0f s; load average now: %s%n", report.seconds, loadAverage());
        out.flush();
        return report;
    }

    private static void header(PrintStream out, BenchDatabase db, boolean quick) {
        long memory = 0;
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            memory = os.getTotalMemorySize();
        }
        out.printf(Locale.ROOT, "## Layover benchmarks%s%n%n", quick ? " (--quick: a smoke test, figures not meaningful)" : "");
        out.printf(Locale.ROOT, "%s; %d cores, %.1f GiB memory, Java %s (%s); load average at start: %s%n%n",
                db.description, Runtime.getRuntime().availableProcessors(), memory / (1024.0 * 1024 * 1024),
                System.getProperty("java.version"), System.getProperty("java.vm.name"), loadAverage());
    }

    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (Exception e) {
            return String.format(Locale.ROOT, "%.2f", ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        }
    }

    private static void took(PrintStream out, long t) {
        out.printf(Locale.ROOT, "%n(%.0f s)%n%n", (System.nanoTime() - t) / 1e9);
    }

    private static void throughput(PrintStream out, List<ThroughputBench.Run> runs, int jobs, int threads, int rounds,
            long t) {
        out.println("### Throughput, no-op jobs (" + String.format(Locale.ROOT, "%,d", jobs) + " per run, " + threads
                + " threads, lock-and-fetch, rounds alternate after a discarded warm-up round)");
        out.println();
        out.println("| round | db-scheduler jobs/s | Layover jobs/s (default: adaptive prefetch, history on) | ratio "
                + "| Layover prefetch 2 (old default) | ratio | Layover, history off | ratio | Layover prefetch 4 | ratio |");
        out.println("|---|---|---|---|---|---|---|---|---|---|");
        double[] rDef = new double[rounds];
        double[] r2 = new double[rounds];
        double[] rOff = new double[rounds];
        double[] r4 = new double[rounds];
        double[] historyCost = new double[rounds];
        double[] gain = new double[rounds];
        int arms = ThroughputBench.ARMS;
        for (int r = 0; r < rounds; r++) {
            ThroughputBench.Run raw = runs.get(arms * r);
            ThroughputBench.Run def = runs.get(arms * r + 1);
            ThroughputBench.Run p2 = runs.get(arms * r + 2);
            ThroughputBench.Run off = runs.get(arms * r + 3);
            ThroughputBench.Run p4 = runs.get(arms * r + 4);
            rDef[r] = def.perSecond() / raw.perSecond();
            r2[r] = p2.perSecond() / raw.perSecond();
            rOff[r] = off.perSecond() / raw.perSecond();
            r4[r] = p4.perSecond() / raw.perSecond();
            historyCost[r] = 1 - def.perSecond() / off.perSecond();
            gain[r] = def.perSecond() / p2.perSecond();
            out.printf(Locale.ROOT, "| %d | %,.0f | %,.0f | %.2f× | %,.0f | %.2f× | %,.0f | %.2f× | %,.0f | %.2f× |%n", r + 1,
                    raw.perSecond(), def.perSecond(), rDef[r], p2.perSecond(), r2[r], off.perSecond(), rOff[r],
                    p4.perSecond(), r4[r]);
        }
        out.printf(Locale.ROOT, "%nmedian ratio Layover / db-scheduler: %.2f× (default, adaptive), %.2f× (prefetch 2, the old "
                + "default), %.2f× (history off), %.2f× (prefetch 4); default / prefetch 2: %.2f×; the history row costs "
                + "%.0f%% of throughput (median). db-scheduler: pollUsingLockAndFetch(0.5, %.1f).%n",
                EnqueueBench.median(rDef), EnqueueBench.median(r2), EnqueueBench.median(rOff), EnqueueBench.median(r4),
                EnqueueBench.median(gain), 100 * EnqueueBench.median(historyCost), ThroughputBench.RAW_PREFETCH);
        took(out, t);
    }

    private static void tail(PrintStream out, List<TailBench.Result> rs, TailBench.Settings s, long t) {
        out.printf(Locale.ROOT, "### Tail latency: %d calls of %.1f s arriving together at 2 worker JVMs × %d threads "
                + "(enqueueBatch from a third JVM; ideal: all done in %.1f s, p95 start %.1f s)%n%n", s.jobs(),
                s.callMillis() / 1000.0, s.threads(), s.idealSeconds(),
                s.jobs() > 2 * s.threads() ? s.callMillis() / 1000.0 : 0.0);
        out.println("| round | arm | burst | enqueue → all done s | start p50 ms | start p95 ms | start max ms "
                + "| calls on worker a / b | duplicates |");
        out.println("|---|---|---|---|---|---|---|---|---|");
        for (TailBench.Result r : rs) {
            out.printf(Locale.ROOT, "| %d | %s | %s | %.2f | %,.0f | %,.0f | %,.0f | %d / %d | %d |%n", r.round(), r.arm(),
                    r.burst(), r.allDoneSeconds(), r.p50StartMs(), r.p95StartMs(), r.maxStartMs(), r.onFirst(),
                    r.onSecond(), r.duplicates());
        }
        out.println();
        out.println("| arm | burst | all done s (median) | start p95 ms (median) | all done / prefetch 2's | p95 / prefetch 2's |");
        out.println("|---|---|---|---|---|---|");
        String base = TailBench.label("2");
        for (String burst : rs.stream().map(TailBench.Result::burst).distinct().toList()) {
            double baseDone = tailMedian(rs, base, burst, true);
            double baseP95 = tailMedian(rs, base, burst, false);
            for (String arm : rs.stream().map(TailBench.Result::arm).distinct().toList()) {
                double done = tailMedian(rs, arm, burst, true);
                double p95 = tailMedian(rs, arm, burst, false);
                out.printf(Locale.ROOT, "| %s | %s | %.2f | %,.0f | %.2f× | %.2f× |%n", arm, burst, done, p95,
                        done / baseDone, p95 / baseP95);
            }
        }
        took(out, t);
    }

    /** The median, over rounds, of one arm's bursts: all done (s) or the p95 start (ms). */
    static double tailMedian(List<TailBench.Result> rs, String arm, String burst, boolean allDone) {
        double[] v = rs.stream().filter(r -> r.arm().equals(arm) && r.burst().equals(burst))
                .mapToDouble(r -> allDone ? r.allDoneSeconds() : r.p95StartMs()).toArray();
        return v.length == 0 ? Double.NaN : EnqueueBench.median(v);
    }

    private static void etiquette(PrintStream out, List<EtiquetteBench.Result> results, EtiquetteBench.Settings s, long t) {
        out.printf(Locale.ROOT, "### Provider etiquette: R = %d requests/s, %d JVMs × %d worker threads, %,d jobs "
                + "(%d× what R allows in the run), window %s after a %s warm-up, Layover poll interval %s%n%n", s.rate(),
                s.jvms(), s.threads(), s.jobs(), s.overload(), RecoveryBench.seconds(s.window()),
                RecoveryBench.seconds(s.warmUp()), RecoveryBench.seconds(s.pollInterval()));
        if (results.stream().anyMatch(r -> r.arm().contains("stating nothing"))) {
            out.printf(Locale.ROOT, "Arms whose 429s state nothing (no limit, no headers, no retry-after; one JVM speaks "
                    + "Gemini, the other Bedrock): a %s warm-up (the discovered pace's slow start from 1 request/s), "
                    + "jobs for it at the same overload.%n%n", RecoveryBench.seconds(EtiquetteBench.warmUp(
                    EtiquetteBench.Arm.DISCOVER, s)));
        }
        out.println("| refused calls | arm | goodput / R | goodput / R, 2nd half | 429 share | 429 share, whole run "
                + "| attempts spent on rate limits | successes per thread, min–max (max/min) | job-row writes per success |");
        out.println("|---|---|---|---|---|---|---|---|---|");
        for (EtiquetteBench.Result r : results) {
            out.printf(Locale.ROOT, "| %s | %s | %.3f | %.3f | %.1f%% | %.1f%% | %,d | %d–%d (%s) | %s |%n",
                    r.refusedCounts() ? "count against the limit" : "cost nothing", r.arm(), r.goodput(),
                    r.goodputSecondHalf(), 100 * r.share429(), 100 * r.share429Run(), r.attemptsSpent(), r.minPerThread(),
                    r.maxPerThread(), Double.isInfinite(r.spread()) ? "∞" : String.format(Locale.ROOT, "%.1f×", r.spread()),
                    Double.isNaN(r.writesPerSuccess()) ? "–" : String.format(Locale.ROOT, "%.1f", r.writesPerSuccess()));
        }
        out.println();
        out.println("Goodput (successful calls/s over R) and 429 share: the fake provider's counters over the window; "
                + "2nd half: its last half (the steady state). Attempts spent: for Layover Σ attempts in layover.jobs "
                + "+ dead letters + runs started after a spent attempt; for per-call backoff, its retries after a 429. "
                + "Job-row writes: rows of layover.scheduled_tasks inserted/updated/deleted in the window "
                + "(pg_stat_user_tables: picks, reschedules, heartbeats, deletes) per successful call.");
        for (EtiquetteBench.Result r : results) {
            if (!r.note().isEmpty()) {
                out.println("note (" + r.arm() + "): " + r.note());
            }
        }
        took(out, t);
    }

    private static void etiquetteFaults(PrintStream out, List<EtiquetteBench.FaultResult> rs,
            EtiquetteBench.FaultSettings s, long t) {
        out.printf(Locale.ROOT, "### Goodput under provider faults (issue 50): R = %d requests/s, refused calls count, "
                + "Layover's bucket at R, %d JVMs × %d worker threads, window %s after a %s warm-up, poll interval %s, "
                + "seed %d%n%n", s.rate(), s.jvms(), s.threads(), RecoveryBench.seconds(s.window()),
                RecoveryBench.seconds(s.warmUp()), RecoveryBench.seconds(s.pollInterval()), s.seed());
        EtiquetteBench.FaultResult base = rs.stream().filter(r -> !r.outage() && r.percent() == 0).findFirst().orElse(null);
        out.println("| calls failing | goodput / R | vs 0 % arm | 429 share | time cooling (after an overload) | breaker not closed "
                + "| job-row writes per success | attempts spent | calls failed (503 / 500 / dropped; slow) | jobs parked |");
        out.println("|---|---|---|---|---|---|---|---|---|---|");
        for (EtiquetteBench.FaultResult r : rs) {
            if (r.outage()) {
                continue;
            }
            Faults.Counts f = r.faults();
            out.printf(Locale.ROOT, "| %s | %.3f | %s | %.1f%% | %.1f%% (%.1f%%) | %.1f%% | %s | %,d | %,d (%d / %d / %d; %d) "
                    + "| %,d |%n",
                    r.arm(), r.goodput(), base == null ? "–" : String.format(Locale.ROOT, "%.3f", r.goodput() / base.goodput()),
                    100 * r.share429(), 100 * r.cooling(), 100 * r.overloadCooling(), 100 * r.breakerOpen(),
                    Double.isNaN(r.writesPerSuccess()) ? "–" : String.format(Locale.ROOT, "%.2f", r.writesPerSuccess()),
                    r.attemptsSpent(), r.failedCalls(), f.unavailable(), f.serverError(), f.dropped(), f.slow(), r.parked());
        }
        out.println();
        out.println("Calls failing: the share of calls the fake's limit admitted that fail, mixed half 503, a quarter 500, "
                + "an eighth slow (2–8 s, answered), an eighth dropped (no answer). Goodput, 429 share and writes: the "
                + "window (fake's counters; rows of layover.scheduled_tasks written, pg_stat_user_tables). Time cooling, "
                + "breaker not closed: share of 250 ms samples of layover.cooldowns / layover.breakers in the window "
                + "(after an overload: cooldowns whose reason is overloaded, not a 429's). "
                + "Attempts spent: Σ attempts in layover.job_history + layover.jobs for the arm's key, whole run; calls "
                + "failed: the fake's whole run. Jobs parked: the key's dead letters.");
        for (String g : EtiquetteBench.faultGoals(rs)) {
            out.println("- " + g);
        }
        for (EtiquetteBench.FaultResult r : rs) {
            if (r.outage()) {
                out.printf(Locale.ROOT, "%nOutage arm: every call 503 for %s after %s of service (breaker open %s, the "
                        + "recovery bench's sweep): goodput / R %.3f before, %.3f in the %s after; breaker seen open %s "
                        + "after the outage began; the first second at >= 0.9 R %s after it ended; %,d jobs parked "
                        + "(dead letters at the end), %,d attempts spent, %,d calls failed; time cooling %.1f%% (after an "
                        + "overload %.1f%%), breaker not closed %.1f%% of the run.%n", RecoveryBench.seconds(s.outage()),
                        RecoveryBench.seconds(s.warmUp().plus(s.beforeOutage())),
                        RecoveryBench.seconds(RecoveryBench.Settings.full(s.pollInterval()).trialEvery()), r.goodputBefore(),
                        r.goodputAfter(), RecoveryBench.seconds(s.afterOutage()), seconds(r.breakerOpenedAfter()),
                        seconds(r.recoverySeconds()), r.parked(), r.attemptsSpent(), r.failedCalls(), 100 * r.cooling(),
                        100 * r.overloadCooling(), 100 * r.breakerOpen());
            }
        }
        for (EtiquetteBench.FaultResult r : rs) {
            if (!r.note().isEmpty()) {
                out.println("note (" + r.arm() + "): " + r.note());
            }
        }
        took(out, t);
    }

    private static String seconds(double s) {
        return Double.isNaN(s) ? "never" : String.format(Locale.ROOT, "%.1f s", s);
    }

    private static void discoveryChange(PrintStream out, DiscoveryChangeBench.Result r, DiscoveryChangeBench.Settings s,
            long t) {
        StringBuilder stages = new StringBuilder();
        for (DiscoveryChangeBench.Stage st : s.stages()) {
            stages.append(stages.length() == 0 ? "" : " → ").append(st.rate()).append("/s for ")
                    .append(RecoveryBench.seconds(st.duration()));
        }
        out.printf(Locale.ROOT, "### Discovered pace following a changing limit: 429s stating nothing (Gemini and Bedrock "
                + "shapes), refused calls count, R = %s, %d JVMs × %d worker threads, %,d jobs%n%n", stages, s.jvms(),
                s.threads(), s.jobs());
        out.println("| R | discovered rate within 10 % of R after | one second's goodput within 10 % of R after "
                + "| goodput / R, 2nd half | 429 share, 2nd half | 429 share, whole stage | discovered rate at the end |");
        out.println("|---|---|---|---|---|---|---|");
        for (DiscoveryChangeBench.StageResult st : r.stages()) {
            out.printf(Locale.ROOT, "| %d/s | %s | %s | %.3f | %.1f%% | %.1f%% | %.1f/s |%n", st.rate(),
                    Double.isNaN(st.rateWithin10()) ? "never" : String.format(Locale.ROOT, "%.1f s", st.rateWithin10()),
                    Double.isNaN(st.goodputWithin10()) ? "never" : String.format(Locale.ROOT, "%.1f s", st.goodputWithin10()),
                    st.goodputSecondHalf(), 100 * st.share429SecondHalf(), 100 * st.share429(), st.rateAtEnd());
        }
        out.println();
        out.printf(Locale.ROOT, "Times from the start of the run (first stage: slow start from 1 request/s) or from the change. "
                + "Attempts spent on rate limits: %d.%n", r.attemptsSpent());
        took(out, t);
    }

    private static void tokens(PrintStream out, List<TokenBench.Result> rs, TokenBench.Settings s, long t) {
        out.printf(Locale.ROOT, "### Token limits: T = %,d tokens/min, 2 instances x %d threads, %dx offered load, %d s window%n%n",
                s.tokensPerMinute(), s.threads(), s.offered(), s.window().toSeconds());
        out.println("| arm | useful tokens/min / T | calls answered 429 (run) | calls answered in window | attempts spent | input estimate error, median / p95 |");
        out.println("|---|---|---|---|---|---|");
        for (TokenBench.Result r : rs) {
            out.printf(Locale.ROOT, "| %s | %.3f | %.1f %% | %,d | %d | %s |%n", r.arm(), r.usefulPerT(), 100 * r.share429(),
                    r.calls(), r.attemptsSpent(), Double.isNaN(r.estimateMedian()) ? "–"
                            : String.format(Locale.ROOT, "%.1f %% / %.1f %%", 100 * r.estimateMedian(), 100 * r.estimateP95()));
        }
        out.println();
        TokenBench.Result a = rs.get(0);
        TokenBench.Result b = rs.get(1);
        out.printf(Locale.ROOT, "**ratio, token limit / request-only: useful tokens %.2f×, 429s %s**%n%n", a.usefulPerT()
                / Math.max(1e-9, b.usefulPerT()), b.share429() == 0 ? "0 / 0" : String.format(Locale.ROOT, "%.2f×",
                        a.share429() / b.share429()));
        TokenBench.Result learning = rs.get(rs.size() - 1);
        out.println("| goal (issue 18) | target | measured | met |");
        out.println("|---|---|---|---|");
        out.printf(Locale.ROOT, "| token limits configured | ≥ 0.95 T, ≤ 1 %% 429 | %.3f T, %.1f %% | %s |%n", a.usefulPerT(),
                100 * a.share429(), a.usefulPerT() >= 0.95 && a.share429() <= 0.01 ? "yes" : "**no**");
        out.printf(Locale.ROOT, "| learning from headers and 429s only | ≥ 0.85 T, ≤ 5 %% 429 | %.3f T, %.1f %% | %s |%n",
                learning.usefulPerT(), 100 * learning.share429(),
                learning.usefulPerT() >= 0.85 && learning.share429() <= 0.05 ? "yes" : "**no**");
        long spent = rs.stream().mapToLong(TokenBench.Result::attemptsSpent).sum();
        out.printf(Locale.ROOT, "| attempts spent (every arm; a 429 spends none) | 0 | %d | %s |%n", spent, spent == 0 ? "yes" : "**no**");
        took(out, t);
    }

    private static void inflight(PrintStream out, List<InflightBench.Result> rs, InflightBench.Settings s,
            List<String> notes, long t) {
        InflightBench.Result first = rs.get(0);
        out.println("### Slow calls in flight, one worker JVM");
        out.println();
        out.printf(Locale.ROOT, "%,d jobs, each one blocking HTTP call (HttpURLConnection) that the fake provider answers "
                + "after %s; one worker JVM, threads(%d), prefetch 1, %d connections, -Xmx%dm "
                + "-XX:NativeMemoryTracking=summary; worker Java %s (%s) in both arms; rounds alternate the arms' order%n%n",
                s.jobs(), RecoveryBench.seconds(s.callTime()), s.jobs(), s.pool(), s.heapMb(), first.java(), first.gc());
        out.println("| round | handlers on | wall time, enqueue → all done | calls in flight at the provider, max "
                + "| heap used, peak | live heap, all in flight | native memory outside the heap (NMT) | of it, Thread (NMT) "
                + "| OS threads (NMT) | RSS, all in flight | RSS, peak (VmHWM) | failed calls |");
        out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (InflightBench.Result r : rs) {
            out.printf(Locale.ROOT, "| %d | %s | %.2f s | %,d | %s | %s | %s | %s | %s | %s | %s | %d |%n", r.round(), r.arm(),
                    r.wallSeconds(), r.providerMaxInFlight(), mb(r.peakHeapBytes() / 1024), mb(r.liveHeapBytes() / 1024),
                    mb(r.nmtNonHeapKb()), mb(r.nmtThreadKb()), r.nmtThreads() < 0 ? "–" : String.format(Locale.ROOT, "%,d",
                            r.nmtThreads()), mb(r.rssKb()), mb(r.hwmKb()), r.failed());
        }
        out.println();
        List<double[]> pairs = new ArrayList<>();
        for (InflightBench.Result p : rs) {
            for (InflightBench.Result v : rs) {
                if (!p.virtual() && v.virtual() && p.round() == v.round()) {
                    pairs.add(new double[] {(double) p.nmtNonHeapKb() / v.nmtNonHeapKb(), (double) p.nmtThreadKb() / v.nmtThreadKb(),
                            (double) p.hwmKb() / v.hwmKb(), (double) v.liveHeapBytes() / p.liveHeapBytes(),
                            (double) v.peakHeapBytes() / p.peakHeapBytes(), v.wallSeconds() / p.wallSeconds()});
                }
            }
        }
        if (pairs.isEmpty()) {
            out.println("ratio: not measured (one arm only; see the note)");
        } else {
            double[] m = new double[6];
            for (int i = 0; i < 6; i++) {
                double[] col = new double[pairs.size()];
                for (int j = 0; j < pairs.size(); j++) {
                    col[j] = pairs.get(j)[i];
                }
                m[i] = EnqueueBench.median(col);
            }
            out.printf(Locale.ROOT, "**ratio, platform / virtual threads (median of %d rounds): native memory outside the heap "
                    + "%.1f×, of it Thread %.1f×, RSS peak %.1f×; heap, virtual / platform: live %.2f×, peak %.2f×; wall time, "
                    + "virtual / platform: %.3f×**%n", pairs.size(), m[0], m[1], m[2], m[3], m[4], m[5]);
        }
        for (String n : notes) {
            out.println();
            out.println("note: " + n);
        }
        took(out, t);
    }

    private static void backlog(PrintStream out, List<BacklogBench.Arm> arms, BacklogBench.Settings s, long t) {
        out.printf(Locale.ROOT, "### Deep backlog: jobs enqueued at once behind keys of 50 requests/s each%s, one worker of %d threads, "
                + "%d s per arm, each arm in its own database%n%n",
                s.hold() ? ", each backlog held at its size (as many jobs enqueued each second as ran)" : "", s.threads(),
                s.run().toSeconds());
        out.println("| arm | goodput | job-row writes per success | pick p50 / p99 | parked | job table | growth over the run |");
        out.println("|---|---|---|---|---|---|---|");
        arms.forEach(a -> out.println(a.row()));
        out.println();
        for (int k = 0; k < 2; k++) {
            BacklogBench.Arm small = arms.get(2 * k);
            BacklogBench.Arm deep = arms.get(2 * k + 1);
            out.printf(Locale.ROOT, "**%d key%s: deep / small goodput %.2f, writes per success %.2f×, pick p50 %.2f×, "
                    + "p99 %.2f×, growth of table + indexes %.2f× (their size %.1f×: the rows held)**%n%n", small.keys(),
                    small.keys() == 1 ? "" : "s",
                    deep.goodputShare() / small.goodputShare(), deep.writesPerSuccess() / small.writesPerSuccess(),
                    deep.pickP50Ms() / small.pickP50Ms(), deep.pickP99Ms() / small.pickP99Ms(), deep.growth() / small.growth(),
                    (double) (deep.tableBytes() + deep.indexBytes()) / (small.tableBytes() + small.indexBytes()));
        }
        took(out, t);
    }

    private static void keys(PrintStream out, List<KeysBench.Arm> arms, KeysBench.Settings s, long t) {
        out.printf(Locale.ROOT, "### Many provider keys: %,d due jobs over 1 and over %,d keys, each key with a bucket "
                + "(a pattern, far from binding) or a concurrency limit of %d, one worker of %d threads, no-op handler, "
                + "each arm in its own database%n%n", s.jobs(), s.manyKeys(), s.threads(), s.threads());
        out.println("| arm | jobs done | database time per admitted job | per job meeting its key (first pass) | idle just after "
                + "| idle after 70 s | heap after the run |");
        out.println("|---|---|---|---|---|---|---|");
        arms.forEach(a -> out.println(a.row()));
        out.println();
        for (int k = 0; k + 1 < arms.size(); k += 2) {
            out.printf(Locale.ROOT, "**%s: database time per job, %,d keys / 1 key: %.2f×**%n%n",
                    arms.get(k).limit().name().toLowerCase(Locale.ROOT), arms.get(k + 1).keys(), keysRatio(arms, k));
        }
        took(out, t);
    }

    private static void steps(PrintStream out, List<StepsBench.Arm> arms, StepsBench.Settings s, long t) {
        out.printf(Locale.ROOT, "### Steps (issue 45): %,d jobs of %d provider calls, fake provider at R = %d calls/s "
                + "(refused calls counting), %.0f %% of admitted calls answered 503, all enqueued at once; %d worker JVMs "
                + "x %d threads, calls of %d ms (%.1f R), the first JVM killed (kill -9) at %.0f %% of the ideal; heartbeat %d ms%n%n",
                s.jobs(), s.calls(), s.rate(), s.unavailable() * 100, s.jvms(), s.threads(), s.latency().toMillis(),
                s.oversubscribed(), s.killAt() * 100, s.heartbeat().toMillis());
        out.println("| arm | completed / parked / unfinished | successful calls per completed job (ideal " + s.calls()
                + ") | calls made again | tokens paid for discarded results (cut by the kill or the arm's stop) | 429s | 503s "
                + "| attempts spent: all / 503s / the kill's orphans / on rate limits | job-row writes per job "
                + "| step-row writes per job | wall time / ideal (" + Math.round(s.idealSeconds()) + " s) |");
        out.println("|---|---|---|---|---|---|---|---|---|---|---|");
        for (StepsBench.Arm a : arms) {
            double jobs = Math.max(1, a.completed());
            double all = Math.max(1, a.completed() + a.parked() + a.unfinished());
            out.printf(Locale.ROOT, "| %s | %d / %d / %d | %.2f | %d | %,d (%,d) | %d | %d | %d / %d / %d / %d | %.2f | %.2f "
                    + "| %.1f s = %.3f×%s |%n",
                    a.name(), a.completed(), a.parked(), a.unfinished(), a.successes() / jobs, a.repeated(),
                    a.tokensDiscarded(), a.tokensCutByKill(), a.refused(), a.unavailable(), a.attempts(), a.unavailable(),
                    a.orphans(), a.attemptsOnRateLimits(), a.jobRowWrites() / all, a.stepRowWrites() / all, a.seconds(),
                    a.seconds() / s.idealSeconds(), a.unfinished() > 0 ? " (stopped at its limit)" : "");
        }
        for (StepsBench.Arm a : arms) {
            out.printf(Locale.ROOT, "%n%s: killed at %.0f s holding %d jobs; %,d calls answered (%.1f s of the limit), the first "
                    + "%.2f s after the enqueue; limit unused %.1f s before the kill, %.1f s in the 60 s after, %.1f s after those",
                    a.name(), a.killedAt(), a.orphans(), a.calls(), a.calls() / (double) s.rate(), a.firstCall(),
                    a.unused()[0], a.unused()[1], a.unused()[2]);
            if (!a.parkedAs().isEmpty()) {
                out.printf(Locale.ROOT, "; parked: %s", a.parkedAs());
            }
        }
        out.println();
        out.printf(Locale.ROOT, "%n(%.0f s; load average now: %s)%n%n", (System.nanoTime() - t) / 1e9, loadAverage());
        out.flush();
    }

    private static void interactive(PrintStream out, List<InteractiveBench.Arm> arms, InteractiveBench.Settings s, long t) {
        out.printf(Locale.ROOT, "%n### Interactive first (issue 48): a key at R = %d requests/s (the provider's limit, refused "
                + "calls counting, and the bucket's), a background backlog of 5× R on 2 worker JVMs, interactive calls "
                + "arriving as a Poisson stream at %.0f/s for %d s from a third JVM; share %.2f, window 1 s%n%n",
                s.rate(), 0.2 * s.rate(), s.seconds(), s.share());
        out.println("| interactive calls | arrived | wait before the call, ms p50 / p95 / max | answered 429 | not admitted "
                + "in 2 s | background goodput /s | total goodput /s | provider 429s (all) | share taken back after |");
        out.println("|---|---|---|---|---|---|---|---|---|");
        arms.forEach(a -> out.println(a.row(s.rate())));
        out.printf(Locale.ROOT, "%n(%.0f s; load average now: %s)%n", (System.nanoTime() - t) / 1e9, loadAverage());
    }

    /** Each arm's median jobs per second over its rounds, and its ratio to the default arm's. */
    private static void observe(PrintStream out, List<ObserveBench.Run> runs, int jobs, int threads, int rounds, long t) {
        out.printf(Locale.ROOT, "%n### Observability: traces, MDC, token counts (%,d no-op jobs, %d threads, %d rounds, "
                + "arms in turn)%n%n| arm | jobs/s (median) | vs default | spans exported |%n|---|---|---|---|%n", jobs,
                threads, rounds);
        double base = observeMedian(runs, ObserveBench.DEFAULT);
        for (String arm : ObserveBench.ARMS) {
            double m = observeMedian(runs, arm);
            long spans = runs.stream().filter(r -> r.arm().equals(arm)).mapToLong(ObserveBench.Run::spans).max().orElse(0);
            out.printf(Locale.ROOT, "| %s | %,.0f | %.2f× | %,d |%n", arm, m, m / base, spans);
        }
        out.printf(Locale.ROOT, "%n(%.0f s)%n", (System.nanoTime() - t) / 1e9);
    }

    private static double observeMedian(List<ObserveBench.Run> runs, String arm) {
        double[] v = runs.stream().filter(r -> r.arm().equals(arm)).mapToDouble(ObserveBench.Run::perSecond).sorted()
                .toArray();
        return v.length == 0 ? 0 : v[v.length / 2];
    }

    private static double keysRatio(List<KeysBench.Arm> arms, int k) {
        return arms.get(k + 1).msPerJob() / arms.get(k).msPerJob();
    }

    private static void batch(PrintStream out, BatchBench.Result r, BatchBench.Settings s, long t) {
        BatchWorker.Timing tm = s.timing();
        out.printf(Locale.ROOT, "### Batch routing: %,d deferrable jobs (deadline 2 h) and %d urgent ones (deadline 2 min, "
                + "one every %d ms), one OpenAI key with batching, a worker JVM killed mid-submit%n%n", r.deferrable(),
                r.urgent(), s.urgentEvery().toMillis());
        out.println("| | value |");
        out.println("|---|---|");
        out.printf(Locale.ROOT, "| tokens by batch (input + output) / directly | %,d + %,d / %,d + %,d (%d direct calls) |%n",
                r.batchInputTokens(), r.batchOutputTokens(), r.directInputTokens(), r.directOutputTokens(), r.directCalls());
        out.printf(Locale.ROOT, "| **cost relative to all-direct** (batch × %.1f + direct) / all | **%.3f** |%n",
                BatchBench.DISCOUNT, r.relativeCost());
        out.printf(Locale.ROOT, "| urgent jobs done / within their deadline | %d / %d of %d |%n", r.urgentDone(),
                r.urgentInDeadline(), r.urgent());
        out.printf(Locale.ROOT, "| urgent enqueue → done, p50 / p95 / max | %,.0f / %,.0f / %,.0f ms |%n", r.urgentP50Ms(),
                r.urgentP95Ms(), r.urgentMaxMs());
        out.printf(Locale.ROOT, "| urgent jobs that spent an attempt (a run lost with the killed worker), the slowest of them "
                + "| %d, %s |%n", r.urgentRetried(), Double.isNaN(r.urgentRetriedMaxMs()) ? "–"
                : String.format(Locale.ROOT, "%,.0f ms", r.urgentRetriedMaxMs()));
        out.printf(Locale.ROOT, "| deferrable jobs done / by a batch line / called directly | %,d / %,d / %,d of %,d |%n",
                r.deferrableDone(), r.deferrableByBatch(), r.deferrableDirect(), r.deferrable());
        out.printf(Locale.ROOT, "| duplicates: job_history rows beyond one per job / lines charged more than once / jobs "
                + "batched and called directly / batch refs created twice | %d / %d / %d / %d |%n", r.historyDuplicates(),
                r.chargedMoreThanOnce(), r.batchedAndDirect(), r.providerRefsTwice());
        out.printf(Locale.ROOT, "| batches created at the provider / in layover.batch_status (submitted) / rejoined after "
                + "the kill | %d / %d (%d) / %d |%n", r.providerBatches(), r.layoverBatches(), r.submitted(), r.rejoined());
        out.printf(Locale.ROOT, "| dead letters | %d |%n", r.deadLetters());
        out.printf(Locale.ROOT, "| worker JVM killed at / **wall time**, first enqueue → every job gone | %.1f s / **%.1f s** |%n",
                r.killedAtSeconds(), r.wallSeconds());
        out.println();
        out.println("| batch | lines | gathered, s | sealed | submitted | submit attempts | lines stored, batch ended | its last job done |");
        out.println("|---|---|---|---|---|---|---|---|");
        for (BatchBench.BatchRow b : r.timeline()) {
            out.printf(Locale.ROOT, "| %d | %,d | %.1f–%.1f | %.1f | %.1f | %d | %.1f | %.1f |%n", b.id(), b.lines(),
                    b.firstGathered(), b.lastGathered(), b.sealed(), b.submitted(), b.submitAttempts(), b.finished(),
                    b.lastDone());
        }
        out.println();
        out.println("Times in seconds of database time from the first enqueue. Tokens: what the fake provider answered "
                + "(batch lines: FakeBatches; direct calls: its chat completions endpoint). Rejoined: a batch whose submit "
                + "was taken over after the kill (submit attempts ≥ 2) while the provider holds it once (no batch ref "
                + "created twice): found by its metadata.layover_ref, not submitted again.");
        out.println();
        out.printf(Locale.ROOT, "configured: maxGatherAge %s, pollInterval %s, lease %s, maxRequests %,d, the fake's "
                + "processing delay %s; %d threads per instance (the worker JVM, then the runner's), heartbeat 2 s × 4.%n",
                RecoveryBench.seconds(tm.gatherAge()), RecoveryBench.seconds(tm.poll()), RecoveryBench.seconds(tm.lease()),
                tm.maxRequests(), RecoveryBench.seconds(s.processing()), BatchBench.THREADS);
        took(out, t);
    }

    private static String mb(long kb) {
        return kb < 0 ? "–" : String.format(Locale.ROOT, "%.1f MB", kb / 1024.0);
    }

    private static void fairnessGoals(PrintStream out, List<FairnessBench.Arm> arms, double scaleRatio) {
        FairnessBench.Arm fair = arms.get(0);
        double worst = 0;
        for (FairnessBench.Tenant t : fair.tenants()) {
            worst = Math.max(worst, Math.abs(t.share() / Math.max(1e-9, t.idealShare()) - 1));
        }
        java.util.Map<String, FairnessBench.Tenant> ts = FairnessBench.tenants(fair);
        double small = ts.get("c").p95() / Math.max(1e-9, ts.get("c").idealP95());
        double late = ts.get("d").p95() / Math.max(1e-9, ts.get("d").idealP95());
        out.println("| goal (issue 19, the fair arm) | target | measured | met |");
        out.println("|---|---|---|---|");
        out.printf(Locale.ROOT, "| each tenant's share while active / its weighted fair share | within ±10 %% | worst %.1f %% off | %s |%n",
                100 * worst, worst <= 0.10 ? "yes" : "**no**");
        out.printf(Locale.ROOT, "| the small tenant's (c) p95 wait / ideal | ≤ 2× | %.2f× | %s |%n", small, small <= 2 ? "yes" : "**no**");
        out.printf(Locale.ROOT, "| the late tenant's (d) p95 wait / ideal | ≤ 2× | %.2f× | %s |%n", late, late <= 2 ? "yes" : "**no**");
        out.printf(Locale.ROOT, "| goodput | ≥ 0.95 R | %.3f R | %s |%n", fair.goodput(), fair.goodput() >= 0.95 ? "yes" : "**no**");
        out.printf(Locale.ROOT, "| Jain's fairness index over the tenants | ≥ 0.95 | %.3f | %s |%n", fair.jain(),
                fair.jain() >= 0.95 ? "yes" : "**no**");
        out.printf(Locale.ROOT, "| a pick's cost per admitted job, 10,000 fairness keys / 10 | ≤ 2× | %.2f× | %s |%n", scaleRatio,
                scaleRatio <= 2 ? "yes" : "**no**");
        for (FairnessBench.Arm a : arms) {
            if (!a.label().endsWith("fair share of tokens") && !a.label().endsWith("fair share of slots")) {
                continue;
            }
            double off = 0;
            for (FairnessBench.Tenant t : a.tenants()) {
                off = Math.max(off, Math.abs(t.share() / Math.max(1e-9, t.idealShare()) - 1));
            }
            String what = a.label().startsWith("token") ? "tokens" : "slots";
            out.printf(Locale.ROOT, "| %s: each tenant's share of the %s while active / its fair share | within ±10 %% | worst %.1f %% off | %s |%n",
                    a.label(), what, 100 * off, off <= 0.10 ? "yes" : "**no**");
            out.printf(Locale.ROOT, "| %s: Jain's index, goodput | ≥ 0.95, ≥ 0.95 | %.3f, %.3f | %s |%n", a.label(), a.jain(),
                    a.goodput(), a.jain() >= 0.95 && a.goodput() >= 0.95 ? "yes" : "**no**");
        }
        out.println();
    }

    private static void recovery(PrintStream out, RecoveryBench.Result r, RecoveryBench.Settings s, long t) {
        out.printf(Locale.ROOT, "### Recovery: %,d jobs parked by an outage, R = %d/s%n%n", r.jobs(), s.rate());
        out.println("| | value |");
        out.println("|---|---|");
        out.printf(Locale.ROOT, "| parked (breaker_open / provider_unavailable), time to park all | %,d / %,d, %.1f s |%n",
                r.parkedBreakerOpen(), r.parkedUnavailable(), r.parkSeconds());
        out.printf(Locale.ROOT, "| provider back → breaker closed (next trial) | %.1f s |%n", r.toClose());
        out.printf(Locale.ROOT, "| breaker closed → last job done (N / R = %.0f s) | %.1f s |%n", (double) r.jobs() / s.rate(),
                r.closeToDone());
        out.printf(Locale.ROOT, "| **provider back → all done** | **%.1f s** |%n", r.total());
        out.printf(Locale.ROOT, "| ideal (trial interval + N / R) | %.1f s |%n", r.ideal());
        out.printf(Locale.ROOT, "| **ratio to ideal** | **%.3f×** |%n", r.ratio());
        out.printf(Locale.ROOT, "| jobs done / successful calls at the provider | %,d / %,d |%n", r.distinctDone(),
                r.providerSuccesses());
        out.printf(Locale.ROOT, "| jobs answered more than once (duplicates) | %d |%n", r.duplicates());
        out.printf(Locale.ROOT, "| 429s during the recovery | %d |%n", r.rateLimited());
        out.printf(Locale.ROOT, "| dead letters in review at the end | %d |%n", r.inReview());
        out.printf(Locale.ROOT, "| sweep batches | %s |%n", summarize(r.batches()));
        out.println();
        out.println("configured: " + r.config() + ".");
        took(out, t);
    }

    private static String summarize(List<Long> batches) {
        if (batches.size() <= 10) {
            return batches.toString();
        }
        List<Long> head = new ArrayList<>(batches.subList(0, 8));
        return head.toString().replace("]", ", … (" + batches.size() + " batches, last " + batches.get(batches.size() - 1)
                + ")]");
    }

    private static void goals(PrintStream out, Report r, boolean quick) {
        out.println("### Goals of issue 11" + (quick ? " (--quick: not a measurement)" : ""));
        out.println();
        out.println("| goal | target | measured | met |");
        out.println("|---|---|---|---|");
        if (r.throughput != null) {
            int arms = ThroughputBench.ARMS;
            int rounds = r.throughput.size() / arms;
            double[] ratios = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                ratios[i] = r.throughput.get(arms * i + 1).perSecond() / r.throughput.get(arms * i).perSecond();
            }
            double m = EnqueueBench.median(ratios);
            row(out, "throughput, Layover / db-scheduler (issue 23 part 1: the defaults)", "≥ 3×",
                    String.format(Locale.ROOT, "%.2f× (median)", m), m >= 3);
        }
        if (r.tail != null) {
            String def = TailBench.label("adaptive");
            String base = TailBench.label("2");
            for (String burst : r.tail.stream().map(TailBench.Result::burst).distinct().toList()) {
                double done = tailMedian(r.tail, def, burst, true);
                double baseDone = tailMedian(r.tail, base, burst, true);
                double p95 = tailMedian(r.tail, def, burst, false);
                double baseP95 = tailMedian(r.tail, base, burst, false);
                row(out, "tail latency, 2 × " + "workers, multi-second calls, " + burst + ": the default no worse than prefetch 2",
                        "all done and p95 start ≤ prefetch 2's", String.format(Locale.ROOT,
                                "%.2f s vs %.2f s, p95 %,.0f ms vs %,.0f ms", done, baseDone, p95, baseP95),
                        done <= baseDone * 1.05 && p95 <= baseP95 * 1.05);
            }
            int dup = r.tail.stream().mapToInt(TailBench.Result::duplicates).sum();
            row(out, "tail latency, handler starts beyond one per job", "0", String.valueOf(dup), dup == 0);
        }
        if (r.latency != null) {
            LatencyBench.Result same = r.latency.get(0);
            LatencyBench.Result other = r.latency.get(1);
            row(out, "wake-up p50, same JVM", "< 3 ms", String.format(Locale.ROOT, "%.2f ms", same.p50()), same.p50() < 3);
            row(out, "wake-up p50, another JVM", "< 10 ms", String.format(Locale.ROOT, "%.2f ms", other.p50()),
                    other.p50() < 10);
        }
        if (r.etiquette != null) {
            for (EtiquetteBench.Result e : r.etiquette) {
                String mode = e.refusedCounts() ? " (refused calls count)" : " (refused calls free)";
                String fig = String.format(Locale.ROOT, "%.3f R, %.1f%% 429", e.goodput(), 100 * e.share429());
                if (e.arm().equals(EtiquetteBench.Arm.BUCKET.label)) {
                    row(out, "etiquette, bucket" + mode, "≥ 0.95 R, ≤ 1% 429", fig, e.goodput() >= 0.95 && e.share429() <= 0.01);
                } else if (e.arm().equals(EtiquetteBench.Arm.LEARN.label)) {
                    row(out, "etiquette, 429s only" + mode, "≥ 0.85 R, ≤ 5% 429", fig,
                            e.goodput() >= 0.85 && e.share429() <= 0.05);
                } else if (e.arm().equals(EtiquetteBench.Arm.DISCOVER.label)) {
                    row(out, "etiquette, 429s stating nothing, discovered pace" + mode, "≥ 0.85 R, ≤ 5% 429", fig,
                            e.goodput() >= 0.85 && e.share429() <= 0.05);
                }
            }
            long spent = r.etiquette.stream().filter(e -> !e.arm().startsWith("per-call"))
                    .mapToLong(EtiquetteBench.Result::attemptsSpent).sum();
            row(out, "etiquette, attempts spent on rate limits (Layover arms)", "0", String.valueOf(spent), spent == 0);
            double backoff = r.etiquette.stream().filter(e -> e.refusedCounts() && e.arm().equals(EtiquetteBench.Arm.BACKOFF.label))
                    .mapToDouble(EtiquetteBench.Result::goodput).findFirst().orElse(Double.NaN);
            for (EtiquetteBench.Result e : r.etiquette) {
                if (e.refusedCounts() && e.arm().equals(EtiquetteBench.Arm.DISCOVER.label)) {
                    double silent = r.etiquette.stream().filter(x -> x.refusedCounts()
                            && x.arm().equals(EtiquetteBench.Arm.BACKOFF_SILENT.label))
                            .mapToDouble(EtiquetteBench.Result::goodput).findFirst().orElse(Double.NaN);
                    row(out, "etiquette, 429s stating nothing, refused calls count: discovered pace ahead of per-call backoff",
                            "goodput >", String.format(Locale.ROOT, "%.3f R vs %.3f R (%.2f×)", e.goodput(), silent,
                                    e.goodput() / silent), e.goodput() > silent);
                    continue;
                }
                if (e.refusedCounts() && !e.arm().startsWith("per-call")) {
                    row(out, "etiquette, refused calls count: " + e.arm() + " ahead of per-call backoff", "goodput >",
                            String.format(Locale.ROOT, "%.3f R vs %.3f R", e.goodput(), backoff), e.goodput() > backoff);
                }
            }
        }
        if (r.recovery != null) {
            row(out, "recovery, provider back → all done", "≤ 1.2× ideal", String.format(Locale.ROOT, "%.1f s / %.1f s = %.3f×",
                    r.recovery.total(), r.recovery.ideal(), r.recovery.ratio()), r.recovery.ratio() <= 1.2);
            row(out, "recovery, duplicates", "0", String.valueOf(r.recovery.duplicates()), r.recovery.duplicates() == 0);
        }
        if (r.console != null) {
            Map.Entry<String, ConsoleBench.Timing> slowest = r.console.large().entrySet().stream()
                    .max(java.util.Comparator.comparingDouble(e -> e.getValue().p95())).orElseThrow();
            row(out, String.format(Locale.ROOT, "console, every API call p95 (%,d dead letters, %,d history rows)",
                    r.console.deadLetters(), r.console.history()), "< 50 ms",
                    String.format(Locale.ROOT, "%d of %d; slowest %s %.1f ms", r.console.met(), r.console.large().size(),
                            slowest.getKey(), slowest.getValue().p95()), r.console.met() == r.console.large().size());
        }
        if (r.batch != null) {
            BatchBench.Result b = r.batch;
            row(out, "batch routing (issue 24), cost relative to all-direct", "≤ 0.55",
                    String.format(Locale.ROOT, "%.3f", b.relativeCost()), b.relativeCost() <= 0.55);
            row(out, "batch routing, urgent jobs within their deadline", "all",
                    String.format(Locale.ROOT, "%d of %d, p95 %,.0f ms", b.urgentInDeadline(), b.urgent(), b.urgentP95Ms()),
                    b.urgentInDeadline() == b.urgent());
            row(out, "batch routing, every deferrable job done once", "all, 0 duplicates",
                    String.format(Locale.ROOT, "%,d of %,d, %d duplicates", b.deferrableDone(), b.deferrable(), b.duplicates()),
                    b.deferrableDone() == b.deferrable() && b.duplicates() == 0);
            row(out, "batch routing, the killed submit rejoined, each batch created once", "≥ 1 rejoined, created = submitted",
                    String.format(Locale.ROOT, "%d rejoined, %d created / %d submitted", b.rejoined(), b.providerBatches(),
                            b.submitted()), b.rejoined() >= 1 && b.providerBatches() == b.submitted());
        }
        if (r.keys != null) {
            for (int k = 0; k + 1 < r.keys.size(); k += 2) {
                double ratio = keysRatio(r.keys, k);
                row(out, String.format(Locale.ROOT, "many keys (issue 23 part 4), %s: database time per admitted job, %,d keys / 1",
                        r.keys.get(k).limit().name().toLowerCase(Locale.ROOT), r.keys.get(k + 1).keys()), "≤ 2×",
                        String.format(Locale.ROOT, "%.2f× (%.3f / %.3f ms)", ratio, r.keys.get(k + 1).msPerJob(),
                                r.keys.get(k).msPerJob()), ratio <= 2);
            }
        }
        if (r.interactive != null && !r.interactive.isEmpty()) {
            InteractiveBench.Arm h = r.interactive.get(0);
            int rate = (int) Math.round(InteractiveBench.Settings.full().rate());
            row(out, "interactive first (issue 48): interactive calls answered 429, through the handle", "0 %",
                    String.format(Locale.ROOT, "%d of %d", h.interactive429(), h.arrivals()), h.interactive429() == 0);
            row(out, "interactive first: p95 wait before the call", "≤ 2 permit intervals (40 ms at 50/s)",
                    String.format(Locale.ROOT, "%.1f ms", h.p95Ms()), h.p95Ms() <= 2000.0 / rate);
            row(out, "interactive first: total goodput", "≥ 0.95 R",
                    String.format(Locale.ROOT, "%.1f/s (%.2f R)", h.totalPerSecond(), h.totalPerSecond() / rate),
                    h.totalPerSecond() >= 0.95 * rate);
            row(out, "interactive first: background takes the share back after the stream stops", "≤ 1 s",
                    h.takeBackSeconds() < 0 ? "not seen" : String.format(Locale.ROOT, "%.2f s", h.takeBackSeconds()),
                    h.takeBackSeconds() >= 0 && h.takeBackSeconds() <= 1);
        }
        if (r.enqueue != null) {
            StringBuilder b = new StringBuilder();
            for (EnqueueBench.Result e : r.enqueue) {
                b.append(b.length() == 0 ? "" : "; ").append(e.arm()).append(String.format(Locale.ROOT, " %,.0f/s", e.perSecond()));
            }
            row(out, "enqueue, single and batch", "(figures only)", b.toString(), null);
        }
    }

    private static void row(PrintStream out, String goal, String target, String measured, Boolean met) {
        out.printf("| %s | %s | %s | %s |%n", goal, target, measured, met == null ? "–" : met ? "yes" : "**no**");
    }
}
