package dev.layover.core.tokens;

import java.util.Optional;

/**
 * Adds up the usage of a streamed call from its events. Each event's counts are cumulative
 * readings of the same call (Anthropic: {@code message_start} gives the input counts,
 * {@code message_delta} the output count so far; OpenAI: only the final chunk carries usage;
 * Gemini: every chunk carries the counts so far; Bedrock: the metadata event or the
 * invocation metrics of the last chunk), so every count of the result is the largest one seen.
 *
 * <p>Feed it every event (any object {@link TokenUsage#of(Object)} reads; the others are
 * ignored) and read {@link #usage()} when the stream ends. Thread-safe; in memory only.
 */
public final class StreamUsage {

    private TokenUsage merged;

    /** An empty accumulator. */
    public StreamUsage() {}

    /**
     * Takes the usage of one stream event, if it has any.
     *
     * @param event an SDK stream event or chunk, or a {@link TokenUsage}; may be {@code null}
     * @return this accumulator
     */
    public StreamUsage add(Object event) {
        TokenUsage.of(event).ifPresent(this::merge);
        return this;
    }

    /**
     * The call's usage so far.
     *
     * @return every count the largest seen; empty when no event carried usage
     */
    public synchronized Optional<TokenUsage> usage() {
        return Optional.ofNullable(merged);
    }

    private synchronized void merge(TokenUsage u) {
        merged = merged == null ? u : merged.max(u);
    }
}
