package dev.layover.core.control;

import dev.layover.core.internal.engine.Controls;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * Operators' control of the queue: cancel a job; pause and resume a job type or a key. Get it from
 * {@code layover.control()}, or with {@link #create(DataSource)} in a JVM that runs no jobs (a
 * console). Every action names who took it ({@code by}); see {@code docs/admission-and-control.md}.
 *
 * <p><b>Cancel</b> ({@link #cancel}): a job that is waiting (scheduled, rescheduled, retrying, or
 * held by a pause) leaves the queue at once, in one statement: its row is deleted, a dead letter
 * with failure type {@code cancelled} records its args, who and why (replay it to undo the
 * cancel; discard it to forget it), and its {@code layover.job_history} row says
 * {@code cancelled}. A running job is asked to stop: its handler sees
 * {@code JobContext.isCancelled()} within about a second and may return; any outcome but done then
 * cancels it as above (done: the work finished first). Layover never interrupts a handler for a
 * cancel.
 *
 * <p><b>Pause</b> ({@link #pauseJobType}, {@link #pauseKey}): nothing it covers starts while it is
 * active, and nothing is lost, parked or charged an attempt because of it. Its waiting jobs are
 * moved out of the pickers' way at once (run time 9999-12-31, their own kept in
 * {@code paused_run_at}), so workers do not even pick them; a job enqueued during the pause, or
 * picked just before it, is held the same way when a worker picks it (one pick, no run). Jobs
 * already running finish. Workers learn of a pause within milliseconds (NOTIFY), at worst within
 * a second. A key pause covers jobs whose provider key or one of whose limit keys is the key (for
 * example {@code openai:gpt-4o} or {@code tenant:42}). A deadline still applies: a held job whose
 * deadline passes is parked {@code deadline_exceeded}.
 *
 * <p><b>Resume</b>: ends the pause and gives every job no other active pause covers its run time
 * back (due ones run at once, in their original order). Pauses and resumes take one advisory
 * lock, so they never interleave; the rows of {@code layover.pauses} stay as the record.
 *
 * <p>Thread-safe.
 */
public interface JobControl {

    /**
     * A handle for a JVM that runs no jobs (a standalone console). Cancels write history rows as
     * Layover does by default (on, without args).
     *
     * @param dataSource the Layover database
     * @return the handle
     */
    static JobControl create(DataSource dataSource) {
        return Controls.create(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /**
     * Cancels a job that is waiting, or asks a running one to stop.
     *
     * @param jobType the job type name
     * @param jobId the job id
     * @param by who cancels (recorded), 1-200 characters
     * @param reason why (recorded), or null
     * @return {@code CANCELLED} (with the dead letter), {@code REQUESTED} (running) or {@code NOT_FOUND}
     * @throws dev.layover.core.LayoverException when the database fails
     */
    CancelResult cancel(String jobType, String jobId, String by, String reason);

    /**
     * Pauses a job type: none of its jobs starts until {@link #resumeJobType}. Pausing what is
     * paused already returns the active pause unchanged.
     *
     * @param jobType the job type name
     * @param by who pauses (recorded), 1-200 characters
     * @param reason why (recorded), or null
     * @return the active pause
     */
    Pause pauseJobType(String jobType, String by, String reason);

    /**
     * Resumes a job type.
     *
     * @param jobType the job type name
     * @param by who resumes (recorded)
     * @return the pause that ended, or empty when it was not paused
     */
    Optional<Pause> resumeJobType(String jobType, String by);

    /**
     * Pauses a key: no job whose provider key, or one of whose limit keys, is {@code key} starts
     * until {@link #resumeKey}. Pausing what is paused already returns the active pause unchanged.
     *
     * @param key a provider key ({@code openai:gpt-4o}) or limit key ({@code tenant:42})
     * @param by who pauses (recorded), 1-200 characters
     * @param reason why (recorded), or null
     * @return the active pause
     */
    Pause pauseKey(String key, String by, String reason);

    /**
     * Resumes a key.
     *
     * @param key the key
     * @param by who resumes (recorded)
     * @return the pause that ended, or empty when it was not paused
     */
    Optional<Pause> resumeKey(String key, String by);

    /** @return the active pauses, oldest first */
    List<Pause> activePauses();

    /**
     * @param limit how many
     * @return the newest pauses, active or ended, newest first
     */
    List<Pause> recentPauses(int limit);
}
