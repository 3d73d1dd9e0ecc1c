package dev.layover.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The adaptive prefetch's factor, from the handler durations it observes. */
class PickLimitTest {

    @Test
    void aFixedPrefetchIsWhatWasSet() {
        PickLimit fixed = new PickLimit(16, 2.0);
        assertEquals(2.0, fixed.upperFactor());
        fixed.observe(5_000_000_000L);
        assertEquals(32, fixed.limit(), "durations change nothing when the prefetch is fixed");
        assertFalse(fixed.holdsNoneAhead(), "the lifeline keeps its giveBackAfter for a fixed prefetch");
    }

    @Test
    void theAdaptivePrefetchHoldsManyRowsForShortJobsAndNoneAheadForSlowCalls() {
        PickLimit adaptive = new PickLimit(10, 0);
        assertEquals(PickLimit.MAX_FACTOR, adaptive.upperFactor(), "db-scheduler is built with the ceiling");
        assertEquals(10, adaptive.limit(), "nothing observed: one job per thread");
        assertTrue(adaptive.holdsNoneAhead());
        adaptive.observe(1_000_000L); // 1 ms
        assertEquals(60, adaptive.limit(), "short jobs: the ceiling, at once");
        assertFalse(adaptive.holdsNoneAhead());
        for (int i = 0; i < 30; i++) {
            adaptive.observe(3_000_000_000L); // calls of 3 s
        }
        assertEquals(10, adaptive.limit(), "calls of seconds: one job per thread");
        assertTrue(adaptive.holdsNoneAhead());
    }

    @Test
    void theFactorFallsWithTheLogarithmOfTheDuration() {
        assertEquals(PickLimit.MAX_FACTOR, PickLimit.factorFor(PickLimit.SHORT_NANOS));
        assertEquals(1.0, PickLimit.factorFor(PickLimit.LONG_NANOS));
        assertEquals((PickLimit.MAX_FACTOR + 1) / 2, PickLimit.factorFor(100_000_000L), 1e-9, "100 ms: half way");
        double previous = Double.MAX_VALUE;
        for (long ms = 1; ms <= 2_000; ms *= 2) {
            double f = PickLimit.factorFor(ms * 1_000_000.0);
            assertTrue(f <= previous && f >= 1.0 && f <= PickLimit.MAX_FACTOR, ms + " ms: " + f);
            previous = f;
        }
    }
}
