package dev.layover.core.internal.time;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** Delays with jitter, so that jobs released together do not arrive together. */
public final class Backoff {

    private static final Duration MIN_JITTER = Duration.ofMillis(250);
    private static final Duration MAX_JITTER = Duration.ofSeconds(30);

    private Backoff() {}

    /**
     * Full jitter: {@code uniform(0, min(cap, base * 2^attempts))}.
     *
     * @param base the base
     * @param cap the largest delay
     * @param attempts attempts spent, including the one that just failed
     * @return the delay
     */
    public static Duration fullJitter(Duration base, Duration cap, int attempts) {
        long capMs = cap.toMillis();
        long ceiling = capMs;
        if (attempts < 62) {
            long exp = base.toMillis() << Math.max(0, attempts);
            if (exp > 0 && exp < capMs) {
                ceiling = exp;
            }
        }
        return Duration.ofMillis(ThreadLocalRandom.current().nextLong(ceiling + 1));
    }

    /**
     * Exponential without jitter: {@code min(cap, base * 2^n)}.
     *
     * @param base the first delay
     * @param cap the longest
     * @param n how many before
     * @return the delay
     */
    public static Duration exponential(Duration base, Duration cap, int n) {
        long ms = base.toMillis() << Math.min(Math.max(n, 0), 30);
        return ms <= 0 || ms > cap.toMillis() ? cap : Duration.ofMillis(ms);
    }

    /**
     * The jitter added to a reschedule: {@code uniform(0, clamp(wait / 4, 250 ms, 30 s))}.
     *
     * @param wait the wait the provider asked for
     * @return the jitter to add
     */
    public static Duration rescheduleJitter(Duration wait) {
        Duration span = wait.dividedBy(4);
        if (span.compareTo(MIN_JITTER) < 0) {
            span = MIN_JITTER;
        } else if (span.compareTo(MAX_JITTER) > 0) {
            span = MAX_JITTER;
        }
        return Duration.ofMillis(ThreadLocalRandom.current().nextLong(span.toMillis() + 1));
    }

    /**
     * The wait after a rate limit that gave no retry-after: 1 s doubling with each earlier
     * reschedule of the job, up to 60 s.
     *
     * @param reschedules reschedules so far
     * @return the wait
     */
    public static Duration rateLimitDefault(int reschedules) {
        return Duration.ofSeconds(Math.min(60, 1L << Math.min(Math.max(reschedules, 0), 6)));
    }
}
