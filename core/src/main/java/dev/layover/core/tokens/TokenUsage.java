package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import dev.layover.core.provider.Provider;
import java.util.Objects;
import java.util.Optional;

/**
 * The tokens one call used, as the provider reported them, and the tokens of it that count
 * against each of the provider's limits.
 *
 * <p>The four counts are kept the way the provider reports them; what {@link #inputTokens} covers
 * depends on the provider ({@link #inputIncludesCache()}):
 *
 * <ul>
 *   <li><b>OpenAI, Azure OpenAI</b> (https://platform.openai.com/docs/api-reference/chat/object,
 *       https://platform.openai.com/docs/guides/prompt-caching): {@code prompt_tokens} (Responses
 *       API: {@code input_tokens}) <em>includes</em> the cached tokens, which are reported again in
 *       {@code prompt_tokens_details.cached_tokens} ({@code input_tokens_details.cached_tokens}).
 *       Reasoning tokens are inside {@code completion_tokens} ({@code output_tokens}) and only
 *       broken out in {@code completion_tokens_details.reasoning_tokens}. inputTokens =
 *       {@code prompt_tokens}, outputTokens = {@code completion_tokens}, cachedInputTokens =
 *       {@code cached_tokens}, cacheCreationInputTokens = {@code cache_write_tokens} (0 when
 *       absent).
 *   <li><b>Anthropic</b> (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
 *       {@code input_tokens} <em>excludes</em> both cache reads ({@code cache_read_input_tokens})
 *       and cache writes ({@code cache_creation_input_tokens}); the prompt's total is their sum.
 *       For its limits (https://docs.anthropic.com/en/api/rate-limits), cache reads do not count
 *       against input tokens per minute for most current models; cache writes do.
 *   <li><b>Gemini</b> (https://ai.google.dev/api/generate-content#UsageMetadata):
 *       {@code promptTokenCount} <em>includes</em> {@code cachedContentTokenCount}; thinking
 *       tokens ({@code thoughtsTokenCount}) and tool-use prompt tokens
 *       ({@code toolUsePromptTokenCount}) are reported beside the prompt and candidates, and
 *       {@code totalTokenCount} is the sum of all four. inputTokens = {@code promptTokenCount +
 *       toolUsePromptTokenCount}, outputTokens = {@code candidatesTokenCount +
 *       thoughtsTokenCount} (both billed as output), cachedInputTokens =
 *       {@code cachedContentTokenCount}, cacheCreationInputTokens = 0.
 *   <li><b>Bedrock Converse</b>
 *       (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html):
 *       {@code inputTokens}, {@code outputTokens}, {@code cacheReadInputTokens},
 *       {@code cacheWriteInputTokens}; as for Anthropic, inputTokens <em>excludes</em> the cache
 *       reads and writes (the quota formula on
 *       https://docs.aws.amazon.com/bedrock/latest/userguide/quotas-token-burndown.html adds the
 *       writes to it). Anthropic models through {@code InvokeModel} answer in Anthropic's shape
 *       ({@link Provider#ANTHROPIC_BEDROCK}).
 * </ul>
 *
 * <p>Every count is 0 to {@link #MAX_COUNT}. Readers ({@link #of(Object)}, {@link
 * #fromJson(Provider, String)}) never throw: a response without usage, or whose usage holds a
 * negative, fractional, non-numeric or larger number, gives empty, and the caller keeps its
 * reservation as the call's cost. The constructor throws for such numbers instead.
 *
 * @param provider where the usage came from; it decides how the counts are read
 * @param inputTokens input tokens as the provider reports them (see above)
 * @param outputTokens output tokens, reasoning and thinking tokens included
 * @param cachedInputTokens input tokens read from a prompt cache
 * @param cacheCreationInputTokens input tokens written into a prompt cache
 */
public record TokenUsage(Provider provider, long inputTokens, long outputTokens, long cachedInputTokens,
        long cacheCreationInputTokens) {

    /**
     * The largest count accepted: 10^9 tokens. No single call comes near it (context windows are
     * a few million tokens at most); a larger number is a broken report, not a usage.
     */
    public static final long MAX_COUNT = 1_000_000_000L;

    /**
     * @throws NullPointerException if {@code provider} is {@code null}
     * @throws IllegalArgumentException if a count is negative or above {@link #MAX_COUNT}
     *
     * @param provider where the usage came from; it decides how the counts are read
     * @param inputTokens input tokens as the provider reports them (see above)
     * @param outputTokens output tokens, reasoning and thinking tokens included
     * @param cachedInputTokens input tokens read from a prompt cache
     * @param cacheCreationInputTokens input tokens written into a prompt cache
     */
    public TokenUsage {
        Objects.requireNonNull(provider, "provider");
        check("inputTokens", inputTokens);
        check("outputTokens", outputTokens);
        check("cachedInputTokens", cachedInputTokens);
        check("cacheCreationInputTokens", cacheCreationInputTokens);
    }

    /**
     * A usage without cache counts.
     *
     * @param provider where the usage came from
     * @param inputTokens input tokens
     * @param outputTokens output tokens
     * @return the usage
     * @throws IllegalArgumentException as the canonical constructor
     */
    public static TokenUsage of(Provider provider, long inputTokens, long outputTokens) {
        return new TokenUsage(provider, inputTokens, outputTokens, 0, 0);
    }

    /**
     * Reads the usage of a provider SDK's response object, with the SDK's own model types (no
     * parsing of text). Understood:
     *
     * <ul>
     *   <li>openai-java: {@code ChatCompletion}, {@code ChatCompletionChunk} (the final chunk of
     *       a stream asked with {@code stream_options.include_usage}), {@code CompletionUsage},
     *       the Responses API's {@code Response}, {@code ResponseUsage}, and its stream's
     *       {@code ResponseCompletedEvent}, {@code ResponseIncompleteEvent},
     *       {@code ResponseFailedEvent} and {@code ResponseStreamEvent}; also a raw
     *       {@code HttpResponseFor} of any of them;
     *   <li>anthropic-java: {@code Message}, {@code Usage}, a stream's {@code MessageDeltaUsage},
     *       {@code RawMessageStartEvent}, {@code RawMessageDeltaEvent} and
     *       {@code RawMessageStreamEvent}; also a raw {@code HttpResponseFor};
     *   <li>google-genai: {@code GenerateContentResponse} (each chunk of a stream too) and
     *       {@code GenerateContentResponseUsageMetadata};
     *   <li>AWS SDK v2 bedrockruntime: {@code ConverseResponse}, {@code TokenUsage}, a
     *       ConverseStream's {@code ConverseStreamMetadataEvent}, {@code InvokeModelResponse}
     *       (the body's usage in Anthropic's, Amazon Nova's, Meta Llama's or Amazon Titan's shape,
     *       else the {@code X-Amzn-Bedrock-Input-Token-Count} / {@code -Output-Token-Count}
     *       headers) and an InvokeModelWithResponseStream {@code PayloadPart}.
     * </ul>
     *
     * <p>Each SDK's reader is loaded only once an object of that SDK is seen, so none of the
     * SDKs has to be on the classpath. A stream's events carry partial counts: give them all to
     * a {@link StreamUsage} to get the call's usage.
     *
     * @param sdkResponse the response object; may be {@code null} or of any type
     * @return its usage; empty for {@code null}, an unknown type, a response without usage or
     *     with unreadable counts; never throws
     */
    public static Optional<TokenUsage> of(Object sdkResponse) {
        return SdkUsage.read(sdkResponse);
    }

    /**
     * Reads the usage from a raw HTTP response body of the provider's REST API: a JSON document
     * (OpenAI chat completion or Responses API response; Anthropic message; Gemini
     * {@code GenerateContentResponse}, also the JSON array of {@code streamGenerateContent};
     * Bedrock Converse or InvokeModel body in Anthropic's, Nova's, Llama's or Titan's shape) or a
     * server-sent event stream (the usage of its events merged: OpenAI's final usage chunk or
     * {@code response.completed}, Anthropic's {@code message_start} and {@code message_delta},
     * Gemini's last chunk).
     *
     * <p>When {@code provider} is {@link Provider#UNKNOWN} (or {@code null}) the provider is
     * told from the body's shape, and the result names it. When the body has another
     * provider's shape (say Gemini answering in OpenAI's shape through its OpenAI-compatible
     * endpoint) the counts are converted to {@code provider}'s convention.
     *
     * @param provider who answered
     * @param body the response body; may be {@code null}, empty, HTML or garbled
     * @return the usage; empty when the body has none or its counts are unreadable; never
     *     throws
     */
    public static Optional<TokenUsage> fromJson(Provider provider, String body) {
        return UsageJson.read(provider, body);
    }

    /**
     * Whether {@link #inputTokens} already includes the cache reads and writes: true for OpenAI,
     * Azure OpenAI, Gemini and unknown providers, false for Anthropic and Bedrock.
     *
     * @return how to read inputTokens
     */
    public boolean inputIncludesCache() {
        return includesCache(provider);
    }

    /**
     * Every input token the model took in: uncached, read from cache and written to cache.
     *
     * @return the prompt's total
     */
    public long totalInputTokens() {
        return inputIncludesCache() ? inputTokens : inputTokens + cachedInputTokens + cacheCreationInputTokens;
    }

    /**
     * The input tokens not read from a cache (cache writes included).
     *
     * @return the prompt's total less the cache reads, never below 0
     */
    public long uncachedInputTokens() {
        return Math.max(0, totalInputTokens() - cachedInputTokens);
    }

    /**
     * Every token of the call: {@link #totalInputTokens()} plus {@link #outputTokens}.
     *
     * @return the total
     */
    public long totalTokens() {
        return totalInputTokens() + outputTokens;
    }

    /**
     * The tokens of this call that count against a limit of the given dimension, by the
     * provider's documented rule ({@link CountingRule#of(Provider)}).
     *
     * @param dimension the limit's dimension
     * @return the tokens to charge against it
     */
    public long tokensFor(TokenDimension dimension) {
        return tokensFor(dimension, CountingRule.of(provider));
    }

    /**
     * The tokens of this call that count against a limit of the given dimension, by an explicit
     * rule (a model whose counting differs from its provider's default).
     *
     * <ul>
     *   <li>{@link TokenDimension#INPUT_TOKENS}: {@link #totalInputTokens()}, less the cache reads
     *       when the rule does not count them;
     *   <li>{@link TokenDimension#OUTPUT_TOKENS}: {@link #outputTokens};
     *   <li>{@link TokenDimension#TOKENS}: the input count above plus outputTokens times the
     *       rule's output weight.
     * </ul>
     *
     * @param dimension the limit's dimension
     * @param rule the counting rule
     * @return the tokens to charge against it
     */
    public long tokensFor(TokenDimension dimension, CountingRule rule) {
        Objects.requireNonNull(dimension, "dimension");
        Objects.requireNonNull(rule, "rule");
        long input = rule.cacheReadsCount() ? totalInputTokens() : uncachedInputTokens();
        return switch (dimension) {
            case INPUT_TOKENS -> input;
            case OUTPUT_TOKENS -> outputTokens;
            case TOKENS -> input + outputTokens * rule.outputWeight();
        };
    }

    /**
     * Every count the larger of this and {@code other}'s: how the partial, cumulative counts of a
     * stream's events add up to the call's usage. The provider stays this one's.
     *
     * @param other a later reading of the same call
     * @return the merged usage
     */
    public TokenUsage max(TokenUsage other) {
        if (other == null) {
            return this;
        }
        TokenUsage o = other.provider == provider ? other : other.inConventionOf(provider);
        return new TokenUsage(provider, Math.max(inputTokens, o.inputTokens), Math.max(outputTokens, o.outputTokens),
                Math.max(cachedInputTokens, o.cachedInputTokens),
                Math.max(cacheCreationInputTokens, o.cacheCreationInputTokens));
    }

    /**
     * The usage of two calls together (a handler that made several calls): every count added,
     * capped at {@link #MAX_COUNT}; {@code other} is read in this one's convention first.
     *
     * @param other another call's usage, or null
     * @return the sum, in this one's provider's convention
     */
    public TokenUsage plus(TokenUsage other) {
        if (other == null) {
            return this;
        }
        TokenUsage o = other.provider == provider ? other : other.inConventionOf(provider);
        return new TokenUsage(provider, Math.min(MAX_COUNT, inputTokens + o.inputTokens),
                Math.min(MAX_COUNT, outputTokens + o.outputTokens), Math.min(MAX_COUNT, cachedInputTokens + o.cachedInputTokens),
                Math.min(MAX_COUNT, cacheCreationInputTokens + o.cacheCreationInputTokens));
    }

    /** The same call's usage with the counts in {@code target}'s convention. */
    TokenUsage inConventionOf(Provider target) {
        return fromTotals(target, totalInputTokens(), outputTokens, cachedInputTokens, cacheCreationInputTokens);
    }

    /**
     * A usage from counts whose input total includes the cache reads and writes, in
     * {@code provider}'s convention.
     */
    static TokenUsage fromTotals(Provider provider, long totalInput, long output, long cacheRead, long cacheWrite) {
        long input = includesCache(provider) ? totalInput : Math.max(0, totalInput - cacheRead - cacheWrite);
        return new TokenUsage(provider, input, output, cacheRead, cacheWrite);
    }

    static boolean includesCache(Provider provider) {
        // the OpenAI-compatible servers count prompt_tokens as OpenAI does, cached ones included
        return switch (provider) {
            case ANTHROPIC, ANTHROPIC_BEDROCK, BEDROCK -> false;
            case OPENAI, AZURE_OPENAI, GEMINI, UNKNOWN, GROQ, MISTRAL, DEEPSEEK, OPENROUTER, TOGETHER, FIREWORKS, XAI,
                    VLLM, OLLAMA -> true;
        };
    }

    static boolean valid(long count) {
        return count >= 0 && count <= MAX_COUNT;
    }

    private static void check(String name, long count) {
        if (!valid(count)) {
            throw new IllegalArgumentException(name + " must be 0 to " + MAX_COUNT + ", was " + count);
        }
    }
}
