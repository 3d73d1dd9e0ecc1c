package dev.layover.core.internal.jobs;

/**
 * Every statement that writes the job table, db-scheduler's {@code layover.scheduled_tasks}, in one
 * place (db-scheduler's own picks, heartbeats and revivals aside); {@link JobStore} is the only
 * class that runs them. Layover's writes name their columns and check {@code version} so that a row
 * changed by someone else (a dead-execution revival, an operator) is never overwritten. The
 * statements that remove a job also write its {@code layover.job_history} row and, for a park, its
 * dead letter: a move is one statement.
 */
final class JobSql {

    private JobSql() {}

    static final String TABLE = "layover.scheduled_tasks";

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

    /**
     * The database answers again after an outage: heartbeats older than that (plus the reconnect
     * allowance) are not taken for dead (V14, {@code layover.dead_heartbeat_cutoff}).
     */
    static final String DATABASE_RETURNED = "SELECT layover.database_returned()";


    /**
     * A reschedule: moves the run time and counts it, leaving {@code consecutive_failures} (the
     * attempts) untouched. Matches nothing once {@code reschedules} reached the cap. Appends the
     * run's fallback trail. A job moved to a later run time leaves its key's fair queue (its tag is
     * cleared: when it is due again it is among the key's untagged due jobs, oldest first).
     */
    static final String RESCHEDULE = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL,
                version = version + 1, reschedules = reschedules + 1,
                last_reschedule_reason = ?, last_reschedule_detail = ?, last_rescheduled_at = ?, fair_tag = NULL,
                provider_trail = layover.trail_append(provider_trail, ?::jsonb),
                batch_item = CASE WHEN batch_item = ?::bigint THEN NULL ELSE batch_item END
            WHERE task_name = ? AND task_instance = ? AND version = ? AND reschedules < ?""";

    /**
     * A retry: spends an attempt and records its error and the run's fallback trail; the job leaves
     * its key's fair queue, as by {@link #RESCHEDULE}.
     */
    static final String RETRY = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL, fair_tag = NULL,
                version = version + 1, consecutive_failures = ?, last_failure = ?,
                errors = errors || ?::jsonb, provider_trail = layover.trail_append(provider_trail, ?::jsonb),
                batch_item = CASE WHEN batch_item = ?::bigint THEN NULL ELSE batch_item END
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /**
     * A job gathered into a batch waits for its line: its run time moved to when it must look
     * again, without an attempt and without counting a reschedule (reason {@code batched}).
     * Parameters: run at, detail, task name, id, version.
     */
    static final String WAIT_FOR_BATCH = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL, fair_tag = NULL,
                version = version + 1, last_reschedule_reason = 'batched', last_reschedule_detail = ?
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /**
     * A durable sleep ({@code JobContext#sleep}): the job waits until its wake time, without an
     * attempt and without counting a reschedule (reason {@code sleep}); the run's fallback trail is
     * appended. Parameters: wake at, now, detail, trail (jsonb), task name, id, version.
     */
    static final String SLEEP = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL, fair_tag = NULL,
                version = version + 1, last_rescheduled_at = ?, last_reschedule_reason = 'sleep',
                last_reschedule_detail = ?, provider_trail = layover.trail_append(provider_trail, ?::jsonb)
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /**
     * A job waiting for a signal ({@code JobContext#awaitSignal}): as {@link #SLEEP}, reason
     * {@code signal}, until its timeout or, when the signal's step says sooner (a signal that
     * arrived while this run was ending: {@code layover.signal} set its {@code wake_at} to then),
     * that. Parameters: timeout, step name, now, detail, trail, task name, id, version.
     */
    static final String AWAIT_SIGNAL = """
            UPDATE layover.scheduled_tasks t
            SET execution_time = least(?::timestamptz, coalesce((SELECT s.wake_at FROM layover.job_steps s
                    WHERE s.job_type = t.task_name AND s.job_id = t.task_instance AND s.name = ?), 'infinity')),
                picked = false, picked_by = NULL, last_heartbeat = NULL, fair_tag = NULL,
                version = version + 1, last_rescheduled_at = ?, last_reschedule_reason = 'signal',
                last_reschedule_detail = ?, provider_trail = layover.trail_append(provider_trail, ?::jsonb)
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /** A signal ({@code layover.signal}). Parameters: job type, id, name, payload (jsonb text or null). */
    static final String SIGNAL = "SELECT layover.signal(?, ?, ?, ?::jsonb)";

    /** Layover's columns of one job, read only when an outcome needs them. */
    static final String JOB_EXTRAS = """
            SELECT reschedules, provider_key FROM layover.scheduled_tasks
            WHERE task_name = ? AND task_instance = ?""";

    /** Who wrote a job whose args do not read: its args shape and when it was first enqueued (database time). */
    static final String ARGS_ORIGIN = """
            SELECT args_shape, first_enqueued_at, reschedules, now() AS db_now FROM layover.scheduled_tasks
            WHERE task_name = ? AND task_instance = ?""";


    // ---- admission and control (docs/admission-and-control.md) ----------------------------------

    /** The run time of a job a pause holds: no worker picks it; {@code paused_run_at} keeps its own. */
    static final String PAUSED_RUN_AT = "9999-12-31T00:00:00Z";

    /**
     * A hold: the job cannot go on for a reason of its own run (its batch state unreadable). Moves
     * the run time a little forward (full jitter over a delay doubling with the job's holds, from
     * the base up to the cap), counts it in {@code holds}, never in {@code reschedules} (no cap, no
     * attempt). Parameters: now, cap (s), base (s), reason, detail, task name, id, version.
     */
    static final String HOLD = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?::timestamptz
                    + make_interval(secs => least(?::float8, ?::float8 * power(2, least(holds, 16))) * (0.5 + random() / 2)),
                picked = false, picked_by = NULL, last_heartbeat = NULL, version = version + 1, holds = holds + 1,
                fair_tag = NULL, last_reschedule_reason = ?, last_reschedule_detail = ?
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /**
     * A job picked while a pause covers it (its job type, provider key or one of its limit keys):
     * held without running, its run time kept in {@code paused_run_at}. The pause rows are read
     * {@code FOR SHARE}, so a resume running at the same time either waits for this write and then
     * gives the run time back, or ends first and this finds no active pause: the job then runs
     * again at once. Returns whether it is held. Parameters: job type, keys (text[]), now, now,
     * limit keys (text[] or null), detail, task name, id, version.
     */
    static final String HOLD_PAUSED = """
            WITH pz AS (
                SELECT p.id FROM layover.pauses p
                WHERE p.resumed_at IS NULL
                  AND ((p.scope = 'job_type' AND p.target = ?) OR (p.scope = 'key' AND p.target = ANY(?::text[])))
                FOR SHARE
            )
            UPDATE layover.scheduled_tasks t
            SET execution_time = CASE WHEN EXISTS (SELECT 1 FROM pz) THEN '%1$s'::timestamptz ELSE ?::timestamptz END,
                paused_run_at = CASE WHEN EXISTS (SELECT 1 FROM pz) THEN least(t.execution_time, ?::timestamptz) END,
                limit_keys = coalesce(t.limit_keys, ?::text[]), fair_tag = NULL,
                picked = false, picked_by = NULL, last_heartbeat = NULL, version = t.version + 1, holds = t.holds + 1,
                last_reschedule_reason = CASE WHEN EXISTS (SELECT 1 FROM pz) THEN 'paused' ELSE t.last_reschedule_reason END,
                last_reschedule_detail = CASE WHEN EXISTS (SELECT 1 FROM pz) THEN ? ELSE t.last_reschedule_detail END
            WHERE t.task_name = ? AND t.task_instance = ? AND t.version = ?
            RETURNING t.paused_run_at IS NOT NULL AS held""".formatted(PAUSED_RUN_AT);

    /** The rows a worker holds picked, for its lifeline. Parameter: worker. */
    static final String PICKED_BY = """
            SELECT task_name, task_instance, version FROM layover.scheduled_tasks
            WHERE picked AND picked_by = ? AND task_name = ANY (?::text[])""";

    /** A picked job still held by this worker at this version (parameters: name, id, version, worker). */
    static final String STILL_PICKED = """
            SELECT 1 FROM layover.scheduled_tasks
            WHERE task_name = ? AND task_instance = ? AND version = ? AND picked AND picked_by = ?""";

    /**
     * Whether the run before this one also ended with its worker lost: the job's last reschedule
     * was {@code worker_lost} and no attempt failed after it. No row at this version: null.
     * Parameters: task name, id, version.
     */
    static final String LOST_BEFORE = """
            SELECT last_reschedule_reason IS NOT DISTINCT FROM 'worker_lost'
                   AND (last_failure IS NULL OR last_failure <= last_rescheduled_at)
            FROM layover.scheduled_tasks
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /**
     * Gives back a job a worker picked but did not start (its lifeline): unpicked, version moved,
     * due as it was; the other workers are woken. Parameters: task name, id, version, worker.
     */
    static final String GIVE_BACK = """
            WITH back AS (
                UPDATE layover.scheduled_tasks
                SET picked = false, picked_by = NULL, last_heartbeat = NULL, version = version + 1
                WHERE task_name = ? AND task_instance = ? AND version = ? AND picked AND picked_by = ?
                RETURNING 1
            )
            SELECT count(*) AS n, max(pg_notify('layover_jobs', '')::text) FROM back""";

    // ---- operator control

    /** A live job's version and whether it runs. Parameters: job type, id. */
    static final String JOB = """
            SELECT version, picked, coalesce(consecutive_failures, 0) AS attempts
            FROM layover.scheduled_tasks WHERE task_name = ? AND task_instance = ?""";

    /**
     * Asks a running job to stop: marks its row (the first request stands; the version is not
     * changed, so the run's own outcome write still matches) and tells the workers at once.
     * Parameters: now, by, reason, job type, id, version.
     */
    static final String REQUEST_CANCEL = """
            WITH marked AS (
                UPDATE layover.scheduled_tasks
                SET cancel_requested_at = coalesce(cancel_requested_at, ?::timestamptz),
                    cancel_requested_by = coalesce(cancel_requested_by, ?),
                    cancel_reason = CASE WHEN cancel_requested_at IS NULL THEN ? ELSE cancel_reason END
                WHERE task_name = ? AND task_instance = ? AND version = ? AND picked
                RETURNING task_name, task_instance
            )
            SELECT count(*) AS n,
                   max(pg_notify('layover_provider_state',
                       json_build_object('table', 'cancels', 'job_type', task_name, 'id', task_instance)::text)::text)
            FROM marked""";

    private static final String MATCH_JOB_TYPE = "t.task_name = ?";
    private static final String MATCH_KEY = "(t.provider_key = ? OR t.limit_keys @> ARRAY[?]::text[])";

    private static final String HOLD_WAITING = """
            UPDATE layover.scheduled_tasks t
            SET paused_run_at = t.execution_time, execution_time = '%s'::timestamptz, version = t.version + 1,
                fair_tag = NULL, last_reschedule_reason = 'paused', last_reschedule_detail = ?
            WHERE NOT t.picked AND t.paused_run_at IS NULL AND t.task_name NOT LIKE 'layover-%%' AND %s""";

    /** Holds the waiting jobs of a job type. Parameters: detail, job type. */
    static final String HOLD_WAITING_OF_TYPE = HOLD_WAITING.formatted(PAUSED_RUN_AT, MATCH_JOB_TYPE);

    /** Holds the waiting jobs of a key (provider key or limit key). Parameters: detail, key, key. */
    static final String HOLD_WAITING_OF_KEY = HOLD_WAITING.formatted(PAUSED_RUN_AT, MATCH_KEY);

    /**
     * Gives every held job that no active pause covers any more its run time back, and wakes the
     * workers. Parameters: detail.
     */
    static final String RELEASE = """
            WITH released AS (
                UPDATE layover.scheduled_tasks t
                SET execution_time = t.paused_run_at, paused_run_at = NULL, version = t.version + 1,
                    last_reschedule_reason = 'resumed', last_reschedule_detail = ?
                WHERE t.paused_run_at IS NOT NULL
                  AND NOT EXISTS (
                      SELECT 1 FROM layover.pauses p
                      WHERE p.resumed_at IS NULL
                        AND ((p.scope = 'job_type' AND p.target = t.task_name)
                             OR (p.scope = 'key' AND (p.target = t.provider_key OR p.target = ANY(t.limit_keys)))))
                RETURNING 1
            )
            SELECT count(*) AS n, max(pg_notify('layover_jobs', '')::text) FROM released""";

    // ---- the dead-letter store's writes (JobWrites)

    /**
     * One fresh job per dead letter, with every column a fresh enqueue writes (no deadline: a
     * replay is a new decision; the trace context of the first enqueue, so its runs link to it); the dead letters are read by id, the caller holding them locked.
     * Nothing is inserted where a live job has that type and id. Parameters: run at (or null for
     * now), spread in ms, replay kind, dead letter ids (bigint[]), edited args per id (text[],
     * nulls for the stored args). Returns the dead letter, job id and run time of each job inserted.
     * The replays are counted in the time series (V16's {@code layover.time_series_add()}, one call).
     */
    static final String INSERT_REPLAYS = """
            WITH inserted AS (
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version, priority,
                 consecutive_failures, provider_key, limit_keys, dead_letter_id, replay_kind, fairness_key,
                 trace_context, has_dependents, group_id)
            SELECT d.job_type, d.job_id,
                   CASE WHEN u.edited IS NOT NULL THEN convert_to(u.edited, 'UTF8')
                        ELSE coalesce(convert_to(d.args::text, 'UTF8'), d.args_raw) END,
                   coalesce(p.run_at, now()) + random() * p.spread_ms * interval '1 millisecond',
                   false, 1, d.priority, 0, d.provider_key, d.limit_keys, d.id, p.kind, d.fairness_key,
                   d.trace_context,
                   EXISTS (SELECT 1 FROM layover.job_dependencies e
                           WHERE e.after_type = d.job_type AND e.after_id = d.job_id AND e.state = 'waiting'),
                   (SELECT gm.group_id FROM layover.group_members gm
                    WHERE gm.job_type = d.job_type AND gm.job_id = d.job_id AND gm.state = 'parked')
            FROM (SELECT ?::timestamptz AS run_at, ?::bigint AS spread_ms, ?::text AS kind) p,
                 unnest(?::bigint[], ?::text[]) WITH ORDINALITY AS u(id, edited, n)
            JOIN layover.dead_letters d ON d.id = u.id
            ORDER BY u.n
            ON CONFLICT (task_name, task_instance) DO NOTHING
            RETURNING dead_letter_id, task_instance, execution_time, task_name, provider_key, replay_kind, group_id
            ), regrouped AS (
                -- a replayed group member is pending again: its group waits for its new job
                UPDATE layover.group_members g SET state = 'pending'
                FROM inserted i
                WHERE i.group_id IS NOT NULL AND g.group_id = i.group_id AND g.job_type = i.task_name
                  AND g.job_id = i.task_instance AND g.state = 'parked'
            ), counted AS (
                SELECT layover.time_series_add(array_agg(g.task_name), array_agg(g.provider_key),
                           array_agg('replayed'::text), array_agg(g.replay_kind), array_agg(g.n)) AS written
                FROM (SELECT task_name, coalesce(provider_key, '') AS provider_key, replay_kind, count(*) AS n
                      FROM inserted GROUP BY 1, 2, 3) g
            )
            SELECT i.dead_letter_id, i.task_instance, i.execution_time FROM inserted i, counted""";

    /**
     * Records one job type a worker registered ({@code layover.job_types}, read by
     * {@code layover.enqueue}); the last start wins. Parameters: job type, args shape, args
     * properties (text[]), size cap, fixed provider key (or null), whether the provider key, the
     * fairness key and the limit keys are derived from args, worker.
     */
    static final String REGISTER_TYPE = """
            INSERT INTO layover.job_types AS t
                (job_type, args_shape, args_properties, max_args_bytes, provider_key, provider_key_from_args,
                 fairness_key_from_args, limit_keys_from_args, registered_by, registered_at)
            VALUES (?, ?, ?::text[], ?, ?, ?, ?, ?, ?, now())
            ON CONFLICT (job_type) DO UPDATE
            SET args_shape = excluded.args_shape, args_properties = excluded.args_properties,
                max_args_bytes = excluded.max_args_bytes, provider_key = excluded.provider_key,
                provider_key_from_args = excluded.provider_key_from_args,
                fairness_key_from_args = excluded.fairness_key_from_args,
                limit_keys_from_args = excluded.limit_keys_from_args, registered_by = excluded.registered_by,
                registered_at = excluded.registered_at""";

    /**
     * Brings a recurring task's next run forward to now (after a breaker close was heard), when it
     * is not running; the version moves as with any change of a db-scheduler row. Parameter: task
     * name.
     */
    static final String NUDGE_RECURRING = """
            UPDATE layover.scheduled_tasks
            SET execution_time = now(), version = version + 1
            WHERE task_name = ? AND task_instance = 'recurring' AND NOT picked AND execution_time > now()""";

    /**
     * A job just inserted waiting (a group's callback: reason {@code group}, until
     * {@code layover.group_settle} makes it due; a dependent: {@code dependencies}, until
     * {@code layover.dependencies_completed} does) says why it waits (the view {@code layover.jobs}).
     * Parameters: reason, detail, job type, id.
     */
    static final String WAITS = """
            UPDATE layover.scheduled_tasks SET last_reschedule_reason = ?, last_reschedule_detail = ?
            WHERE task_name = ? AND task_instance = ?""";

    /**
     * A live job another is enqueued to run after: marked (its version kept, so its run's writes
     * still match; the row lock makes its done delete wait for the enqueue and return the mark).
     * Parameters: job type, id. Returns a row when the job is live.
     */
    static final String MARK_DEPENDED_ON = """
            UPDATE layover.scheduled_tasks SET has_dependents = true
            WHERE task_name = ? AND task_instance = ?
            RETURNING 1""";

    /**
     * A dead letter parked or in review that a job is enqueued to run after, locked against a
     * concurrent replay or discard until the enqueue commits. Parameters: job type, id.
     */
    static final String PARKED_DEPENDED_ON = """
            SELECT 1 FROM layover.dead_letters
            WHERE job_type = ? AND job_id = ? AND state IN ('parked', 'review')
            LIMIT 1 FOR SHARE""";

    /** A job completed within the history's retention. Parameters: job type, id. */
    static final String COMPLETED = """
            SELECT 1 FROM layover.job_history WHERE job_type = ? AND job_id = ? AND outcome = 'completed' LIMIT 1""";

    /** A dependent's edges. Parameters: job type, id, the jobs' types (text[]) and ids (text[]). */
    static final String INSERT_DEPENDENCIES = """
            INSERT INTO layover.job_dependencies (job_type, job_id, after_type, after_id)
            SELECT ?, ?, u.t, u.i FROM unnest(?::text[], ?::text[]) AS u(t, i)
            ON CONFLICT DO NOTHING""";

    /** Dependents of completed jobs made due ({@code layover.dependencies_completed}). Parameters: types, ids. */
    static final String DEPENDENCIES_COMPLETED = "SELECT layover.dependencies_completed(?::text[], ?::text[])";

    /** A recurring task's first run, as db-scheduler's own start-up scheduling would write it. Parameters: name, instance. */
    static final String SCHEDULE_RECURRING = """
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version, priority, consecutive_failures)
            VALUES (?, ?, NULL, now(), false, 1, 0, 0)
            ON CONFLICT (task_name, task_instance) DO NOTHING""";
}
