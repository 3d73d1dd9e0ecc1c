package dev.layover.core.internal.jobs;

import dev.layover.core.JobPolicy;

/**
 * One picked job as the engine sees it: its key, the version it was picked at (every write checks
 * it), the attempts already spent, and its job type's limits.
 *
 * @param taskName the job type name
 * @param id the job id
 * @param version the row version when picked
 * @param attemptsSpent {@code consecutive_failures} when picked
 * @param policy the job type's limits
 * @param timing when this run started and how long its handler took ({@link RunTiming#NONE} when
 *     the outcome is written without a run in this JVM)
 */
public record JobRun(String taskName, String id, long version, int attemptsSpent, JobPolicy policy, RunTiming timing) {

    /**
     * A run without timing (an outcome written without a run in this JVM).
     *
     * @param taskName the job type name
     * @param id the job id
     * @param version the row version
     * @param attemptsSpent attempts spent
     * @param policy the job type's limits
     */
    public JobRun(String taskName, String id, long version, int attemptsSpent, JobPolicy policy) {
        this(taskName, id, version, attemptsSpent, policy, RunTiming.NONE);
    }

    /** @return this run with its timing */
    public JobRun withTiming(RunTiming t) {
        return new JobRun(taskName, id, version, attemptsSpent, policy, t);
    }

    /** @return {@code type/id}, for log lines */
    public String label() {
        return taskName + "/" + id;
    }
}
