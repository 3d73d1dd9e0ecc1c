package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.provider.state.BreakerState;
import dev.layover.testing.PureTest;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The recovery sweep's decisions without a database, at fixed database times. */
@PureTest
class SweepPolicyTest {

    private static final Instant T0 = Instant.parse("2026-12-01T10:00:00Z");
    private final RecoverySweep settings = RecoverySweep.builder().firstBatch(10).growthFactor(2).maxBatch(100)
            .spreadOver(Duration.ofSeconds(10)).closeGrace(Duration.ofMinutes(1))
            .trialEvery(Duration.ofMinutes(1), Duration.ofMinutes(9)).trialBackoff(2).build();
    private final SweepPolicy policy = new SweepPolicy(settings);

    private static SweepKey key(BreakerState breaker, Instant now) {
        SweepKey k = new SweepKey();
        k.providerKey = "test:key";
        k.now = now;
        k.breaker = breaker;
        k.closedAt = breaker == BreakerState.CLOSED ? T0 : null;
        k.hasState = true;
        SweepState s = new SweepState();
        s.phase = SweepState.IDLE;
        s.batchSize = 10;
        k.state = s;
        return k;
    }

    @Test
    void aNewCloseStartsASweepWhoseFirstBatchWaitsForTheBreakerToSettle() {
        SweepKey k = key(BreakerState.CLOSED, T0.plusMillis(200));
        k.newClose = true;
        SweepState s = k.state.copy();
        assertEquals(SweepPolicy.Mode.SWEEP, policy.enter(k, s));
        assertEquals(T0.plus(Duration.ofMinutes(1)), s.cutoff, "what parked up to the close plus its grace");
        SweepPolicy.SweepStep.Batch b = (SweepPolicy.SweepStep.Batch) policy.nextSweepStep(k, s, null);
        assertEquals(10, b.size());
        assertEquals(T0.plus(RecoverySweep.SETTLE), b.runAt());
        policy.batchReplayed(k, s, b, 10, 0, 1, 10);
        assertEquals(SweepState.SWEEPING, s.phase);
        assertEquals(b.runAt().plus(Duration.ofSeconds(10)), s.nextBatchAt);
    }

    @Test
    void aBatchThatWentWellGrowsTheNextOne() {
        SweepKey k = key(BreakerState.CLOSED, T0.plusSeconds(30));
        SweepState s = sweeping(k);
        assertTrue(SweepPolicy.needsHealth(k, s));
        SweepPolicy.SweepStep.Batch b = (SweepPolicy.SweepStep.Batch) policy.nextSweepStep(k, s,
                new SweepPolicy.Health(0, 0, 0));
        assertEquals(20, b.size());
    }

    @Test
    void replaysFailingAgainCutTheBatchInHalfAndWaitASpread() {
        SweepKey k = key(BreakerState.CLOSED, T0.plusSeconds(30));
        SweepState s = sweeping(k);
        SweepPolicy.SweepStep.SlowDown d = (SweepPolicy.SweepStep.SlowDown) policy.nextSweepStep(k, s,
                new SweepPolicy.Health(0, 1, 1));
        assertEquals(2, d.failing());
        assertEquals(5, s.batchSize);
        assertEquals(SweepState.SLOWED, s.phase);
        assertEquals(k.now.plus(Duration.ofSeconds(10)), s.nextBatchAt);
        assertEquals(1, s.parkedAgain);
    }

    @Test
    void aBatchMostlyNotRunYetIsWaitedFor() {
        SweepKey k = key(BreakerState.CLOSED, T0.plusSeconds(30));
        SweepState s = sweeping(k);
        assertInstanceOf(SweepPolicy.SweepStep.Wait.class, policy.nextSweepStep(k, s, new SweepPolicy.Health(6, 0, 0)));
        assertEquals(SweepState.WAITING, s.phase);
    }

    @Test
    void aCoolingKeyAndABatchNotDueYetWait() {
        SweepKey cooling = key(BreakerState.CLOSED, T0.plusSeconds(30));
        cooling.cooldownUntil = T0.plusSeconds(40);
        SweepState s = sweeping(cooling);
        assertFalse(SweepPolicy.needsHealth(cooling, s));
        assertInstanceOf(SweepPolicy.SweepStep.Wait.class, policy.nextSweepStep(cooling, s, null));
        assertEquals(SweepState.WAITING, s.phase);
        SweepKey early = key(BreakerState.CLOSED, T0.plusSeconds(5));
        SweepState e = sweeping(early);
        e.nextBatchAt = T0.plusSeconds(11);
        assertInstanceOf(SweepPolicy.SweepStep.Wait.class, policy.nextSweepStep(early, e, null));
    }

    @Test
    void nothingLeftEndsARunningSweepOnly() {
        SweepKey k = key(BreakerState.CLOSED, T0);
        SweepState s = sweeping(k);
        assertTrue(SweepPolicy.nothingLeft(s));
        assertEquals(SweepState.IDLE, s.phase);
        assertFalse(SweepPolicy.nothingLeft(s));
    }

    @Test
    void anOpenBreakerStopsTheSweepAndTrialsBackOff() {
        SweepKey k = key(BreakerState.OPEN, T0);
        k.openUntil = T0.plusSeconds(30);
        SweepState s = sweeping(k);
        assertEquals(SweepPolicy.Mode.TRIAL, policy.enter(k, s));
        assertEquals(SweepState.BREAKER_OPEN, s.phase);
        SweepPolicy.TrialStep t = policy.nextTrialStep(k, s);
        assertTrue(t.replay());
        assertEquals(T0.plusSeconds(30).plus(RecoverySweep.TRIAL_MARGIN), t.runAt(), "the trial is due when the breaker may be tried");
        assertEquals(Duration.ofMinutes(1), t.interval());
        SweepPolicy.trialReplayed(k, s, t, 42, null);
        assertEquals(1, s.trials);
        SweepKey later = key(BreakerState.OPEN, T0.plusSeconds(60));
        assertFalse(policy.nextTrialStep(later, s).replay(), "the next trial waits its interval");
        SweepKey due = key(BreakerState.OPEN, s.nextTrialAt);
        assertEquals(Duration.ofMinutes(2), policy.nextTrialStep(due, s).interval(), "each trial of an outage waits longer");
    }

    @Test
    void noTrialWhileHeldOpenOrInFlight() {
        SweepKey held = key(BreakerState.OPEN, T0);
        held.heldOpen = true;
        assertFalse(policy.nextTrialStep(held, held.state.copy()).replay());
        SweepKey inFlight = key(BreakerState.HALF_OPEN, T0);
        inFlight.trialInFlight = true;
        assertFalse(policy.nextTrialStep(inFlight, inFlight.state.copy()).replay());
    }

    /** A sweep that replayed one full batch of 10, 20 s ago. */
    private SweepState sweeping(SweepKey k) {
        SweepState s = k.state.copy();
        s.phase = SweepState.SWEEPING;
        s.handledClosedAt = T0;
        s.cutoff = T0.plus(Duration.ofMinutes(1));
        s.batches = 1;
        s.batchSize = 10;
        s.lastBatchAt = k.now.minusSeconds(20);
        s.lastBatchCount = 10;
        s.checkedAt = s.lastBatchAt;
        s.nextBatchAt = k.now.minusSeconds(1);
        return s;
    }
}
