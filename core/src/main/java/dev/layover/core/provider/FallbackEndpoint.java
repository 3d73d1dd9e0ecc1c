package dev.layover.core.provider;

import java.util.Objects;

/**
 * One endpoint of a {@link FallbackChain}: a provider key, which has its own breaker, cooldown and
 * bucket, and whatever the call needs to reach it (an SDK client, a base URL, a model name).
 *
 * @param providerKey the endpoint's provider key, e.g. {@code openai:gpt-4o-mini}; 1-200 characters
 * @param client what the call uses; may be {@code null}
 * @param <C> the client type
 */
public record FallbackEndpoint<C>(String providerKey, C client) {

    /**
     * Checks the key.
     *
     * @param providerKey the endpoint's provider key, e.g. {@code openai:gpt-4o-mini}; 1-200 characters
     * @param client what the call uses; may be {@code null}
     */
    public FallbackEndpoint {
        Objects.requireNonNull(providerKey, "providerKey");
        if (providerKey.isEmpty() || providerKey.length() > 200) {
            throw new IllegalArgumentException("a provider key must be 1-200 characters: " + providerKey);
        }
    }
}
