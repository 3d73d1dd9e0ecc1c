/**
 * Provider failure classification: turns an HTTP error from an LLM provider (status, headers,
 * body), an exception thrown by a provider SDK, or a call that got no answer, into Layover's
 * outcome vocabulary, with what the provider stated: its wait and reset (kept exactly, see
 * {@link dev.layover.core.provider.WaitReading}), and the request or token limit that refused
 * ({@link dev.layover.core.provider.TokenDimension}).
 *
 * <p>Start with {@link dev.layover.core.provider.ProviderClassifier}, whose {@code classify}
 * methods all answer {@code Optional<Classification>} (empty: not a provider failure).
 * {@link dev.layover.core.provider.RateLimitHeaders} reads how much of each limit a successful
 * response says is left. Nothing in this package touches the database; the rules are a versioned
 * table, {@link dev.layover.core.provider.ProviderRules} ({@code rules-v1.tsv}, to which an
 * application adds rows of its own), listed in {@code docs/provider-classification.md}. The provider SDKs (openai-java, anthropic-java,
 * google-genai, AWS SDK v2 bedrockruntime) are optional: the adapter for an SDK is only loaded
 * once an exception from that SDK has been seen.
 */
package dev.layover.core.provider;
