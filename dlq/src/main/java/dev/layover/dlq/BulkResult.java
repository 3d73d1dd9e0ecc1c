package dev.layover.dlq;

import java.time.Duration;
import java.util.Map;

/**
 * What a bulk action did. It never throws for one dead letter it could not change; it counts it
 * under a {@link SkipReason}.
 *
 * @param action {@code replay}, {@code discard} or {@code move_back}
 * @param processed dead letters looked at
 * @param changed dead letters replayed (each with one new job), discarded, or moved back
 * @param movedToReview sweep replays only: dead letters whose automatic replay budget was spent,
 *     moved to {@code review} instead of replayed
 * @param skipped dead letters left unchanged, by reason
 * @param batches transactions committed
 * @param took wall-clock time
 * @param auditId the {@code layover.audit_log} row of this action
 */
public record BulkResult(
        String action,
        long processed,
        long changed,
        long movedToReview,
        Map<SkipReason, Long> skipped,
        int batches,
        Duration took,
        long auditId) {


    /** @return the number of dead letters skipped, for any reason */
    public long skippedTotal() {
        return skipped.values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * @param reason a reason
     * @return how many were skipped for it
     */
    public long skipped(SkipReason reason) {
        return skipped.getOrDefault(reason, 0L);
    }

    /** Why a bulk action left a dead letter unchanged. */
    public enum SkipReason {
        /** No dead letter with that id (ids selections only). */
        NOT_FOUND,
        /** Its state does not allow the action (already replayed or discarded, not in review, ...), or it changed meanwhile. */
        STATE,
        /** Replay only: its job type is not registered in this Layover instance. */
        JOB_TYPE_NOT_REGISTERED,
        /** Replay only: a live job with its type and id exists. */
        LIVE_JOB_EXISTS
    }
}
