package dev.layover.core;

import dev.layover.core.provider.ApiKeyPool;
import dev.layover.core.provider.FallbackChain;
import dev.layover.core.provider.ProviderCalls;
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

    /**
     * Whether an operator asked this job to stop ({@code JobControl.cancel} while it runs). Layover
     * never interrupts a handler for a cancel: a long handler checks this between steps and
     * returns (any outcome but done parks the job {@code cancelled}; done means the work finished
     * anyway). Seen within about a second of the request.
     *
     * @return true once a cancel was requested
     */
    default boolean isCancelled() {
        return false;
    }

    /**
     * @return the job's deadline ({@code EnqueueOptions.withDeadline}) when this worker knows it,
     *     else {@code null}
     */
    default Instant deadline() {
        return null;
    }

    /**
     * @return the keys besides the provider key whose limits and pauses this job is subject to
     *     ({@code JobType.Builder#limitKeys}), possibly empty
     */
    default java.util.List<String> limitKeys() {
        return java.util.List.of();
    }

    /**
     * The fleet-wide provider state this run's own calls of other provider keys pass through
     * ({@link FallbackChain} and {@link ApiKeyPool} use it).
     *
     * @return the run's provider calls
     * @throws IllegalStateException for a context that Layover did not make (a test's own)
     */
    default ProviderCalls providerCalls() {
        throw new IllegalStateException("providerCalls() needs the JobContext Layover passed to the handler");
    }
}
