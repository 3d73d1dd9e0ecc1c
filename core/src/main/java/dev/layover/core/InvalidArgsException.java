package dev.layover.core;

/**
 * Arguments Layover refuses: {@code null}, not writable as JSON by Jackson, larger than the size
 * cap (default 256 KiB), or (for edited arguments) not readable as the job type's args type.
 * Nothing was written to the database.
 */
public class InvalidArgsException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong with the arguments
     */
    public InvalidArgsException(String message) {
        super(message);
    }

    /**
     * @param message what is wrong with the arguments
     * @param cause the Jackson exception
     */
    public InvalidArgsException(String message, Throwable cause) {
        super(message, cause);
    }
}
