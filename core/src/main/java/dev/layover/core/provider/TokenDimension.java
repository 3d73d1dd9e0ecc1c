package dev.layover.core.provider;

/**
 * Which token count a provider's token limit counts, as named in a 429 or in rate-limit headers.
 */
public enum TokenDimension {
    /**
     * Input and output together: OpenAI and Azure OpenAI tokens per minute (TPM,
     * {@code x-ratelimit-*-tokens}), Anthropic's {@code anthropic-ratelimit-tokens-*}.
     */
    TOKENS,
    /**
     * Input tokens only: Anthropic's input tokens per minute (ITPM,
     * {@code anthropic-ratelimit-input-tokens-*}), Gemini's input-token quota
     * ({@code GenerateContent...InputTokens...PerMinute}).
     */
    INPUT_TOKENS,
    /** Output tokens only: Anthropic's output tokens per minute (OTPM, {@code anthropic-ratelimit-output-tokens-*}). */
    OUTPUT_TOKENS
}
