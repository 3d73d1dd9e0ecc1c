package dev.layover.dlq;

import dev.layover.core.LayoverException;

/**
 * A replay that was refused because of the dead letter's current state: it is already replayed or
 * discarded (often: another console or the sweep replayed it a moment ago), or a live job with its
 * id already exists. The transaction was rolled back; nothing was changed, except for
 * {@link Reason#BUDGET_SPENT}, where the dead letter was moved to {@code review}.
 *
 * <p>The replay console answers it with HTTP 409.
 */
public class ReplayConflictException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /** Why the replay was refused. */
    public enum Reason {
        /** The dead letter is not in a state this replay kind accepts (replayed, discarded, ...). */
        STATE,
        /** A live job of the same type and id exists; replaying would create a second one. */
        LIVE_JOB_EXISTS,
        /** A sweep replay found the automatic replay budget spent; the dead letter moved to review. */
        BUDGET_SPENT
    }

    /** The dead letter. */
    private final long deadLetterId;
    /** Why the replay was refused. */
    private final Reason reason;

    /**
     * @param deadLetterId the dead letter
     * @param reason why
     * @param message the explanation, in a sentence
     */
    public ReplayConflictException(long deadLetterId, Reason reason, String message) {
        super(message);
        this.deadLetterId = deadLetterId;
        this.reason = reason;
    }

    /** @return the dead letter */
    public long deadLetterId() {
        return deadLetterId;
    }

    /** @return why the replay was refused */
    public Reason reason() {
        return reason;
    }
}
