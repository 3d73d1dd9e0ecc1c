package dev.layover.core.internal.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Job ids: version 7 UUIDs, strictly increasing within one JVM, a millisecond's ids included. */
@PureTest
class JobIdsTest {

    @Test
    void idsMadeInOneMillisecondIncreaseInTheOrderTheyWereMade() {
        // an hour past every id this JVM made before (another test's clock may have run ahead of
        // the wall clock): an id asked for at millisecond 0 carries the latest millisecond made
        long made = UUID.fromString(JobIds.next(0)).getMostSignificantBits() >>> 16;
        long ms = Math.max(System.currentTimeMillis(), made) + 3_600_000;
        String previous = JobIds.next(ms);
        for (int i = 0; i < 20_000; i++) { // more than the 12-bit counter holds: it carries into the millisecond
            String id = JobIds.next(ms);
            assertTrue(id.compareTo(previous) > 0, previous + " then " + id);
            UUID u = UUID.fromString(id);
            assertEquals(7, u.version());
            assertEquals(2, u.variant());
            previous = id;
        }
        String later = JobIds.next(ms + 60_000);
        assertTrue(later.compareTo(previous) > 0);
        assertEquals(ms + 60_000, UUID.fromString(later).getMostSignificantBits() >>> 16, "a later millisecond is its own");
    }
}
