package dev.layover.core.internal;

/**
 * Every SQL statement of the engine, in one place. The job table is db-scheduler's
 * {@code layover.scheduled_tasks}; Layover's writes name their columns and check {@code version}
 * so that a row changed by someone else (a dead-execution revival, an operator) is never
 * overwritten.
 */
final class CoreSql {

    private CoreSql() {}

    static final String TABLE = "layover.scheduled_tasks";

    private static final String NOT_PARKED = """
            NOT EXISTS (SELECT 1 FROM layover.dead_letters d
                        WHERE d.job_type = %s AND d.job_id = %s AND d.state IN ('parked', 'review'))""";

    /** One job with a random id: nothing can conflict. */
    static final String INSERT = """
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version,
                 priority, consecutive_failures, provider_key)
            VALUES (?, ?, ?, ?, false, 1, ?, 0, ?)""";

    /** One job with an idempotency key: writes nothing if the key names a live job or an unresolved dead letter. */
    static final String INSERT_KEYED = """
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version,
                 priority, consecutive_failures, provider_key)
            SELECT ?, ?, ?, ?, false, 1, ?, 0, ?
            WHERE %s
            ON CONFLICT (task_name, task_instance) DO NOTHING""".formatted(NOT_PARKED.formatted("?", "?"));

    /**
     * Many jobs of one type in one statement; returns the ids it inserted. Parameters: job type,
     * then arrays of ids, data, run times (ISO-8601 text), priorities, provider keys, then the job
     * type again.
     */
    static final String INSERT_BATCH = """
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version,
                 priority, consecutive_failures, provider_key)
            SELECT ?, u.id, u.data, u.run_at::timestamptz, false, 1, u.priority::smallint, 0, u.provider_key
            FROM unnest(?::text[], ?::bytea[], ?::text[], ?::int[], ?::text[])
                 AS u(id, data, run_at, priority, provider_key)
            WHERE %s
            ON CONFLICT (task_name, task_instance) DO NOTHING
            RETURNING task_instance""".formatted(NOT_PARKED.formatted("?", "u.id"));

    /**
     * One heartbeat for every job this worker has picked, running or still waiting for a thread, so
     * that jobs picked ahead of free threads are never taken for dead. Rows another statement holds
     * are skipped (they are being written anyway), which also keeps this from deadlocking with
     * batched writes.
     */
    static final String HEARTBEAT_PICKED = """
            UPDATE layover.scheduled_tasks t SET last_heartbeat = ?
            FROM (SELECT task_name, task_instance FROM layover.scheduled_tasks
                  WHERE picked AND picked_by = ? FOR UPDATE SKIP LOCKED) s
            WHERE t.task_name = s.task_name AND t.task_instance = s.task_instance""";

    /** Finished jobs, deleted in one statement; a row whose version moved on is left alone. */
    static final String DELETE_DONE = """
            DELETE FROM layover.scheduled_tasks t
            USING unnest(?::text[], ?::text[], ?::bigint[]) AS d(name, id, version)
            WHERE t.task_name = d.name AND t.task_instance = d.id AND t.version = d.version""";

    /**
     * A reschedule: moves the run time and counts it, leaving {@code consecutive_failures} (the
     * attempts) untouched. Matches nothing once {@code reschedules} reached the cap. Sets the bucket
     * permit the job holds for its new run time (null: none) and appends the run's fallback trail.
     */
    static final String RESCHEDULE = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL,
                version = version + 1, reschedules = reschedules + 1,
                last_reschedule_reason = ?, last_reschedule_detail = ?, last_rescheduled_at = ?,
                permit_at = ?, provider_trail = layover.trail_append(provider_trail, ?::jsonb)
            WHERE task_name = ? AND task_instance = ? AND version = ? AND reschedules < ?""";

    /** A retry: spends an attempt and records its error and the run's fallback trail. */
    static final String RETRY = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL,
                version = version + 1, consecutive_failures = ?, last_failure = ?,
                errors = errors || ?::jsonb, provider_trail = layover.trail_append(provider_trail, ?::jsonb)
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /** Layover's columns of one job, read only when an outcome needs them. */
    static final String JOB_EXTRAS = """
            SELECT reschedules, provider_key FROM layover.scheduled_tasks
            WHERE task_name = ? AND task_instance = ?""";

    /**
     * Parks a job: deletes its row (version-checked) and, in the same statement, inserts its dead
     * letter, or updates the dead letter it was replayed from. Returns how many rows were moved
     * and the dead letter's id; the caller commits only when both are there.
     *
     * <p>Parameters: task name, id, version; then for the update: failure type (for the state),
     * failure type, error class,
     * message, new error (jsonb), attempts, the last run's fallback trail (jsonb); then the same six
     * for the insert. The job's fallback trail moves with it to the dead letter.
     */
    static final String PARK = """
            WITH moved AS (
                DELETE FROM layover.scheduled_tasks t
                WHERE t.task_name = ? AND t.task_instance = ? AND t.version = ?
                RETURNING t.*
            ), linked AS (
                -- a sweep replay that failed again needs a person; one parked by an open breaker never
                -- reached the provider, so the sweep may try it again (its replay budget caps that)
                UPDATE layover.dead_letters d
                SET state = CASE WHEN m.replay_kind = 'sweep' AND ? <> 'breaker_open' THEN 'review'
                                     ELSE 'parked' END,
                    state_changed_at = now(), parked_at = now(), park_count = d.park_count + 1,
                    failure_type = ?, error_class = ?, error_message = ?,
                    errors = d.errors || m.errors || ?::jsonb, attempts = ?,
                    provider_trail = layover.trail_append(d.provider_trail, layover.trail_append(m.provider_trail, ?::jsonb)),
                    reschedules = m.reschedules,
                    args = layover.args_jsonb(m.task_data),
                    args_raw = CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
                    provider_key = m.provider_key
                FROM moved m
                WHERE d.id = m.dead_letter_id
                RETURNING d.id
            ), inserted AS (
                INSERT INTO layover.dead_letters
                    (job_type, job_id, args, args_raw, provider_key, failure_type, error_class,
                     error_message, errors, attempts, provider_trail, reschedules, priority, first_enqueued_at)
                SELECT m.task_name, m.task_instance, layover.args_jsonb(m.task_data),
                       CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
                       m.provider_key, ?, ?, ?, m.errors || ?::jsonb, ?,
                       layover.trail_append(m.provider_trail, ?::jsonb), m.reschedules, m.priority,
                       m.first_enqueued_at
                FROM moved m
                WHERE NOT EXISTS (SELECT 1 FROM layover.dead_letters d WHERE d.id = m.dead_letter_id)
                RETURNING id
            )
            SELECT (SELECT count(*) FROM moved) AS moved,
                   (SELECT id FROM linked UNION ALL SELECT id FROM inserted LIMIT 1) AS dead_letter_id""";
}
