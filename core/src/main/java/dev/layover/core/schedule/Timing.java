package dev.layover.core.schedule;

import dev.layover.core.internal.schedule.Cron;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Objects;

/**
 * When a schedule's occurrences are: a cron expression read in a time zone, or a fixed interval.
 *
 * <p><b>Cron</b> ({@link #cron(String, ZoneId)}): 5 fields (minute hour day-of-month month
 * day-of-week; the second is 0) or 6 (second first). Each field takes {@code *}, {@code ?}, a
 * number, a range {@code a-b}, a step ({@code *}{@code /15}, {@code 5/15}, {@code 0-30/10}) or a
 * comma list; months and days of week also by name ({@code JAN}, {@code MON-FRI}); day of week 0
 * and 7 are Sunday. When both day fields are restricted, a day matching either counts (classic
 * cron). {@code L}, {@code W} and {@code #} are not supported.
 *
 * <p><b>Daylight saving time.</b> Each wall-clock time the expression names occurs once:
 * <ul>
 *   <li>a time that does not exist (spring forward: 02:30 in Europe/Berlin on the last Sunday of
 *       March, when clocks jump from 02:00 to 03:00) occurs at the end of the gap, 03:00 CEST;
 *       several times inside the gap collapse into that one occurrence;
 *   <li>a time that happens twice (fall back: 02:30 on the last Sunday of October) occurs once,
 *       at its first instant, 02:30 CEST; the second 02:30 (CET) is not an occurrence. An hourly
 *       expression therefore has one occurrence, not two, in the repeated hour.
 * </ul>
 *
 * <p><b>Interval</b> ({@link #every(Duration)}): elapsed time, no zone, no daylight saving.
 * Occurrences are aligned to the Unix epoch (every 15 minutes: :00, :15, :30, :45 UTC), so every JVM
 * of a fleet computes the same instants. At least one second, and at least the scheduler's poll
 * interval.
 */
public final class Timing {

    private final Cron cron;
    private final ZoneId zone;
    private final Duration every;

    private Timing(Cron cron, ZoneId zone, Duration every) {
        this.cron = cron;
        this.zone = zone;
        this.every = every;
    }

    /**
     * @param expression 5 or 6 fields
     * @param zone the zone the wall-clock times are read in
     * @return the timing
     * @throws InvalidScheduleException when the expression is not valid or never matches
     */
    public static Timing cron(String expression, ZoneId zone) {
        Objects.requireNonNull(zone, "zone");
        try {
            return new Timing(Cron.parse(expression), zone, null);
        } catch (IllegalArgumentException e) {
            throw new InvalidScheduleException("invalid cron expression: " + e.getMessage(), e);
        }
    }

    /**
     * @param expression 5 or 6 fields
     * @param zone a zone id such as {@code Europe/Berlin} or {@code UTC}
     * @return the timing
     * @throws InvalidScheduleException when the expression is not valid or the zone is unknown
     */
    public static Timing cron(String expression, String zone) {
        return cron(expression, zone(zone));
    }

    /**
     * @param interval the time between two occurrences, at least one second
     * @return the timing
     * @throws InvalidScheduleException when the interval is under one second
     */
    public static Timing every(Duration interval) {
        Objects.requireNonNull(interval, "interval");
        if (interval.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new InvalidScheduleException("a schedule's interval must be at least 1 second, was " + interval);
        }
        return new Timing(null, null, interval);
    }

    /**
     * @param zone a zone id
     * @return the zone
     * @throws InvalidScheduleException when the zone is unknown
     */
    static ZoneId zone(String zone) {
        if (zone == null || zone.isBlank()) {
            throw new InvalidScheduleException("a cron schedule needs a time zone (e.g. 'UTC', 'Europe/Berlin')");
        }
        try {
            return ZoneId.of(zone.trim());
        } catch (DateTimeException e) {
            throw new InvalidScheduleException("unknown time zone '" + zone + "': " + e.getMessage(), e);
        }
    }

    /**
     * @param after an instant
     * @return the first occurrence strictly after it
     */
    public Instant next(Instant after) {
        if (cron != null) {
            return cron.next(after, zone);
        }
        long ms = every.toMillis();
        long k = Math.floorDiv(after.toEpochMilli(), ms) + 1;
        return Instant.ofEpochMilli(k * ms);
    }

    /** @return the cron expression, or null for an interval */
    public String cronExpression() {
        return cron == null ? null : cron.expression();
    }

    /** @return the zone, or null for an interval */
    public ZoneId zone() {
        return zone;
    }

    /** @return the interval, or null for a cron expression */
    public Duration interval() {
        return every;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Timing t && Objects.equals(cronExpression(), t.cronExpression())
                && Objects.equals(zone, t.zone) && Objects.equals(every, t.every);
    }

    @Override
    public int hashCode() {
        return Objects.hash(cronExpression(), zone, every);
    }

    @Override
    public String toString() {
        return cron != null ? cron.expression() + " (" + zone.getId() + ")" : "every " + every;
    }
}
