package dev.layover.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * A clock a test moves by hand, for {@code Layover.builder(..).clock(..)} and the engine's parts:
 * time passes only when the test says so, so a test waits on a condition, never on a sleep.
 * Thread-safe.
 */
public final class TestClock extends Clock {

    private volatile Instant now;

    /**
     * @param start the time it shows until moved
     */
    public TestClock(Instant start) {
        this.now = start;
    }

    /** @return a clock at the current system time, moved only by hand from then on */
    public static TestClock now() {
        return new TestClock(Instant.now());
    }

    /**
     * Moves the clock forward.
     *
     * @param d how far; negative moves it back
     */
    public void advance(Duration d) {
        now = now.plus(d);
    }

    /** @param t the time it shows from now on */
    public void set(Instant t) {
        now = t;
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }

    @Override
    public Instant instant() {
        return now;
    }
}
