package dev.layover.core.provider;

import dev.layover.core.outcome.Outcome;
import java.time.Clock;
import java.time.Instant;

/**
 * The fleet-wide provider state a handler's own calls pass through, for calls to provider keys
 * other than the job's own: {@link FallbackChain} and {@link ApiKeyPool} are built on it, and a
 * handler may use it for routing of its own. Get it from {@code JobContext.providerCalls()}.
 *
 * <p>Each call of a key is {@link #ask}ed first, then its outcome {@link #record}ed; between them
 * the handler calls the provider. Database: {@code ask} reads the key's cached breaker and cooldown
 * (no round trip unless the key is throttled) and takes a bucket permit when the key has a bucket;
 * {@code record} does to the key's breaker and cooldown what the outcome's {@link Outcome.Kind}
 * says. Neither writes the job row; a job's attempts and reschedules follow only from the outcome
 * its handler returns. Thread-safe for the length of the run.
 */
public interface ProviderCalls {

    /**
     * May the key be called now?
     *
     * @param providerKey the key
     * @param tokens the call's token estimate, counted against the key's token limit (0: none)
     * @return granted (call, then record with it), wait (skip it until then) or refused (its
     *     breaker is open); never throws (an unreadable state is a wait)
     */
    Permission ask(String providerKey, long tokens);

    /**
     * Records what a granted call taught about its key.
     *
     * @param providerKey the key asked
     * @param granted the permission {@link #ask} gave
     * @param outcome what the call gave ({@link Outcome#done()} for an answer)
     * @return the key's cooldown end after this call when the outcome set one, else null
     */
    Instant record(String providerKey, Permission.Granted granted, Outcome outcome);

    /**
     * @return the clock the provider state's times are on (the database's time, as the engine
     *     reads it); the times of {@link Permission.Wait} and {@link Permission.Refused} compare to it
     */
    Clock clock();

    /**
     * Adds a line to the run's fallback trail ({@code provider_trail}, kept with the job when its
     * run ends in anything but done, and in its history row).
     *
     * @param step what happened with one key
     */
    void trail(FallbackStep step);

    /** The answer of {@link #ask}. */
    sealed interface Permission {

        /**
         * Call now.
         *
         * @param trial opaque; set when this call is the half-open breaker's one trial call, which
         *     {@link #record} reports
         */
        record Granted(String trial) implements Permission {}

        /**
         * Do not call before {@code until} (a cooldown, a half-open breaker whose trial another
         * worker holds, no free bucket permit, or provider state that cannot be read).
         *
         * @param until when the key may be asked again
         * @param reason {@code cooldown}, {@code breaker_half_open}, {@code bucket} or
         *     {@code provider_state_unavailable}
         * @param detail the reason in a sentence
         */
        record Wait(Instant until, String reason, String detail) implements Permission {}

        /**
         * The key's breaker is open: do not call.
         *
         * @param openUntil when its trial becomes possible ({@code Instant.MAX}: forced open without end)
         * @param detail the reason in a sentence
         */
        record Refused(Instant openUntil, String detail) implements Permission {}
    }
}
