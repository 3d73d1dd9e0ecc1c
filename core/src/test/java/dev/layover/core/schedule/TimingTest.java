package dev.layover.core.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Cron expressions, intervals and daylight saving time, on java.time's zone rules (no database). */
@PureTest
class TimingTest {

    private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

    private static List<Instant> occurrences(Timing t, Instant after, int n) {
        List<Instant> out = new ArrayList<>();
        Instant at = after;
        for (int i = 0; i < n; i++) {
            at = t.next(at);
            out.add(at);
        }
        return out;
    }

    private static Instant i(String s) {
        return Instant.parse(s);
    }

    @Test
    void aFiveFieldExpressionRunsAtSecondZeroInItsZone() {
        Timing t = Timing.cron("30 9 * * MON-FRI", BERLIN);
        // Friday 2026-12-04 10:00 Berlin: the next one is Monday 09:30 CET (08:30 UTC)
        assertEquals(List.of(i("2026-12-07T08:30:00Z"), i("2026-12-08T08:30:00Z")),
                occurrences(t, i("2026-12-04T09:00:00Z"), 2));
    }

    @Test
    void aSixFieldExpressionHasSecondsAndSteps() {
        Timing t = Timing.cron("*/20 0 12 1 JAN,JUL ?", "UTC");
        assertEquals(List.of(i("2027-01-01T12:00:00Z"), i("2027-01-01T12:00:20Z"), i("2027-01-01T12:00:40Z"),
                i("2027-07-01T12:00:00Z")), occurrences(t, i("2026-12-07T00:00:00Z"), 4));
    }

    @Test
    void bothDayFieldsRestrictedMatchEitherAsClassicCronDoes() {
        Timing t = Timing.cron("0 0 13 * 5", "UTC"); // the 13th, or any Friday
        assertEquals(List.of(i("2026-12-11T00:00:00Z"), i("2026-12-13T00:00:00Z"), i("2026-12-18T00:00:00Z")),
                occurrences(t, i("2026-12-07T00:00:00Z"), 3));
    }

    @Test
    void springForwardAWallClockTimeThatDoesNotExistRunsOnceAtTheEndOfTheGap() {
        // Berlin, Sunday 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC); 02:30 does not exist
        Timing daily = Timing.cron("30 2 * * *", BERLIN);
        assertEquals(List.of(i("2026-03-28T01:30:00Z"), i("2026-03-29T01:00:00Z"), i("2026-03-30T00:30:00Z")),
                occurrences(daily, i("2026-03-27T12:00:00Z"), 3));
        // hourly: 01:00 CET, then 02:00 (in the gap) and 03:00 CEST are one instant, once
        Timing hourly = Timing.cron("0 * * * *", BERLIN);
        assertEquals(List.of(i("2026-03-29T00:00:00Z"), i("2026-03-29T01:00:00Z"), i("2026-03-29T02:00:00Z")),
                occurrences(hourly, i("2026-03-28T23:30:00Z"), 3));
        // every quarter hour inside the gap collapses into 03:00 CEST
        Timing quarter = Timing.cron("*/15 2 * * *", BERLIN);
        assertEquals(List.of(i("2026-03-28T01:00:00Z"), i("2026-03-28T01:15:00Z"), i("2026-03-28T01:30:00Z"),
                i("2026-03-28T01:45:00Z"), i("2026-03-29T01:00:00Z"), i("2026-03-30T00:00:00Z")),
                occurrences(quarter, i("2026-03-27T12:00:00Z"), 6));
    }

    @Test
    void fallBackAWallClockTimeThatHappensTwiceRunsOnceAtItsFirstInstant() {
        // Berlin, Sunday 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00 UTC); 02:30 happens twice
        Timing daily = Timing.cron("30 2 * * *", BERLIN);
        assertEquals(List.of(i("2026-10-24T00:30:00Z"), i("2026-10-25T00:30:00Z"), i("2026-10-26T01:30:00Z")),
                occurrences(daily, i("2026-10-23T12:00:00Z"), 3));
        // from inside the repeated hour (02:10 CET, after the first 02:30): the next is the next day's
        assertEquals(i("2026-10-26T01:30:00Z"), daily.next(i("2026-10-25T01:10:00Z")));
        // hourly: 02:00 CEST, then 03:00 CET; the second 02:00 (CET) is not an occurrence
        Timing hourly = Timing.cron("0 * * * *", BERLIN);
        assertEquals(List.of(i("2026-10-24T23:00:00Z"), i("2026-10-25T00:00:00Z"), i("2026-10-25T02:00:00Z")),
                occurrences(hourly, i("2026-10-24T22:30:00Z"), 3));
    }

    @Test
    void intervalsAreAlignedToTheEpochSoEveryJvmComputesTheSameInstants() {
        Timing t = Timing.every(Duration.ofMinutes(15));
        assertEquals(List.of(i("2026-12-07T10:15:00Z"), i("2026-12-07T10:30:00Z")),
                occurrences(t, i("2026-12-07T10:07:13.5Z"), 2));
        assertEquals(i("2026-12-07T10:30:00Z"), t.next(i("2026-12-07T10:15:00Z")), "strictly after");
    }

    @Test
    void badExpressionsAndZonesAreRefusedWithWhatIsWrong() {
        assertTrue(assertThrows(InvalidScheduleException.class, () -> Timing.cron("* * *", "UTC")).getMessage()
                .contains("5 fields"));
        assertTrue(assertThrows(InvalidScheduleException.class, () -> Timing.cron("61 * * * *", "UTC")).getMessage()
                .contains("minute field has 61"));
        assertTrue(assertThrows(InvalidScheduleException.class, () -> Timing.cron("0 0 L * *", "UTC")).getMessage()
                .contains("not a number"));
        assertTrue(assertThrows(InvalidScheduleException.class, () -> Timing.cron("0 0 30 2 *", "UTC")).getMessage()
                .contains("never matches"));
        assertTrue(assertThrows(InvalidScheduleException.class, () -> Timing.cron("0 0 * * *", "Mars/Olympus_Mons"))
                .getMessage().contains("unknown time zone 'Mars/Olympus_Mons'"));
        assertTrue(assertThrows(InvalidScheduleException.class, () -> Timing.every(Duration.ofMillis(500)))
                .getMessage().contains("at least 1 second"));
    }
}
