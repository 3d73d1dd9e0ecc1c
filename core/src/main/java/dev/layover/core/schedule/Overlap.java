package dev.layover.core.schedule;

/**
 * What a schedule does with an occurrence that comes due while the job of its previous occurrence
 * is still in the queue (waiting, running, or backing off between retries; a parked or finished
 * job has left it). Default {@link #SKIP}.
 */
public enum Overlap {
    /** The occurrence is dropped; {@code last_outcome} says {@code skipped_overlap}. The default. */
    SKIP,
    /**
     * The occurrence is held back ({@code held_by_overlap} in {@code layover.schedules_view}) and
     * enqueued once the previous occurrence's job has left the queue; a held occurrence is never
     * counted as missed. At most one occurrence of the schedule is in the queue at a time:
     * occurrences due meanwhile follow the missed-run policy.
     */
    QUEUE,
    /** The occurrence is enqueued whatever the previous one does: occurrences may run side by side. */
    ALLOW
}
