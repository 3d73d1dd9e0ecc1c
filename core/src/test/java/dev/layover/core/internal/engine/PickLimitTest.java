package dev.layover.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import org.junit.jupiter.api.Test;

/** The adaptive prefetch's factor, from the handler durations it observes. */
@PureTest
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
        adaptive.observe(10_000_000L); // 10 ms
        assertEquals(60, adaptive.limit(), "jobs of 10 ms: 6 per thread, at once");
        assertFalse(adaptive.holdsNoneAhead());
        for (int i = 0; i < 30; i++) {
            adaptive.observe(3_000_000_000L); // calls of 3 s
        }
        assertEquals(10, adaptive.limit(), "calls of seconds: one job per thread");
        assertTrue(adaptive.holdsNoneAhead());
    }

    @Test
    void subMillisecondJobsArePickedByTheHundredsAndTheCeilingIsBoundedInRows() {
        PickLimit sixteen = new PickLimit(16, 0);
        assertEquals(PickLimit.MAX_FACTOR, sixteen.upperFactor(), "16 threads: the ceiling is 64 per thread");
        endShort(sixteen, 2_000);
        assertEquals(1024, sixteen.limit(), "no-op jobs: the ceiling");
        sixteen.observe(5_000_000_000L);
        endShort(sixteen, 2_000);
        for (int i = 0; i < 80; i++) {
            sixteen.observe(1_000_000L); // 1 ms
        }
        assertEquals(60.0, sixteen.factor(), 0.5, "jobs of 1 ms: 60 ms of them per thread");
        PickLimit many = new PickLimit(1000, 0);
        assertEquals(PickLimit.SHORT_FACTOR, many.upperFactor(), "1,000 threads: 6 per thread, as at 10 ms");
        PickLimit hundred = new PickLimit(100, 0);
        endShort(hundred, 2_000);
        assertEquals(PickLimit.MAX_ROWS, hundred.limit(), "100 threads: at most 1,024 rows");
    }

    @Test
    void theFactorFallsWithTheDuration() {
        assertEquals(PickLimit.MAX_FACTOR, PickLimit.factorFor(1_000));
        assertEquals(PickLimit.MAX_FACTOR, PickLimit.factorFor(PickLimit.SHORT_NANOS * PickLimit.SHORT_FACTOR / PickLimit.MAX_FACTOR),
                1e-9, "the ceiling is reached where 64 jobs take 60 ms");
        assertEquals(12.0, PickLimit.factorFor(5_000_000L), 1e-9, "5 ms: 60 ms of them per thread");
        assertEquals(PickLimit.SHORT_FACTOR, PickLimit.factorFor(PickLimit.SHORT_NANOS));
        assertEquals(1.0, PickLimit.factorFor(PickLimit.LONG_NANOS));
        assertEquals((PickLimit.SHORT_FACTOR + 1) / 2, PickLimit.factorFor(100_000_000L), 1e-9, "100 ms: half way");
        double previous = Double.MAX_VALUE;
        for (long us = 1; us <= 2_000_000; us *= 2) {
            double f = PickLimit.factorFor(us * 1_000.0);
            assertTrue(f <= previous && f >= 1.0 && f <= PickLimit.MAX_FACTOR, us + " µs: " + f);
            previous = f;
        }
    }

    /** {@code n} runs of no-op jobs end (tens of microseconds each). */
    private static void endShort(PickLimit limit, int n) {
        for (int i = 0; i < n; i++) {
            limit.ended(limit.started());
        }
    }
}
