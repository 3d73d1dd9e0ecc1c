package dev.layover.core;

/**
 * The base class of every exception Layover throws at its callers. Subclasses say what went wrong
 * ({@link InvalidArgsException}, {@link UnknownJobTypeException}, {@link ConfigurationException});
 * a plain {@code LayoverException} wraps a database failure, with the SQL state in its message.
 */
public class LayoverException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, in a sentence
     */
    public LayoverException(String message) {
        super(message);
    }

    /**
     * @param message what went wrong, in a sentence
     * @param cause the underlying exception
     */
    public LayoverException(String message, Throwable cause) {
        super(message, cause);
    }
}
