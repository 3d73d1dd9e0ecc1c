package dev.layover.core.tokens;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.Test;

@PureTest
class EstimateGuardTest {

    record Args(String text, int maxTokens) {}

    static final Args ARGS = new Args("Bonjour tout le monde", 256);

    @Test
    void aSoundEstimateIsTakenAsGiven() {
        EstimateGuard.Checked c = EstimateGuard.apply((Args a) -> a.text().length() + a.maxTokens(), ARGS, 1000);
        assertEquals(new EstimateGuard.Checked(277, null), c);
        assertTrue(c.ok());
        assertEquals(new EstimateGuard.Checked(0, null), EstimateGuard.check(0L, 5));
    }

    @Test
    void aThrowingEstimateFallsBackAndSaysWhy() {
        ToLongFunction<Args> broken = a -> {
            throw new IllegalStateException("no tokenizer for model x");
        };
        assertEquals(new EstimateGuard.Checked(1000, "estimate failed: IllegalStateException: no tokenizer for model x"),
                EstimateGuard.apply(broken, ARGS, 1000));
        ToLongFunction<Args> npe = a -> a.text().substring(100).length();
        EstimateGuard.Checked c = EstimateGuard.apply(npe, new Args(null, 1), 7);
        assertEquals(7, c.tokens());
        assertTrue(c.problem().startsWith("estimate failed: java.lang.NullPointerException")
                || c.problem().startsWith("estimate failed: NullPointerException"), c.problem());
        ToLongFunction<Args> deep = new ToLongFunction<>() {
            @Override
            public long applyAsLong(Args a) {
                return applyAsLong(a) + 1;
            }
        };
        assertEquals(7, EstimateGuard.apply(deep, ARGS, 7).tokens());
        assertEquals(new EstimateGuard.Checked(3, "no estimate function"), EstimateGuard.apply(null, ARGS, 3));
    }

    @Test
    void negativeNanAndHugeEstimatesAreReplaced() {
        assertEquals(new EstimateGuard.Checked(50, "estimate was negative: -1"), EstimateGuard.apply(a -> -1, ARGS, 50));
        assertEquals(new EstimateGuard.Checked(50, "estimate was negative: " + Long.MIN_VALUE),
                EstimateGuard.check(Long.MIN_VALUE, 50));
        assertEquals(new EstimateGuard.Checked(TokenUsage.MAX_COUNT, "estimate above 1000000000: " + Long.MAX_VALUE),
                EstimateGuard.check(Long.MAX_VALUE, 50));
        assertEquals(new EstimateGuard.Checked(50, "estimate was NaN"), EstimateGuard.applyDouble(a -> Double.NaN, ARGS, 50));
        assertEquals(new EstimateGuard.Checked(50, "estimate was negative: -0.5"), EstimateGuard.check(-0.5, 50));
        assertEquals(TokenUsage.MAX_COUNT, EstimateGuard.check(Double.POSITIVE_INFINITY, 50).tokens());
        assertEquals(TokenUsage.MAX_COUNT, EstimateGuard.check(1e300, 50).tokens());
        assertEquals(new EstimateGuard.Checked(6, null), EstimateGuard.applyDouble((Args a) -> a.text().length() / 4.0,
                ARGS, 50), "21 / 4 rounded up");
        assertEquals(new EstimateGuard.Checked(TokenUsage.MAX_COUNT, null), EstimateGuard.check(1e9, 1));
        ToDoubleFunction<Args> broken = a -> {
            throw new ArithmeticException("/ by zero");
        };
        assertEquals(new EstimateGuard.Checked(9, "estimate failed: ArithmeticException: / by zero"),
                EstimateGuard.applyDouble(broken, ARGS, 9));
    }

    @Test
    void aFallbackOutOfRangeIsAProgrammingErrorAndSaysSo() {
        assertEquals("fallback must be 0 to 1000000000, was -1", assertThrows(IllegalArgumentException.class,
                () -> EstimateGuard.check(5L, -1)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> EstimateGuard.apply(a -> 1, ARGS, TokenUsage.MAX_COUNT + 1));
        assertThrows(IllegalArgumentException.class, () -> EstimateGuard.check(1.0, -1));
    }
}
