package dev.layover.core.internal.observe;

import java.time.Duration;

/**
 * How an instance writes {@code layover.time_series_counts} (defaults documented on
 * {@code Layover.Builder#timeSeries}).
 *
 * @param on whether counters are kept and flushed at all
 * @param flushEvery how often the counters are written (one statement per flush)
 * @param keepTenSecond how long 10-second rows are kept
 * @param keepMinute how long one-minute and one-hour rows are kept
 */
public record TimeSeriesSettings(boolean on, Duration flushEvery, Duration keepTenSecond, Duration keepMinute) {

    /** Layover's defaults: on, flushed every 10 s, 10-second rows kept 1 hour, minute and hour rows 7 days. */
    public static final TimeSeriesSettings DEFAULTS =
            new TimeSeriesSettings(true, Duration.ofSeconds(10), Duration.ofHours(1), Duration.ofDays(7));
}
