package dev.layover.core.tokens;

/**
 * A token limit a provider enforces per minute, beside its request limit. Which tokens of a call
 * count against each one is the provider's documented rule: see {@link TokenUsage#tokensFor} and
 * {@link CountingRule}.
 *
 * <ul>
 *   <li>OpenAI and Azure OpenAI enforce {@link #TOKENS} (TPM, input and output together).
 *   <li>Anthropic enforces {@link #INPUT_TOKENS} (ITPM) and {@link #OUTPUT_TOKENS} (OTPM)
 *       separately.
 *   <li>Gemini's "TPM" counts input tokens only: configure it as {@link #INPUT_TOKENS}.
 *   <li>Amazon Bedrock enforces {@link #TOKENS} (TPM, with an output burndown rate for some
 *       models).
 * </ul>
 *
 * <p>The lead engineer unifies this enum with {@code dev.layover.core.provider}'s
 * {@code TokenDimension} when both are merged; the constants are the same.
 */
public enum LimitDimension {
    /** Input and output tokens together (OpenAI's and Bedrock's TPM). */
    TOKENS,
    /** Input tokens only (Anthropic's ITPM, Gemini's TPM). */
    INPUT_TOKENS,
    /** Output tokens only (Anthropic's OTPM). */
    OUTPUT_TOKENS
}
