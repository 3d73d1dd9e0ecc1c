package dev.layover.core;

/**
 * A job type this Layover instance does not know: enqueued without being registered, or a dead
 * letter of a type that is no longer registered. Nothing was written to the database.
 */
public class UnknownJobTypeException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /** The job type named. */
    private final String jobType;

    /**
     * @param jobType the name that is not registered
     * @param message what was attempted
     */
    public UnknownJobTypeException(String jobType, String message) {
        super(message);
        this.jobType = jobType;
    }

    /** @return the job type name that is not registered */
    public String jobType() {
        return jobType;
    }
}
