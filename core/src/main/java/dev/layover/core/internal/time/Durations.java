package dev.layover.core.internal.time;

import java.time.Duration;

/** Durations as SQL takes them ({@code make_interval(secs => ?)}: float8 seconds). */
public final class Durations {

    private Durations() {}

    /**
     * @param d a duration
     * @return it in seconds, to the nanosecond
     */
    public static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }
}
