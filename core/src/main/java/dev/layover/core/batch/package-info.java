/**
 * Deadline-aware batch routing: deferrable jobs of a batchable job type go to a provider's
 * half-price batch tier by themselves. A job type opts in with
 * {@code JobType.Builder#batchable(Batching)}; a provider key with
 * {@code Layover.Builder#batching(pattern, BatchSettings)}, given a {@link dev.layover.core.batch.BatchTransport}
 * ({@link dev.layover.core.batch.OpenAiBatches}, {@link dev.layover.core.batch.AnthropicBatches},
 * {@link dev.layover.core.batch.GeminiBatches}, {@link dev.layover.core.batch.BedrockBatches} with a
 * {@link dev.layover.core.batch.BatchStorage}, or your own).
 * See {@code docs/batches.md}.
 */
package dev.layover.core.batch;
