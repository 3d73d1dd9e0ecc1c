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
     * @param bucket the bucket it amounts to (default burst and lease)
     * @param until when it lapses
     * @param discovered whether the fleet discovered it ({@link Discovery}) rather than a 429 stating it
     */
    record Learned(BucketSettings bucket, Instant until, boolean discovered) {
        Learned(BucketSettings bucket, Instant until) {
            this(bucket, until, false);
        }
    }

    /** Request and token permits leased from the bucket, spendable until {@link #leaseExpires}. */
    private double leasedRequests;
    private double leasedTokens;
    private long leaseExpires;

    KeyState(String key) {
        this.key = key;
    }

    /** Spends leased permits if there are enough; never touches the database. */
    synchronized boolean takeLeased(boolean limitsRequests, boolean limitsTokens, long tokens, long nowNanos) {
        if (nowNanos - leaseExpires > 0) {
            leasedRequests = 0;
            leasedTokens = 0;
            return false;
        }
        if ((limitsRequests && leasedRequests < 1) || (limitsTokens && leasedTokens < tokens)) {
            return false;
        }
        if (limitsRequests) {
            leasedRequests -= 1;
        }
        if (limitsTokens) {
            leasedTokens -= tokens;
        }
        return true;
    }

    /** @return the request permits leased and spendable now */
    synchronized double leasedRequests(long nowNanos) {
        return nowNanos - leaseExpires > 0 ? 0 : leasedRequests;
    }

    /** Adds permits taken beyond the current need, spendable for {@code ttlNanos}. */
    synchronized void lease(double requests, double tokens, long nowNanos, long ttlNanos) {
        if (nowNanos - leaseExpires > 0) {
            leasedRequests = 0;
            leasedTokens = 0;
        }
        leasedRequests += Math.max(0, requests);
        leasedTokens += Math.max(0, tokens);
        leaseExpires = nowNanos + ttlNanos;
    }
}
