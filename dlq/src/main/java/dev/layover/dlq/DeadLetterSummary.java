package dev.layover.dlq;

import java.time.Instant;

/**
 * One row of a dead-letter page: enough to list and choose, without args and error history (see
 * {@link DeadLetter} for those).
 *
 * @param id the dead letter's id
 * @param jobType the job type name
 * @param jobId the parked job's id; a replay's job gets the same id
 * @param providerKey the provider key, or {@code null}
 * @param failureType why it was parked, e.g. {@code provider_unavailable}
 * @param errorClass the last error's class, or {@code null}
 * @param errorMessage the last error's message, cut to 1,000 characters
 * @param attempts attempts spent by the last job
 * @param reschedules reschedules of the last job
 * @param parkCount how many times it was parked (more than 1 after a replay parked again)
 * @param state its state
 * @param parkedAt when it was (last) parked
 * @param stateChangedAt when its state last changed
 * @param replayCount how many replays were made of it
 * @param jobTypeRegistered whether its job type is registered in the {@link DeadLetters}' Layover
 *     instance; when {@code false} it cannot be replayed from there (it stays parked until the type is
 *     registered again, or someone discards it)
 */
public record DeadLetterSummary(
        long id,
        String jobType,
        String jobId,
        String providerKey,
        String failureType,
        String errorClass,
        String errorMessage,
        int attempts,
        int reschedules,
        int parkCount,
        DeadLetterState state,
        Instant parkedAt,
        Instant stateChangedAt,
        int replayCount,
        boolean jobTypeRegistered) {}
