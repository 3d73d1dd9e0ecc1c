package dev.layover.dlq;

import java.util.Objects;
import java.util.function.Consumer;

/**
 * Who discards or moves back dead letters, why, and how a bulk run goes.
 *
 * <pre>{@code
 * deadLetters.discard(Selection.matching(filter), ActionOptions.by("alice").note("bad prompt, won't fix"));
 * }</pre>
 *
 * <p>Immutable. Defaults: no note, {@value ReplayOptions#DEFAULT_BATCH_SIZE} dead letters per
 * transaction, no progress callback.
 */
public final class ActionOptions {

    private final String actor;
    private final String note;
    private final int batchSize;
    private final Consumer<BulkProgress> progress;

    private ActionOptions(String actor, String note, int batchSize, Consumer<BulkProgress> progress) {
        this.actor = actor;
        this.note = note;
        this.batchSize = batchSize;
        this.progress = progress;
    }

    /**
     * @param actor who acts (recorded in the audit log): 1-200 characters
     * @return options
     */
    public static ActionOptions by(String actor) {
        return new ActionOptions(ReplayOptions.checkActor(actor), null, ReplayOptions.DEFAULT_BATCH_SIZE, null);
    }

    /**
     * @param note why, recorded in the audit log; at most 2,000 characters
     * @return new options
     */
    public ActionOptions note(String note) {
        return new ActionOptions(actor, ReplayOptions.checkNote(note), batchSize, progress);
    }

    /**
     * @param n dead letters per transaction, 1-5,000; default {@value ReplayOptions#DEFAULT_BATCH_SIZE}
     * @return new options
     */
    public ActionOptions batchSize(int n) {
        return new ActionOptions(actor, note, ReplayOptions.checkBatch(n), progress);
    }

    /**
     * @param callback called on the caller's thread after each committed batch; an exception it throws
     *     stops the run (committed batches stay)
     * @return new options
     */
    public ActionOptions onProgress(Consumer<BulkProgress> callback) {
        return new ActionOptions(actor, note, batchSize, Objects.requireNonNull(callback, "callback"));
    }

    /** @return who acts */
    public String actor() {
        return actor;
    }

    /** @return the note, or {@code null} */
    public String note() {
        return note;
    }

    /** @return dead letters per transaction */
    public int batchSize() {
        return batchSize;
    }

    /** @return the progress callback, or {@code null} */
    public Consumer<BulkProgress> progress() {
        return progress;
    }
}
