package dev.layover.bench;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;

/**
 * Enqueue speed of an enqueue-only client (nothing runs the jobs): {@code enqueue} in a loop on one
 * thread, the same on {@code threads} threads, and {@code enqueueBatch} (5,000 rows per
 * {@code INSERT}). Each run starts from an empty table; rounds alternate.
 */
public final class EnqueueBench {

    /** Args of an enqueued job: a little text, as a real job would carry. */
    public record Doc(int n, String text) {}

    /**
     * @param arm what was measured
     * @param jobs jobs enqueued
     * @param perSecond median jobs per second over the rounds
     */
    public record Result(String arm, int jobs, double perSecond) {}

    private EnqueueBench() {}

    /**
     * @param ds the database (migrated), with a pool of at least {@code threads} connections
     * @param single jobs per single-enqueue run
     * @param batch jobs per batch run
     * @param threads threads of the concurrent single-enqueue run
     * @param rounds rounds (the median is reported)
     * @return single on one thread, single on {@code threads} threads, batch
     * @throws Exception on failure
     */
    public static List<Result> measure(DataSource ds, int single, int batch, int threads, int rounds) throws Exception {
        JobType<Doc> type = JobType.of("enqueue-bench", Doc.class, (a, c) -> Outcome.done());
        Layover client = Layover.builder(ds).register(type).migrate(false).build();
        String text = "Translate this paragraph into French, keeping the markup: <p>Hello, world.</p>";
        double[][] rates = new double[3][rounds];
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int r = 0; r < rounds; r++) {
                clear(ds);
                long t0 = System.nanoTime();
                for (int i = 0; i < single; i++) {
                    client.enqueue(type, new Doc(i, text));
                }
                rates[0][r] = single / ((System.nanoTime() - t0) / 1e9);

                clear(ds);
                int each = single / threads;
                List<Future<?>> fs = new ArrayList<>();
                t0 = System.nanoTime();
                for (int t = 0; t < threads; t++) {
                    int base = t * each;
                    fs.add(pool.submit(() -> {
                        for (int i = 0; i < each; i++) {
                            client.enqueue(type, new Doc(base + i, text));
                        }
                    }));
                }
                for (Future<?> f : fs) {
                    f.get();
                }
                rates[1][r] = each * threads / ((System.nanoTime() - t0) / 1e9);

                clear(ds);
                List<Doc> docs = new ArrayList<>(batch);
                for (int i = 0; i < batch; i++) {
                    docs.add(new Doc(i, text));
                }
                t0 = System.nanoTime();
                client.enqueueBatch(type, docs);
                rates[2][r] = batch / ((System.nanoTime() - t0) / 1e9);
            }
        } finally {
            pool.shutdownNow();
            clear(ds);
        }
        return List.of(
                new Result("enqueue, 1 thread", single, median(rates[0])),
                new Result("enqueue, " + threads + " threads", single / threads * threads, median(rates[1])),
                new Result("enqueueBatch, 1 thread", batch, median(rates[2])));
    }

    private static void clear(DataSource ds) throws Exception {
        ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name = 'enqueue-bench'");
    }

    static double median(double[] values) {
        double[] v = values.clone();
        java.util.Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
