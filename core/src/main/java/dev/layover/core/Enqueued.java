package dev.layover.core;

/**
 * The job an enqueue refers to.
 *
 * @param jobType the job type's name
 * @param id the job's id ({@code id} in {@code layover.jobs})
 * @param created true when this call inserted the job; false when the idempotency key named a job
 *     that already existed (live, or parked), and nothing was written
 */
public record Enqueued(String jobType, String id, boolean created) {}
