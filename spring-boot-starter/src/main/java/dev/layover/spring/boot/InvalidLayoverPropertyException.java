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

    /**
     * @param property the property's name, e.g. {@code layover.threads}
     * @param cause Layover's explanation
     */
    public InvalidLayoverPropertyException(String property, RuntimeException cause) {
        super(property + ": " + cause.getMessage(), cause);
        this.property = property;
    }

    /** @return the property's name */
    public String property() {
        return property;
    }
}
