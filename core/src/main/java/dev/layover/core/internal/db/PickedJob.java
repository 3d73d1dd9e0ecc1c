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
 *     null (a {@code permit_at} left from an earlier run time is no permit held, as {@code holds_permit} reads it)
 * @param placeAt its place in its key's waiting line ({@code execution_time} of a job rescheduled there:
 *     reason {@code bucket}, {@code permit_at} null, as {@code TAKE_PERMITS} reads it), or null: not in line
 * @param fair whether it has a fairness key
 */
public record PickedJob(String taskName, String taskInstance, long version, String providerKey,
        java.time.Instant heldPermitAt, java.time.Instant placeAt, boolean fair) {

    /** @return whether the job was picked at a place in its key's waiting line */
    public boolean inLine() {
        return placeAt != null;
    }
}
