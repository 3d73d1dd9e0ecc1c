package dev.layover.bench;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * Wake-up latency, enqueue to handler start: a job enqueued in the worker's own JVM (woken
 * directly), and one enqueued by another JVM (woken by {@code NOTIFY}). Jobs are enqueued one at
 * a time, 10 ms apart, so each measures an idle worker's reaction, not a queue.
 */
public final class LatencyBench {

    /** Args: when the enqueue began, in microseconds since the epoch. */
    public record Stamp(long enqueuedMicros) {}

    /** Percentiles in milliseconds. */
    public record Result(String arm, int samples, double p50, double p95, double p99) {}

    /**
     * Jobs run and discarded before the measured ones (2 s): the JIT compiles the enqueue and pick
     * paths, so the figures are a running worker's, not a cold start's.
     */
    static final int WARM_UP = 200;

    private LatencyBench() {}

    static JobType<Stamp> type(ConcurrentLinkedQueue<Long> latencies, CountDownLatch done) {
        return JobType.of("latency", Stamp.class, (a, c) -> {
            latencies.add(micros(Instant.now()) - a.enqueuedMicros());
            done.countDown();
            return Outcome.done();
        });
    }

    /**
     * @param ds the database
     * @param jdbcUrl its URL, for the other JVM
     * @param n jobs per arm
     * @return same-JVM and other-JVM results
     * @throws Exception on failure
     */
    public static List<Result> measure(DataSource ds, String jdbcUrl, int n) throws Exception {
        List<Result> out = new ArrayList<>();
        ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(n + WARM_UP);
        JobType<Stamp> type = type(latencies, done);
        try (Layover worker = Layover.builder(ds).register(type).threads(8).start()) {
            for (int i = 0; i < WARM_UP; i++) {
                worker.enqueue(type, new Stamp(micros(Instant.now())));
                Thread.sleep(10);
            }
            Thread.sleep(500);
            latencies.clear();
            for (int i = 0; i < n; i++) {
                worker.enqueue(type, new Stamp(micros(Instant.now())));
                Thread.sleep(10);
            }
            done.await(60, TimeUnit.SECONDS);
            out.add(result("same JVM", latencies));

            latencies.clear();
            CountDownLatch remote = new CountDownLatch(n + WARM_UP);
            JobType<Stamp> remoteType = type(latencies, remote);
            try (Layover worker2 = Layover.builder(ds).register(remoteType).threads(8).start()) {
                worker.stop();
                try (JvmProcess child = JvmProcess.start(RemoteEnqueuer.class, "latency-enqueuer", jdbcUrl,
                        String.valueOf(n + WARM_UP))) {
                    remote.await(120, TimeUnit.SECONDS);
                    child.waitFor(Duration.ofSeconds(30));
                }
                List<Long> all = new ArrayList<>(latencies);
                out.add(result("another JVM (NOTIFY)", all.subList(Math.min(WARM_UP, all.size()), all.size())));
            }
        }
        return out;
    }

    private static Result result(String arm, java.util.Collection<Long> micros) {
        List<Long> sorted = new ArrayList<>(micros);
        Collections.sort(sorted);
        return new Result(arm, sorted.size(), pct(sorted, 0.50), pct(sorted, 0.95), pct(sorted, 0.99));
    }

    private static double pct(List<Long> sorted, double p) {
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        int i = (int) Math.min(sorted.size() - 1, Math.round(p * (sorted.size() - 1)));
        return sorted.get(i) / 1000.0;
    }

    static long micros(Instant t) {
        return ChronoUnit.MICROS.between(Instant.EPOCH, t);
    }

    /** The other JVM: an enqueue-only Layover client. Args: JDBC URL, number of jobs. */
    public static final class RemoteEnqueuer {
        private RemoteEnqueuer() {}

        /**
         * @param args JDBC URL, number of jobs
         * @throws Exception on failure
         */
        public static void main(String[] args) throws Exception {
            JvmProcess.exitWhenParentDies();
            int n = Integer.parseInt(args[1]);
            try (var pool = new com.zaxxer.hikari.HikariDataSource()) {
                pool.setJdbcUrl(args[0]);
                pool.setMaximumPoolSize(2);
                JobType<Stamp> type = JobType.of("latency", Stamp.class, (a, c) -> null);
                Layover client = Layover.builder(pool).register(type).migrate(false).build();
                for (int i = 0; i < n; i++) {
                    client.enqueue(type, new Stamp(micros(Instant.now())));
                    Thread.sleep(10);
                }
            }
        }
    }
}
