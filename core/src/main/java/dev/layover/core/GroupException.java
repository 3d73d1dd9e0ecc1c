package dev.layover.core;

/**
 * A group cannot take what was asked: it does not exist, or it is sealed (no member may be added),
 * or its callback's job id is taken. Thrown before anything is written, or with the call's
 * transaction rolled back.
 */
public class GroupException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, in a sentence
     */
    public GroupException(String message) {
        super(message);
    }
}
