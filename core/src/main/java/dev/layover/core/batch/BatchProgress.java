package dev.layover.core.batch;

import java.util.Objects;

/**
 * What a provider says of a submitted batch when polled ({@link BatchTransport#poll}).
 *
 * @param state where the batch is
 * @param total lines the provider holds
 * @param succeeded lines answered with a success so far
 * @param errored lines answered with an error so far
 */
public record BatchProgress(State state, int total, int succeeded, int errored) {

    /** Where a submitted batch is, in the words of both providers. */
    public enum State {
        /** Validating, in progress, finalizing (OpenAI) or in progress (Anthropic): not done yet. */
        IN_PROGRESS,
        /** Cancelling: a cancel was asked and the provider has not finished it. */
        CANCELLING,
        /** Completed (OpenAI) or ended (Anthropic): every line has a result. */
        ENDED,
        /** The provider's window ran out: lines without a result are expired. */
        EXPIRED,
        /** Cancelled: lines without a result are cancelled. */
        CANCELLED,
        /** The provider refused the whole batch (OpenAI {@code failed}: e.g. a malformed input file). */
        FAILED;

        /** @return whether the provider will not change this batch any more (results can be read) */
        public boolean finished() {
            return this == ENDED || this == EXPIRED || this == CANCELLED || this == FAILED;
        }
    }

    /** @throws NullPointerException for a null state */
    public BatchProgress {
        Objects.requireNonNull(state, "state");
    }
}
