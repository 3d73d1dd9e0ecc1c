package dev.layover.core.provider;

/**
 * The LLM provider a failure came from; it selects which documented error shapes apply, and scopes
 * the rule rows that belong to one server only (Together's 403 for a too-long input, Fireworks' 412
 * for a suspended account, Groq's per-day request headers).
 *
 * <p>The OpenAI-compatible servers ({@link #isOpenAiCompatible()}) are reached with openai-java and a
 * base URL; openai-java reports them all as {@link #OPENAI}. Name the server in
 * {@code classify(Provider, ..)}, or let the classifier recognise it from the response headers in
 * which it names itself ({@code x-groq-region}, OpenRouter's {@code x-generation-id}, a
 * {@code server: vllm}, Azure's {@code apim-request-id}, ...: the detect rows of
 * {@link ProviderRules}): a hint of {@link #OPENAI}, {@link #UNKNOWN} or none is refined that way,
 * any other hint is kept.
 */
public enum Provider {
    /** OpenAI's API ({@code api.openai.com}). */
    OPENAI,
    /** Azure OpenAI (Azure AI Foundry) deployments, also behind Azure API Management. */
    AZURE_OPENAI,
    /** Anthropic's Claude API ({@code api.anthropic.com}), also through Vertex AI. */
    ANTHROPIC,
    /** Anthropic's Messages API served by Amazon Bedrock ({@code InvokeModel}). */
    ANTHROPIC_BEDROCK,
    /** Google's Gemini API, both Google AI ({@code generativelanguage}) and Vertex AI. */
    GEMINI,
    /** Amazon Bedrock runtime ({@code InvokeModel}, {@code Converse}) for any model. */
    BEDROCK,
    /** Groq ({@code api.groq.com/openai/v1}), OpenAI-compatible. */
    GROQ,
    /** Mistral AI ({@code api.mistral.ai/v1}), OpenAI-compatible. */
    MISTRAL,
    /** DeepSeek ({@code api.deepseek.com}), OpenAI-compatible. */
    DEEPSEEK,
    /** OpenRouter ({@code openrouter.ai/api/v1}), an OpenAI-compatible router in front of many providers. */
    OPENROUTER,
    /** Together AI ({@code api.together.xyz/v1}), OpenAI-compatible. */
    TOGETHER,
    /** Fireworks AI ({@code api.fireworks.ai/inference/v1}), OpenAI-compatible. */
    FIREWORKS,
    /** xAI ({@code api.x.ai/v1}), OpenAI-compatible. */
    XAI,
    /** A vLLM server's OpenAI-compatible API. */
    VLLM,
    /** An Ollama server's OpenAI-compatible API ({@code /v1}) or its native one. */
    OLLAMA,
    /** Not known; only the generic rules (status, standard headers, words) apply. */
    UNKNOWN;

    /**
     * @return whether the provider speaks OpenAI's API and its error shapes (reached with openai-java
     *     and a base URL): OpenAI itself, Azure OpenAI and the compatible servers
     */
    public boolean isOpenAiCompatible() {
        return switch (this) {
            case OPENAI, AZURE_OPENAI, GROQ, MISTRAL, DEEPSEEK, OPENROUTER, TOGETHER, FIREWORKS, XAI, VLLM, OLLAMA ->
                    true;
            case ANTHROPIC, ANTHROPIC_BEDROCK, GEMINI, BEDROCK, UNKNOWN -> false;
        };
    }
}
