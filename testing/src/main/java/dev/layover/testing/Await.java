package dev.layover.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Polls a condition until it holds; fails with a message that says what was awaited. */
public final class Await {

    private Await() {}

    /**
     * Waits until {@code condition} is true, polling every 20 ms.
     *
     * @param timeout the longest wait
     * @param what the condition in words, for the failure message
     * @param condition the condition
     * @throws AssertionError when the timeout passes first
     */
    public static void until(Duration timeout, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for: " + what);
            }
            sleep(20);
        }
    }

    /**
     * Waits until {@code value} equals {@code expected}.
     *
     * @param timeout the longest wait
     * @param what the value in words
     * @param expected the expected value
     * @param value the value
     * @param <T> its type
     * @throws AssertionError with the last value seen when the timeout passes first
     */
    public static <T> void equal(Duration timeout, String what, T expected, Supplier<T> value) {
        long deadline = System.nanoTime() + timeout.toNanos();
        T last;
        while (!java.util.Objects.equals(expected, last = value.get())) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what + " to be " + expected
                        + ", last seen " + last);
            }
            sleep(20);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
