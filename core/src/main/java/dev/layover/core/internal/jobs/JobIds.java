package dev.layover.core.internal.jobs;

import java.security.SecureRandom;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The id of a job enqueued without a key: a time-ordered UUID (RFC 9562 version 7), the enqueue's
 * millisecond in its first 48 bits, a counter in the next 12 (RFC 9562's method 1: ids made by one
 * JVM are strictly increasing, within a millisecond too, so the pick's tie-break on the id keeps a
 * batch's enqueue order), then 62 random bits.
 *
 * <p>Why not a random UUID: the id is the job table's primary key ({@code (task_name,
 * task_instance)}), and every pick is an update that writes a new entry into it. With random ids
 * a deep backlog's picks each dirtied a leaf page of the key chosen at random, each a full-page
 * image in the WAL (docs/benchmarks.md, "Deep backlog for 30 minutes"); jobs enqueued together are
 * run together, and with time-ordered ids their entries share leaf pages, at enqueue and at every
 * pick. The time is the enqueuing JVM's: it orders ids only, it decides nothing.
 */
final class JobIds {

    private static final SecureRandom RANDOM = new SecureRandom();
    /** The last id's millisecond and counter, {@code ms << 12 | counter}. */
    private static final AtomicLong LAST = new AtomicLong();

    private JobIds() {}

    /**
     * @param epochMillis the enqueue's time
     * @return a new version 7 UUID, as text
     */
    static String next(long epochMillis) {
        long ms = epochMillis & 0xFFFF_FFFF_FFFFL;
        // a counter overflowing 12 bits carries into the millisecond: still increasing, a little ahead
        long stamp = LAST.updateAndGet(prev -> Math.max(prev + 1, ms << 12));
        byte[] r = new byte[8];
        RANDOM.nextBytes(r);
        long high = (stamp >>> 12) << 16 | 0x7000L | (stamp & 0xFFFL);
        long low = 0x8000_0000_0000_0000L | ((r[0] & 0x3FL) << 56);
        for (int i = 1; i < 8; i++) {
            low |= (r[i] & 0xFFL) << (8 * (7 - i));
        }
        return new UUID(high, low).toString();
    }
}
