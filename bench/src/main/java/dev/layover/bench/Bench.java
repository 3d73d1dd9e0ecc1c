package dev.layover.bench;

import java.util.List;
import java.util.Locale;

/**
 * The benchmark runner: every comparison measured in the same run, printed as a markdown table.
 *
 * <p>Usage: {@code mvn -q -pl bench -am -DskipTests package exec:java -Dexec.args="[--quick] [--jdbc-url URL]"}.
 * {@code --quick} runs small sizes (a smoke test, no figure worth quoting).
 */
public final class Bench {

    private Bench() {}

    /**
     * @param args {@code --quick}, {@code --jdbc-url URL}
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        boolean quick = List.of(args).contains("--quick");
        int jobs = quick ? 5_000 : 100_000;
        int rounds = quick ? 1 : 3;
        int threads = 16;
        try (BenchDatabase db = BenchDatabase.open(args, threads + 8)) {
            System.out.printf("Layover benchmarks on %s, %d cores, Java %s%n%n", db.description,
                    Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));
            List<ThroughputBench.Run> runs = ThroughputBench.measure(db.dataSource(), jobs, threads, rounds);
            System.out.println("### Throughput, no-op jobs (" + jobs + " per run, " + threads + " threads, lock-and-fetch)");
            System.out.println();
            System.out.println("| round | db-scheduler jobs/s | Layover jobs/s | ratio |");
            System.out.println("|---|---|---|---|");
            double[] ratios = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ThroughputBench.Run raw = runs.get(2 * r);
                ThroughputBench.Run lay = runs.get(2 * r + 1);
                ratios[r] = lay.perSecond() / raw.perSecond();
                System.out.printf(Locale.ROOT, "| %d | %,.0f | %,.0f | %.2f× |%n", r + 1, raw.perSecond(), lay.perSecond(), ratios[r]);
            }
            java.util.Arrays.sort(ratios);
            System.out.printf(Locale.ROOT, "%nmedian ratio Layover / db-scheduler: %.2f×%n", ratios[rounds / 2]);
        }
        System.exit(0);
    }
}
