package dev.layover.core.internal.batch;

import dev.layover.core.batch.BatchSettings;
import java.time.Duration;
import java.time.Instant;

/**
 * Where a picked batchable job goes, in database time: a pure function of its latest useful
 * finish and its key's batch settings.
 *
 * <ul>
 *   <li>its latest useful finish: its deadline, else its enqueue plus its type's tolerance, else
 *       none (never gathered);
 *   <li>gathered when that is at least expected completion plus rescue margin away, else called
 *       directly;
 *   <li>a gathered job waits until half the rescue margin before its latest useful finish (it is
 *       made due sooner when its line comes back), never less than a poll interval;
 *   <li>a gathered job picked within the rescue margin of its latest useful finish leaves its batch
 *       if the batch was not submitted yet, and is called directly.
 * </ul>
 */
public final class BatchRoute {

    private BatchRoute() {}

    /**
     * @param deadline the job's deadline, or null
     * @param enqueuedAt when it was first enqueued (database time)
     * @param tolerance its type's tolerance, or null
     * @return its latest useful finish, or null when it has none
     */
    public static Instant latest(Instant deadline, Instant enqueuedAt, Duration tolerance) {
        if (deadline != null) {
            return deadline;
        }
        return tolerance == null || enqueuedAt == null ? null : enqueuedAt.plus(tolerance);
    }

    /** @return whether a job with this latest useful finish is gathered now */
    public static boolean gather(Instant now, Instant latest, BatchSettings s) {
        return latest != null && !latest.isBefore(now.plus(s.expectedCompletion()).plus(s.rescueMargin()));
    }

    /** @return when a gathered job looks again if its line has not come back */
    public static Instant waitUntil(Instant now, Instant latest, BatchSettings s) {
        Instant floor = now.plus(s.pollInterval());
        if (latest == null) {
            return now.plus(s.expectedCompletion());
        }
        Instant look = latest.minus(s.rescueMargin().dividedBy(2));
        return look.isAfter(floor) ? look : floor;
    }

    /** @return whether a gathered job picked now should leave an unsubmitted batch */
    public static boolean mustLeave(Instant now, Instant latest, BatchSettings s) {
        return latest != null && !now.isBefore(latest.minus(s.rescueMargin()));
    }

    /** @return the seconds of expected completion plus rescue margin: how far a gathered job's latest useful finish must be */
    public static double needSeconds(BatchSettings s) {
        return s.expectedCompletion().plus(s.rescueMargin()).toMillis() / 1000.0;
    }
}
