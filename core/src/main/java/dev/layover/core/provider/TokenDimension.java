package dev.layover.core.provider;

/**
 * A token limit a provider enforces per minute, beside its request limit: which token count it
 * counts, as named in a 429 or in rate-limit headers, and as a bucket dimension. Which tokens of a
 * call count against each one is the provider's documented rule: see
 * {@code dev.layover.core.tokens.TokenUsage#tokensFor} and {@code CountingRule}.
 *
 * <ul>
 *   <li>OpenAI and Azure OpenAI enforce {@link #TOKENS} (TPM, input and output together).
 *   <li>Anthropic enforces {@link #INPUT_TOKENS} (ITPM) and {@link #OUTPUT_TOKENS} (OTPM)
 *       separately.
 *   <li>Gemini's "TPM" counts input tokens only: configure it as {@link #INPUT_TOKENS}.
 *   <li>Amazon Bedrock enforces {@link #TOKENS} (TPM, with an output burndown rate for some
 *       models).
 * </ul>
 */
public enum TokenDimension {
    /**
     * Input and output together: OpenAI and Azure OpenAI tokens per minute (TPM,
     * {@code x-ratelimit-*-tokens}), Anthropic's {@code anthropic-ratelimit-tokens-*}, Bedrock's TPM.
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
