package dev.layover.core.schedule;

import java.time.Duration;
import java.time.Instant;

/**
 * A schedule as {@code layover.schedules_view} shows it.
 *
 * @param tenant the tenant ({@code ""} for schedules from code)
 * @param name the name
 * @param jobType the job type of its occurrences
 * @param source {@code code} or {@code api}
 * @param cron the cron expression, or null for an interval
 * @param zone the cron expression's zone id, or null
 * @param every the interval, or null for a cron expression
 * @param argsJson the stored args (JSON), or null when code computes them per occurrence
 * @param missed the missed-run policy ({@code skip}, {@code run_last}, {@code catch_up})
 * @param overlap the overlap policy ({@code skip}, {@code queue}, {@code allow})
 * @param paused whether it is paused
 * @param removed whether its code no longer defines it (a code schedule's tombstone)
 * @param nextAt its next occurrence, or null while paused or removed
 * @param heldByOverlap whether its next occurrence is held back until the previous one leaves the queue
 * @param lastAt its last occurrence enqueued, or null
 * @param lastJobId that occurrence's job id, or null
 * @param lastOutcome what the scheduler did last ({@code enqueued}, {@code enqueued_catch_up},
 *     {@code skipped_overlap}, {@code held_overlap}, {@code missed}, {@code args_failed},
 *     {@code triggered}), or null
 * @param lastJobState the last occurrence's job now: {@code waiting}, {@code running},
 *     {@code completed}, {@code parked}, {@code cancelled}, or null when unknown
 */
public record ScheduleInfo(String tenant, String name, String jobType, String source, String cron, String zone,
        Duration every, String argsJson, String missed, String overlap, boolean paused, boolean removed,
        Instant nextAt, boolean heldByOverlap, Instant lastAt, String lastJobId, String lastOutcome,
        String lastJobState) {}
