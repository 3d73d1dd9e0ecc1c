package dev.layover.dlq;

import java.time.Instant;

/**
 * The job one replay created.
 *
 * @param deadLetterId the dead letter replayed
 * @param jobType the job's type
 * @param jobId the job's id: the dead letter's job id
 * @param kind manual, sweep or trial
 * @param runAt when the job is due
 * @param argsEdited whether it runs with edited args
 * @param auditId the {@code layover.audit_log} row of the replay
 */
public record Replayed(long deadLetterId, String jobType, String jobId, ReplayKind kind, Instant runAt,
        boolean argsEdited, long auditId) {}
