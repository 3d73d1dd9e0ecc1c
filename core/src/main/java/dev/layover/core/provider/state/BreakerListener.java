package dev.layover.core.provider.state;

/**
 * Told about breaker state changes (the recovery sweep subscribes to closings). Called on one
 * background thread of the Layover instance, in the order the changes were seen; an exception
 * thrown by a listener is logged and does not affect others. Changes made by another JVM arrive
 * by Postgres NOTIFY, usually within milliseconds; while the NOTIFY connection is down they are
 * missed (the state itself is still re-read every second).
 */
@FunctionalInterface
public interface BreakerListener {

    /**
     * @param event the change
     */
    void onChange(BreakerEvent event);
}
