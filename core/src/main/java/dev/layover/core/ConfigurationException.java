package dev.layover.core;

/**
 * A setting or a registration Layover cannot accept: a duplicate job type name, an args type
 * Jackson cannot read or write, a limit out of range. Thrown while building, before anything
 * runs.
 */
public class ConfigurationException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong, and how to fix it
     */
    public ConfigurationException(String message) {
        super(message);
    }

    /**
     * @param message what is wrong, and how to fix it
     * @param cause the underlying exception
     */
    public ConfigurationException(String message, Throwable cause) {
        super(message, cause);
    }
}
