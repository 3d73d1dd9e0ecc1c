package dev.layover.core;

import java.time.Instant;

/**
 * What a handler knows about the run in progress.
 */
public interface JobContext {

    /** @return the job's id (its idempotency key, if it was enqueued with one); stable across retries and replays */
    String jobId();

    /** @return the job type's name */
    String jobType();

    /** @return which attempt this is, from 1: attempts already spent plus one. Rate-limit reschedules do not count */
    int attempt();

    /** @return the time the job was due to run */
    Instant runAt();

    /** @return the job's provider key (e.g. {@code openai:gpt-4o-mini}), or {@code null} */
    String providerKey();

    /**
     * Whether the worker is shutting down; a long handler may check it and return
     * {@link dev.layover.core.outcome.Outcome#snooze(java.time.Duration)} to give the job back.
     *
     * @return true while stopping
     */
    boolean isStopping();
}
