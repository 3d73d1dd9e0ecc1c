package dev.layover.dlq;

import dev.layover.core.LayoverException;

/** No dead letter has this id (never existed, or purged by retention). Nothing was changed. */
public class DeadLetterNotFoundException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /** The dead letter. */
    private final long deadLetterId;

    /**
     * @param deadLetterId the id asked for
     */
    public DeadLetterNotFoundException(long deadLetterId) {
        super("dead letter " + deadLetterId + " does not exist (never parked, or purged by retention)");
        this.deadLetterId = deadLetterId;
    }

    /** @return the id asked for */
    public long deadLetterId() {
        return deadLetterId;
    }
}
