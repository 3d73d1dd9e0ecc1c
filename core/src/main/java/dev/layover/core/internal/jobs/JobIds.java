package dev.layover.core.internal.jobs;

import java.security.SecureRandom;
import java.util.UUID;

/**
 * The id of a job enqueued without a key: a time-ordered UUID (RFC 9562 version 7), the enqueue's
 * millisecond in its first 48 bits and 74 random bits after it.
 *
 * <p>Why not a random UUID: the id is the job table's primary key ({@code (task_name,
 * task_instance)}), and every pick is an update that writes a new entry into it. With random ids
 * a deep backlog's picks each dirtied a leaf page of the key chosen at random (a million jobs: an
 * 89 MB index, 0.64 full-page images written to the WAL per job run); jobs enqueued together are
 * run together, and with time-ordered ids their entries share leaf pages, at enqueue and at every
 * pick. The time is the enqueuing JVM's: it orders ids only, it decides nothing.
 */
final class JobIds {

    private static final SecureRandom RANDOM = new SecureRandom();

    private JobIds() {}

    /**
     * @param epochMillis the enqueue's time
     * @return a new version 7 UUID, as text
     */
    static String next(long epochMillis) {
        byte[] r = new byte[10];
        RANDOM.nextBytes(r);
        long high = (epochMillis & 0xFFFF_FFFF_FFFFL) << 16 | 0x7000L | ((r[0] & 0x0FL) << 8) | (r[1] & 0xFFL);
        long low = 0x8000_0000_0000_0000L | ((r[2] & 0x3FL) << 56);
        for (int i = 3; i < 10; i++) {
            low |= (r[i] & 0xFFL) << (8 * (9 - i));
        }
        return new UUID(high, low).toString();
    }
}
