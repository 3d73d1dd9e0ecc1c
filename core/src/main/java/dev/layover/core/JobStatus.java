package dev.layover.core;

import java.time.Instant;

/**
 * Where a job is, looked up by its job type and id (its idempotency key when it was enqueued with
 * one): {@link Layover#lookup}. Read from the documented views, newest first: the live job
 * ({@code layover.jobs}), else its dead letter ({@code layover.dead_letters}), else its history row
 * ({@code layover.job_history}, kept for the history's retention, 7 days by default).
 *
 * @param jobType the job type
 * @param id the job id
 * @param state where it is
 * @param runAt when it runs (a live job), else null
 * @param attempts attempts spent
 * @param reschedules reschedules so far
 * @param failureType why it parked ({@code layover.dead_letters.failure_type}), else null
 * @param deadLetterId its dead letter, else null
 * @param finishedAt when it left the queue (completed, parked, cancelled), else null
 * @param resultJson what its handler returned with done ({@code Outcome.done(result)}) as JSON,
 *     else null
 */
public record JobStatus(String jobType, String id, State state, Instant runAt, int attempts, int reschedules,
        String failureType, Long deadLetterId, Instant finishedAt, String resultJson) {

    /** Where a job is. */
    public enum State {
        /** Waiting to run; never failed, never rescheduled. */
        SCHEDULED,
        /** Picked by a worker: running, or about to. */
        RUNNING,
        /** Waiting after a reschedule (a rate limit, a cooldown, a bucket permit), no attempt spent. */
        RESCHEDULED,
        /** Waiting for a retry after a failure (an attempt spent). */
        RETRYING,
        /** Parked: a dead letter waiting for the recovery sweep or a person. */
        PARKED,
        /** Parked, and needs a person (an automatic replay failed again, or its replay budget is spent). */
        REVIEW,
        /** Its dead letter was replayed, and the new job finished (its history says how) or is gone. */
        REPLAYED,
        /** Its dead letter was discarded by a person. */
        DISCARDED,
        /** Cancelled by an operator. */
        CANCELLED,
        /** Finished: its handler returned done. */
        COMPLETED;

        static State of(String code) {
            return switch (code) {
                case "running" -> RUNNING;
                case "rescheduled" -> RESCHEDULED;
                case "retrying" -> RETRYING;
                case "review" -> REVIEW;
                case "replayed" -> REPLAYED;
                case "discarded" -> DISCARDED;
                case "cancelled" -> CANCELLED;
                case "completed" -> COMPLETED;
                case "parked" -> PARKED;
                default -> SCHEDULED;
            };
        }
    }

    /**
     * @param code a state as the views name it ({@code running}, {@code parked}, {@code completed} ...)
     * @return the state
     */
    public static State stateOf(String code) {
        return State.of(code);
    }
}
