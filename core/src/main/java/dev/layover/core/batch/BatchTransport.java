package dev.layover.core.batch;

import dev.layover.core.provider.Provider;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * How Layover talks to one provider's batch API. {@link OpenAiBatches}, {@link AnthropicBatches},
 * {@link GeminiBatches} and {@link BedrockBatches} implement it on the real SDKs; implement it for
 * another provider.
 * Called only from Layover's batch loop thread, never from a worker thread, and never inside a
 * database transaction. An exception thrown by any method is logged and the step is tried again at
 * the next poll; it never fails a job by itself.
 */
public interface BatchTransport {

    /** @return a short name for logs and the {@code layover.batches.provider} column, e.g. {@code "openai"} */
    String name();

    /**
     * @return whose error bodies an errored line carries, for classifying it as a direct call's
     *     response would be; default {@link Provider#UNKNOWN} (the status decides)
     */
    default Provider provider() {
        return Provider.UNKNOWN;
    }

    /** @return the most lines the provider takes in one batch (OpenAI 50,000; Anthropic 100,000) */
    int maxRequests();

    /** @return the most bytes of request bodies the provider takes in one batch (OpenAI 200 MB; Anthropic 256 MB) */
    long maxBytes();

    /** @return the provider's completion window: a batch not done by then expires (both: 24 h) */
    Duration completionWindow();

    /**
     * Submits one batch.
     *
     * @param ref Layover's stable reference of the batch ({@code lo-batch-<id>}); store it with the
     *     batch at the provider where the API allows (OpenAI {@code metadata.layover_ref}) so that
     *     {@link #find} can rejoin it after a crash
     * @param lines the request lines, in order; never empty
     * @return the provider's batch id
     * @throws Exception when the provider refuses or cannot be reached
     */
    String submit(String ref, List<BatchLine> lines) throws Exception;

    /**
     * Looks for a batch an earlier attempt may have submitted before it could record the
     * provider's id (a worker killed mid-submit).
     *
     * @param ref the batch's reference, as given to {@link #submit}
     * @param lines how many lines the batch had
     * @param since when the first submit attempt began (database time); batches created before
     *     it are not this one
     * @return the provider's batch id, or empty when no such batch exists
     * @throws Exception when the provider cannot be reached, or when the answer is ambiguous (two
     *     candidates): Layover tries again later rather than guess
     */
    Optional<String> find(String ref, int lines, Instant since) throws Exception;

    /**
     * @param providerBatchId the provider's batch id
     * @return the batch's state and counts
     * @throws Exception when the provider cannot be reached
     */
    BatchProgress poll(String providerBatchId) throws Exception;

    /**
     * Asks the provider to cancel a batch; lines already done keep their results.
     *
     * @param providerBatchId the provider's batch id
     * @throws Exception when the provider cannot be reached
     */
    void cancel(String providerBatchId) throws Exception;

    /**
     * Reads a finished batch's result lines, streaming: each line goes to {@code sink} as it is
     * read, so a batch of 100,000 lines is never held in memory. Lines the provider reports as
     * expired or cancelled are given with that kind; lines the provider gives no result for are
     * not given at all (Layover returns their jobs to the queue).
     *
     * @param providerBatchId the provider's batch id
     * @param sink takes each line
     * @throws Exception when the provider cannot be reached or a line cannot be read
     */
    void results(String providerBatchId, Consumer<BatchResultLine> sink) throws Exception;
}
