package dev.layover.core.internal.batch;

/**
 * Every statement of {@code layover.batches} and {@code layover.batch_items} (their owner), and
 * the calls of {@code layover.batch_*} functions, which move the jobs they touch through the job
 * store's functions ({@code layover.jobs_batched}, {@code layover.jobs_wake_batched}).
 */
final class BatchSql {

    private BatchSql() {}

    /** A picked job's batch state: its item, its line, its batch's state, its deadline and enqueue (database time). */
    static final String PICK_STATE = """
            SELECT t.batch_item, t.deadline, t.first_enqueued_at, now() AS db_now,
                   i.state, i.result_kind, i.result_status, i.result, i.input_tokens, i.output_tokens, i.latest,
                   i.batch_id, b.state AS batch_state
            FROM layover.scheduled_tasks t
            LEFT JOIN layover.batch_items i ON i.id = t.batch_item
            LEFT JOIN layover.batches b ON b.id = i.batch_id
            WHERE t.task_name = ? AND t.task_instance = ?""";

    /**
     * Due jobs of one type and key that a gather takes along, locked until it commits: not picked,
     * never gathered, not asked to stop or paused, with a latest useful finish far enough away.
     * Parameters: task name, key, the picked job's id, need (s), tolerance (s or null) twice, need (s), limit.
     */
    static final String BACKLOG = """
            SELECT t.task_instance, t.version, t.task_data, t.deadline, t.first_enqueued_at
            FROM layover.scheduled_tasks t
            WHERE t.task_name = ? AND t.provider_key = ? AND t.task_instance <> ?
              AND t.batch_item IS NULL AND NOT t.picked AND t.execution_time <= now()
              AND t.cancel_requested_at IS NULL AND t.paused_run_at IS NULL
              AND (t.deadline >= now() + make_interval(secs => ?::float8)
                   OR (t.deadline IS NULL AND ?::float8 IS NOT NULL
                       AND t.first_enqueued_at + make_interval(secs => ?::float8) >= now() + make_interval(secs => ?::float8)))
            ORDER BY t.execution_time
            LIMIT ?
            FOR UPDATE OF t SKIP LOCKED""";

    static final String GATHER = """
            SELECT task_instance, item FROM layover.batch_gather(?, ?::text[], ?::bigint[], ?::text[],
                ?::timestamptz[], ?::timestamptz[], ?, ?, ?, ?, ?)""";

    static final String LEAVE = "SELECT layover.batch_leave(?)";

    static final String COLLECT = """
            SELECT layover.batch_collect(?, ?::text[], ?::text[], ?::int[], ?::text[], ?::bigint[], ?::bigint[])""";

    static final String FINISH = "SELECT layover.batch_finish(?, ?, ?)";

    static final String WAKE = "SELECT layover.batch_wake(now() - interval '1 hour')";

    /** Open batches with their age in seconds (database time). */
    static final String OPEN = """
            SELECT id, provider_key, extract(epoch FROM now() - created_at) AS age_s
            FROM layover.batches WHERE state = 'open' ORDER BY id""";

    static final String SEAL = """
            UPDATE layover.batches SET state = 'sealed', sealed_at = now() WHERE id = ? AND state = 'open'""";

    /** Batches the loop may act on now: sealed or submitting ones to submit, submitted ones due for a poll. */
    static final String LIVE = """
            SELECT id, provider_key, state, lines, provider_batch_id, submit_attempts, submit_started_at,
                   earliest_deadline, cancel_asked_at, now() AS db_now
            FROM layover.batches
            WHERE (state = 'sealed' AND coalesce(next_poll_at, '-infinity') <= now())
               OR (state = 'submitting' AND lease_until < now())
               OR (state = 'submitted' AND next_poll_at <= now() AND (lease_until IS NULL OR lease_until < now()))
            ORDER BY id
            LIMIT 50""";

    /** Takes a batch to submit: counts the attempt, keeps the first attempt's start. Parameters: owner, lease (s), id. */
    static final String CLAIM_SUBMIT = """
            UPDATE layover.batches
            SET state = 'submitting', lease_owner = ?, lease_until = now() + make_interval(secs => ?::float8),
                submit_attempts = submit_attempts + 1, submit_started_at = coalesce(submit_started_at, now())
            WHERE id = ? AND ((state = 'sealed' AND coalesce(next_poll_at, '-infinity') <= now())
                              OR (state = 'submitting' AND lease_until < now()))
            RETURNING submit_attempts, submit_started_at""";

    /** The lines of a batch being submitted, in order. */
    static final String LINES = """
            SELECT custom_id, request FROM layover.batch_items WHERE batch_id = ? AND state = 'gathered' ORDER BY id""";

    /** Parameters: provider id, poll interval (s), id, owner. */
    static final String SUBMITTED = """
            UPDATE layover.batches
            SET state = 'submitted', provider_batch_id = ?, submitted_at = now(),
                next_poll_at = now() + make_interval(secs => ?::float8), lease_owner = NULL, lease_until = NULL,
                last_error = NULL
            WHERE id = ? AND lease_owner = ? AND state = 'submitting'""";

    /** A submit that failed: tried again after a pause. Parameters: error, pause (s), id, owner. */
    static final String SUBMIT_FAILED = """
            UPDATE layover.batches
            SET state = 'sealed', last_error = ?, next_poll_at = now() + make_interval(secs => ?::float8),
                lease_owner = NULL, lease_until = NULL
            WHERE id = ? AND lease_owner = ? AND state = 'submitting'""";

    /** Takes a submitted batch to poll. Parameters: owner, lease (s), id. */
    static final String CLAIM_POLL = """
            UPDATE layover.batches
            SET lease_owner = ?, lease_until = now() + make_interval(secs => ?::float8)
            WHERE id = ? AND state = 'submitted' AND next_poll_at <= now() AND (lease_until IS NULL OR lease_until < now())""";

    /** A poll that found the batch still running (or failed to ask): polled again later. Parameters: error, interval (s), cancel asked, id, owner. */
    static final String POLLED = """
            UPDATE layover.batches
            SET next_poll_at = now() + make_interval(secs => ?::float8), last_error = ?,
                cancel_asked_at = CASE WHEN ? THEN coalesce(cancel_asked_at, now()) ELSE cancel_asked_at END,
                lease_owner = NULL, lease_until = NULL
            WHERE id = ? AND lease_owner = ?""";
}
