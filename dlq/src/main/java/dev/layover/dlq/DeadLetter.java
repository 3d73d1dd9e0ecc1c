package dev.layover.dlq;

import java.time.Instant;
import java.util.List;

/**
 * One dead letter with everything kept about it: its args, the error of every attempt (of every
 * job that parked into it), and its replay history.
 *
 * @param id the dead letter's id
 * @param jobType the job type name
 * @param jobId the parked job's id (its idempotency key when it had one); replays reuse it
 * @param providerKey the provider key, or {@code null}
 * @param failureType why it was (last) parked, e.g. {@code provider_unavailable}
 * @param errorClass the last error's class, or {@code null}
 * @param errorMessage the last error's message
 * @param args the args as JSON text (exactly what a replay enqueues), or {@code null} when the
 *     stored args were not JSON (see {@code argsRaw})
 * @param argsRaw the stored bytes when they were not JSON, else {@code null}
 * @param attempts attempts spent by the last job
 * @param reschedules reschedules of the last job
 * @param priority the job's priority, or {@code null}
 * @param firstEnqueuedAt when the original job was enqueued
 * @param parkedAt when it was (last) parked
 * @param parkCount how many times it was parked
 * @param state its state
 * @param stateChangedAt when its state last changed
 * @param replayCount replays of every kind
 * @param autoReplayCount sweep replays since it was last moved back to parked (the spent part of
 *     its automatic replay budget)
 * @param errors the error of every failed attempt, oldest first
 * @param replays every replay, oldest first
 * @param jobTypeRegistered whether its job type is registered in the {@link DeadLetters}' Layover
 *     instance (a replay is refused when it is not)
 */
public record DeadLetter(
        long id,
        String jobType,
        String jobId,
        String providerKey,
        String failureType,
        String errorClass,
        String errorMessage,
        String args,
        byte[] argsRaw,
        int attempts,
        int reschedules,
        Integer priority,
        Instant firstEnqueuedAt,
        Instant parkedAt,
        int parkCount,
        DeadLetterState state,
        Instant stateChangedAt,
        int replayCount,
        int autoReplayCount,
        List<AttemptError> errors,
        List<Replay> replays,
        boolean jobTypeRegistered) {


    /**
     * The error of one failed attempt, as core wrote it into {@code errors}.
     *
     * @param attempt the attempt number within its job (restarts at 1 for a replay's job)
     * @param at when it failed, or {@code null}
     * @param kind what kind of failure: {@code error}, {@code transient}, {@code overloaded},
     *     {@code rate_limited}, ...
     * @param errorClass the exception class or provider error name
     * @param message the message
     * @param stackTrace the exception's stack trace as core stored it (bounded by
     *     {@code Layover.Builder.stackTraceChars}, secrets masked), or {@code null} (none was thrown,
     *     or traces are off)
     * @param json the stored JSON object, with any field not listed here
     */
    public record AttemptError(Integer attempt, Instant at, String kind, String errorClass, String message,
            String stackTrace, String json) {}

    /**
     * One replay of this dead letter.
     *
     * @param jobId the id of the job it created (the dead letter's job id)
     * @param at when
     * @param by who (the name the caller passed)
     * @param kind manual, sweep or trial
     * @param argsEdited whether the args were edited for this replay (before and after are in the
     *     audit log)
     */
    public record Replay(String jobId, Instant at, String by, ReplayKind kind, boolean argsEdited) {}
}
