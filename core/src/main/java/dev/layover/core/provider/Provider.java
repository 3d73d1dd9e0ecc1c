package dev.layover.core.provider;

/** The LLM provider a failure came from; it selects which documented error shapes apply. */
public enum Provider {
    /** OpenAI's API ({@code api.openai.com}). */
    OPENAI,
    /** Azure OpenAI (Azure AI Foundry) deployments. */
    AZURE_OPENAI,
    /** Anthropic's Claude API ({@code api.anthropic.com}), also through Vertex AI. */
    ANTHROPIC,
    /** Anthropic's Messages API served by Amazon Bedrock ({@code InvokeModel}). */
    ANTHROPIC_BEDROCK,
    /** Google's Gemini API, both Google AI ({@code generativelanguage}) and Vertex AI. */
    GEMINI,
    /** Amazon Bedrock runtime ({@code InvokeModel}, {@code Converse}) for any model. */
    BEDROCK,
    /** Not known; only the generic rules (status, standard headers) apply. */
    UNKNOWN
}
