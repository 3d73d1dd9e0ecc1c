package dev.layover.core.internal.observe;

import dev.layover.core.metrics.StateSample;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.spi.Db;

/**
 * Reads the queue and the provider state every {@link SafeMetrics#sampleInterval()} for the
 * gauges of a running instance: three short queries on one connection ({@link
 * SampleSql#SAMPLE_JOBS}, {@link SampleSql#SAMPLE_DEAD_LETTERS}, {@link SampleSql#SAMPLE_PROVIDER_KEYS}),
 * whatever the scrape rate. Runs nothing when the metrics want no sample (no metrics configured).
 *
 * <p>The job counts are a scan of the whole job table. Up to 200,000 jobs (the planner's
 * estimate of the table's rows) they are read at every sample; behind more, as seldom as the time
 * series' depth samples ({@link TimeSeriesSql#SAMPLE_SECONDS}: 10 s per 100,000 jobs, at most
 * 60 s), rounded up to whole sample intervals. A sample in between carries the last counts read;
 * the dead letters and provider keys are read every time.
 */
public final class StateSampler {

    private static final Logger LOG = LoggerFactory.getLogger(StateSampler.class);

    /** The shortest spacing of {@link TimeSeriesSql#SAMPLE_SECONDS}: a table under 200,000 jobs, counted at every sample. */
    private static final long SMALL_TABLE_SECONDS = 10;

    private final Db db;
    private final SafeMetrics metrics;
    private final String workerName;
    private volatile boolean running;
    private Thread thread;
    private final Duration every;
    private final Object jobsLock = new Object();
    private List<StateSample.JobCount> jobs;
    private int samplesSinceJobs;

    /**
     * @param db the database
     * @param metrics where samples go
     * @param workerName names the thread
     */
    public StateSampler(Db db, SafeMetrics metrics, String workerName) {
        this.db = db;
        this.metrics = metrics;
        this.workerName = workerName;
        this.every = metrics.sampleInterval();
    }

    /** Starts the sampling thread, when the metrics ask for samples. */
    public synchronized void start() {
        if (every == null || running) {
            return;
        }
        running = true;
        thread = new Thread(this::loop, "layover-metrics-" + workerName);
        thread.setDaemon(true);
        thread.start();
    }

    /** Stops the sampling thread. */
    public synchronized void stop() {
        running = false;
        if (thread != null) {
            thread.interrupt();
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            thread = null;
        }
    }

    private void loop() {
        boolean failing = false;
        while (running) {
            try {
                metrics.sampled(sample());
                if (failing) {
                    LOG.info("Layover: metrics sampling works again");
                    failing = false;
                }
            } catch (RuntimeException e) {
                if (!running) {
                    return;
                }
                if (!failing) {
                    LOG.warn("Layover: cannot read the queue for the metrics gauges (retrying every {} s): {}",
                            every.toSeconds(), e.getMessage());
                    failing = true;
                }
            }
            try {
                Thread.sleep(every.toMillis());
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /**
     * Reads one sample now. Its job counts are read again once the job table's size allows it
     * (see the class's comment), else carried from the last read.
     *
     * @return the sample
     */
    public StateSample sample() {
        return db.autocommit("sampling the queue for metrics", c -> {
            List<StateSample.JobCount> jobs = jobCountsNowOrLast(c);
            List<StateSample.DeadLetterCount> dead = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(SampleSql.SAMPLE_DEAD_LETTERS);
                    ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    dead.add(new StateSample.DeadLetterCount(rs.getString("job_type"), rs.getString("failure_type"),
                            rs.getString("state"), rs.getLong("n")));
                }
            }
            List<StateSample.ProviderKeyState> keys = new ArrayList<>();
            Instant at = null;
            try (PreparedStatement ps = c.prepareStatement(SampleSql.SAMPLE_PROVIDER_KEYS);
                    ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keys.add(new StateSample.ProviderKeyState(rs.getString("provider_key"), rs.getString("breaker_state"),
                            instant(rs, "cooldown_until"), number(rs, "request_permits"), number(rs, "token_permits")));
                    at = instant(rs, "sampled_at");
                }
            }
            if (at == null) {
                try (PreparedStatement ps = c.prepareStatement("SELECT now()"); ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    at = rs.getTimestamp(1).toInstant();
                }
            }
            return new StateSample(at, jobs, dead, keys);
        });
    }

    private List<StateSample.JobCount> jobCountsNowOrLast(Connection c) throws SQLException {
        synchronized (jobsLock) {
            samplesSinceJobs++;
            if (jobs == null || samplesSinceJobs >= samplesBetweenJobCounts(c)) {
                jobs = jobCounts(c);
                samplesSinceJobs = 0;
            }
            return jobs;
        }
    }

    private long samplesBetweenJobCounts(Connection c) throws SQLException {
        if (every == null) {
            return 1;
        }
        try (PreparedStatement ps = c.prepareStatement(TimeSeriesSql.SAMPLE_SECONDS); ResultSet rs = ps.executeQuery()) {
            long seconds = rs.next() ? rs.getLong(1) : 0;
            if (seconds <= SMALL_TABLE_SECONDS) {
                return 1;
            }
            return Math.max(1, (seconds * 1000 + every.toMillis() - 1) / every.toMillis());
        }
    }

    private static List<StateSample.JobCount> jobCounts(Connection c) throws SQLException {
        List<StateSample.JobCount> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(SampleSql.SAMPLE_JOBS); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.add(new StateSample.JobCount(rs.getString("job_type"), rs.getString("state"), rs.getLong("n"),
                        rs.getLong("due")));
            }
        }
        return out;
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        if (t == null) {
            return null;
        }
        // 'infinity' reads as a far-future timestamp; keep it an instant
        return t.toInstant();
    }

    private static Double number(ResultSet rs, String column) throws SQLException {
        double d = rs.getDouble(column);
        return rs.wasNull() ? null : d;
    }
}
