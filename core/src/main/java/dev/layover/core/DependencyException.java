package dev.layover.core;

/**
 * A job cannot run after the jobs its options name ({@link EnqueueOptions#withAfter}): one of them
 * is unknown (never existed, or finished beyond the history's retention, or history is off), or is
 * the job itself, or the call cannot take dependencies. Thrown before the enqueue is committed:
 * nothing written (with the caller's connection, its transaction is the caller's to roll back).
 */
public class DependencyException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, in a sentence
     */
    public DependencyException(String message) {
        super(message);
    }
}
