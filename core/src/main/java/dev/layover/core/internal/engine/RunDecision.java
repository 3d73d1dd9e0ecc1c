package dev.layover.core.internal.engine;

import dev.layover.core.outcome.FailureType;
import java.time.Instant;

/**
 * What becomes of one run of a job, as {@link RunDecider} decides it and {@link OutcomeWriter}
 * writes it. Pure values: no database, no clock.
 */
sealed interface RunDecision {

    /**
     * The job is finished: its row is deleted (batched).
     *
     * @param result what the handler returned with done, or null
     */
    record Complete(Object result) implements RunDecision {}

    /**
     * Run again at {@code runAt} without spending an attempt ({@code reschedules + 1}).
     *
     * @param runAt the new run time
     * @param reason {@code last_reschedule_reason}, e.g. {@code rate_limited}, {@code bucket}
     * @param detail {@code last_reschedule_detail}
     * @param whenCapped what the job parks as if it already reached {@code maxReschedules}
     */
    record Reschedule(Instant runAt, String reason, String detail, FailureType whenCapped)
            implements RunDecision {}

    /**
     * Run again at {@code runAt}, an attempt spent.
     *
     * @param runAt the new run time
     * @param attempts the attempts spent with this one
     * @param error this attempt's error
     */
    record Retry(Instant runAt, int attempts, AttemptError error) implements RunDecision {}

    /**
     * Move the job to its dead letter.
     *
     * @param type why
     * @param message the dead letter's error message
     * @param attempts the attempts to record
     * @param error the last attempt's error, appended to the job's errors
     */
    record Park(FailureType type, String message, int attempts, AttemptError error) implements RunDecision {}

    /**
     * One entry of a job's {@code errors} log.
     *
     * @param attempt the attempt number it happened in
     * @param at when
     * @param kind its kind (an outcome's tag, or an engine reason such as {@code worker_lost})
     * @param errorClass the exception class, or a name for the kind of failure
     * @param message what happened
     */
    record AttemptError(int attempt, Instant at, String kind, String errorClass, String message) {}
}
