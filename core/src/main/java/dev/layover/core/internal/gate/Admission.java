package dev.layover.core.internal.gate;

import java.time.Instant;

/**
 * The verdict on one call to a provider key its job's pick did not admit (a fallback chain's
 * endpoint, a key pool's key), or on a picked job that may no longer call, before the call is made.
 * Internal: used by Layover's engine; not part of the API.
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
     * @param runAt when the call could go
     * @param reason {@code cooldown}, {@code breaker_half_open}, {@code bucket} or
     *     {@code provider_state_unavailable}
     * @param detail the reason in a sentence
     */
    record Wait(Instant runAt, String reason, String detail) implements Admission {}

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
