package dev.layover.core.schedule;

import dev.layover.core.ConfigurationException;

/**
 * A schedule Layover cannot accept: an invalid cron expression, an unknown time zone, an interval
 * shorter than the scheduler's poll interval, args the job type cannot read, a name taken or not
 * found. Thrown at registration ({@code Layover.Builder#schedule}, {@code Layover#start}) or at a
 * run-time call of {@link Schedules}, before anything is written.
 */
public class InvalidScheduleException extends ConfigurationException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong, and how to fix it
     */
    public InvalidScheduleException(String message) {
        super(message);
    }

    /**
     * @param message what is wrong, and how to fix it
     * @param cause the underlying exception
     */
    public InvalidScheduleException(String message, Throwable cause) {
        super(message, cause);
    }
}
