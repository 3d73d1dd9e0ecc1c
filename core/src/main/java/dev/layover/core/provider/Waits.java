package dev.layover.core.provider;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the many ways providers say "wait": header values, Go-style durations, HTTP-dates,
 * RFC 3339 times and hints in messages. Every method returns {@code null} for anything it cannot
 * read; none throws.
 */
final class Waits {

    /** Longest header or message fragment looked at; anything longer is garbage. */
    private static final int MAX_VALUE_LENGTH = 64;

    private static final Pattern DECIMAL = Pattern.compile("\\d{1,30}(?:\\.\\d{1,30})?");

    /** Go's {@code time.Duration} string as OpenAI sends it: {@code 6m0s}, {@code 120ms}, {@code 1h2m3.5s}. */
    private static final Pattern GO_DURATION = Pattern.compile(
            "(?:(\\d{1,9}(?:\\.\\d{1,12})?)h)?"
                    + "(?:(\\d{1,9}(?:\\.\\d{1,12})?)m(?!s))?"
                    + "(?:(\\d{1,12}(?:\\.\\d{1,12})?)s)?"
                    + "(?:(\\d{1,12}(?:\\.\\d{1,12})?)ms)?");

    /** "try again in 644ms", "Please try again in 1.5s", "retry in 10.68s", "retry after 59 seconds". */
    private static final Pattern HINT = Pattern.compile(
            "(?:try(?:ing)? again|retry(?:ing)?|wait)(?:\\s+\\w+){0,2}?\\s+(?:in|after)\\s+"
                    + "((?:\\d{1,9}(?:\\.\\d{1,12})?(?:h|ms|m|s))+|\\d{1,9}(?:\\.\\d{1,12})?\\s*"
                    + "(?:milliseconds?|millis|msecs?|seconds?|secs?|minutes?|mins?|hours?|hrs?))\\b",
            Pattern.CASE_INSENSITIVE);

    private static final Pattern UNIT_AMOUNT = Pattern.compile(
            "(\\d{1,9}(?:\\.\\d{1,12})?)\\s*([a-z]+)", Pattern.CASE_INSENSITIVE);

    /** Anthropic: "You will regain access on 2026-06-01 at 00:00 UTC." */
    private static final Pattern REGAIN = Pattern.compile(
            "regain access on (\\d{4}-\\d{2}-\\d{2})(?: at (\\d{1,2}):(\\d{2}))? ?UTC", Pattern.CASE_INSENSITIVE);

    /** Azure API Management: "Quota will be replenished in 2.12:43:08." (a .NET TimeSpan, d.hh:mm:ss). */
    private static final Pattern REPLENISHED = Pattern.compile(
            "replenished in (?:(\\d{1,5})\\.)?(\\d{1,2}):(\\d{2}):(\\d{2})(?:\\.(\\d{1,7}))?",
            Pattern.CASE_INSENSITIVE);

    /** A parameter of the IETF RateLimit field: {@code reset=50}, {@code t=50}, {@code remaining=0}, {@code r=0}. */
    private static final Pattern STRUCTURED_PARAM = Pattern.compile(
            "(?:^|[\\s,;])(reset|t|remaining|r)\\s*=\\s*(\\d{1,19}(?:\\.\\d{1,9})?)", Pattern.CASE_INSENSITIVE);

    /** Magnitudes that tell a number's unit: below 1e9 seconds from now, then epoch s, ms, us, ns. */
    private static final BigDecimal DELTA_LIMIT = new BigDecimal("1e9");
    private static final BigDecimal EPOCH_SECONDS_LIMIT = new BigDecimal("1e11");
    private static final BigDecimal EPOCH_MILLIS_LIMIT = new BigDecimal("1e14");
    private static final BigDecimal EPOCH_MICROS_LIMIT = new BigDecimal("1e17");
    private static final BigDecimal EPOCH_NANOS_LIMIT = new BigDecimal("1e20");

    /** Google's proto3 JSON Duration: {@code "12s"}, {@code "0.5s"}, {@code "22.417s"}. */
    private static final Pattern PROTO_DURATION = Pattern.compile("(\\d{1,12}(?:\\.\\d{1,9})?)s");

    static final ZoneId PACIFIC = ZoneId.of("America/Los_Angeles");

    private Waits() {}

    /** A non-negative decimal number of {@code unit}s, e.g. {@code "20"}, {@code "1.5"}; else null. */
    static Duration decimal(String value, long nanosPerUnit) {
        if (value == null) {
            return null;
        }
        String v = value.trim();
        if (v.isEmpty() || v.length() > MAX_VALUE_LENGTH || !DECIMAL.matcher(v).matches()) {
            return null;
        }
        return ofNanos(new BigDecimal(v).multiply(BigDecimal.valueOf(nanosPerUnit)));
    }

    /**
     * A {@code Retry-After} value: seconds (RFC 9110), or an HTTP-date; and, for what gateways write
     * there, a duration with units ({@code 1m30s}) or, at 10^9 and above (31 years of seconds), an
     * epoch time by its magnitude ({@link #number}).
     */
    static Duration retryAfter(String value, Instant now) {
        Duration seconds = decimal(value, 1_000_000_000L);
        if (seconds != null && seconds.getSeconds() >= 1_000_000_000L) {
            return number(value.trim(), now);
        }
        if (seconds != null) {
            return seconds;
        }
        Duration date = httpDate(value, now);
        if (date != null || value == null || value.isBlank() || value.length() > MAX_VALUE_LENGTH) {
            return date;
        }
        String v = value.trim();
        return v.chars().anyMatch(Character::isLetter) && !v.contains(",") ? goDuration(v) : null;
    }

    /** An RFC 1123 HTTP-date as a wait from {@code now}; a date in the past is a zero wait. */
    static Duration httpDate(String value, Instant now) {
        if (value == null || value.length() > MAX_VALUE_LENGTH) {
            return null;
        }
        try {
            Instant at = ZonedDateTime.parse(value.trim(), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
            return until(now, at);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** An RFC 3339 date-time, e.g. {@code 2024-08-01T12:00:30Z}; else null. */
    static Instant rfc3339(String value) {
        if (value == null || value.length() > MAX_VALUE_LENGTH) {
            return null;
        }
        try {
            return OffsetDateTime.parse(value.trim(), DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * A Go-style duration ({@code 6m0s}, {@code 1s}, {@code 120ms}, {@code 1h2m3.5s}), or a plain
     * number of seconds as Azure sends it; else null.
     */
    static Duration goDuration(String value) {
        if (value == null) {
            return null;
        }
        String v = value.trim();
        if (v.isEmpty() || v.length() > MAX_VALUE_LENGTH) {
            return null;
        }
        Duration plain = decimal(v, 1_000_000_000L);
        if (plain != null) {
            return plain;
        }
        Matcher m = GO_DURATION.matcher(v);
        if (!m.matches() || (m.group(1) == null && m.group(2) == null && m.group(3) == null && m.group(4) == null)) {
            return null;
        }
        BigDecimal nanos = BigDecimal.ZERO;
        nanos = add(nanos, m.group(1), 3_600_000_000_000L);
        nanos = add(nanos, m.group(2), 60_000_000_000L);
        nanos = add(nanos, m.group(3), 1_000_000_000L);
        nanos = add(nanos, m.group(4), 1_000_000L);
        return ofNanos(nanos);
    }

    /** Google's {@code RetryInfo.retryDelay}: {@code "12s"}, {@code "0.5s"}; else null. */
    static Duration protoDuration(String value) {
        if (value == null || value.length() > MAX_VALUE_LENGTH) {
            return null;
        }
        Matcher m = PROTO_DURATION.matcher(value.trim());
        return m.matches() ? decimal(m.group(1), 1_000_000_000L) : null;
    }

    /**
     * The wait in a message: "Please try again in 1.5s", "try again in 644ms", "retry after 59 seconds",
     * "Quota will be replenished in 2.12:43:08".
     */
    static Duration hint(String message) {
        if (message == null || message.isEmpty()) {
            return null;
        }
        String text = message.length() > 4000 ? message.substring(0, 4000) : message;
        Matcher r = REPLENISHED.matcher(text);
        if (r.find()) {
            return timeSpan(r);
        }
        Matcher m = HINT.matcher(text);
        if (!m.find()) {
            return null;
        }
        String amount = m.group(1);
        Duration compact = goDuration(amount);
        if (compact != null) {
            return compact;
        }
        Matcher u = UNIT_AMOUNT.matcher(amount);
        if (!u.matches()) {
            return null;
        }
        String unit = u.group(2).toLowerCase(Locale.ROOT);
        long perUnit;
        if (unit.startsWith("ms") || unit.startsWith("milli")) {
            perUnit = 1_000_000L;
        } else if (unit.startsWith("s")) {
            perUnit = 1_000_000_000L;
        } else if (unit.startsWith("m")) {
            perUnit = 60_000_000_000L;
        } else {
            perUnit = 3_600_000_000_000L;
        }
        return decimal(u.group(1), perUnit);
    }

    private static Duration timeSpan(Matcher r) {
        long minutes = Long.parseLong(r.group(3));
        long seconds = Long.parseLong(r.group(4));
        if (minutes > 59 || seconds > 59) {
            return null;
        }
        long days = r.group(1) == null ? 0 : Long.parseLong(r.group(1));
        Duration d = Duration.ofDays(days).plusHours(Long.parseLong(r.group(2))).plusMinutes(minutes)
                .plusSeconds(seconds);
        if (r.group(5) != null) {
            d = d.plusNanos(Long.parseLong((r.group(5) + "000000000").substring(0, 9)));
        }
        return d;
    }

    /**
     * A header value in a wait row's form, as a wait from {@code now} (a time in the past is a zero
     * wait); null when it cannot be read in that form.
     */
    static Duration inForm(String value, Row.Form form, Instant now) {
        if (value == null || value.isBlank() || value.length() > MAX_VALUE_LENGTH) {
            return null;
        }
        String v = value.trim();
        return switch (form) {
            case SECONDS -> decimal(v, 1_000_000_000L);
            case MILLIS -> decimal(v, 1_000_000L);
            case HTTP_DATE -> httpDate(v, now);
            case RFC3339 -> at(rfc3339(v), now);
            case DURATION -> goDuration(v);
            case NUMBER -> number(v, now);
            case STRUCTURED -> structured(v);
            case AUTO -> auto(v, now);
        };
    }

    /** RFC 3339, an HTTP-date, a duration with units, else a number by its magnitude. */
    private static Duration auto(String v, Instant now) {
        Duration d = at(rfc3339(v), now);
        if (d == null) {
            d = httpDate(v, now);
        }
        if (d == null && v.chars().anyMatch(Character::isLetter)) {
            d = goDuration(v);
        }
        return d != null ? d : number(v, now);
    }

    /**
     * A plain number whose magnitude says its unit: below 1e9 seconds from now (up to 31 years), below
     * 1e11 epoch seconds (to the year 5138), below 1e14 epoch milliseconds (from 1973), below 1e17
     * epoch microseconds, below 1e20 epoch nanoseconds; larger is nonsense (null).
     */
    static Duration number(String v, Instant now) {
        if (v == null || !DECIMAL.matcher(v.trim()).matches()) {
            return null;
        }
        BigDecimal n = new BigDecimal(v.trim());
        if (n.compareTo(DELTA_LIMIT) < 0) {
            return ofNanos(n.movePointRight(9));
        }
        BigDecimal nanos;
        if (n.compareTo(EPOCH_SECONDS_LIMIT) < 0) {
            nanos = n.movePointRight(9);
        } else if (n.compareTo(EPOCH_MILLIS_LIMIT) < 0) {
            nanos = n.movePointRight(6);
        } else if (n.compareTo(EPOCH_MICROS_LIMIT) < 0) {
            nanos = n.movePointRight(3);
        } else if (n.compareTo(EPOCH_NANOS_LIMIT) < 0) {
            nanos = n;
        } else {
            return null;
        }
        BigDecimal[] sn = nanos.divideAndRemainder(BigDecimal.valueOf(1_000_000_000L));
        return at(Instant.ofEpochSecond(sn[0].longValue(), sn[1].longValue()), now);
    }

    /** The IETF RateLimit field's reset ({@code reset=50} or {@code t=50}, seconds); null without one. */
    static Duration structured(String v) {
        Matcher m = STRUCTURED_PARAM.matcher(v);
        while (m.find()) {
            String name = m.group(1).toLowerCase(Locale.ROOT);
            if (name.equals("reset") || name.equals("t")) {
                return decimal(m.group(2), 1_000_000_000L);
            }
        }
        return null;
    }

    /** Whether the IETF RateLimit field says its limit still has room ({@code remaining} or {@code r} above 0). */
    static boolean structuredHasRoom(String v) {
        if (v == null || v.length() > MAX_VALUE_LENGTH) {
            return false;
        }
        Matcher m = STRUCTURED_PARAM.matcher(v);
        while (m.find()) {
            String name = m.group(1).toLowerCase(Locale.ROOT);
            if ((name.equals("remaining") || name.equals("r")) && new BigDecimal(m.group(2)).signum() > 0) {
                return true;
            }
        }
        return false;
    }

    private static Duration at(Instant at, Instant now) {
        return at == null ? null : until(now, at);
    }

    /** The date in Anthropic's "You will regain access on YYYY-MM-DD at HH:MM UTC"; else null. */
    static Instant regainAccess(String message) {
        if (message == null) {
            return null;
        }
        Matcher m = REGAIN.matcher(message);
        if (!m.find()) {
            return null;
        }
        try {
            LocalDate day = LocalDate.parse(m.group(1));
            LocalTime time = m.group(2) == null
                    ? LocalTime.MIDNIGHT
                    : LocalTime.of(Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)));
            return day.atTime(time).toInstant(ZoneOffset.UTC);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Whether a message states an Anthropic regain date at all, readable or not. */
    static boolean mentionsRegainAccess(String message) {
        return message != null && message.length() <= 1 << 16
                && message.toLowerCase(Locale.ROOT).contains("regain access on");
    }

    /** The next midnight in America/Los_Angeles after {@code now} (Gemini's daily quota reset). */
    static Instant nextPacificMidnight(Instant now) {
        return now.atZone(PACIFIC).toLocalDate().plusDays(1).atStartOfDay(PACIFIC).toInstant();
    }

    /** The next 00:00 UTC after {@code now}. */
    static Instant nextUtcMidnight(Instant now) {
        return now.atZone(ZoneOffset.UTC).toLocalDate().plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
    }

    /** 00:00 UTC on the next Monday after {@code now}. */
    static Instant nextMondayUtc(Instant now) {
        LocalDate d = now.atZone(ZoneOffset.UTC).toLocalDate().plusDays(1);
        while (d.getDayOfWeek() != java.time.DayOfWeek.MONDAY) {
            d = d.plusDays(1);
        }
        return d.atStartOfDay(ZoneOffset.UTC).toInstant();
    }

    /** 00:00 UTC on the first day of the month after {@code now}. */
    static Instant nextMonthUtc(Instant now) {
        LocalDate d = now.atZone(ZoneOffset.UTC).toLocalDate().withDayOfMonth(1).plusMonths(1);
        return d.atStartOfDay(ZoneOffset.UTC).toInstant();
    }

    /** The wait from {@code now} until {@code at}; zero when {@code at} has passed. */
    static Duration until(Instant now, Instant at) {
        if (!at.isAfter(now)) {
            return Duration.ZERO;
        }
        // both are within Instant's range, but their distance may not fit a Duration in nanos
        long seconds = at.getEpochSecond() - now.getEpochSecond();
        return Duration.ofSeconds(seconds, (long) at.getNano() - now.getNano());
    }

    private static BigDecimal add(BigDecimal total, String amount, long nanosPerUnit) {
        return amount == null ? total : total.add(new BigDecimal(amount).multiply(BigDecimal.valueOf(nanosPerUnit)));
    }

    /** Nanos as a Duration; absurd values saturate at about 292 years instead of overflowing. */
    private static Duration ofNanos(BigDecimal nanos) {
        BigDecimal max = BigDecimal.valueOf(Long.MAX_VALUE);
        if (nanos.compareTo(max) >= 0) {
            return Duration.ofNanos(Long.MAX_VALUE);
        }
        return Duration.ofNanos(nanos.longValue());
    }
}
