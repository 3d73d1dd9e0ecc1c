/**
 * Provider failure classification: turns an HTTP error from an LLM provider (status, headers,
 * body), or an exception thrown by a provider SDK, into Layover's outcome vocabulary.
 *
 * <p>Start with {@link dev.layover.core.provider.ProviderClassifier}. The rules it applies are
 * listed in {@code docs/provider-classification.md}. The provider SDKs (openai-java,
 * anthropic-java, google-genai, AWS SDK v2 bedrockruntime) are optional: the adapter for an SDK
 * is only loaded once an exception from that SDK has been seen.
 */
package dev.layover.core.provider;
