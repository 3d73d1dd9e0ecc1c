package dev.layover.dlq;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.testing.JvmProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * A worker JVM of {@link ChaosReliabilityTest}: runs job type {@code ask}, whose handler records
 * its run in {@code public.chaos_runs} (start and end on the database's clock, so that runs of
 * JVMs with different clocks compare) and calls the fake provider through the OpenAI SDK (retries
 * off). A job with {@code poison} set is rejected (parked as hopeless) while the poison file
 * exists. Prints {@code started <worker>} once polling, then runs until killed.
 *
 * <p>Arguments: JDBC URL, the fake's base URL, worker name, poison file, requests per second of the
 * key's bucket.
 */
public final class ChaosWorkerMain {

    /** The provider key every job calls. */
    static final String KEY = "openai:chaos";
    /** Heartbeat interval and misses: a worker silent for 2 s is dead to the others. */
    static final Duration HEARTBEAT = Duration.ofMillis(500);
    static final int MISSED = 4;

    /** The args of an {@code ask} job. */
    public record Ask(int n, boolean poison) {}

    private ChaosWorkerMain() {}

    /** The job type, as every worker and the test's client register it. */
    static JobType<Ask> type(DataSource ds, OpenAIClient client, Path poison, String worker) {
        return JobType.builder("ask", Ask.class).providerKey(KEY).handler((a, ctx) -> {
            long run = begin(ds, ctx.jobId(), worker, databaseNow());
            try {
                if (a.poison() && Files.exists(poison)) {
                    return Outcome.rejected("poisoned while " + poison + " exists");
                }
                client.chat().completions().create(ChatCompletionCreateParams.builder()
                        .model("gpt-4o-mini").addUserMessage("job " + a.n()).build());
                return Outcome.done();
            } finally {
                end(ds, run); // a failed call ends its run too: only a killed worker leaves one open
            }
        }).build();
    }

    /** The database's time when this JVM started, and {@link System#nanoTime()} then. */
    private static volatile long dbBaseMillis;
    private static volatile long nanoBase;

    /**
     * The database's time now, read from this JVM's monotonic clock (a faked wall clock does not
     * move it): a run's start is taken when its handler is entered, not when its record reaches
     * the database, which a paused JVM or a restarting database may delay past another worker's
     * run of the job.
     */
    private static java.sql.Timestamp databaseNow() {
        return new java.sql.Timestamp(dbBaseMillis + (System.nanoTime() - nanoBase) / 1_000_000);
    }

    private static long begin(DataSource ds, String job, String worker, java.sql.Timestamp started) throws Exception {
        return untilWritten(() -> {
            try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "insert into public.chaos_runs (job_id, worker, started_at) values (?, ?, ?) returning id")) {
                ps.setString(1, job);
                ps.setString(2, worker);
                ps.setTimestamp(3, started);
                try (var rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    private static void end(DataSource ds, long run) throws Exception {
        untilWritten(() -> {
            try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "update public.chaos_runs set ended_at = clock_timestamp() where id = ?")) {
                ps.setLong(1, run);
                return (long) ps.executeUpdate();
            }
        });
    }

    private interface Write {
        long run() throws java.sql.SQLException;
    }

    /**
     * The run's record, written when the database answers: while Postgres restarts, a record that
     * failed would leave a run without its end (counted as overlapping every later run of its job)
     * or fail the job for the test's sake. Written before the run's outcome, so never after another
     * run of the job began. Up to a minute.
     */
    private static long untilWritten(Write w) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (true) {
            try {
                return w.run();
            } catch (java.sql.SQLException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(200); // the database is restarting: try again
            }
        }
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        String worker = args[2];
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(8);
        cfg.setPoolName("pool-" + worker);
        HikariDataSource ds = new HikariDataSource(cfg);
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "select (extract(epoch from clock_timestamp()) * 1000)::bigint")) {
            long sent = System.nanoTime();
            try (var rs = ps.executeQuery()) {
                rs.next();
                nanoBase = sent + (System.nanoTime() - sent) / 2; // the database read its clock about halfway
                dbBaseMillis = rs.getLong(1);
            }
        }
        OpenAIClient client = OpenAIOkHttpClient.builder().apiKey("sk-chaos").baseUrl(args[1] + "/v1")
                .maxRetries(0).timeout(Duration.ofSeconds(10)).build();
        Layover layover = Layover.builder(ds)
                .register(type(ds, client, Path.of(args[3]), worker))
                .bucket(KEY, BucketSettings.requestsPerSecond(Double.parseDouble(args[4])))
                .workerName(worker)
                .threads(4)
                .migrate(false)
                .pollInterval(Duration.ofMillis(100))
                .heartbeat(HEARTBEAT, MISSED)
                .start();
        System.out.println("started " + worker);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
