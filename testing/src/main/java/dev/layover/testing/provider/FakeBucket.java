package dev.layover.testing.provider;

/**
 * One limit of the fake provider: a token bucket holding at most {@code capacity}, refilled
 * continuously at {@code perSecond}. Not thread-safe: the endpoint guards it with its lock.
 */
final class FakeBucket {

    private double capacity;
    private double perSecond;
    private double level;
    private long refilledAt;

    /** A full bucket from {@code now}. */
    FakeBucket(double capacity, double perSecond, long now) {
        this.capacity = capacity;
        this.perSecond = perSecond;
        this.level = capacity;
        this.refilledAt = now;
    }

    /** Adds what flowed in since the last refill, up to the capacity. */
    void refill(long now) {
        level = Math.min(capacity, level + Math.max(0, now - refilledAt) / 1e9 * perSecond);
        refilledAt = now;
    }

    /** A new rate and capacity from {@code now}; what the bucket holds stays, cut to the new capacity. */
    void change(double newCapacity, double newPerSecond, long now) {
        refill(now);
        capacity = newCapacity;
        perSecond = newPerSecond;
        level = Math.min(level, capacity);
    }

    /** A new capacity; what the bucket holds is cut to it. */
    void capacity(double newCapacity) {
        capacity = newCapacity;
        level = Math.min(level, capacity);
    }

    boolean admits(double amount) {
        return level >= amount;
    }

    void take(double amount) {
        level -= amount;
    }

    /** Takes {@code amount} even when that drives the bucket below empty, down to minus one bucket. */
    void takeAnyway(double amount) {
        level = Math.max(-capacity, level - amount);
    }

    void giveBack(double amount) {
        level = Math.min(capacity, level + amount);
    }

    /** Seconds until the bucket holds {@code amount} (0 when it does). */
    double secondsUntil(double amount) {
        return level >= amount ? 0 : (amount - level) / perSecond;
    }

    /** Seconds until the bucket is full again. */
    double secondsUntilFull() {
        return Math.max(0, capacity - level) / perSecond;
    }

    double capacity() {
        return capacity;
    }

    double level() {
        return level;
    }

    double perSecond() {
        return perSecond;
    }
}
