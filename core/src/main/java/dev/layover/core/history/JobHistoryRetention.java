package dev.layover.core.history;

import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retention of the finished-job history ({@code layover.job_history}): deletes the rows of jobs
 * that finished longer ago than the retention period (default {@link #DEFAULT_KEEP 7 days}); with
 * them, groups settled that long ago whose callback has finished (their {@code layover.groups} row
 * and member rows) and dependency edges that ended that long ago ({@code layover.job_dependencies}).
 *
 * <p>A running Layover instance with history on runs it by itself, with the period of
 * {@code Layover.Builder.historyRetention}: on a background thread, once when the workers start
 * and then every {@link #DEFAULT_EVERY 10 minutes}. It is part of the engine, like the heartbeat,
 * not a job: it adds no row to the job table. The instances of a fleet share the work (each
 * {@code DELETE} takes its rows with {@code FOR UPDATE SKIP LOCKED}), so running it everywhere
 * costs one index probe per instance and period when there is nothing to delete.
 *
 * <p>Use this class directly to purge now, or to run the retention in a process that runs no jobs:
 *
 * <pre>{@code
 * long deleted = JobHistoryRetention.builder(dataSource).keep(Duration.ofDays(2)).build().purgeNow();
 * }</pre>
 *
 * <p>What it does to the database: {@code DELETE}s of at most {@code batchSize} rows (default
 * 10,000), each autocommitted, the oldest first (by the {@code finished_at} index), until fewer
 * remain; then {@code DELETE}s of at most 100 settled groups each, and one of ended dependency edges.
 * One INFO line per run that deleted something.
 */
public final class JobHistoryRetention {

    /** Default retention period of history rows: 7 days. */
    public static final Duration DEFAULT_KEEP = Duration.ofDays(7);
    /** Default interval between runs: 10 minutes. */
    public static final Duration DEFAULT_EVERY = Duration.ofMinutes(10);
    /** Default rows per {@code DELETE}. */
    public static final int DEFAULT_BATCH_SIZE = 10_000;

    private static final Logger LOG = LoggerFactory.getLogger(JobHistoryRetention.class);

    /**
     * The oldest rows first, by ctid (a TID scan: no second index walk); rows another instance is
     * deleting at the same moment are skipped, not waited for.
     */
    private static final String PURGE = """
            DELETE FROM layover.job_history
            WHERE ctid = ANY (ARRAY(SELECT ctid FROM layover.job_history
                                    WHERE finished_at < ?
                                    ORDER BY finished_at
                                    LIMIT ?
                                    FOR UPDATE SKIP LOCKED))""";

    /**
     * Groups settled before the cutoff whose callback is neither live nor parked (their members go
     * with them: {@code ON DELETE CASCADE}), 100 groups per statement. Parameter: cutoff.
     */
    private static final String PURGE_GROUPS = """
            DELETE FROM layover.groups g
            WHERE g.id = ANY (ARRAY(SELECT x.id FROM layover.groups x
                                    WHERE x.settled_at < ?
                                      AND NOT EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                                                      WHERE t.task_name = x.callback_type AND t.task_instance = x.id)
                                      AND NOT EXISTS (SELECT 1 FROM layover.dead_letters d
                                                      WHERE d.job_type = x.callback_type AND d.job_id = x.id
                                                        AND d.state IN ('parked', 'review'))
                                    LIMIT 100
                                    FOR UPDATE SKIP LOCKED))""";

    /** Dependency edges that ended (completed or failed) before the cutoff. Parameter: cutoff. */
    private static final String PURGE_DEPENDENCIES = """
            DELETE FROM layover.job_dependencies WHERE state <> 'waiting' AND ended_at < ?""";

    private final Db db;
    private final Duration keep;
    private final Duration every;
    private final int batchSize;
    private final dev.layover.core.internal.time.BackgroundLoop background;

    private JobHistoryRetention(Builder b) {
        this.db = new Db(b.dataSource);
        this.keep = b.keep;
        this.every = b.every;
        this.background = new dev.layover.core.internal.time.BackgroundLoop(LOG, "job history retention", every,
                this::purgeNow);
        this.batchSize = b.batchSize;
    }

    /**
     * @param dataSource the database holding Layover's schema
     * @return a builder with the defaults: keep 7 days, run every 10 minutes, 10,000 rows per delete
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /**
     * Deletes the history rows of jobs that finished before now minus the retention period.
     *
     * @return how many were deleted
     */
    public long purgeNow() {
        Timestamp cutoff = Timestamp.from(db.now().minus(keep)); // the database's time, not this JVM's
        long total = 0;
        while (true) {
            int n = db.autocommit("purging job history", c -> {
                try (PreparedStatement ps = c.prepareStatement(PURGE)) {
                    ps.setTimestamp(1, cutoff);
                    ps.setInt(2, batchSize);
                    return ps.executeUpdate();
                }
            });
            total += n;
            if (n < batchSize) {
                break;
            }
        }
        if (total > 0) {
            LOG.info("Purged {} job history rows of jobs finished before {} (kept {})", total, cutoff.toInstant(), keep);
        }
        long groups = purgeComposition(cutoff);
        if (groups > 0) {
            LOG.info("Purged {} groups and ended dependencies settled before {}", groups, cutoff.toInstant());
        }
        return total;
    }

    /**
     * Groups (with their members) settled before the cutoff whose callback finished, and dependency
     * edges that ended before it ({@code docs/composition.md}).
     *
     * @return the groups and edges deleted
     */
    private long purgeComposition(Timestamp cutoff) {
        long total = 0;
        while (true) {
            int n = db.autocommit("purging settled groups", c -> {
                try (PreparedStatement ps = c.prepareStatement(PURGE_GROUPS)) {
                    ps.setTimestamp(1, cutoff);
                    return ps.executeUpdate();
                }
            });
            total += n;
            if (n < 100) {
                break;
            }
        }
        return total + db.autocommit("purging ended dependencies", c -> {
            try (PreparedStatement ps = c.prepareStatement(PURGE_DEPENDENCIES)) {
                ps.setTimestamp(1, cutoff);
                return ps.executeUpdate();
            }
        });
    }

    /**
     * Starts purging in the background: now, then every {@code every}. Layover calls it when its
     * workers start (history on, a retention period set). Does nothing when already started.
     *
     * @param name names the thread (the worker name)
     */
    public void start(String name) {
        background.start("layover-history-retention-" + name);
    }

    /** Stops the background purging (a purge under way finishes its current batch). */
    public void stop() {
        background.stop(Duration.ofSeconds(2));
    }

    /** @return the retention period */
    public Duration keep() {
        return keep;
    }

    /** @return the interval between runs */
    public Duration every() {
        return every;
    }

    @Override
    public String toString() {
        return "JobHistoryRetention[keep " + keep + ", every " + every + "]";
    }

    /** Configures a {@link JobHistoryRetention}. */
    public static final class Builder {
        private final DataSource dataSource;
        private Duration keep = DEFAULT_KEEP;
        private Duration every = DEFAULT_EVERY;
        private int batchSize = DEFAULT_BATCH_SIZE;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /**
         * @param period how long history rows are kept after their job finished; positive;
         *     default 7 days
         * @return this builder
         */
        public Builder keep(Duration period) {
            this.keep = positive(period, "keep");
            return this;
        }

        /**
         * @param interval time between the end of one run and the start of the next; default 10 minutes
         * @return this builder
         */
        public Builder every(Duration interval) {
            this.every = positive(interval, "every");
            return this;
        }

        /**
         * @param rows rows per {@code DELETE}, 1-100,000; default 10,000
         * @return this builder
         */
        public Builder batchSize(int rows) {
            if (rows < 1 || rows > 100_000) {
                throw new IllegalArgumentException("batch size must be 1-100000, was " + rows);
            }
            this.batchSize = rows;
            return this;
        }

        /** @return the retention */
        public JobHistoryRetention build() {
            return new JobHistoryRetention(this);
        }

        private static Duration positive(Duration d, String name) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, was " + d);
            }
            return d;
        }
    }
}
