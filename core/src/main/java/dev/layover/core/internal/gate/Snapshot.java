package dev.layover.core.internal.gate;

import java.time.Instant;
import dev.layover.core.provider.state.BreakerState;

/** One key's breaker and cooldown as last read from the database (or as last written here). */
record Snapshot(
        boolean hasBreakerRow,
        BreakerState state,
        Instant openUntil,
        boolean trialClaimed,
        Instant trialClaimedAt,
        Instant trialExpiresAt,
        String breakerReason,
        Instant cooldownUntil,
        String cooldownReason,
        String cooldownDetail) {

    static final Snapshot CLOSED = new Snapshot(true, BreakerState.CLOSED, null, false, null, null, null, null, null, null);

    Snapshot withBreaker(BreakerState s, Instant until, boolean claimed, Instant claimedAt, Instant expires, String reason) {
        return new Snapshot(true, s, until, claimed, claimedAt, expires, reason, cooldownUntil, cooldownReason, cooldownDetail);
    }

    Snapshot withCooldown(Instant until, String reason, String detail) {
        if (cooldownUntil != null && until != null && !until.isAfter(cooldownUntil)) {
            return this;
        }
        return new Snapshot(hasBreakerRow, state, openUntil, trialClaimed, trialClaimedAt, trialExpiresAt, breakerReason,
                until, reason, detail);
    }
}
