package dev.layover.core;

/**
 * A signal no job waits for ({@link Layover#signal}): no job of that type and id waits for a signal
 * of that name (it never asked, its wait timed out, or it was signalled already). Nothing written.
 */
public class SignalException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, in a sentence
     */
    public SignalException(String message) {
        super(message);
    }
}
