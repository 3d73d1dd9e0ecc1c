package dev.layover.spring.boot;

/**
 * A {@code layover.*} property Layover refuses (a value out of range, an unknown combination).
 * Thrown while the application context starts, before Layover touches the database; Spring Boot
 * reports it with the property's name and what to change ({@link LayoverFailureAnalyzer}).
 */
public class InvalidLayoverPropertyException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** The property's name. */
    private final String property;
    /** What to do, when more than changing the property's value; or null. */
    private final String action;

    /**
     * @param property the property's name, e.g. {@code layover.threads}
     * @param cause Layover's explanation
     */
    public InvalidLayoverPropertyException(String property, RuntimeException cause) {
        this(property, cause, null);
    }

    /**
     * @param property the property's name, e.g. {@code layover.console.allow-anonymous}
     * @param cause Layover's explanation
     * @param action what the application's developer should do, shown as the failure report's
     *     "Action"; {@code null} for "change the property"
     */
    public InvalidLayoverPropertyException(String property, RuntimeException cause, String action) {
        super(property + ": " + cause.getMessage(), cause);
        this.property = property;
        this.action = action;
    }

    /** @return what to do, or {@code null} when it is to change the property's value */
    public String action() {
        return action;
    }

    /** @return the property's name */
    public String property() {
        return property;
    }
}
