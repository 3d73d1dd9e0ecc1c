package dev.layover.core.internal.gate;

import java.time.Instant;
import java.util.concurrent.atomic.LongAdder;
import dev.layover.core.provider.state.BucketSettings;

/** What this Layover instance keeps about one provider key. */
final class KeyState {

    final String key;
    final Object loadLock = new Object();
    /** Successes not yet written to the breaker row (flushed every second). */
    final LongAdder successes = new LongAdder();
    volatile Snapshot snapshot;
    /** {@link System#nanoTime()} of the last successful read from the database. */
    volatile long loadedAt;
    /** A write found no breaker row: the next {@link StateCache#fresh} reads inline, creating it. */
    volatile boolean rowMissing;
    /** The ticker's reading when the key was last used ({@link StateCache#keyState}). */
    volatile long usedAt;
    /** The key's learned pace as last read or written, or null. */
    volatile Learned learned;

    /**
     * A pace learned from a 429 (a row of {@code layover.buckets} with {@code learned_until}).
     *
     * @param bucket the bucket it amounts to (default burst)
     * @param until when it lapses
     * @param discovered whether the fleet discovered it ({@link Discovery}) rather than a 429 stating it
     */
    record Learned(BucketSettings bucket, Instant until, boolean discovered) {
        Learned(BucketSettings bucket, Instant until) {
            this(bucket, until, false);
        }
    }

    KeyState(String key) {
        this.key = key;
    }
}
