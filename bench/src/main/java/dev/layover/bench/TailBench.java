package dev.layover.bench;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.JvmProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import javax.sql.DataSource;

/**
 * Tail latency of multi-second calls (issue 23 part 1): what picking ahead costs when calls take
 * seconds. Two worker JVMs ({@link TailWorker}) of {@code threads} threads each; {@code jobs} calls
 * of {@code callMillis} each enqueued at once (one {@code enqueueBatch} from this JVM, an
 * enqueue-only client: both workers woken by {@code NOTIFY}). Per arm (the prefetch under test)
 * the same two JVMs run two bursts: first fresh (nothing observed yet), then after 500 no-op jobs
 * (a worker whose last jobs were short: the adaptive prefetch's worst case, it picks many rows
 * per pick until the first call ends). Measured: enqueue → every job's row gone (the batched
 * delete included), enqueue → handler start (p50, p95, max), the calls each worker ran, and handler
 * starts beyond one per job (duplicates: must be 0). Ideal with 2 × threads threads: {@code
 * ceil(jobs / (2 × threads))} call durations, and a p95 start of one call duration when more calls
 * than threads arrive.
 */
public final class TailBench {

    /** What a run is made of. */
    public record Settings(int jobs, long callMillis, int threads, int rounds, List<String> prefetches) {
        static Settings full() {
            return new Settings(30, 3_000, 10, 2, List.of("2", "adaptive", "6"));
        }

        static Settings quick() {
            return new Settings(6, 300, 2, 1, List.of("2", "adaptive"));
        }

        /** @return the ideal enqueue → all done */
        double idealSeconds() {
            return Math.ceil(jobs / (2.0 * threads)) * callMillis / 1000.0;
        }
    }

    /** One burst. */
    public record Result(int round, String arm, String burst, double allDoneSeconds, double p50StartMs,
            double p95StartMs, double maxStartMs, int onFirst, int onSecond, int duplicates) {}

    private TailBench() {}

    /** @return an arm's label for the prefetch argument of {@link TailWorker} */
    static String label(String prefetch) {
        return switch (prefetch) {
            case "adaptive" -> "default (adaptive)";
            case "2" -> "prefetch 2 (the old default)";
            default -> "prefetch " + prefetch + " (fixed)";
        };
    }

    /**
     * @param ds the database (Layover's schema migrated)
     * @param jdbcUrl its URL, for the worker JVMs
     * @param s the settings
     * @return every burst, in order
     * @throws Exception on failure
     */
    public static List<Result> measure(DataSource ds, String jdbcUrl, Settings s) throws Exception {
        ThroughputBench.exec(ds, "create schema if not exists bench_tail; create table if not exists bench_tail.runs ("
                + "job int not null, worker text not null, enqueued_us bigint not null, started_us bigint not null, "
                + "ended_us bigint)");
        JobType<TailWorker.Call> call = TailWorker.call(null, "client");
        JobType<TailWorker.NoOp> noop = TailWorker.noop();
        Layover client = Layover.builder(ds).register(call).register(noop).migrate(false).build();
        List<Result> out = new ArrayList<>();
        for (int round = 1; round <= s.rounds(); round++) {
            List<String> arms = new ArrayList<>(s.prefetches());
            Collections.rotate(arms, -(round - 1)); // each round starts with another arm
            for (String prefetch : arms) {
                ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name like 'tail-%'");
                Path stop = Files.createTempFile("layover-tail-", ".stop");
                Files.delete(stop);
                List<JvmProcess> workers = new ArrayList<>();
                try {
                    for (String w : List.of("tail-a", "tail-b")) {
                        workers.add(JvmProcess.start(TailWorker.class, w, jdbcUrl, w, String.valueOf(s.threads()),
                                prefetch, stop.toString()));
                    }
                    for (JvmProcess w : workers) {
                        w.awaitOutput("ready", Duration.ofSeconds(120));
                    }
                    out.add(burst(ds, client, call, s, round, prefetch, "fresh workers"));
                    List<TailWorker.NoOp> noops = new ArrayList<>();
                    for (int i = 0; i < 500; i++) {
                        noops.add(new TailWorker.NoOp(i));
                    }
                    client.enqueueBatch(noop, noops);
                    waitGone(ds, TailWorker.NOOP, Duration.ofSeconds(60));
                    out.add(burst(ds, client, call, s, round, prefetch, "after 500 no-op jobs"));
                } finally {
                    Files.createFile(stop);
                    for (JvmProcess w : workers) {
                        try {
                            w.waitFor(Duration.ofSeconds(30));
                        } finally {
                            w.close(); // kills it if it still runs
                        }
                    }
                    Files.deleteIfExists(stop);
                }
            }
        }
        return out;
    }

    private static Result burst(DataSource ds, Layover client, JobType<TailWorker.Call> call, Settings s, int round,
            String prefetch, String burst) throws Exception {
        ThroughputBench.exec(ds, "truncate bench_tail.runs");
        long enqueued = LatencyBench.micros(Instant.now());
        List<TailWorker.Call> calls = new ArrayList<>();
        for (int i = 0; i < s.jobs(); i++) {
            calls.add(new TailWorker.Call(i, enqueued, s.callMillis()));
        }
        long t0 = System.nanoTime();
        client.enqueueBatch(call, calls);
        waitGone(ds, TailWorker.CALL, Duration.ofSeconds(30 + 4 * s.jobs() * s.callMillis() / 1000));
        double allDone = (System.nanoTime() - t0) / 1e9;
        List<Long> starts = new ArrayList<>();
        int onFirst = 0;
        int onSecond = 0;
        int duplicates;
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            try (ResultSet rs = st.executeQuery("select started_us - enqueued_us, worker from bench_tail.runs")) {
                while (rs.next()) {
                    starts.add(rs.getLong(1));
                    if (rs.getString(2).equals("tail-a")) {
                        onFirst++;
                    } else {
                        onSecond++;
                    }
                }
            }
            try (ResultSet rs = st.executeQuery("select count(*) - count(distinct job) from bench_tail.runs")) {
                rs.next();
                duplicates = rs.getInt(1);
            }
        }
        Collections.sort(starts);
        return new Result(round, label(prefetch), burst, allDone, pct(starts, 0.5), pct(starts, 0.95),
                starts.isEmpty() ? Double.NaN : starts.get(starts.size() - 1) / 1000.0, onFirst, onSecond, duplicates);
    }

    private static double pct(List<Long> sorted, double p) {
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        return sorted.get((int) Math.min(sorted.size() - 1, Math.round(p * (sorted.size() - 1)))) / 1000.0;
    }

    private static void waitGone(DataSource ds, String type, Duration timeout) throws Exception {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < end) {
            try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("select exists (select 1 from layover.scheduled_tasks where task_name = '"
                            + type + "')")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return;
                }
            }
            Thread.sleep(10);
        }
        throw new IllegalStateException(type + " jobs still in the table after " + timeout);
    }
}
