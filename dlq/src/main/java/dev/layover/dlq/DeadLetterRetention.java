package dev.layover.dlq;

import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.Schedules;
import dev.layover.core.Layover;
import dev.layover.core.LayoverPlugin;
import dev.layover.core.spi.Db;
import dev.layover.core.spi.JobWrites;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retention of the dead-letter store: deletes {@code replayed} and {@code discarded} dead letters
 * whose state has not changed for longer than the retention period (default
 * {@link #DEFAULT_KEEP 30 days}). {@code parked} and {@code review} dead letters are never deleted.
 *
 * <p>Run it as a plugin of Layover: a db-scheduler recurring task of Layover's scheduler, scheduled
 * when the instance starts, run on one worker of the cluster at a time, every hour by default:
 *
 * <pre>{@code
 * Layover layover = Layover.builder(dataSource).register(...)
 *         .plugin(DeadLetterRetention.plugin())                                        // every default
 *         .start();
 * Layover custom = Layover.builder(dataSource).register(...)
 *         .plugin(DeadLetterRetention.builder(dataSource).keep(Duration.ofDays(14)).build())
 *         .start();
 * }</pre>
 *
 * <p>The older form, {@code addTask(retention.task())} and {@link #ensureScheduled()}, still works.
 *
 * <p>What it does to the database: {@code DELETE}s of at most {@code batchSize} rows (default
 * 10,000) of {@code layover.dead_letters}, each autocommitted, until fewer remain; then one
 * {@code layover.audit_log} row (action {@code purge}, actor {@code retention}) when something was
 * deleted. A job still live from a purged dead letter's replay is unaffected; if it parks, it gets a
 * new dead letter.
 */
public final class DeadLetterRetention implements LayoverPlugin {

    /** Default retention period of replayed and discarded dead letters: 30 days. */
    public static final Duration DEFAULT_KEEP = Duration.ofDays(30);
    /** Default interval between runs: 1 hour. */
    public static final Duration DEFAULT_EVERY = Duration.ofHours(1);
    /** Default rows per {@code DELETE}. */
    public static final int DEFAULT_BATCH_SIZE = 10_000;
    /** The db-scheduler task name ({@code task_name} of its row in {@code layover.scheduled_tasks}). */
    public static final String TASK_NAME = "layover-dead-letter-retention";

    private static final Logger LOG = LoggerFactory.getLogger(DeadLetterRetention.class);
    /** db-scheduler's instance id of a recurring task. */
    private static final String RECURRING_INSTANCE = "recurring";

    private final Db db;
    private final Duration keep;
    private final Duration every;
    private final int batchSize;

    private DeadLetterRetention(Builder b) {
        this.db = new Db(b.dataSource);
        this.keep = b.keep;
        this.every = b.every;
        this.batchSize = b.batchSize;
    }

    /**
     * @param dataSource the database holding Layover's schema (the one Layover runs on)
     * @return a builder with the defaults: keep 30 days, run every hour, 10,000 rows per delete
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /**
     * @param dataSource the database
     * @return retention with every default
     */
    public static DeadLetterRetention defaults(DataSource dataSource) {
        return builder(dataSource).build();
    }

    /**
     * Retention with every default (keep 30 days, run every hour), as a plugin for
     * {@code Layover.Builder#plugin}: it works on the database of the instance it is given to.
     *
     * @return the plugin
     */
    public static LayoverPlugin plugin() {
        return layover -> defaults(layover.dataSource()).tasks(layover);
    }

    /**
     * The plugin's task: {@link #task()}, scheduled by Layover when the instance starts.
     *
     * @param layover the instance being started
     * @return the recurring task
     */
    @Override
    public List<Task<?>> tasks(Layover layover) {
        return List.of(task());
    }

    /**
     * The recurring task to add to Layover with {@code Layover.Builder.addTask(..)}: runs
     * {@link #purgeNow()} every {@code every}, on one worker of the cluster at a time.
     *
     * @return the task
     */
    public RecurringTask<Void> task() {
        return Tasks.recurring(TASK_NAME, Schedules.fixedDelay(every)).execute((instance, ctx) -> purgeNow());
    }

    /**
     * Schedules the task's first run (due now) unless it is scheduled already: one {@code INSERT ..
     * ON CONFLICT DO NOTHING} into {@code layover.scheduled_tasks}. Idempotent and safe from many
     * JVMs. Not needed with {@link #plugin()} (Layover schedules a plugin's recurring task when it
     * starts), nor with {@code addTask} since Layover schedules recurring tasks added that way too;
     * kept for code written before.
     */
    public void ensureScheduled() {
        JobWrites jobs = JobWrites.on(db.dataSource());
        db.autocommit("scheduling dead-letter retention", c -> jobs.scheduleRecurring(c, TASK_NAME, RECURRING_INSTANCE));
    }

    /**
     * Deletes replayed and discarded dead letters whose state changed before now minus the
     * retention period.
     *
     * @return how many were deleted
     */
    public long purgeNow() {
        Timestamp cutoff = Timestamp.from(db.now().minus(keep)); // the database's time, not this JVM's
        long total = 0;
        while (true) {
            int n = db.autocommit("purging dead letters", c -> {
                try (PreparedStatement ps = c.prepareStatement(DlqSql.PURGE)) {
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
            long deleted = total;
            db.autocommit("writing the audit log", c -> AuditLog.insert(c, "retention", "purge", null, deleted, null,
                    null, null, "{\"keep\":\"" + keep + "\",\"cutoff\":\"" + cutoff.toInstant() + "\"}", true));
            LOG.info("Purged {} replayed or discarded dead letters older than {}", deleted, keep);
        }
        return total;
    }

    /** @return the retention period */
    public Duration keep() {
        return keep;
    }

    /** @return the interval between runs */
    public Duration every() {
        return every;
    }

    /** Configures a {@link DeadLetterRetention}. */
    public static final class Builder {
        private final DataSource dataSource;
        private Duration keep = DEFAULT_KEEP;
        private Duration every = DEFAULT_EVERY;
        private int batchSize = DEFAULT_BATCH_SIZE;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /**
         * @param period how long replayed and discarded dead letters are kept after their last
         *     state change; positive; default 30 days
         * @return this builder
         */
        public Builder keep(Duration period) {
            this.keep = positive(period, "keep");
            return this;
        }

        /**
         * @param interval time between the end of one run and the start of the next; default 1 hour
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
        public DeadLetterRetention build() {
            return new DeadLetterRetention(this);
        }

        private static Duration positive(Duration d, String name) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, was " + d);
            }
            return d;
        }
    }
}
