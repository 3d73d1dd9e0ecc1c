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

    /** The wait in a message: "Please try again in 1.5s", "try again in 644ms", "retry after 59 seconds". */
    static Duration hint(String message) {
        if (message == null || message.isEmpty()) {
            return null;
        }
        Matcher m = HINT.matcher(message.length() > 4000 ? message.substring(0, 4000) : message);
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
