package dev.layover.core.control;

/**
 * What {@link JobControl#cancel} did.
 *
 * @param status what happened
 * @param jobType the job type
 * @param jobId the job id
 * @param deadLetterId for {@link Status#CANCELLED}: the dead letter (failure type {@code cancelled})
 *     that records the cancel; else {@code null}
 */
public record CancelResult(Status status, String jobType, String jobId, Long deadLetterId) {

    /** What happened to the job. */
    public enum Status {
        /**
         * It was waiting (scheduled, rescheduled, retrying, or held by a pause or a limit): it left
         * the queue at once, as a dead letter with failure type {@code cancelled} and a
         * {@code layover.job_history} row with outcome {@code cancelled}.
         */
        CANCELLED,
        /**
         * It is running: it was asked to stop ({@code JobContext.isCancelled()} turns true within
         * about a second). When its handler returns anything but done it is cancelled as above;
         * done means the work finished first.
         */
        REQUESTED,
        /** No live job has this type and id (never enqueued, finished, parked or cancelled already). */
        NOT_FOUND
    }
}
