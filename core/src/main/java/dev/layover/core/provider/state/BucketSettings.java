package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.time.Duration;

/**
 * An admission limit for one provider key, shared by every worker of the fleet: requests per
 * minute and/or tokens per minute. Immutable; every {@code withX} returns a copy. Set with
 * {@code Layover.Builder#bucket(String, BucketSettings)}.
 *
 * <p>Database: one row of {@code layover.buckets} per key, holding for each limited dimension a
 * GCRA "theoretical arrival time" (when the permits handed out so far will have drained). A
 * worker takes permits with one {@code UPDATE} that moves it forward. To keep round trips down it
 * takes up to {@link #lease()} request permits at once, when that many are free now, and spends
 * them locally within the burst duration, at most one second (unspent ones lapse). A job that finds no free permit is given
 * the next future one and rescheduled to its time (reason {@code bucket}, no attempt spent); it
 * keeps that permit in {@code scheduled_tasks.permit_at} and runs at that time without asking
 * again (a permit picked up later than two poll intervals, at least 2 s, after its time lapses
 * and the job asks again).
 *
 * <p>Permits: in any interval of length {@code t} the fleet is given at most
 * {@code rate * t + capacity} permits, where the capacity is the rate times {@link #burst()}, at
 * least one request. Calls start when their permit exists, or later: a job rescheduled to its
 * permit is picked up to a poll interval late, and a leased permit is spent within the burst, so
 * the provider may see a little more than that within a short interval, never more on average. A job type's token cost is an estimate given with
 * {@code Layover.Builder#tokenCost}; jobs without one count no tokens.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #requestsPerMinute()}</td><td>none (0)</td></tr>
 *   <tr><td>{@link #tokensPerMinute()}</td><td>none (0)</td></tr>
 *   <tr><td>{@link #burst()}</td><td>1 s of the rate</td></tr>
 *   <tr><td>{@link #lease()}</td><td>8 request permits per round trip</td></tr>
 * </table>
 *
 * @param requestsPerMinute request limit, 0 for none
 * @param tokensPerMinute token limit, 0 for none
 * @param burst how much of the rate may be spent at once
 * @param lease the most request permits a worker takes per round trip; at least 1
 */
public record BucketSettings(double requestsPerMinute, double tokensPerMinute, Duration burst, int lease) {

    /**
     * Validates the settings.
     *
     * @param requestsPerMinute request limit, 0 for none
     * @param tokensPerMinute token limit, 0 for none
     * @param burst how much of the rate may be spent at once
     * @param lease the most request permits a worker takes per round trip; at least 1
     */
    public BucketSettings {
        if (requestsPerMinute < 0 || tokensPerMinute < 0 || Double.isNaN(requestsPerMinute) || Double.isNaN(tokensPerMinute)
                || Double.isInfinite(requestsPerMinute) || Double.isInfinite(tokensPerMinute)) {
            throw new ConfigurationException("bucket limits must be finite and not negative");
        }
        if (requestsPerMinute == 0 && tokensPerMinute == 0) {
            throw new ConfigurationException("a bucket needs a request or a token limit");
        }
        BreakerSettings.positive(burst, "burst");
        if (lease < 1) {
            throw new ConfigurationException("lease must be at least 1, was " + lease);
        }
    }

    /**
     * @param n requests per minute
     * @return a request limit with the default burst and lease
     */
    public static BucketSettings requestsPerMinute(double n) {
        return new BucketSettings(n, 0, Duration.ofSeconds(1), 8);
    }

    /**
     * @param n requests per second
     * @return a request limit with the default burst and lease
     */
    public static BucketSettings requestsPerSecond(double n) {
        return requestsPerMinute(n * 60);
    }

    /**
     * @param n tokens per minute
     * @return a token limit with the default burst and lease
     */
    public static BucketSettings tokensPerMinute(double n) {
        return new BucketSettings(0, n, Duration.ofSeconds(1), 8);
    }

    /**
     * @param n tokens per minute, 0 for none
     * @return a copy with that token limit
     */
    public BucketSettings withTokensPerMinute(double n) {
        return new BucketSettings(requestsPerMinute, n, burst, lease);
    }

    /**
     * @param n requests per minute, 0 for none
     * @return a copy with that request limit
     */
    public BucketSettings withRequestsPerMinute(double n) {
        return new BucketSettings(n, tokensPerMinute, burst, lease);
    }

    /**
     * @param d how much of the rate may be spent at once (the bucket's capacity is rate times this)
     * @return a copy with that burst
     */
    public BucketSettings withBurst(Duration d) {
        return new BucketSettings(requestsPerMinute, tokensPerMinute, d, lease);
    }

    /**
     * @param permits the most request permits a worker takes per round trip
     * @return a copy with that lease size
     */
    public BucketSettings withLease(int permits) {
        return new BucketSettings(requestsPerMinute, tokensPerMinute, burst, permits);
    }

    /** @return requests per second, 0 for none */
    public double requestRate() {
        return requestsPerMinute / 60.0;
    }

    /** @return tokens per second, 0 for none */
    public double tokenRate() {
        return tokensPerMinute / 60.0;
    }

    /** @return the request capacity: the rate times the burst, at least 1 */
    public double requestCapacity() {
        return Math.max(1, requestRate() * burst.toNanos() / 1e9);
    }

    /** @return the token capacity: the rate times the burst, at least 1 */
    public double tokenCapacity() {
        return Math.max(1, tokenRate() * burst.toNanos() / 1e9);
    }
}
