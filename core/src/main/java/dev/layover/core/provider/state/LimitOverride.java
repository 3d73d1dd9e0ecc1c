package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;

/**
 * An operator's limits for one key at run time ({@link ProviderStates#setLimit}): every worker of
 * the fleet uses them for the key in place of its configured ones, within about a second
 * (NOTIFY, else the provider-state refresh), until {@link ProviderStates#revertLimit}. A
 * dimension left {@code null} keeps what the worker configured for it (a bucket or concurrency
 * limit the key has by {@code Layover.Builder#bucket} / {@code #concurrencyLimit}, exact or by
 * pattern); a set one replaces it, or gives the key that limit when it had none. For a provider
 * key or a limit key (a tenant key).
 *
 * <table>
 *   <caption>Dimensions</caption>
 *   <tr><th>dimension</th><th>what it limits</th></tr>
 *   <tr><td>{@link #requestsPerMinute()}</td><td>the key's bucket: requests</td></tr>
 *   <tr><td>{@link #tokensPerMinute()}</td><td>combined tokens</td></tr>
 *   <tr><td>{@link #inputTokensPerMinute()}</td><td>input tokens</td></tr>
 *   <tr><td>{@link #outputTokensPerMinute()}</td><td>output tokens</td></tr>
 *   <tr><td>{@link #maxInFlight()}</td><td>the key's concurrency limit: calls in flight</td></tr>
 * </table>
 *
 * <p>Database: a row of {@code layover.limit_overrides} per key; bursts stay as configured
 * (a bucket the override alone gives a key has {@link BucketSettings}' defaults). Immutable.
 *
 * @param requestsPerMinute requests a minute, or null
 * @param tokensPerMinute combined tokens a minute, or null
 * @param inputTokensPerMinute input tokens a minute, or null
 * @param outputTokensPerMinute output tokens a minute, or null
 * @param maxInFlight calls in flight at most, or null
 */
public record LimitOverride(Double requestsPerMinute, Double tokensPerMinute, Double inputTokensPerMinute,
        Double outputTokensPerMinute, Integer maxInFlight) {

    /** The largest rate an override may set, per minute. */
    public static final double MAX_PER_MINUTE = 1e12;

    /** The largest concurrency limit an override may set. */
    public static final int MAX_IN_FLIGHT = 100_000;

    /**
     * Checks the dimensions.
     *
     * @throws ConfigurationException when none is set, or one is not positive or above the maximum
     */
    public LimitOverride {
        if (requestsPerMinute == null && tokensPerMinute == null && inputTokensPerMinute == null
                && outputTokensPerMinute == null && maxInFlight == null) {
            throw new ConfigurationException("a limit override sets at least one of requestsPerMinute, tokensPerMinute, "
                    + "inputTokensPerMinute, outputTokensPerMinute, maxInFlight");
        }
        rate(requestsPerMinute, "requestsPerMinute");
        rate(tokensPerMinute, "tokensPerMinute");
        rate(inputTokensPerMinute, "inputTokensPerMinute");
        rate(outputTokensPerMinute, "outputTokensPerMinute");
        if (maxInFlight != null && (maxInFlight < 1 || maxInFlight > MAX_IN_FLIGHT)) {
            throw new ConfigurationException("maxInFlight must be 1 to " + MAX_IN_FLIGHT + ", got " + maxInFlight);
        }
    }

    private static void rate(Double v, String name) {
        if (v != null && (!(v > 0) || v > MAX_PER_MINUTE || v.isInfinite())) {
            throw new ConfigurationException(name + " must be positive and at most " + (long) MAX_PER_MINUTE
                    + " a minute, got " + v);
        }
    }

    /** @return an override of the request rate only */
    public static LimitOverride requestsPerMinute(double n) {
        return new LimitOverride(n, null, null, null, null);
    }

    /** @return an override of the combined token rate only */
    public static LimitOverride tokensPerMinute(double n) {
        return new LimitOverride(null, n, null, null, null);
    }

    /** @return an override of the concurrency limit only */
    public static LimitOverride maxInFlight(int n) {
        return new LimitOverride(null, null, null, null, n);
    }

    /** @return a copy with that request rate (null: the configured one) */
    public LimitOverride withRequestsPerMinute(Double n) {
        return new LimitOverride(n, tokensPerMinute, inputTokensPerMinute, outputTokensPerMinute, maxInFlight);
    }

    /** @return a copy with that combined token rate (null: the configured one) */
    public LimitOverride withTokensPerMinute(Double n) {
        return new LimitOverride(requestsPerMinute, n, inputTokensPerMinute, outputTokensPerMinute, maxInFlight);
    }

    /** @return a copy with that input token rate (null: the configured one) */
    public LimitOverride withInputTokensPerMinute(Double n) {
        return new LimitOverride(requestsPerMinute, tokensPerMinute, n, outputTokensPerMinute, maxInFlight);
    }

    /** @return a copy with that output token rate (null: the configured one) */
    public LimitOverride withOutputTokensPerMinute(Double n) {
        return new LimitOverride(requestsPerMinute, tokensPerMinute, inputTokensPerMinute, n, maxInFlight);
    }

    /** @return a copy with that concurrency limit (null: the configured one) */
    public LimitOverride withMaxInFlight(Integer n) {
        return new LimitOverride(requestsPerMinute, tokensPerMinute, inputTokensPerMinute, outputTokensPerMinute, n);
    }

    /** @return whether it sets a bucket dimension */
    public boolean setsBucket() {
        return requestsPerMinute != null || tokensPerMinute != null || inputTokensPerMinute != null
                || outputTokensPerMinute != null;
    }

    /**
     * @param configured the key's configured bucket, or null
     * @return the bucket with this override's dimensions in place of the configured ones; the
     *     configured bucket itself when the override sets none
     */
    public BucketSettings applyTo(BucketSettings configured) {
        if (!setsBucket()) {
            return configured;
        }
        if (configured == null) {
            return new BucketSettings(orZero(requestsPerMinute), orZero(tokensPerMinute), java.time.Duration.ofSeconds(1),
                    orZero(inputTokensPerMinute), orZero(outputTokensPerMinute), BucketSettings.DEFAULT_TOKEN_BURST);
        }
        return new BucketSettings(requestsPerMinute != null ? requestsPerMinute : configured.requestsPerMinute(),
                tokensPerMinute != null ? tokensPerMinute : configured.tokensPerMinute(), configured.burst(),
                inputTokensPerMinute != null ? inputTokensPerMinute : configured.inputTokensPerMinute(),
                outputTokensPerMinute != null ? outputTokensPerMinute : configured.outputTokensPerMinute(),
                configured.tokenBurst());
    }

    private static double orZero(Double d) {
        return d == null ? 0 : d;
    }
}
