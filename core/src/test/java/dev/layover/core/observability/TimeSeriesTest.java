package dev.layover.core.observability;

import static dev.layover.core.observability.ObservabilityFixtures.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.ConfigurationException;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.spi.JobWrites;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * layover.time_series: jobs with known outcomes give known counts per bucket after a flush, the
 * queue's depth is sampled, replays are counted, and old rows are deleted.
 */
@DatabaseTest
class TimeSeriesTest {

    record Work(String script) {}

    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    /** "ok": done; "limited": a 429 then done; "flaky": throws once then done; "bad": rejected. */
    private Outcome script(String jobId, Work w) {
        int run = runs.computeIfAbsent(jobId, k -> new AtomicInteger()).incrementAndGet();
        return switch (w.script()) {
            case "limited" -> run == 1 ? Outcome.rateLimited(Duration.ofMillis(50), "429 slow down") : Outcome.done();
            case "flaky" -> {
                if (run == 1) {
                    throw new IllegalStateException("first run fails");
                }
                yield Outcome.done();
            }
            case "bad" -> Outcome.rejected("400 bad request");
            default -> Outcome.done();
        };
    }

    private JobType<Work> type(String name, String key) {
        return JobType.builder(name, Work.class)
                .policy(ObservabilityFixtures.fastRetries(3))
                .providerKey(key)
                .handler((args, ctx) -> script(ctx.jobId(), args))
                .build();
    }

    private static long sum(TestDatabase db, int seconds, String jobType, String counter, String detail) {
        Object v = db.value("SELECT coalesce(sum(amount), 0) FROM layover.time_series WHERE bucket_seconds = ? AND job_type = ?"
                + " AND counter = ? AND detail IS NOT DISTINCT FROM ?", seconds, jobType, counter, detail);
        return ((Number) v).longValue();
    }

    @Test
    void knownOutcomesGiveKnownCountsInOneBucketPerResolutionAfterAFlush(TestDatabase db) {
        JobType<Work> ts = type("ts", "fake:ts");
        JobType<Work> limited = type("ts-limited", "fake:limited");
        // nothing is flushed while it runs: everything lands in the one flush of stop()
        layover = ObservabilityFixtures.builder(db).register(ts, limited).timeSeriesFlushInterval(Duration.ofHours(1)).start();
        for (int i = 0; i < 3; i++) {
            layover.enqueue(ts, new Work("ok"));
        }
        layover.enqueue(ts, new Work("flaky"));
        layover.enqueue(ts, new Work("bad"));
        layover.enqueue(limited, new Work("limited"));
        layover.enqueue(ts, new Work("ok"), EnqueueOptions.after(Duration.ofHours(1)));
        Await.equal(WAIT, "six jobs finished", 6L, () -> db.count("select count(*) from layover.job_history"));
        assertEquals(0L, db.count("select count(*) from layover.time_series_counts"), "no write per job");
        layover.stop();
        layover = null;

        for (int seconds : new int[] {10, 60, 3600}) {
            assertEquals(4, sum(db, seconds, "ts", "completed", null), "3 ok + the flaky one");
            assertEquals(1, sum(db, seconds, "ts-limited", "completed", null));
            assertEquals(1, sum(db, seconds, "ts-limited", "rate_limited", null), "the 429");
            assertEquals(1, sum(db, seconds, "ts-limited", "rescheduled", "rate_limited"));
            assertEquals(1, sum(db, seconds, "ts", "retried", "error"), "the flaky job's failed attempt");
            assertEquals(1, sum(db, seconds, "ts", "parked", "rejected"));
            assertEquals(0, sum(db, seconds, "ts", "rate_limited", null));
            assertEquals(1, sum(db, seconds, "ts", "waiting", null), "the job due in an hour");
            assertEquals(0, sum(db, seconds, "ts", "due", null));
            assertEquals(1L, db.count("SELECT count(DISTINCT bucket_start) FROM layover.time_series WHERE bucket_seconds = ?",
                    seconds), "one flush, one bucket");
        }
        assertEquals("fake:limited", db.value("SELECT provider_key FROM layover.time_series WHERE counter = 'rate_limited' AND bucket_seconds = 10"));
        Map<String, Object> row = db.row("SELECT bucket_start, bucket_end, now() AS db_now FROM layover.time_series"
                + " WHERE bucket_seconds = 10 AND counter = 'completed' AND job_type = 'ts'");
        Instant start = ((Timestamp) row.get("bucket_start")).toInstant();
        assertEquals(0, start.getEpochSecond() % 10, "aligned to 10 s of the database's clock: " + start);
        assertEquals(Duration.ofSeconds(10), Duration.between(start, ((Timestamp) row.get("bucket_end")).toInstant()));
        assertTrue(!start.isAfter(((Timestamp) row.get("db_now")).toInstant()));
    }

    /** Thousands of tenant keys would write a row per key each flush: past the 100 busiest, the rest are summed as '*'. */
    @Test
    void aFlushWritesTheHundredBusiestKeysOfAJobTypeAndSumsTheRestAsStar(TestDatabase db) {
        JobType<Work> many = JobType.builder("many", Work.class)
                .providerKey(w -> w.script().substring(0, w.script().indexOf(' ')))
                .handler((args, ctx) -> Outcome.done())
                .build();
        layover = ObservabilityFixtures.builder(db).register(many).timeSeriesFlushInterval(Duration.ofHours(1)).start();
        int keys = 130;
        for (int k = 0; k < keys; k++) {
            layover.enqueue(many, new Work("k:" + k + " now"));
            layover.enqueue(many, new Work("k:" + k + " later"), EnqueueOptions.after(Duration.ofHours(1)));
        }
        for (int i = 0; i < 5; i++) {
            layover.enqueue(many, new Work("k:129 now"));
        }
        Await.equal(WAIT, "every due job finished", (long) keys + 5,
                () -> db.count("select count(*) from layover.job_history where job_type = 'many'"));
        layover.stop();
        layover = null;

        for (String counter : new String[] {"completed", "waiting"}) {
            assertEquals(101L, db.count("SELECT count(DISTINCT provider_key) FROM layover.time_series WHERE bucket_seconds = 10"
                    + " AND job_type = 'many' AND counter = ?", counter), counter + ": 100 keys and '*'");
            assertEquals(keys - 100, ((Number) db.value("SELECT amount FROM layover.time_series WHERE bucket_seconds = 10"
                    + " AND job_type = 'many' AND counter = ? AND provider_key = '*'", counter)).longValue(), counter);
        }
        assertEquals(keys + 5, sum(db, 10, "many", "completed", null), "nothing lost by the sum");
        assertEquals(6L, ((Number) db.value("SELECT amount FROM layover.time_series WHERE bucket_seconds = 10"
                + " AND job_type = 'many' AND counter = 'completed' AND provider_key = 'k:129'")).longValue(),
                "the busiest key keeps its own row");
    }

    /**
     * The depth's sample counts the whole job table: the cluster takes one per 10 s up to 100,000
     * jobs and 10 s more per 100,000 (the table's estimated rows), each marked {@code sampled}.
     */
    @Test
    void theDepthIsSampledLessOftenAsTheJobTableGrowsAndEachSampleIsMarked(TestDatabase db) {
        JobType<Work> ts = type("ts", "fake:ts");
        flushOnce(db, ts);
        assertEquals(1, sum(db, 10, "", "sampled", null), "the sample's marker, job type and key ''");
        assertEquals(1, sum(db, 60, "", "sampled", null));

        db.update("INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version)"
                + " SELECT 'ts-bulk', 'job-' || i, now() + interval '1 day', false, 1 FROM generate_series(1, 250000) i");
        db.execute("ANALYZE layover.scheduled_tasks");
        db.update("DELETE FROM layover.time_series_counts");
        // 250,000 rows: a sample every 20 s. One taken 15 s ago (10 s would sample again) holds the next back
        db.update("INSERT INTO layover.time_series_counts (bucket_seconds, bucket, job_type, counter, amount)"
                + " VALUES (10, now() - interval '15 seconds', '', 'sampled', 1)");
        flushOnce(db, ts);
        assertEquals(0, sum(db, 10, "ts-bulk", "waiting", null), "no sample within 20 s of the last");
        assertEquals(1, sum(db, 10, "", "sampled", null), "no marker either");

        db.update("UPDATE layover.time_series_counts SET bucket = now() - interval '25 seconds' WHERE counter = 'sampled'");
        flushOnce(db, ts);
        assertEquals(250_000, sum(db, 10, "ts-bulk", "waiting", null), "sampled 25 s after the last");
        assertEquals(2, sum(db, 10, "", "sampled", null), "and marked");
    }

    /** Starts an instance and stops it: one flush (it samples the depth when a sample is due). */
    private void flushOnce(TestDatabase db, JobType<Work> type) {
        ObservabilityFixtures.builder(db).register(type).timeSeriesFlushInterval(Duration.ofHours(1)).start().stop();
    }

    @Test
    void theFlushRunsByItselfWhileRunningAndReplaysAreCountedByTheirStatement(TestDatabase db) throws Exception {
        JobType<Work> ts = type("ts", "fake:ts");
        layover = ObservabilityFixtures.builder(db).register(ts).timeSeriesFlushInterval(Duration.ofMillis(200)).start();
        layover.enqueue(ts, new Work("ok"));
        String bad = layover.enqueue(ts, new Work("bad")).id();
        Await.until(WAIT, "the flusher wrote the completed job and the park",
                () -> sum(db, 60, "ts", "completed", null) == 1 && sum(db, 60, "ts", "parked", "rejected") == 1);

        long deadLetter = ((Number) db.value("select id from layover.dead_letters where job_id = ?", bad)).longValue();
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            List<JobWrites.Replayed> replayed = JobWrites.on(db.dataSource()).insertReplays(c, new long[] {deadLetter},
                    new String[] {null}, Instant.now().plus(Duration.ofHours(1)), 0, "manual");
            c.commit();
            assertEquals(1, replayed.size());
        }
        assertEquals(1, sum(db, 10, "ts", "replayed", "manual"));
        assertEquals(1, sum(db, 60, "ts", "replayed", "manual"));
        assertEquals("fake:ts", db.value("SELECT provider_key FROM layover.time_series WHERE counter = 'replayed' AND bucket_seconds = 10"));
    }

    @Test
    void rowsPastTheirRetentionAreDeleted(TestDatabase db) {
        insert(db, 10, "50 minutes");
        insert(db, 10, "20 minutes");
        insert(db, 60, "2 days");
        insert(db, 60, "20 hours");
        insert(db, 3600, "3 days");
        insert(db, 3600, "10 hours");
        layover = ObservabilityFixtures.builder(db).register(type("ts", "fake:ts"))
                .timeSeriesFlushInterval(Duration.ofMillis(200))
                .timeSeriesRetention(Duration.ofMinutes(30), Duration.ofDays(1)).start();
        Await.equal(WAIT, "the old rows deleted", 3L, () -> db.count("SELECT count(*) FROM layover.time_series_counts"
                + " WHERE job_type = 'old'"));
        assertEquals(1L, db.count("SELECT count(*) FROM layover.time_series_counts WHERE job_type = 'old' AND bucket_seconds = 10"
                + " AND bucket > now() - interval '30 minutes'"));
        assertEquals(1L, db.count("SELECT count(*) FROM layover.time_series_counts WHERE job_type = 'old' AND bucket_seconds = 60"
                + " AND bucket > now() - interval '1 day'"));
        assertEquals(1L, db.count("SELECT count(*) FROM layover.time_series_counts WHERE job_type = 'old' AND bucket_seconds = 3600"
                + " AND bucket > now() - interval '1 day'"), "hour rows keep the minute rows' period");

        assertThrows(ConfigurationException.class, () -> Layover.builder(db.dataSource()).timeSeriesRetention(Duration.ZERO,
                Duration.ofDays(1)));
        assertThrows(ConfigurationException.class, () -> Layover.builder(db.dataSource())
                .timeSeriesFlushInterval(Duration.ofMillis(10)));
    }

    @Test
    void offWritesNothing(TestDatabase db) {
        JobType<Work> ts = type("ts", "fake:ts");
        layover = ObservabilityFixtures.builder(db).register(ts).timeSeries(false).timeSeriesFlushInterval(Duration.ofMillis(100))
                .start();
        layover.enqueue(ts, new Work("ok"));
        Await.equal(WAIT, "the job finished", 1L, () -> db.count("select count(*) from layover.job_history"));
        layover.stop();
        layover = null;
        assertEquals(0L, db.count("select count(*) from layover.time_series_counts"));
    }

    private static void insert(TestDatabase db, int seconds, String age) {
        db.update("INSERT INTO layover.time_series_counts (bucket_seconds, bucket, job_type, counter, amount) VALUES (?, "
                + "to_timestamp(floor(extract(epoch FROM now() - interval '" + age + "') / ?) * ?), 'old', 'completed', 1)",
                seconds, seconds, seconds);
    }
}
