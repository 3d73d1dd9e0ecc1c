/**
 * Token usage and token estimates, the parts that need no database: what a call used, as each
 * provider reports and counts it, and what a call will use, before it is made.
 *
 * <ul>
 *   <li>{@link dev.layover.core.tokens.TokenUsage}: one call's usage, read from a provider SDK's
 *       response object ({@code TokenUsage.of}) or a raw HTTP body ({@code TokenUsage.fromJson}),
 *       and the tokens of it that count against each {@link dev.layover.core.provider.TokenDimension}
 *       by the provider's documented {@link dev.layover.core.tokens.CountingRule};
 *       {@link dev.layover.core.tokens.StreamUsage} adds up a stream's events.
 *   <li>{@link dev.layover.core.tokens.TokenEstimator}: a prompt's input tokens before the call;
 *       {@link dev.layover.core.tokens.OpenAiTokenCounter} (jtokkit) for OpenAI models,
 *       {@link dev.layover.core.tokens.TextEstimator} for the others, corrected per key by
 *       {@link dev.layover.core.tokens.CalibratedEstimator}.
 *   <li>{@link dev.layover.core.tokens.EstimateGuard}: a user's estimate function that throws or
 *       answers nonsense never reaches a bucket.
 * </ul>
 *
 * <p>Nothing here touches the database; the calibration state is exported as numbers for the
 * engine to keep. The provider SDKs and jtokkit are optional: each SDK's reader is loaded only
 * once that SDK's object is seen, and jtokkit only when an OpenAI counter is made. The rules and
 * the measured estimate error are in {@code docs/tokens.md}.
 */
package dev.layover.core.tokens;
