package dev.layover.core.internal.gate;

import java.time.Instant;

/**
 * The verdict on one call to a provider key, before it is made. Internal: used by Layover's engine
 * and {@link dev.layover.core.provider.FallbackChain}; not part of the API.
 */
public sealed interface Admission {

    /**
     * Call now.
     *
     * @param trialToken the claim of the breaker's trial call when this call is the trial, else
     *     {@code null}; report the outcome with it
     */
    record Go(String trialToken) implements Admission {}

    /**
     * Do not call yet; ask again at {@code runAt}. No attempt is spent.
     *
     * @param runAt when to run again (jitter included for jobs)
     * @param reason {@code cooldown}, {@code breaker_half_open}, {@code bucket} or
     *     {@code provider_state_unavailable}
     * @param detail the reason in a sentence
     * @param permitAt for {@code bucket}: the permit the job now holds for {@code runAt}, else null
     * @param aheadOfLine for {@code bucket}: the permit was one a place in the key's waiting line
     *     stood for (the line reached past it), so the line is realigned
     *     ({@link ProviderGate#realignLine}); false otherwise
     */
    record Wait(Instant runAt, String reason, String detail, Instant permitAt, boolean aheadOfLine) implements Admission {

        /** A wait that took no place's permit ({@code aheadOfLine} false). */
        public Wait(Instant runAt, String reason, String detail, Instant permitAt) {
            this(runAt, reason, detail, permitAt, false);
        }
    }

    /**
     * The breaker is open: do not call.
     *
     * @param openUntil when the breaker's trial becomes possible ({@code Instant.MAX} when forced
     *     open without an end)
     * @param detail the reason in a sentence
     */
    record Refuse(Instant openUntil, String detail) implements Admission {}

    /**
     * The call's token reservation is larger than a dimension of its key's bucket can ever admit
     * (its capacity): it would wait forever. A job parks {@code rejected} at once.
     *
     * @param detail the numbers in a sentence
     */
    record TooLarge(String detail) implements Admission {}
}
