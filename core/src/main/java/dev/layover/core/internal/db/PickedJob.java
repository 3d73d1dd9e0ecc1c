package dev.layover.core.internal.db;

/**
 * One row of a db-scheduler pick, as the pick returned it ({@link GatedDataSource} reads it while
 * db-scheduler does): what admission ahead of the job's run needs to know about it.
 *
 * @param taskName the job type
 * @param taskInstance the job's id
 * @param version its version after the pick (db-scheduler's)
 * @param providerKey its provider key, or null
 * @param heldPermitAt the bucket permit it holds for its run time ({@code permit_at} = {@code execution_time}), or
 *     null (a {@code permit_at} left from an earlier run time is no permit held, as V27's {@code holds_permit} reads it)
 * @param inLine whether it was rescheduled to a place in its key's waiting line (reason {@code bucket},
 *     {@code permit_at} null, as {@code TAKE_PERMITS} reads it)
 * @param fair whether it has a fairness key
 */
public record PickedJob(String taskName, String taskInstance, long version, String providerKey,
        java.time.Instant heldPermitAt, boolean inLine, boolean fair) {}
