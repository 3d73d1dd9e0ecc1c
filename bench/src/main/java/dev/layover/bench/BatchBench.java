package dev.layover.bench;

import com.openai.client.OpenAIClient;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeBatches;
import dev.layover.testing.provider.FakeProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * Batch routing (issue 24): deferrable jobs by the provider's batch tier at half price while
 * urgent ones are called directly, with one worker JVM killed mid-submit.
 *
 * <p>The fake provider's batches complete after a processing delay. A worker JVM
 * ({@link BatchWorker}, 4 threads, 8 connections) starts; the runner enqueues {@code deferrable}
 * jobs at once (one {@code enqueueBatch}, deadline 2 h: gathered into batches) and {@code urgent}
 * ones one at a time, {@code urgentEvery} apart (deadline 2 min: called directly, the handler
 * calling the fake's chat completions endpoint with the OpenAI SDK). The fake holds the reply of
 * the first batch create ({@link FakeBatches#holdCreate()}); while it holds it, the runner starts
 * its own instance (4 threads, its own pool of 10) and kills the worker JVM (SIGKILL). The
 * runner's instance takes the batch over when the dead worker's lease ends, asks the provider
 * first and rejoins it instead of submitting it again.
 *
 * <p>Measured, from what the fake counted and the tables: the cost relative to calling every job
 * directly, {@code (batch tokens × 0.5 + direct tokens) / (batch + direct tokens)}; the urgent jobs
 * done within their deadline, and p50/p95 of enqueue → done ({@code layover.job_history});
 * duplicates (history rows beyond one per job, lines the provider charged more than once, jobs both
 * batched and called directly); batches created at the provider against those in
 * {@code layover.batch_status}, and those rejoined; wall time from the first enqueue to the last
 * job gone.
 */
public final class BatchBench {

    /** The urgent jobs' deadline. */
    static final Duration URGENT_DEADLINE = Duration.ofMinutes(2);
    /** The deferrable jobs' deadline. */
    static final Duration DEFERRABLE_DEADLINE = Duration.ofHours(2);
    /** The provider's batch discount the cost figure uses. */
    static final double DISCOUNT = 0.5;
    /** Connections of the runner's instance. */
    static final int POOL = 10;
    /** Worker threads per instance. */
    static final int THREADS = 4;

    /** What a run is made of. */
    public record Settings(int deferrable, int urgent, Duration urgentEvery, Duration processing,
            BatchWorker.Timing timing) {
        static Settings full() {
            return new Settings(10_000, 200, Duration.ofMillis(150), Duration.ofSeconds(10),
                    new BatchWorker.Timing(Duration.ofSeconds(3), Duration.ofSeconds(1), Duration.ofSeconds(5), 2_500));
        }

        static Settings quick() {
            return new Settings(300, 20, Duration.ofMillis(50), Duration.ofMillis(500),
                    new BatchWorker.Timing(Duration.ofMillis(500), Duration.ofMillis(200), Duration.ofSeconds(2), 100));
        }
    }

    /**
     * The figures of a run.
     *
     * @param deferrable deferrable jobs enqueued
     * @param urgent urgent jobs enqueued
     * @param batchInputTokens input tokens of the batch lines the fake answered
     * @param batchOutputTokens their output tokens
     * @param directInputTokens input tokens of the direct calls the fake answered
     * @param directOutputTokens their output tokens
     * @param directCalls direct calls the fake answered
     * @param urgentDone urgent jobs completed
     * @param urgentInDeadline of them, within their deadline
     * @param urgentP50Ms p50 enqueue → done of the urgent jobs
     * @param urgentP95Ms p95
     * @param urgentMaxMs the slowest
     * @param urgentRetried urgent jobs that spent an attempt (a run lost with the killed worker)
     * @param urgentRetriedMaxMs the slowest of those (NaN when none)
     * @param deferrableDone deferrable jobs completed
     * @param deferrableByBatch of them, by a batch line
     * @param deferrableDirect deferrable jobs called directly
     * @param historyDuplicates history rows beyond one per job
     * @param chargedMoreThanOnce lines the fake charged more than once
     * @param batchedAndDirect jobs both gathered into a batch and called directly
     * @param providerBatches batches created at the provider
     * @param providerRefsTwice Layover batch references created more than once at the provider
     * @param layoverBatches rows of {@code layover.batch_status}
     * @param submitted of them, submitted (with a provider id)
     * @param rejoined of them, taken over after a lost submit and rejoined (submit attempts ≥ 2)
     * @param deadLetters dead letters at the end
     * @param killedAtSeconds when the worker JVM was killed, from the first enqueue
     * @param wallSeconds first enqueue → every job gone
     * @param timeline each batch, oldest first
     */
    public record Result(int deferrable, int urgent, long batchInputTokens, long batchOutputTokens, long directInputTokens,
            long directOutputTokens, int directCalls, long urgentDone, long urgentInDeadline, double urgentP50Ms,
            double urgentP95Ms, double urgentMaxMs, long urgentRetried, double urgentRetriedMaxMs, long deferrableDone, long deferrableByBatch, long deferrableDirect,
            long historyDuplicates, int chargedMoreThanOnce, long batchedAndDirect, int providerBatches,
            long providerRefsTwice, long layoverBatches, long submitted, long rejoined, long deadLetters,
            double killedAtSeconds, double wallSeconds, List<BatchRow> timeline) {

        /** @return every token the fake answered, batch and direct */
        public long allTokens() {
            return batchInputTokens + batchOutputTokens + directInputTokens + directOutputTokens;
        }

        /** @return the cost relative to calling every job directly */
        public double relativeCost() {
            long batch = batchInputTokens + batchOutputTokens;
            long direct = directInputTokens + directOutputTokens;
            return (batch * DISCOUNT + direct) / (double) allTokens();
        }

        /** @return the sum of the duplicate counters (history, charges, batched and direct) */
        public long duplicates() {
            return historyDuplicates + chargedMoreThanOnce + batchedAndDirect + providerRefsTwice;
        }
    }

    /**
     * One batch's timeline, in seconds of database time from the first enqueue.
     *
     * @param id its id
     * @param lines its lines
     * @param firstGathered its first item gathered
     * @param lastGathered its last item gathered
     * @param sealed sealed
     * @param submitted its provider id recorded (by a submit or a rejoin)
     * @param submitAttempts submit attempts (2: taken over after the kill)
     * @param finished its lines collected and the batch ended
     * @param lastDone its last job's history row written
     */
    public record BatchRow(long id, int lines, double firstGathered, double lastGathered, double sealed, double submitted,
            int submitAttempts, double finished, double lastDone) {}

    private BatchBench() {}

    /**
     * @param ds the database (Layover's schema migrated), for the readings
     * @param jdbcUrl its URL, for the worker JVM and the runner's instance's own pool
     * @param s the settings
     * @return the figures
     * @throws Exception on failure
     */
    public static Result measure(DataSource ds, String jdbcUrl, Settings s) throws Exception {
        ThroughputBench.exec(ds, "create schema if not exists bench_batch; create table if not exists bench_batch.direct ("
                + "job_id text not null, worker text not null, at timestamptz not null default clock_timestamp())");
        ThroughputBench.exec(ds, "truncate bench_batch.direct; delete from layover.scheduled_tasks where task_name = '"
                + BatchWorker.TYPE + "'; delete from layover.job_history where job_type = '" + BatchWorker.TYPE
                + "'; delete from layover.batches");
        Path stop = Files.createTempFile("layover-batch-", ".stop");
        Files.delete(stop);
        FakeProvider fake = FakeProvider.start();
        FakeBatches fb = fake.batches().processingDelay(s.processing()).holdCreate();
        OpenAIClient client = BatchWorker.client(fake.baseUri());
        AtomicReference<Exception> enqueueFailure = new AtomicReference<>();
        Thread trickle = null;
        try (HikariDataSource pool = BatchWorker.pool(jdbcUrl, "batch-bench", POOL);
                JvmProcess worker = JvmProcess.start(BatchWorker.class, "batch-a",
                        args(jdbcUrl, fake, "batch-a", stop, s).toArray(String[]::new))) {
            JobType<BatchWorker.Doc> type = BatchWorker.docType(pool, client, "batch-bench");
            Layover own = BatchWorker.instance(pool, type, client, "batch-bench", THREADS, s.timing());
            try {
                worker.awaitOutput("ready", Duration.ofSeconds(120));
                long t0 = System.nanoTime();
                trickle = new Thread(() -> {
                    try {
                        for (int i = 0; i < s.urgent(); i++) {
                            own.enqueue(type, new BatchWorker.Doc("u" + i, "urgent note " + i + " " + text(i)),
                                    EnqueueOptions.key("u" + i).withDeadline(URGENT_DEADLINE));
                            Thread.sleep(s.urgentEvery().toMillis());
                        }
                    } catch (Exception e) {
                        enqueueFailure.set(e);
                    }
                }, "batch-bench-urgent");
                trickle.start();
                List<BatchWorker.Doc> docs = new ArrayList<>();
                for (int i = 0; i < s.deferrable(); i++) {
                    docs.add(new BatchWorker.Doc("d" + i, "document " + i + " " + text(i)));
                }
                own.enqueueBatch(type, docs, d -> EnqueueOptions.key(d.id()).withDeadline(DEFERRABLE_DEADLINE));

                Await.until(Duration.ofMinutes(3), "the worker JVM's first batch create held by the provider",
                        () -> fb.heldCreates() == 1 || !worker.isAlive());
                if (!worker.isAlive()) {
                    throw new IllegalStateException("the worker JVM exited before its first submit:\n" + worker.output());
                }
                own.start();
                worker.kill(); // SIGKILL while the provider holds the create's reply
                double killedAt = (System.nanoTime() - t0) / 1e9;
                fb.releaseCreate(); // the reply goes to a dead connection
                trickle.join(Duration.ofMinutes(2).toMillis() + s.urgent() * s.urgentEvery().toMillis());
                if (enqueueFailure.get() != null) {
                    throw enqueueFailure.get();
                }
                Await.until(Duration.ofMinutes(10), "every batch-doc job gone", () -> left(ds) == 0);
                double wall = (System.nanoTime() - t0) / 1e9;
                return read(ds, fake, s, killedAt, wall);
            } finally {
                own.stop();
            }
        } finally {
            if (trickle != null) {
                trickle.interrupt();
            }
            Files.deleteIfExists(stop);
            fake.close();
        }
    }

    private static List<String> args(String jdbcUrl, FakeProvider fake, String name, Path stop, Settings s) {
        List<String> a = new ArrayList<>(List.of(jdbcUrl, fake.baseUri().toString(), name, String.valueOf(THREADS),
                stop.toString()));
        a.addAll(s.timing().args());
        return a;
    }

    /** Some words of varying length, so that prompts and answers vary (tens of tokens). */
    private static String text(int i) {
        StringBuilder b = new StringBuilder();
        for (int w = 0; w < 8 + i % 17; w++) {
            b.append(w == 0 ? "" : " ").append(WORDS[(i * 7 + w * 3) % WORDS.length]);
        }
        return b.toString();
    }

    private static final String[] WORDS = {"layover", "queue", "batch", "deadline", "provider", "token", "summary",
        "postgres", "worker", "lease", "half", "price", "urgent", "deferrable", "line", "answer"};

    private static long left(DataSource ds) {
        try {
            return longValue(ds, "select count(*) from layover.scheduled_tasks where task_name = '" + BatchWorker.TYPE + "'");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Result read(DataSource ds, FakeProvider fake, Settings s, double killedAt, double wall) throws Exception {
        FakeBatches fb = fake.batches();
        String type = "'" + BatchWorker.TYPE + "'";
        long urgentDone = longValue(ds, "select count(*) from layover.job_history where job_type = " + type
                + " and job_id like 'u%' and outcome = 'completed'");
        long inDeadline = longValue(ds, "select count(*) from layover.job_history where job_type = " + type
                + " and job_id like 'u%' and outcome = 'completed' and finished_at - enqueued_at <= interval '"
                + URGENT_DEADLINE.toSeconds() + " seconds'");
        double[] pct = doubles(ds, "select coalesce(percentile_cont(0.5) within group (order by ms), 'NaN'), "
                + "coalesce(percentile_cont(0.95) within group (order by ms), 'NaN'), coalesce(max(ms), 'NaN') from ("
                + "select extract(epoch from finished_at - enqueued_at) * 1000 as ms from layover.job_history where job_type = "
                + type + " and job_id like 'u%' and outcome = 'completed') x");
        long urgentRetried = longValue(ds, "select count(*) from layover.job_history where job_type = " + type
                + " and job_id like 'u%' and attempts > 0");
        double retriedMax = doubles(ds, "select coalesce(max(extract(epoch from finished_at - enqueued_at) * 1000), 'NaN') "
                + "from layover.job_history where job_type = " + type + " and job_id like 'u%' and attempts > 0")[0];
        long deferrableDone = longValue(ds, "select count(distinct job_id) from layover.job_history where job_type = " + type
                + " and job_id like 'd%' and outcome = 'completed'");
        long byBatch = longValue(ds, "select count(distinct h.job_id) from layover.job_history h join layover.batch_items i "
                + "on i.task_name = h.job_type and i.task_instance = h.job_id and i.state = 'result' and i.result_kind = "
                + "'succeeded' where h.job_type = " + type + " and h.job_id like 'd%' and h.outcome = 'completed'");
        long deferrableDirect = longValue(ds, "select count(distinct job_id) from bench_batch.direct where job_id like 'd%'");
        long historyDuplicates = longValue(ds, "select coalesce(sum(n - 1), 0) from (select count(*) as n from "
                + "layover.job_history where job_type = " + type + " group by job_id having count(*) > 1) x");
        long batchedAndDirect = longValue(ds, "select count(distinct d.job_id) from bench_batch.direct d join "
                + "layover.batch_items i on i.task_name = " + type + " and i.task_instance = d.job_id");
        long layoverBatches = longValue(ds, "select count(*) from layover.batch_status");
        long submitted = longValue(ds, "select count(*) from layover.batch_status where provider_batch_id is not null");
        long rejoined = longValue(ds, "select count(*) from layover.batch_status where provider_batch_id is not null "
                + "and submit_attempts >= 2");
        long deadLetters = longValue(ds, "select count(*) from layover.dead_letters where job_type = " + type);
        Map<String, Integer> refs = new HashMap<>();
        for (FakeBatches.Batch b : fb.batches()) {
            refs.merge(b.metadata().getOrDefault("layover_ref", "?" + b.id()), 1, Integer::sum);
        }
        long refsTwice = refs.values().stream().filter(n -> n > 1).count();
        FakeProvider.Endpoint direct = fake.primary();
        return new Result(s.deferrable(), s.urgent(), fb.inputTokens(), fb.outputTokens(), direct.inputTokens(),
                direct.outputTokens(), direct.successes(), urgentDone, inDeadline, pct[0], pct[1], pct[2], urgentRetried, retriedMax, deferrableDone,
                byBatch, deferrableDirect, historyDuplicates, fb.chargedMoreThanOnce(), batchedAndDirect, fb.created(),
                refsTwice, layoverBatches, submitted, rejoined, deadLetters, killedAt, wall, timeline(ds, type));
    }

    private static List<BatchRow> timeline(DataSource ds, String type) throws Exception {
        List<BatchRow> rows = new ArrayList<>();
        String sql = "with t0 as (select min(enqueued_at) as t from layover.job_history where job_type = " + type + "), "
                + "done as (select i.batch_id, max(h.finished_at) as at from layover.batch_items i join layover.job_history h "
                + "on h.job_type = i.task_name and h.job_id = i.task_instance where i.state = 'result' group by i.batch_id) "
                + "select b.id, b.lines, extract(epoch from min(i.gathered_at) - t0.t), extract(epoch from max(i.gathered_at) - t0.t), "
                + "extract(epoch from b.sealed_at - t0.t), extract(epoch from b.submitted_at - t0.t), b.submit_attempts, "
                + "extract(epoch from b.finished_at - t0.t), extract(epoch from d.at - t0.t) "
                + "from layover.batches b join layover.batch_items i on i.batch_id = b.id left join done d on d.batch_id = b.id, t0 "
                + "group by b.id, t0.t, d.at order by b.id";
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                rows.add(new BatchRow(rs.getLong(1), rs.getInt(2), rs.getDouble(3), rs.getDouble(4), rs.getDouble(5),
                        rs.getDouble(6), rs.getInt(7), rs.getDouble(8), rs.getDouble(9)));
            }
        }
        return rows;
    }

    private static long longValue(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static double[] doubles(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            double[] out = new double[rs.getMetaData().getColumnCount()];
            for (int i = 0; i < out.length; i++) {
                out[i] = rs.getDouble(i + 1);
            }
            return out;
        }
    }
}
