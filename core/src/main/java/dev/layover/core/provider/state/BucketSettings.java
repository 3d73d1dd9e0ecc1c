package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import dev.layover.core.provider.TokenDimension;
import java.time.Duration;

/**
 * An admission limit for one provider key, shared by every worker of the fleet, in up to four
 * dimensions, each optional: requests per minute, tokens per minute (input and output together),
 * input tokens per minute and output tokens per minute (the dimensions are
 * {@link dev.layover.core.provider.TokenDimension}; which tokens of a call count against each is
 * the provider's documented rule, see {@code docs/tokens.md}). Immutable; every {@code withX}
 * returns a copy. Set with {@code Layover.Builder#bucket(String, BucketSettings)}.
 *
 * <p>Database: one row of {@code layover.buckets} per key, holding for each limited dimension a
 * GCRA "theoretical arrival time" (when the permits handed out so far will have drained). The pick
 * is the admission ({@code layover.pick}): it takes a key's due jobs only as far as the bucket has
 * permits (and tokens) free now and moves the row in the same statement; a job it does not admit
 * is not touched and waits for a later pick, without an attempt or a reschedule. Past its job
 * type's {@code maxDeferral} waiting, a job is parked {@code rate_limit_exhausted}.
 *
 * <p>Permits: in any interval of length {@code t} the fleet is given at most
 * {@code rate * t + capacity} permits, where the capacity is the rate times {@link #burst()}, at
 * least one request. A job admitted by a pick starts when a worker thread takes it, at once or a
 * little later: the provider never sees more than that, and on average not more than the rate.
 *
 * <p>Tokens: a pick admits a key's jobs in order while their token estimates (a job type's
 * {@code JobType.Builder#tokenEstimate}: input estimate plus output ceiling, stored at enqueue) fit
 * what is free in every token dimension, and reserves them. The token capacity is the rate times
 * {@link #tokenBurst()}, by default one minute (the providers' own token buckets hold a minute of
 * their limit). A job whose reservation is larger than a dimension's capacity can never be
 * admitted: it parks as {@code rejected}, with the numbers. After the call the usage the handler
 * reported replaces the reservation (see {@code docs/tokens.md}).
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #requestsPerMinute()}</td><td>none (0)</td></tr>
 *   <tr><td>{@link #tokensPerMinute()}</td><td>none (0)</td></tr>
 *   <tr><td>{@link #inputTokensPerMinute()}</td><td>none (0)</td></tr>
 *   <tr><td>{@link #outputTokensPerMinute()}</td><td>none (0)</td></tr>
 *   <tr><td>{@link #burst()}</td><td>1 s of the request rate</td></tr>
 *   <tr><td>{@link #tokenBurst()}</td><td>60 s of each token rate (capacity = the per-minute limit)</td></tr>
 * </table>
 *
 * @param requestsPerMinute request limit, 0 for none
 * @param tokensPerMinute combined (input + output) token limit, 0 for none
 * @param burst how much of the request rate may be spent at once
 * @param inputTokensPerMinute input token limit, 0 for none
 * @param outputTokensPerMinute output token limit, 0 for none
 * @param tokenBurst how much of each token rate may be spent at once
 */
public record BucketSettings(double requestsPerMinute, double tokensPerMinute, Duration burst,
        double inputTokensPerMinute, double outputTokensPerMinute, Duration tokenBurst) {

    /** The default {@link #tokenBurst()}: a minute. */
    public static final Duration DEFAULT_TOKEN_BURST = Duration.ofMinutes(1);

    /**
     * Validates the settings.
     *
     * @param requestsPerMinute request limit, 0 for none
     * @param tokensPerMinute combined token limit, 0 for none
     * @param burst how much of the request rate may be spent at once
     * @param inputTokensPerMinute input token limit, 0 for none
     * @param outputTokensPerMinute output token limit, 0 for none
     * @param tokenBurst how much of each token rate may be spent at once
     */
    public BucketSettings {
        for (double d : new double[] {requestsPerMinute, tokensPerMinute, inputTokensPerMinute, outputTokensPerMinute}) {
            if (d < 0 || Double.isNaN(d) || Double.isInfinite(d)) {
                throw new ConfigurationException("bucket limits must be finite and not negative");
            }
        }
        if (requestsPerMinute == 0 && tokensPerMinute == 0 && inputTokensPerMinute == 0 && outputTokensPerMinute == 0) {
            throw new ConfigurationException("a bucket needs a request or a token limit");
        }
        BreakerSettings.positive(burst, "burst");
        BreakerSettings.positive(tokenBurst, "tokenBurst");
    }

    /**
     * Request and combined token limits, with the default token burst and no input or output limit.
     *
     * @param requestsPerMinute request limit, 0 for none
     * @param tokensPerMinute combined token limit, 0 for none
     * @param burst how much of the request rate may be spent at once
     */
    public BucketSettings(double requestsPerMinute, double tokensPerMinute, Duration burst) {
        this(requestsPerMinute, tokensPerMinute, burst, 0, 0, DEFAULT_TOKEN_BURST);
    }

    /**
     * @param n requests per minute
     * @return a request limit with the default burst
     */
    public static BucketSettings requestsPerMinute(double n) {
        return new BucketSettings(n, 0, Duration.ofSeconds(1));
    }

    /**
     * @param n requests per second
     * @return a request limit with the default burst
     */
    public static BucketSettings requestsPerSecond(double n) {
        return requestsPerMinute(n * 60);
    }

    /**
     * @param n combined (input + output) tokens per minute
     * @return a token limit with the default bursts
     */
    public static BucketSettings tokensPerMinute(double n) {
        return new BucketSettings(0, n, Duration.ofSeconds(1));
    }

    /**
     * @param n input tokens per minute (Anthropic's ITPM, Gemini's TPM)
     * @return an input token limit with the default bursts
     */
    public static BucketSettings inputTokensPerMinute(double n) {
        return new BucketSettings(0, 0, Duration.ofSeconds(1), n, 0, DEFAULT_TOKEN_BURST);
    }

    /**
     * @param n output tokens per minute (Anthropic's OTPM)
     * @return an output token limit with the default bursts
     */
    public static BucketSettings outputTokensPerMinute(double n) {
        return new BucketSettings(0, 0, Duration.ofSeconds(1), 0, n, DEFAULT_TOKEN_BURST);
    }

    /**
     * @param n tokens per minute, 0 for none
     * @return a copy with that combined token limit
     */
    public BucketSettings withTokensPerMinute(double n) {
        return new BucketSettings(requestsPerMinute, n, burst, inputTokensPerMinute, outputTokensPerMinute, tokenBurst);
    }

    /**
     * @param n input tokens per minute, 0 for none (Anthropic's ITPM, Gemini's TPM)
     * @return a copy with that input token limit
     */
    public BucketSettings withInputTokensPerMinute(double n) {
        return new BucketSettings(requestsPerMinute, tokensPerMinute, burst, n, outputTokensPerMinute, tokenBurst);
    }

    /**
     * @param n output tokens per minute, 0 for none (Anthropic's OTPM)
     * @return a copy with that output token limit
     */
    public BucketSettings withOutputTokensPerMinute(double n) {
        return new BucketSettings(requestsPerMinute, tokensPerMinute, burst, inputTokensPerMinute, n, tokenBurst);
    }

    /**
     * @param n requests per minute, 0 for none
     * @return a copy with that request limit
     */
    public BucketSettings withRequestsPerMinute(double n) {
        return new BucketSettings(n, tokensPerMinute, burst, inputTokensPerMinute, outputTokensPerMinute, tokenBurst);
    }

    /**
     * @param d how much of the request rate may be spent at once (the request capacity is rate times this)
     * @return a copy with that burst
     */
    public BucketSettings withBurst(Duration d) {
        return new BucketSettings(requestsPerMinute, tokensPerMinute, d, inputTokensPerMinute, outputTokensPerMinute, tokenBurst);
    }

    /**
     * @param d how much of each token rate may be spent at once (each token capacity is its rate
     *     times this; a reservation above it parks its job as rejected); default one minute
     * @return a copy with that token burst
     */
    public BucketSettings withTokenBurst(Duration d) {
        return new BucketSettings(requestsPerMinute, tokensPerMinute, burst, inputTokensPerMinute, outputTokensPerMinute, d);
    }

    /** @return requests per second, 0 for none */
    public double requestRate() {
        return requestsPerMinute / 60.0;
    }

    /** @return combined tokens per second, 0 for none */
    public double tokenRate() {
        return tokensPerMinute / 60.0;
    }

    /** @return the request capacity: the rate times the burst, at least 1 */
    public double requestCapacity() {
        return Math.max(1, requestRate() * burst.toNanos() / 1e9);
    }

    /** @return the combined token capacity: the rate times the token burst, at least 1 */
    public double tokenCapacity() {
        return capacity(TokenDimension.TOKENS);
    }

    /** @return whether any token dimension is limited */
    public boolean limitsTokens() {
        return tokensPerMinute > 0 || inputTokensPerMinute > 0 || outputTokensPerMinute > 0;
    }

    /**
     * @param d a token dimension
     * @return its limit per minute, 0 for none
     */
    public double perMinute(TokenDimension d) {
        return switch (d) {
            case TOKENS -> tokensPerMinute;
            case INPUT_TOKENS -> inputTokensPerMinute;
            case OUTPUT_TOKENS -> outputTokensPerMinute;
        };
    }

    /**
     * @param d a token dimension
     * @return its rate per second, 0 for none
     */
    public double rate(TokenDimension d) {
        return perMinute(d) / 60.0;
    }

    /**
     * @param d a token dimension
     * @return its capacity: the rate times the token burst, at least 1 (0 when not limited)
     */
    public double capacity(TokenDimension d) {
        double r = rate(d);
        return r <= 0 ? 0 : Math.max(1, r * tokenBurst.toNanos() / 1e9);
    }
}
