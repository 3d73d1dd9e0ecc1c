package dev.layover.samples.translate;

import com.openai.client.OpenAIClient;
import dev.layover.console.ConsoleOptions;
import dev.layover.console.ReplayConsole;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.samples.translate.DemoScript.Step;
import dev.layover.samples.translate.SummaryJob.SummarizeDocument;
import dev.layover.samples.translate.TranslateJob.TranslateDocument;
import dev.layover.testing.provider.FakeProvider;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * The LLM translation demo: documents arrive at a steady rate and are translated by
 * {@link TranslateJob} through a fake OpenAI-compatible provider that goes normal → throttled
 * (429) → outage (503/529) → recovered ({@link DemoScript}). Each delivered translation asks for
 * a summary ({@link SummaryJob}), deferrable work that Layover sends by the provider's batch API
 * at half price. It prints the phases, every breaker change and a live progress line, and ends
 * with a {@link DemoReport} once every job is completed or waits for a person, or at the script's
 * deadline.
 *
 * <p>Database: Layover's schema (migrated at start) and the demo's own, {@code layover_demo},
 * dropped and created at start. Rows an earlier run left in Layover's tables for the demo's job
 * types and provider keys (jobs, dead letters, breakers, cooldowns, buckets, sweep state) are
 * deleted at start; nothing else is touched (earlier runs' batches stay in {@code layover.batches};
 * the report counts this run's only).
 */
public final class TranslationDemo {

    private static final List<String> KEYS = List.of(TranslateJob.MODEL_KEY, TranslateJob.PRIMARY_KEY,
            TranslateJob.SECONDARY_KEY);
    private static final List<String> FORGOTTEN_KEYS = List.of(TranslateJob.MODEL_KEY, TranslateJob.PRIMARY_KEY,
            TranslateJob.SECONDARY_KEY, SummaryJob.KEY);

    /**
     * How to run the demo.
     *
     * @param fast the compressed script (a few seconds) instead of the real one
     * @param keepRunning keep Layover and the console up after the report, until {@code stop} counts down
     * @param console start the replay console
     * @param terminal redraw the progress line in place (stdout is a terminal)
     * @param stop counted down to end a {@code keepRunning} demo (a shutdown hook); may be {@code null}
     * @param jdbcUrl the database's JDBC URL, printed with a psql line so that the report's SQL can be
     *     tried (passwords masked); may be {@code null}
     */
    public record Options(boolean fast, boolean keepRunning, boolean console, boolean terminal, CountDownLatch stop,
            String jdbcUrl) {}

    private TranslationDemo() {}

    /**
     * Runs the demo.
     *
     * @param dataSource the database (a pool of at least 24 connections)
     * @param options how
     * @param out where to print
     * @return the report
     * @throws Exception if the demo cannot run
     */
    public static DemoReport run(DataSource dataSource, Options options, PrintStream out) throws Exception {
        DemoScript script = options.fast() ? DemoScript.fastSpeed() : DemoScript.normalSpeed();
        TranslationStats stats = new TranslationStats();
        Progress progress = new Progress(out, options.terminal(), script.progressEvery().toMillis());
        AtomicInteger openings = new AtomicInteger();
        AtomicLong startedAt = new AtomicLong(System.nanoTime()); // set again when the script starts

        try (FakeProvider fake = FakeProvider.start()) {
            OpenAIClient primary = TranslateJob.client(URI.create(fake.baseUri() + "/v1"), "sk-demo-primary");
            OpenAIClient secondary = TranslateJob.client(URI.create(fake.baseUri() + "/secondary/v1"), "sk-demo-secondary");
            Set<String> failedOnce = ConcurrentHashMap.newKeySet();
            SummaryJob summaries = new SummaryJob(dataSource, primary);
            JobType<SummarizeDocument> summaryType = summaries.jobType(script.policy());
            AtomicReference<Layover> running = new AtomicReference<>();
            TranslateJob job = new TranslateJob(dataSource, TranslateJob.chain(primary, secondary), (jobId, doc, segments) -> {
                if (Documents.firstDeliveryFails(number(doc)) && failedOnce.add(jobId)) {
                    throw new IOException("the customer's webhook timed out");
                }
                // delivered: its summary is wanted within 2 h, so it goes by batch
                SummaryJob.enqueue(running.get(), summaryType, jobId, doc, segments);
            }, stats);
            JobType<TranslateDocument> type = job.jobType(script.policy());

            Layover layover = Layover.builder(dataSource)
                    .register(type, summaryType)
                    .threads(8)
                    .pollInterval(script.pollInterval())
                    .shutdownMaxWait(Duration.ofSeconds(10))
                    .breakers(script.breakers())
                    .cooldowns(script.cooldowns())
                    .bucket(TranslateJob.PRIMARY_KEY, script.primaryBucket())
                    .bucket(TranslateJob.SECONDARY_KEY, script.secondaryBucket())
                    .batching(SummaryJob.KEY, script.batching(primary))
                    .breakerListener(e -> {
                        if (e.to() == BreakerState.OPEN && e.from() != BreakerState.OPEN) {
                            openings.incrementAndGet();
                        }
                        progress.event(String.format("%5.1fs  breaker %s: %s -> %s  (%s)", seconds(startedAt.get()), e.providerKey(),
                                name(e.from()), name(e.to()), shorten(e.reason())));
                    })
                    .plugin(script.sweep())
                    .build(); // migrates
            running.set(layover);
            ReplayConsole console = null;
            try {
                Timestamp runStart = prepare(dataSource);
                layover.start();
                if (options.console()) {
                    console = ReplayConsole.start(layover, ConsoleOptions.defaults());
                    out.println("Replay console: " + console.loginUrl());
                    out.println("  (open it in a browser on this machine; the token in the link is this run's password)");
                }
                out.println("Provider: a fake OpenAI-compatible server at " + fake.baseUri() + " (primary /v1, secondary /secondary/v1)");
                out.println("Keys: " + TranslateJob.MODEL_KEY + " (the job's, over both endpoints), " + TranslateJob.PRIMARY_KEY
                        + ", " + TranslateJob.SECONDARY_KEY + "; the summaries' " + SummaryJob.KEY
                        + " (by batch: the primary's /v1/files and /v1/batches)");
                printConnect(out, options);
                out.println();

                long start = System.nanoTime();
                startedAt.set(start);
                script.start(fake);
                AtomicInteger enqueued = new AtomicInteger();
                Thread producer = producer(layover, type, script, enqueued, start);
                producer.start();
                try {
                    watch(dataSource, script, stats, progress, fake, enqueued, producer, start);
                } finally {
                    producer.interrupt();
                    producer.join();
                }
                layover.awaitCompletions(Duration.ofSeconds(5));
                progress.finish();
                DemoReport report = report(dataSource, stats, fake, enqueued.get(), openings.get(), start, runStart);
                report.print(out);
                out.println();
                out.println("Look around with SQL: layover.dead_letters (what parked, why, its replays), "
                        + "layover_demo.charges, layover_demo.translations, layover.provider_keys, "
                        + "layover.batch_status (the summaries' batches), layover_demo.summaries.");
                if (options.keepRunning()) {
                    out.println("--keep-running: Layover and the console stay up" + (console != null
                            ? " at " + console.loginUrl() : "") + ". Press Ctrl-C to stop.");
                    printConnect(out, options);
                    out.println("Try: top up the trial account with SQL (UPDATE layover_demo.accounts SET balance = balance + 100"
                            + " WHERE id = '" + Documents.INITECH + "'), then replay its dead letters (failure type"
                            + " handler_parked) from the console: they complete, charged once.");
                    out.flush();
                    if (options.stop() != null) {
                        options.stop().await();
                    } else {
                        new CountDownLatch(1).await();
                    }
                }
                return report;
            } finally {
                if (console != null) {
                    console.close();
                }
                layover.stop();
                RescheduleLog.uninstall(dataSource);
                primary.close();
                secondary.close();
            }
        }
    }

    /** Deletes what an earlier run left for the demo's job type and keys; creates the demo's schema. */
    private static void printConnect(PrintStream out, Options options) {
        if (options.jdbcUrl() == null) {
            return;
        }
        out.println("Database: " + options.jdbcUrl());
        out.println("  psql: " + psql(options.jdbcUrl()) + (options.keepRunning() ? ""
                : "   (the embedded database ends with the demo: add --keep-running to look around after the report)"));
    }

    /**
     * The psql command for a {@code jdbc:postgresql://host:port/db?user=u&password=p} URL.
     *
     * @param jdbcUrl the URL
     * @return e.g. {@code psql "postgresql://postgres@localhost:5432/postgres"}
     */
    static String psql(String jdbcUrl) {
        String rest = jdbcUrl.replaceFirst("^jdbc:postgresql://", "");
        String query = "";
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        String user = null;
        for (String kv : query.split("&")) {
            if (kv.startsWith("user=")) {
                user = kv.substring("user=".length());
            }
        }
        return "psql \"postgresql://" + (user != null ? user + "@" : "") + rest + "\"";
    }

    /** @return the database's time before the run: the report counts batches and history rows from here */
    private static Timestamp prepare(DataSource ds) throws SQLException {
        // a previous run's jobs, dead letters and provider state (the migration's functions for demos and tests)
        Timestamp now;
        try (Connection c = ds.getConnection();
                PreparedStatement type = c.prepareStatement("SELECT layover.forget_job_type(?)");
                PreparedStatement keys = c.prepareStatement("SELECT layover.forget_provider_keys(?)");
                Statement st = c.createStatement()) {
            for (String name : List.of(TranslateJob.NAME, SummaryJob.NAME)) {
                type.setString(1, name);
                type.executeQuery().close();
            }
            keys.setArray(1, c.createArrayOf("text", FORGOTTEN_KEYS.toArray()));
            keys.executeQuery().close();
            try (ResultSet rs = st.executeQuery("SELECT now()")) {
                rs.next();
                now = rs.getTimestamp(1);
            }
        }
        Credits.createSchema(ds, Documents.openingBalances());
        SummaryJob.createTable(ds);
        RescheduleLog.install(ds, TranslateJob.NAME);
        return now;
    }

    private static Thread producer(Layover layover, JobType<TranslateDocument> type, DemoScript script,
            AtomicInteger enqueued, long start) {
        Thread t = new Thread(() -> {
            long every = (long) (1e9 / script.documentsPerSecond());
            long until = start + script.produceFor().toNanos();
            for (int n = 0; ; n++) {
                long due = start + n * every;
                if (due - until >= 0) {
                    return;
                }
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    try {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                TranslateDocument doc = Documents.document(n);
                // the idempotency key is the business key: enqueueing a document twice does nothing
                layover.enqueue(type, doc, EnqueueOptions.key("translate:" + doc.documentId() + ":" + doc.target()));
                enqueued.incrementAndGet();
            }
        }, "demo-documents");
        t.setDaemon(true);
        return t;
    }

    /** Prints phases and progress until everything is done or waits for a person, or the deadline. */
    private static void watch(DataSource ds, DemoScript script, TranslationStats stats, Progress progress,
            FakeProvider fake, AtomicInteger enqueued, Thread producer, long start) throws Exception {
        Step announced = null;
        long deadline = start + script.deadline().toNanos();
        while (true) {
            Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
            Step step = script.stepAt(elapsed);
            if (step != announced) {
                script.styles(fake, step);
                progress.event(String.format("%5.1fs  == %s", seconds(start), script.describe(step)));
                announced = step;
            }
            Snapshot s = snapshot(ds);
            progress.update(String.format("%4ds %-9s| done %d  waiting %d  rescheduled %d  parked %d  replayed %d"
                    + " | summaries %d, in a batch %d | %s", elapsed.toSeconds(), step.name().toLowerCase(), stats.completed(),
                    s.waiting(), s.rescheduled(), s.parked(), s.replayed(), s.summarized(), s.inBatch(), s.keys()));
            boolean drained = step == Step.RECOVERED && !producer.isAlive() && s.live() == 0 && s.recoverable() == 0
                    && s.summariesLive() == 0;
            if (drained || System.nanoTime() - deadline >= 0) {
                if (!drained) {
                    progress.event(String.format("%5.1fs  deadline reached: reporting what is still open", seconds(start)));
                }
                return;
            }
            Thread.sleep(250);
        }
    }

    private record Snapshot(long waiting, long rescheduled, long live, long parked, long recoverable,
            long replayed, long summarized, long summariesLive, long inBatch, String keys) {}

    private static Snapshot snapshot(DataSource ds) throws SQLException {
        try (Connection c = ds.getConnection()) {
            long waiting;
            long rescheduled;
            long live;
            long parked;
            long recoverable;
            long replayed;
            long summarized;
            long summariesLive;
            long inBatch;
            try (PreparedStatement ps = c.prepareStatement("""
                    SELECT count(*) FILTER (WHERE j.state IN ('scheduled', 'retrying')),
                           count(*) FILTER (WHERE j.state = 'rescheduled'),
                           count(*),
                           (SELECT count(*) FROM layover.dead_letters d WHERE d.job_type = ? AND d.state IN ('parked', 'review')),
                           (SELECT count(*) FROM layover.dead_letters d WHERE d.job_type = ? AND d.state = 'parked'
                                AND d.failure_type IN ('provider_unavailable', 'breaker_open', 'rate_limit_exhausted',
                                                       'quota_exhausted')),
                           (SELECT coalesce(sum(d.replay_count), 0) FROM layover.dead_letters d WHERE d.job_type = ?)
                    FROM layover.jobs j WHERE j.job_type = ?""")) {
                for (int i = 1; i <= 4; i++) {
                    ps.setString(i, TranslateJob.NAME);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    waiting = rs.getLong(1);
                    rescheduled = rs.getLong(2);
                    live = rs.getLong(3);
                    parked = rs.getLong(4);
                    recoverable = rs.getLong(5);
                    replayed = rs.getLong(6);
                }
            }
            try (PreparedStatement ps = c.prepareStatement("""
                    SELECT (SELECT count(*) FROM layover_demo.summaries),
                           count(*),
                           count(*) FILTER (WHERE j.batch_item_state = 'gathered')
                    FROM layover.jobs j WHERE j.job_type = ?""")) {
                ps.setString(1, SummaryJob.NAME);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    summarized = rs.getLong(1);
                    summariesLive = rs.getLong(2);
                    inBatch = rs.getLong(3);
                }
            }
            Map<String, String> keys = new LinkedHashMap<>();
            KEYS.forEach(k -> keys.put(k, "closed"));
            try (PreparedStatement ps = c.prepareStatement("""
                    SELECT provider_key, breaker_state,
                           ceil(extract(epoch FROM (breaker_open_until - now()))),
                           ceil(extract(epoch FROM (cooldown_until - now())))
                    FROM layover.provider_keys WHERE provider_key = ANY (?)""")) {
                ps.setArray(1, c.createArrayOf("text", KEYS.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        StringBuilder b = new StringBuilder(rs.getString(2).replace('_', '-'));
                        double open = rs.getDouble(3);
                        if (!rs.wasNull() && open > 0 && !"closed".equals(rs.getString(2))) {
                            b.append(' ').append((long) open).append('s');
                        }
                        double cool = rs.getDouble(4);
                        if (!rs.wasNull() && cool > 0) {
                            b.append(", cool ").append((long) cool).append('s');
                        }
                        keys.put(rs.getString(1), b.toString());
                    }
                }
            }
            String k = "model " + keys.get(TranslateJob.MODEL_KEY) + " | primary " + keys.get(TranslateJob.PRIMARY_KEY)
                    + " | secondary " + keys.get(TranslateJob.SECONDARY_KEY);
            return new Snapshot(waiting, rescheduled, live, parked, recoverable, replayed, summarized, summariesLive, inBatch, k);
        }
    }

    private static DemoReport report(DataSource ds, TranslationStats stats, FakeProvider fake, int enqueued, int openings,
            long start, Timestamp runStart) throws SQLException {
        Map<String, Long> waitingForPerson = counts(ds, "SELECT failure_type, count(*) FROM layover.dead_letters"
                + " WHERE job_type = '" + TranslateJob.NAME + "' AND state IN ('parked', 'review') GROUP BY 1");
        Map<String, Long> byType = counts(ds, "SELECT failure_type, count(*) FROM layover.dead_letters"
                + " WHERE job_type = '" + TranslateJob.NAME + "' GROUP BY 1");
        Map<String, Long> replays = counts(ds, "SELECT r ->> 'kind', count(*) FROM layover.dead_letters d,"
                + " jsonb_array_elements(d.replays) r WHERE d.job_type = '" + TranslateJob.NAME + "' GROUP BY 1");
        long opening = Documents.openingBalances().values().stream().mapToLong(Long::longValue).sum();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("""
                        SELECT (SELECT count(*) FROM layover.jobs WHERE job_type = '%1$s'),
                               (SELECT count(*) FROM layover.dead_letters WHERE job_type = '%1$s'),
                               (SELECT coalesce(sum(park_count), 0) FROM layover.dead_letters WHERE job_type = '%1$s'),
                               (SELECT count(*) FROM layover_demo.charges),
                               (SELECT coalesce(sum(amount), 0) FROM layover_demo.charges),
                               (SELECT coalesce(sum(balance), 0) FROM layover_demo.accounts),
                               (SELECT count(*) FROM (SELECT job_id FROM layover_demo.charges GROUP BY job_id
                                                      HAVING count(*) > 1) twice),
                               (SELECT count(*) FROM layover_demo.accounts WHERE balance < 0)""".formatted(TranslateJob.NAME))) {
            rs.next();
            long touching = RescheduleLog.touchingAttempts(ds);
            return new DemoReport(Math.round(seconds(start)), enqueued, stats.completed(), waitingForPerson, rs.getLong(1),
                    fake.primary().calls(), fake.secondary().calls(),
                    fake.primary().rateLimited() + fake.secondary().rateLimited(),
                    fake.primary().unavailable() + fake.primary().overloaded() + fake.secondary().unavailable()
                            + fake.secondary().overloaded(),
                    RescheduleLog.byReason(ds), stats.rateLimitedRuns(), stats.attemptsSpentOnRateLimits() + touching,
                    stats.attemptsSpent(), stats.answeredByPrimary(), stats.answeredBySecondary(), stats.fenced(),
                    stats.chatty(), stats.truncated(), stats.deliveryFailures(), openings, rs.getLong(2), rs.getLong(3),
                    byType, replays, rs.getLong(4), rs.getLong(5), opening - rs.getLong(6), rs.getLong(7), rs.getLong(8),
                    stats.segmentsReused(), batchReport(ds, fake, stats.completed(), runStart));
        }
    }

    /** The fourth part: this run's summaries, from the history and the batches, and the fake's counters. */
    private static BatchReport batchReport(DataSource ds, FakeProvider fake, long translated, Timestamp runStart)
            throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("""
                        WITH done AS (
                            SELECT coalesce(h.input_tokens, 0) + coalesce(h.output_tokens, 0) AS tokens,
                                   EXISTS (SELECT 1 FROM layover.batch_items i
                                           WHERE i.task_name = h.job_type AND i.task_instance = h.job_id
                                             AND i.state = 'result' AND i.result_kind = 'succeeded'
                                             AND i.gathered_at >= ?) AS by_batch
                            FROM layover.job_history h
                            WHERE h.job_type = ? AND h.outcome = 'completed' AND h.finished_at >= ?
                        ), batches AS (
                            SELECT * FROM layover.batch_status WHERE provider_key = ? AND created_at >= ?
                        )
                        SELECT (SELECT count(*) FROM done),
                               (SELECT count(*) FROM done WHERE by_batch),
                               (SELECT coalesce(sum(tokens), 0) FROM done WHERE NOT by_batch),
                               (SELECT count(*) FROM layover.jobs WHERE job_type = ?)
                                 + (SELECT count(*) FROM layover.dead_letters WHERE job_type = ?),
                               (SELECT count(*) FROM batches),
                               (SELECT count(*) FROM batches WHERE state = 'ended'),
                               (SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM batches),
                               (SELECT coalesce(sum(saved_tokens), 0) FROM batches),
                               (SELECT coalesce(max(discount), 0) FROM batches)""")) {
            ps.setTimestamp(1, runStart);
            ps.setString(2, SummaryJob.NAME);
            ps.setTimestamp(3, runStart);
            ps.setString(4, SummaryJob.KEY);
            ps.setTimestamp(5, runStart);
            ps.setString(6, SummaryJob.NAME);
            ps.setString(7, SummaryJob.NAME);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new BatchReport(translated, rs.getLong(1), rs.getLong(2), rs.getLong(4), rs.getLong(5), rs.getLong(6),
                        fake.batches().created(), fake.batches().chargedMoreThanOnce(), rs.getLong(7), rs.getLong(8),
                        fake.batches().inputTokens() + fake.batches().outputTokens(), rs.getLong(3), rs.getDouble(9));
            }
        }
    }

    private static Map<String, Long> counts(DataSource ds, String sql) throws SQLException {
        Map<String, Long> out = new TreeMap<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.put(rs.getString(1), rs.getLong(2));
            }
        }
        return out;
    }

    private static int number(TranslateDocument doc) {
        return Integer.parseInt(doc.documentId().substring("doc-".length()));
    }

    private static double seconds(long start) {
        return (System.nanoTime() - start) / 1e9;
    }

    private static String name(BreakerState s) {
        return s.name().toLowerCase().replace('_', '-');
    }

    private static String shorten(String s) {
        if (s == null) {
            return "";
        }
        return s.length() > 110 ? s.substring(0, 107) + "..." : s;
    }
}
