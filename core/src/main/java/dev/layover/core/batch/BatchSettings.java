package dev.layover.core.batch;

import dev.layover.core.ConfigurationException;
import java.time.Duration;
import java.util.Objects;

/**
 * How the batchable jobs of one provider key (or {@code prefix*} pattern) go by batch: the
 * transport and the timing. Set with {@code Layover.Builder#batching(String, BatchSettings)}.
 * Immutable; every {@code withX} returns a copy.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>what it decides</th></tr>
 *   <tr><td>{@link #expectedCompletion()}</td><td>1 h</td><td>how long a batch is expected to take;
 *       a job is gathered only when its latest useful finish is at least this plus the rescue
 *       margin away</td></tr>
 *   <tr><td>{@link #rescueMargin()}</td><td>15 min</td><td>a submitted batch still running this
 *       long before its earliest job's latest useful finish is cancelled, and its unanswered jobs
 *       go to direct calls; an unsent one is given up</td></tr>
 *   <tr><td>{@link #maxGatherAge()}</td><td>1 min</td><td>an open batch is sealed (and submitted)
 *       once this old</td></tr>
 *   <tr><td>{@link #maxRequests()}</td><td>the transport's limit (OpenAI 50,000; Anthropic
 *       100,000)</td><td>lines per batch</td></tr>
 *   <tr><td>{@link #maxBytes()}</td><td>the transport's limit (OpenAI 200 MB; Anthropic 256 MB)</td>
 *       <td>bytes of request bodies per batch; a single line larger than this is called directly</td></tr>
 *   <tr><td>{@link #pollInterval()}</td><td>30 s</td><td>how often a submitted batch is polled</td></tr>
 *   <tr><td>{@link #discount()}</td><td>0.5</td><td>the provider's batch discount, for
 *       {@code layover.batch_status.saved_tokens} only</td></tr>
 *   <tr><td>{@link #lease()}</td><td>10 min</td><td>how long an instance holds a batch it
 *       submits or polls before another may take it over</td></tr>
 * </table>
 */
public final class BatchSettings {

    private final BatchTransport transport;
    private final Duration expectedCompletion;
    private final Duration rescueMargin;
    private final Duration maxGatherAge;
    private final int maxRequests;
    private final long maxBytes;
    private final Duration pollInterval;
    private final double discount;
    private final Duration lease;

    private BatchSettings(BatchTransport transport, Duration expectedCompletion, Duration rescueMargin,
            Duration maxGatherAge, int maxRequests, long maxBytes, Duration pollInterval, double discount,
            Duration lease) {
        this.transport = transport;
        this.expectedCompletion = expectedCompletion;
        this.rescueMargin = rescueMargin;
        this.maxGatherAge = maxGatherAge;
        this.maxRequests = maxRequests;
        this.maxBytes = maxBytes;
        this.pollInterval = pollInterval;
        this.discount = discount;
        this.lease = lease;
    }

    /**
     * @param transport the provider's batch API
     * @return settings with the defaults above
     */
    public static BatchSettings of(BatchTransport transport) {
        Objects.requireNonNull(transport, "transport");
        return new BatchSettings(transport, Duration.ofHours(1), Duration.ofMinutes(15), Duration.ofMinutes(1),
                transport.maxRequests(), transport.maxBytes(), Duration.ofSeconds(30), 0.5, Duration.ofMinutes(10));
    }

    /**
     * @param d positive, below the transport's completion window
     * @return a copy
     * @throws ConfigurationException out of range
     */
    public BatchSettings withExpectedCompletion(Duration d) {
        positive(d, "expectedCompletion");
        if (d.compareTo(transport.completionWindow()) > 0) {
            throw new ConfigurationException("batch expectedCompletion " + d + " is longer than the provider's window "
                    + transport.completionWindow());
        }
        return new BatchSettings(transport, d, rescueMargin, maxGatherAge, maxRequests, maxBytes, pollInterval, discount, lease);
    }

    /**
     * @param d positive
     * @return a copy
     * @throws ConfigurationException when not positive
     */
    public BatchSettings withRescueMargin(Duration d) {
        positive(d, "rescueMargin");
        return new BatchSettings(transport, expectedCompletion, d, maxGatherAge, maxRequests, maxBytes, pollInterval, discount, lease);
    }

    /**
     * @param d positive
     * @return a copy
     * @throws ConfigurationException when not positive
     */
    public BatchSettings withMaxGatherAge(Duration d) {
        positive(d, "maxGatherAge");
        return new BatchSettings(transport, expectedCompletion, rescueMargin, d, maxRequests, maxBytes, pollInterval, discount, lease);
    }

    /**
     * @param n 1 to the transport's {@link BatchTransport#maxRequests()}
     * @return a copy
     * @throws ConfigurationException out of range
     */
    public BatchSettings withMaxRequests(int n) {
        if (n < 1 || n > transport.maxRequests()) {
            throw new ConfigurationException("batch maxRequests must be 1 to " + transport.maxRequests() + ": " + n);
        }
        return new BatchSettings(transport, expectedCompletion, rescueMargin, maxGatherAge, n, maxBytes, pollInterval, discount, lease);
    }

    /**
     * @param n 1 to the transport's {@link BatchTransport#maxBytes()}
     * @return a copy
     * @throws ConfigurationException out of range
     */
    public BatchSettings withMaxBytes(long n) {
        if (n < 1 || n > transport.maxBytes()) {
            throw new ConfigurationException("batch maxBytes must be 1 to " + transport.maxBytes() + ": " + n);
        }
        return new BatchSettings(transport, expectedCompletion, rescueMargin, maxGatherAge, maxRequests, n, pollInterval, discount, lease);
    }

    /**
     * @param d 100 ms or more
     * @return a copy
     * @throws ConfigurationException below 100 ms
     */
    public BatchSettings withPollInterval(Duration d) {
        Objects.requireNonNull(d, "pollInterval");
        if (d.compareTo(Duration.ofMillis(100)) < 0) {
            throw new ConfigurationException("batch pollInterval must be at least 100 ms: " + d);
        }
        return new BatchSettings(transport, expectedCompletion, rescueMargin, maxGatherAge, maxRequests, maxBytes, d, discount, lease);
    }

    /**
     * @param share in [0, 1): 0.5 is half price
     * @return a copy
     * @throws ConfigurationException out of range
     */
    public BatchSettings withDiscount(double share) {
        if (!(share >= 0 && share < 1)) {
            throw new ConfigurationException("batch discount must be in [0, 1): " + share);
        }
        return new BatchSettings(transport, expectedCompletion, rescueMargin, maxGatherAge, maxRequests, maxBytes, pollInterval, share, lease);
    }

    /**
     * How long an instance holds a batch it submits or polls: past it another instance takes the
     * batch over (after a crash), and first looks for what the lost one may have submitted.
     *
     * @param d 1 s or more
     * @return a copy
     * @throws ConfigurationException below 1 s
     */
    public BatchSettings withLease(Duration d) {
        Objects.requireNonNull(d, "lease");
        if (d.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new ConfigurationException("batch lease must be at least 1 s: " + d);
        }
        return new BatchSettings(transport, expectedCompletion, rescueMargin, maxGatherAge, maxRequests, maxBytes,
                pollInterval, discount, d);
    }

    /** @return how long an instance holds a batch it submits or polls (default 10 min) */
    public Duration lease() {
        return lease;
    }

    /** @return the transport */
    public BatchTransport transport() {
        return transport;
    }

    /** @return how long a batch is expected to take (default 1 h) */
    public Duration expectedCompletion() {
        return expectedCompletion;
    }

    /** @return how long before a job's latest useful finish a batch is rescued (default 15 min) */
    public Duration rescueMargin() {
        return rescueMargin;
    }

    /** @return how old an open batch gets before it is sealed (default 1 min) */
    public Duration maxGatherAge() {
        return maxGatherAge;
    }

    /** @return lines per batch (default: the transport's limit) */
    public int maxRequests() {
        return maxRequests;
    }

    /** @return bytes of request bodies per batch (default: the transport's limit) */
    public long maxBytes() {
        return maxBytes;
    }

    /** @return how often a submitted batch is polled (default 30 s) */
    public Duration pollInterval() {
        return pollInterval;
    }

    /** @return the provider's batch discount (default 0.5) */
    public double discount() {
        return discount;
    }

    private static void positive(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new ConfigurationException("batch " + name + " must be positive: " + d);
        }
    }
}
