package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import dev.layover.core.provider.Provider;

/**
 * How a provider counts a call's tokens against its token limits, beyond what its usage object
 * says: whether input tokens read from a prompt cache count as input, and how many tokens of the
 * combined limit one output token uses.
 *
 * <p>{@link #of(Provider)} gives each provider's documented default:
 *
 * <ul>
 *   <li>OpenAI, Azure OpenAI: cache reads count (OpenAI's prompt caching guide: caching does not
 *       change rate limits; cached tokens are part of {@code prompt_tokens}); weight 1.
 *   <li>Anthropic, also on Bedrock: cache reads do not count against ITPM "for most models"
 *       (https://docs.anthropic.com/en/api/rate-limits, the cache-aware ITPM section; the few
 *       older models marked there do count them: use {@code new CountingRule(true, 1)} for
 *       them); weight 1.
 *   <li>Gemini: cache reads count (not documented either way: counted, to stay under the limit);
 *       weight 1.
 *   <li>Bedrock: cache reads do not count, cache writes do
 *       (https://docs.aws.amazon.com/bedrock/latest/userguide/quotas-token-burndown.html); weight
 *       1. That page lists the models, Anthropic Claude 3.7 Sonnet and the Claude 4 family among
 *       them, whose output burndown rate is 5: use {@code new CountingRule(false, 5)} for them.
 *   <li>Groq: cache reads do not count ("Cached tokens do not count towards your rate limits",
 *       https://console.groq.com/docs/rate-limits); weight 1.
 *   <li>The other OpenAI-compatible servers, unknown: cache reads count (as in OpenAI's
 *       {@code prompt_tokens}; to stay under the limit); weight 1.
 * </ul>
 *
 * @param cacheReadsCount whether input tokens read from a prompt cache count against the input
 *     and combined limits
 * @param outputWeight how many tokens of the combined ({@link TokenDimension#TOKENS}) limit one
 *     output token uses; 1 to 100
 */
public record CountingRule(boolean cacheReadsCount, int outputWeight) {

    /**
     * @throws IllegalArgumentException if {@code outputWeight} is not in 1..100
     *
     * @param cacheReadsCount whether input tokens read from a prompt cache count against the input and combined limits
     * @param outputWeight how many tokens of the combined ({@link TokenDimension#TOKENS}) limit one output
     *     token uses; 1 to 100
     */
    public CountingRule {
        if (outputWeight < 1 || outputWeight > 100) {
            throw new IllegalArgumentException("outputWeight must be 1 to 100, was " + outputWeight);
        }
    }

    /**
     * The provider's documented default rule (see the class comment).
     *
     * @param provider the provider; {@code null} means {@link Provider#UNKNOWN}
     * @return the rule; never {@code null}
     */
    public static CountingRule of(Provider provider) {
        if (provider == null) {
            return new CountingRule(true, 1);
        }
        return switch (provider) {
            case ANTHROPIC, ANTHROPIC_BEDROCK, BEDROCK, GROQ -> new CountingRule(false, 1);
            case OPENAI, AZURE_OPENAI, GEMINI, UNKNOWN, MISTRAL, DEEPSEEK, OPENROUTER, TOGETHER, FIREWORKS, XAI, VLLM,
                    OLLAMA -> new CountingRule(true, 1);
        };
    }
}
