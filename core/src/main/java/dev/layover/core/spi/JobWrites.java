package dev.layover.core.spi;

import dev.layover.core.internal.jobs.JobStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import javax.sql.DataSource;

/**
 * The writes of the job table ({@code layover.scheduled_tasks}) that Layover's other modules need:
 * the dead-letter store's replays and its recurring tasks. The job table's one owner is core's job
 * store; this is its door for {@code layover-dlq} and {@code layover-replay-console}, not an API
 * for applications (which enqueue with {@code Layover}).
 */
public interface JobWrites {

    /**
     * The job store of a database.
     *
     * @param dataSource the Layover database
     * @return its job writes
     */
    static JobWrites on(DataSource dataSource) {
        return new JobStore(new Db(dataSource));
    }

    /**
     * A job a replay inserted.
     *
     * @param deadLetterId the dead letter it was made from
     * @param jobId its id (the dead letter's job id)
     * @param runAt its run time
     */
    record Replayed(long deadLetterId, String jobId, Instant runAt) {}

    /**
     * Inserts one fresh job per dead letter, in the caller's transaction: the dead letter's job type,
     * job id, args (or the edited args given), priority, provider key, limit keys, fairness key and
     * trace context, with {@code dead_letter_id} and {@code replay_kind} set. Of the columns an
     * enqueue writes it leaves out {@code deadline} (a replay is a new decision), {@code args_shape},
     * {@code token_estimate} and {@code fair_tag}. Nothing is inserted where a live job has that
     * type and id. The caller holds the dead letters locked ({@code FOR UPDATE}), so two replays of
     * one dead letter never both insert.
     *
     * @param c the caller's connection, in its transaction
     * @param deadLetterIds the dead letters, in order
     * @param editedArgs per dead letter the edited args as JSON text, or null for its stored args
     * @param runAt the run time (null: the database's now)
     * @param spreadMs each job's run time is spread uniformly over this many milliseconds after it
     * @param replayKind {@code manual}, {@code sweep} or {@code trial}
     * @return the jobs inserted
     * @throws SQLException on a database error
     */
    List<Replayed> insertReplays(Connection c, long[] deadLetterIds, String[] editedArgs, Instant runAt, long spreadMs,
            String replayKind) throws SQLException;

    /**
     * Brings a recurring task's next run forward to now, when it is not running.
     *
     * @param taskName the db-scheduler task name (instance {@code recurring})
     * @return rows moved, 0 or 1
     */
    int nudgeRecurring(String taskName);

    /**
     * Writes a recurring task's first run as db-scheduler's own start-up scheduling would, unless it
     * exists.
     *
     * @param c the caller's connection
     * @param taskName the task name
     * @param instance its instance id
     * @return rows inserted, 0 or 1
     * @throws SQLException on a database error
     */
    int scheduleRecurring(Connection c, String taskName, String instance) throws SQLException;
}
