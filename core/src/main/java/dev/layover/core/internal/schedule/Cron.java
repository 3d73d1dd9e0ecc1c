package dev.layover.core.internal.schedule;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.List;
import java.util.Locale;

/**
 * A cron expression of 5 fields (minute hour day-of-month month day-of-week; the second is 0) or 6
 * (second first), read in a time zone. Each field: {@code *}, {@code ?} (same as {@code *}), a
 * number, a range {@code a-b}, a step {@code * /s}, {@code a/s} or {@code a-b/s}, or a comma list of
 * those; months and days of the week also by name ({@code JAN}, {@code MON}); day of week 0 and 7
 * are Sunday. When both day fields are restricted a day matches either (as classic cron does).
 *
 * <p>Daylight saving time: each wall-clock time the expression names occurs once. A wall-clock time
 * that does not exist (spring forward: 02:30 in Europe/Berlin on the last Sunday of March) occurs
 * at the end of the gap (03:00 CEST); several such times collapse into that one instant. A
 * wall-clock time that happens twice (fall back: 02:30 on the last Sunday of October) occurs once,
 * at its first instant (02:30 CEST).
 */
public final class Cron {

    /** How far ahead an occurrence is looked for before the expression counts as never matching. */
    private static final int MAX_YEARS = 5;

    private final String expression;
    private final long seconds;
    private final long minutes;
    private final long hours;
    private final long days;
    private final long months;
    private final long weekdays;
    private final boolean anyDay;
    private final boolean anyWeekday;

    private Cron(String expression, long[] f, boolean anyDay, boolean anyWeekday) {
        this.expression = expression;
        this.seconds = f[0];
        this.minutes = f[1];
        this.hours = f[2];
        this.days = f[3];
        this.months = f[4];
        this.weekdays = f[5];
        this.anyDay = anyDay;
        this.anyWeekday = anyWeekday;
    }

    /**
     * @param expression 5 or 6 fields separated by spaces
     * @return the parsed expression
     * @throws IllegalArgumentException with what is wrong and where
     */
    public static Cron parse(String expression) {
        if (expression == null || expression.isBlank()) {
            throw new IllegalArgumentException("a cron expression is required");
        }
        String[] parts = expression.trim().split("\\s+");
        if (parts.length != 5 && parts.length != 6) {
            throw new IllegalArgumentException("a cron expression has 5 fields (minute hour day-of-month month "
                    + "day-of-week) or 6 (second first), '" + expression + "' has " + parts.length);
        }
        String[] six = parts.length == 6 ? parts : new String[] {"0", parts[0], parts[1], parts[2], parts[3], parts[4]};
        long[] f = new long[6];
        f[0] = field(six[0], "second", 0, 59, null);
        f[1] = field(six[1], "minute", 0, 59, null);
        f[2] = field(six[2], "hour", 0, 23, null);
        f[3] = field(six[3], "day of month", 1, 31, null);
        f[4] = field(six[4], "month", 1, 12, MONTHS);
        long dow = field(six[5], "day of week", 0, 7, WEEKDAYS);
        if ((dow & (1L << 7)) != 0) {
            dow |= 1L; // 7 is Sunday too
        }
        f[5] = dow & 0x7F;
        Cron cron = new Cron(expression.trim(), f, wildcard(six[3]), wildcard(six[5]));
        LocalDateTime probe = LocalDateTime.of(2000, 1, 1, 0, 0);
        if (cron.nextLocal(probe, probe.plusYears(MAX_YEARS * 2)) == null) {
            throw new IllegalArgumentException("the cron expression '" + expression + "' never matches a date");
        }
        return cron;
    }

    private static final List<String> MONTHS = List.of("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP",
            "OCT", "NOV", "DEC");
    private static final List<String> WEEKDAYS = List.of("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT");

    private static boolean wildcard(String f) {
        return f.equals("*") || f.equals("?");
    }

    private static long field(String text, String what, int min, int max, List<String> names) {
        long mask = 0;
        for (String item : text.split(",", -1)) {
            if (item.isEmpty()) {
                throw new IllegalArgumentException("the " + what + " field '" + text + "' has an empty list item");
            }
            int step = 1;
            String range = item;
            int slash = item.indexOf('/');
            if (slash >= 0) {
                range = item.substring(0, slash);
                step = number(item.substring(slash + 1), what, 1, max - min + 1, null);
            }
            int from;
            int to;
            if (range.equals("*") || range.equals("?")) {
                from = min;
                to = max;
            } else {
                int dash = range.indexOf('-');
                if (dash > 0) {
                    from = number(range.substring(0, dash), what, min, max, names);
                    to = number(range.substring(dash + 1), what, min, max, names);
                    if (to < from) {
                        throw new IllegalArgumentException("the " + what + " range '" + range + "' runs backwards");
                    }
                } else {
                    from = number(range, what, min, max, names);
                    to = slash >= 0 ? max : from;
                }
            }
            for (int v = from; v <= to; v += step) {
                mask |= 1L << v;
            }
        }
        return mask;
    }

    private static int number(String s, String what, int min, int max, List<String> names) {
        if (names != null) {
            int i = names.indexOf(s.toUpperCase(Locale.ROOT));
            if (i >= 0) {
                return names == MONTHS ? i + 1 : i;
            }
        }
        int v;
        try {
            v = Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the " + what + " field has '" + s + "', which is not a number"
                    + (names != null ? " nor a name (" + String.join(", ", names) + ")" : "")
                    + " (L, W and # are not supported)");
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException("the " + what + " field has " + v + ", outside " + min + "-" + max);
        }
        return v;
    }

    /** @return the expression as given (trimmed) */
    public String expression() {
        return expression;
    }

    /**
     * @param after an instant
     * @param zone the zone the expression's wall-clock times are read in
     * @return the first occurrence strictly after {@code after}
     */
    public Instant next(Instant after, ZoneId zone) {
        ZoneRules rules = zone.getRules();
        LocalDateTime from = LocalDateTime.ofInstant(after, zone).truncatedTo(ChronoUnit.SECONDS);
        LocalDateTime limit = from.plusYears(MAX_YEARS);
        while (true) {
            LocalDateTime local = nextLocal(from.plusSeconds(1), limit);
            if (local == null) {
                throw new IllegalStateException("'" + expression + "' has no occurrence within " + MAX_YEARS
                        + " years after " + after);
            }
            Instant at = toInstant(local, rules);
            if (at.isAfter(after)) {
                return at;
            }
            from = local; // a wall-clock time that happened already (the second pass of a repeated hour)
        }
    }

    /** A wall-clock time's instant: the gap's end when it does not exist, the first when it happens twice. */
    static Instant toInstant(LocalDateTime local, ZoneRules rules) {
        List<ZoneOffset> offsets = rules.getValidOffsets(local);
        if (offsets.isEmpty()) {
            ZoneOffsetTransition gap = rules.getTransition(local);
            return gap.getInstant();
        }
        return local.toInstant(offsets.get(0));
    }

    /** @return the first matching wall-clock time at or after {@code t}, or null past {@code limit} */
    private LocalDateTime nextLocal(LocalDateTime t, LocalDateTime limit) {
        while (!t.isAfter(limit)) {
            if (!has(months, t.getMonthValue())) {
                t = t.toLocalDate().withDayOfMonth(1).plusMonths(1).atStartOfDay();
            } else if (!dayMatches(t)) {
                t = t.toLocalDate().plusDays(1).atStartOfDay();
            } else if (!has(hours, t.getHour())) {
                t = t.truncatedTo(ChronoUnit.HOURS).plusHours(1);
            } else if (!has(minutes, t.getMinute())) {
                t = t.truncatedTo(ChronoUnit.MINUTES).plusMinutes(1);
            } else if (!has(seconds, t.getSecond())) {
                t = t.plusSeconds(1);
            } else {
                return t;
            }
        }
        return null;
    }

    private boolean dayMatches(LocalDateTime t) {
        boolean day = has(days, t.getDayOfMonth());
        boolean weekday = has(weekdays, t.getDayOfWeek().getValue() % 7);
        if (anyDay && anyWeekday) {
            return true;
        }
        if (anyDay) {
            return weekday;
        }
        if (anyWeekday) {
            return day;
        }
        return day || weekday;
    }

    private static boolean has(long mask, int v) {
        return (mask & (1L << v)) != 0;
    }

    @Override
    public String toString() {
        return expression;
    }
}
