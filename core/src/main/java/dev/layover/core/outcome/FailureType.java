package dev.layover.core.outcome;

/**
 * Why a job was parked: the {@code failure_type} column of {@code layover.dead_letters}.
 *
 * <p>The recovery sweep replays {@link #autoReplayable() auto-replayable} types by itself when the
 * provider key's breaker closes; the others wait for a person.
 */
public enum FailureType {
    /** Attempts ran out on {@link Outcome.Overloaded} or {@link Outcome.Transient} failures. */
    PROVIDER_UNAVAILABLE("provider_unavailable", true),
    /** Picked while its provider key's breaker was open; the provider was not called. */
    BREAKER_OPEN("breaker_open", true),
    /** Rate limited past {@code maxReschedules}, or asked to wait longer than {@code maxDeferral}. */
    RATE_LIMIT_EXHAUSTED("rate_limit_exhausted", true),
    /** A quota with no known reset within {@code maxDeferral}; replayed once its reset has passed. */
    QUOTA_EXHAUSTED("quota_exhausted", true),
    /** The provider refused the credentials. */
    AUTH_REFUSED("auth_refused", false),
    /** The provider refused the request itself (a 4xx); never replayed automatically. */
    REJECTED("rejected", false),
    /** Attempts ran out on failures of the job's own (any exception Layover could not classify). */
    JOB_ERROR("job_error", false),
    /** The stored arguments could not be read as the job type's args type. */
    BAD_ARGS("bad_args", false),
    /** The handler returned {@link Outcome.Park}. */
    HANDLER_PARKED("handler_parked", false),
    /** Snoozed past {@code maxReschedules}. */
    SNOOZE_EXHAUSTED("snooze_exhausted", false),
    /**
     * Its deadline ({@code EnqueueOptions.withDeadline}) passed before it could run, or it would have
     * been rescheduled or retried past it. Not replayed automatically: the deadline said the work
     * is worthless by now.
     */
    DEADLINE_EXCEEDED("deadline_exceeded", false),
    /**
     * Cancelled by an operator ({@code JobControl.cancel}): the dead letter records who and why. Not
     * replayed automatically; a replay undoes the cancel.
     */
    CANCELLED("cancelled", false),
    /**
     * A job it runs after ({@code EnqueueOptions.withAfter}) was discarded from the dead-letter store:
     * it never ran. Not replayed automatically; a replay runs it without that job.
     */
    DEPENDENCY_FAILED("dependency_failed", false);

    private final String code;
    private final boolean autoReplayable;

    FailureType(String code, boolean autoReplayable) {
        this.code = code;
        this.autoReplayable = autoReplayable;
    }

    /** @return the value stored in {@code failure_type}, e.g. {@code "provider_unavailable"} */
    public String code() {
        return code;
    }

    /** @return whether the recovery sweep replays this type by default */
    public boolean autoReplayable() {
        return autoReplayable;
    }

    /**
     * @param code a stored {@code failure_type}
     * @return the type, or {@code null} when the code is not one of Layover's
     */
    public static FailureType fromCode(String code) {
        for (FailureType t : values()) {
            if (t.code.equals(code)) {
                return t;
            }
        }
        return null;
    }
}
