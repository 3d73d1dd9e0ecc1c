package dev.layover.core.provider;

import java.util.List;

/**
 * The answer of a {@link FallbackChain}: what the endpoint that answered returned, which one it
 * was, and the trail of the endpoints considered before it.
 *
 * @param value what the call returned
 * @param providerKey the key of the endpoint that answered
 * @param trail every endpoint considered, in order; the last one answered
 * @param <R> the answer type
 */
public record FallbackResult<R>(R value, String providerKey, List<FallbackStep> trail) {

    /**
     * Copies the trail.
     *
     * @param value what the call returned
     * @param providerKey the key of the endpoint that answered
     * @param trail every endpoint considered, in order; the last one answered
     */
    public FallbackResult {
        trail = List.copyOf(trail);
    }

    /** @return whether an endpoint other than the first answered */
    public boolean fellBack() {
        return trail.size() > 1;
    }
}
