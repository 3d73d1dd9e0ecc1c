package dev.layover.core.provider.state;

import java.time.Instant;

/**
 * A change of a breaker's state.
 *
 * <p>Every transition is made by exactly one conditional {@code UPDATE}, so exactly one Layover
 * instance in the fleet sees it with {@code local = true}: react to local events to act once per
 * transition fleet-wide; the others learn of it by NOTIFY ({@code local = false}).
 *
 * @param providerKey the key
 * @param from the state before
 * @param to the state after
 * @param at when this instance saw it
 * @param reason why, e.g. "6 failures in 10 calls within PT1M: 503 ..." or "forced open: ..."
 * @param changedBy the worker name that made the change (or the operator's name)
 * @param local whether this Layover instance made the change
 */
public record BreakerEvent(String providerKey, BreakerState from, BreakerState to, Instant at, String reason,
        String changedBy, boolean local) {}
