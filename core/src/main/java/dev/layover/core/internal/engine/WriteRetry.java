package dev.layover.core.internal.engine;

import dev.layover.core.LayoverException;
import dev.layover.core.internal.db.DatabaseOutage;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * Runs one write of an outcome. When the database is away (a connection error), waits until it
 * answers again and writes then: a finished job is neither lost nor run again because of a database
 * restart. Every write is version-checked, so writing it again after an error whose commit is
 * unknown is harmless (the second finds the version moved on and changes nothing). Gives up when
 * the engine stops (the row stays picked and is revived as a lost worker's).
 */
final class WriteRetry {

    /** Writes once, without waiting for a lost database (operator actions: the caller sees the error). */
    static final WriteRetry ONCE = new WriteRetry(null);

    /** How long an outcome write waits for a database that went away. */
    private static final Duration OUTAGE_WAIT = Duration.ofHours(24);

    private final DatabaseOutage outage;

    WriteRetry(DatabaseOutage outage) {
        this.outage = outage;
    }

    <T> T write(Supplier<T> work) {
        int quickRetries = 0;
        long pauseMs = 100;
        while (true) {
            try {
                return work.get();
            } catch (LayoverException e) {
                if (outage == null || !DatabaseOutage.isConnectionFailure(e)) {
                    throw e;
                }
                outage.failed(e);
                int seen = outage.outages();
                try {
                    if (!outage.awaitWritable(OUTAGE_WAIT)) {
                        throw new Stopping(e);
                    }
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new Stopping(e);
                }
                // a connection error with no outage behind it (one broken pooled connection): retry a few times
                if (outage.outages() == seen && ++quickRetries > 3) {
                    throw e;
                }
                try {
                    Thread.sleep(pauseMs);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new Stopping(e);
                }
                pauseMs = Math.min(1000, pauseMs * 2);
            }
        }
    }

    /** A write abandoned because the worker stops while the database is away. */
    static final class Stopping extends LayoverException {
        private static final long serialVersionUID = 1L;

        Stopping(LayoverException cause) {
            super("the worker stopped while the database was away: " + cause.getMessage(), cause);
        }
    }
}
