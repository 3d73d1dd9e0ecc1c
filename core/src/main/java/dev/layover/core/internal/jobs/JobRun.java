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
 * @param tokens the tokens its call reported and reserved, for the history row ({@link RunTokens#NONE}
 *     when none)
 * @param batchItem the batch item whose stored line this run applies ({@code layover.batch_items.id}):
 *     the reschedule or retry that writes its outcome clears the row's {@code batch_item}; null for
 *     every other run
 */
public record JobRun(String taskName, String id, long version, int attemptsSpent, JobPolicy policy, RunTiming timing,
        RunTokens tokens, Long batchItem) {

    /** A null {@code tokens} is {@link RunTokens#NONE}. */
    public JobRun {
        tokens = tokens == null ? RunTokens.NONE : tokens;
    }

    /**
     * A run that applies no batch line.
     *
     * @param taskName the job type name
     * @param id the job id
     * @param version the row version
     * @param attemptsSpent attempts spent
     * @param policy the job type's limits
     * @param timing its timing
     * @param tokens its tokens
     */
    public JobRun(String taskName, String id, long version, int attemptsSpent, JobPolicy policy, RunTiming timing,
            RunTokens tokens) {
        this(taskName, id, version, attemptsSpent, policy, timing, tokens, null);
    }

    /**
     * A run without token counts.
     *
     * @param taskName the job type name
     * @param id the job id
     * @param version the row version
     * @param attemptsSpent attempts spent
     * @param policy the job type's limits
     * @param timing its timing
     */
    public JobRun(String taskName, String id, long version, int attemptsSpent, JobPolicy policy, RunTiming timing) {
        this(taskName, id, version, attemptsSpent, policy, timing, RunTokens.NONE);
    }

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
        return new JobRun(taskName, id, version, attemptsSpent, policy, t, tokens, batchItem);
    }

    /** @return this run with the tokens its call reported and reserved */
    public JobRun withTokens(RunTokens t) {
        return new JobRun(taskName, id, version, attemptsSpent, policy, timing, t, batchItem);
    }

    /** @return this run applying the stored line of batch item {@code item} */
    public JobRun withBatchItem(long item) {
        return new JobRun(taskName, id, version, attemptsSpent, policy, timing, tokens, item);
    }

    /** @return {@code type/id}, for log lines */
    public String label() {
        return taskName + "/" + id;
    }
}
