package dev.layover.core.internal.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.internal.schedule.Occurrences.Decision;
import dev.layover.core.schedule.MissedRuns;
import dev.layover.core.schedule.Overlap;
import dev.layover.core.schedule.Timing;
import dev.layover.testing.PureTest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The decision of a claim: each missed-run policy and each overlap policy, as a pure function. */
@PureTest
class OccurrencesTest {

    private static final Timing MINUTE = Timing.every(Duration.ofMinutes(1));
    private static final Instant T = Instant.parse("2026-12-07T10:00:00Z");
    private static final Duration RECHECK = Duration.ofSeconds(1);

    private static Instant m(int minutes) {
        return T.plus(Duration.ofMinutes(minutes));
    }

    /** Three occurrences (10:01, 10:02, 10:03) missed; the claim at 10:03:30. */
    private static Decision missed(MissedRuns policy) {
        return Occurrences.decide(MINUTE, policy, Overlap.SKIP, m(1), false, false, m(3).plusSeconds(30), RECHECK);
    }

    @Test
    void anOnTimeOccurrenceIsEnqueuedAndTheNextOneFollows() {
        Decision d = Occurrences.decide(MINUTE, MissedRuns.skip(), Overlap.SKIP, m(1), false, false,
                m(1).plusMillis(40), RECHECK);
        assertEquals(List.of(m(1)), d.enqueue());
        assertEquals(m(2), d.nextAt());
        assertEquals(m(2), d.dueAt());
        assertEquals("enqueued", d.outcome());
    }

    @Test
    void skipDropsWhatIsLaterThanTheGrace() {
        Decision d = missed(MissedRuns.skip(Duration.ofSeconds(10)));
        assertEquals(List.of(), d.enqueue());
        assertEquals(m(4), d.nextAt());
        assertEquals("missed", d.outcome());
        Decision graced = missed(MissedRuns.skip()); // 1 minute of grace: 10:03 is 30 s late, on time
        assertEquals(List.of(m(3)), graced.enqueue());
        assertEquals("enqueued_after_missed", graced.outcome());
    }

    @Test
    void runLastRunsTheLatestOnce() {
        Decision d = missed(MissedRuns.runLast());
        assertEquals(List.of(m(3)), d.enqueue());
        assertEquals(m(4), d.nextAt());
    }

    @Test
    void catchUpRunsEveryOneWithinTheWindow() {
        assertEquals(List.of(m(1), m(2), m(3)), missed(MissedRuns.catchUp(Duration.ofMinutes(10))).enqueue());
        assertEquals(List.of(m(2), m(3)), missed(MissedRuns.catchUp(Duration.ofMinutes(2))).enqueue());
        Decision queued = Occurrences.decide(MINUTE, MissedRuns.catchUp(Duration.ofMinutes(10)), Overlap.QUEUE, m(1),
                false, false, m(3).plusSeconds(30), RECHECK);
        assertEquals(List.of(m(1)), queued.enqueue(), "QUEUE: one at a time");
        assertEquals(m(2), queued.nextAt());
        assertTrue(queued.held());
    }

    @Test
    void aCatchUpAfterAVeryLongOutageIsBounded() {
        Timing second = Timing.every(Duration.ofSeconds(1));
        Decision d = Occurrences.decide(second, MissedRuns.catchUp(Duration.ofDays(2)), Overlap.ALLOW, T, false,
                false, T.plus(Duration.ofDays(1)), RECHECK);
        assertEquals(Occurrences.CATCH_UP_MAX, d.enqueue().size());
        assertEquals(T.plus(Duration.ofDays(1)), d.enqueue().get(d.enqueue().size() - 1), "the latest are kept");
        assertEquals(T.plus(Duration.ofDays(1)).plusSeconds(1), d.nextAt());
    }

    @Test
    void overlapSkipQueueAllow() {
        Instant now = m(2).plusMillis(10);
        Decision skip = Occurrences.decide(MINUTE, MissedRuns.skip(), Overlap.SKIP, m(2), false, true, now, RECHECK);
        assertEquals(List.of(), skip.enqueue());
        assertEquals(m(3), skip.nextAt());
        assertEquals("skipped_overlap", skip.outcome());

        Decision queue = Occurrences.decide(MINUTE, MissedRuns.skip(), Overlap.QUEUE, m(2), false, true, now, RECHECK);
        assertEquals(List.of(), queue.enqueue());
        assertEquals(m(2), queue.nextAt(), "held");
        assertTrue(queue.held());
        assertEquals(now.plus(RECHECK), queue.dueAt());
        // ten minutes later the previous one has left: the held occurrence runs, however late
        Decision released = Occurrences.decide(MINUTE, MissedRuns.skip(Duration.ofSeconds(10)), Overlap.QUEUE, m(2),
                true, false, m(12).plusSeconds(30), RECHECK);
        assertEquals(List.of(m(2)), released.enqueue());
        assertEquals(m(13), released.nextAt());
        assertFalse(released.held());

        Decision allow = Occurrences.decide(MINUTE, MissedRuns.skip(), Overlap.ALLOW, m(2), false, true, now, RECHECK);
        assertEquals(List.of(m(2)), allow.enqueue());
    }
}
