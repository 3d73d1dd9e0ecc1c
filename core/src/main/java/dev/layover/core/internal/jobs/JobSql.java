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
     * The reschedule detail of a job at its place in its key's waiting line, after {@code "bucket of
     * <key>: "}: the enqueue, the backlog placement and a job told to wait that joins the line write
     * it, and users and tests query it.
     */
    static final String LINE_PLACE = "a place in its waiting line (no permit held)";

    /**
     * An idempotency key is taken by a live job (the insert's conflict), a dead letter still parked or
     * in review, or a job that completed within the history's retention.
     */
    private static final String NOT_PARKED = """
            NOT EXISTS (SELECT 1 FROM layover.dead_letters d
                        WHERE d.job_type = %1$s AND d.job_id = %2$s AND d.state IN ('parked', 'review'))
            AND NOT EXISTS (SELECT 1 FROM layover.job_history h
                            WHERE h.job_type = %1$s AND h.job_id = %2$s AND h.outcome = 'completed')""";

    /**
     * Whether a job may book its bucket permit at enqueue: its type and the enqueue allow it
     * (the insert's {@code bookable} parameter: not batchable, on Layover's own connection), it has
     * a provider key, no deadline, limit keys or fairness key (they wait their own ways), no raised
     * priority (it goes ahead of the booked jobs when picked), and it is due at its run time.
     * Column names of the insert's row source {@code j}.
     */
    private static final String BOOKABLE = """
            j.bookable AND j.provider_key IS NOT NULL AND j.deadline IS NULL AND j.limit_keys IS NULL
            AND j.fairness_key IS NULL AND j.priority <= 0 AND j.run_at <= now()""";

    /** The columns every insert writes; the last three are a permit booked at enqueue. */
    private static final String INSERT_INTO = """
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version,
                 priority, consecutive_failures, provider_key, deadline, limit_keys, args_shape, fairness_key,
                 token_estimate, permit_at, last_reschedule_reason, last_reschedule_detail)
            """;

    /**
     * The values after task name, id and data: {@code j} the row source, {@code pl} its place behind
     * the key's bucket or nulls ({@code slot}: the run time; {@code permit}: whether it holds a permit
     * booked there, else it is a place in the key's waiting line).
     */
    private static final String BOOKED_VALUES = """
            coalesce(pl.slot, j.run_at), false, 1, j.priority, 0, j.provider_key, j.deadline, j.limit_keys,
                   j.args_shape, j.fairness_key, j.token_estimate, CASE WHEN pl.permit THEN pl.slot END,
                   CASE WHEN pl.slot IS NOT NULL THEN 'bucket' END,
                   CASE WHEN pl.permit THEN 'bucket of ' || j.provider_key || ': a permit booked at enqueue'
                        WHEN pl.slot IS NOT NULL
                        THEN 'bucket of ' || j.provider_key || ': """ + LINE_PLACE + "' END";

    /** One job as the row source {@code j}, with its place {@code pl}: the parameters of {@link #INSERT}, in order. */
    private static final String ONE_JOB = """
            (VALUES (?::text, ?::text, ?::bytea, ?::timestamptz, ?::smallint, ?::text, ?::timestamptz, ?::text[], ?::text,
                     ?::text, ?::float8[], ?::boolean, ?::float8))
                AS j(task_name, task_instance, task_data, run_at, priority, provider_key, deadline, limit_keys, args_shape,
                     fairness_key, token_estimate, bookable, horizon_s)
            LEFT JOIN LATERAL (
                SELECT ep.slots[1] AS slot, ep.permits >= 1 AS permit
                FROM layover.enqueue_places(j.provider_key, 1, j.horizon_s) ep
                WHERE %s
                  AND EXISTS (SELECT 1 FROM layover.buckets bk WHERE bk.provider_key = j.provider_key)
                  AND ep.slots IS NOT NULL) pl ON true""".formatted(BOOKABLE);

    /**
     * One job with a random id: nothing can conflict. Parameters: job type, id, data, run time,
     * priority, provider key, deadline, limit keys (text[]), args shape, fairness key, token
     * estimate (float8[]), whether it may book its permit at enqueue, the booking horizon (s).
     * A job whose key's bucket has a permit for it within the horizon is inserted holding it
     * (run time and {@code permit_at} at the permit, reason {@code bucket}, no reschedule counted);
     * one behind a bucket booked beyond the horizon at its place in the key's waiting line, holding
     * nothing ({@code layover.enqueue_places}: run time at the place, reason {@code bucket});
     * any other at its run time.
     */
    static final String INSERT = INSERT_INTO + "SELECT j.task_name, j.task_instance, j.task_data, " + BOOKED_VALUES
            + "\nFROM " + ONE_JOB;

    /**
     * One job with an idempotency key: writes nothing if the key names a live job or an unresolved
     * dead letter. The parameters of {@link #INSERT}, then job type, id, job type, id. A permit
     * booked for a job that the key then skips is not given back (one request's time of the
     * bucket).
     */
    static final String INSERT_KEYED = INSERT_INTO + "SELECT j.task_name, j.task_instance, j.task_data, "
            + BOOKED_VALUES + "\nFROM " + ONE_JOB + "\nWHERE " + NOT_PARKED.formatted("?", "?")
            + "\nON CONFLICT (task_name, task_instance) DO NOTHING";

    /**
     * Many jobs of one type in one statement; returns the ids it inserted. Parameters: whether the
     * jobs may book their permits at enqueue, the booking horizon (s); arrays of ids, data, run
     * times (ISO-8601 text), priorities, provider keys, deadlines (ISO-8601 text or null), limit
     * keys (each a text[] literal or null), fairness keys (null elements: none), token estimates
     * (each a float8[] literal or null); the job type, the args shape, the job type twice. Like
     * {@link #INSERT}, in the batch's order, one {@code layover.enqueue_places} call per key
     * with a bucket row, the keys in order (each call holds its bucket row to the statement's end).
     */
    static final String INSERT_BATCH = """
            WITH u AS (
                SELECT u.*, ?::boolean AS bookable, ?::float8 AS horizon_s
                FROM unnest(?::text[], ?::bytea[], ?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
                     WITH ORDINALITY AS u(id, data, run_at_text, priority_int, provider_key, deadline_text, limit_keys_text,
                                          fairness_key, token_estimate_text, ord)
            ), j AS (
                SELECT u.ord, u.id, u.data, u.run_at_text::timestamptz AS run_at, u.priority_int::smallint AS priority,
                       u.provider_key, u.deadline_text::timestamptz AS deadline, u.limit_keys_text::text[] AS limit_keys,
                       u.fairness_key, u.token_estimate_text::float8[] AS token_estimate, u.bookable, u.horizon_s
                FROM u
            ), queued AS (
                SELECT j.ord, j.provider_key, j.horizon_s, row_number() OVER (PARTITION BY j.provider_key ORDER BY j.ord) AS rn
                FROM j WHERE %s
            ), places AS MATERIALIZED (
                SELECT k.provider_key, e.rn, e.slot, e.rn <= ep.permits AS permit
                FROM (SELECT q.provider_key, count(*)::int AS n, min(q.horizon_s) AS horizon_s
                      FROM queued q
                      WHERE EXISTS (SELECT 1 FROM layover.buckets bk WHERE bk.provider_key = q.provider_key)
                      GROUP BY q.provider_key ORDER BY q.provider_key) k,
                     LATERAL layover.enqueue_places(k.provider_key, k.n, k.horizon_s) ep,
                     LATERAL unnest(ep.slots) WITH ORDINALITY AS e(slot, rn)
            ), pl AS (
                SELECT q.ord, s.slot, s.permit
                FROM queued q JOIN places s ON s.provider_key = q.provider_key AND s.rn = q.rn
            )
            """.formatted(BOOKABLE) + INSERT_INTO + "SELECT ?, j.id, j.data, " + BOOKED_VALUES.replace("j.args_shape", "?")
            + """

            FROM j LEFT JOIN pl ON pl.ord = j.ord
            WHERE %s
            ON CONFLICT (task_name, task_instance) DO NOTHING
            RETURNING task_instance""".formatted(NOT_PARKED.formatted("?", "j.id"));

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
     * allowance) are not taken for dead ({@code layover.dead_heartbeat_cutoff}).
     */
    static final String DATABASE_RETURNED = "SELECT layover.database_returned()";

    /** Finished jobs, deleted in one statement; a row whose version moved on is left alone. */
    static final String DELETE_DONE = """
            DELETE FROM layover.scheduled_tasks t
            USING unnest(?::text[], ?::text[], ?::bigint[]) AS d(name, id, version)
            WHERE t.task_name = d.name AND t.task_instance = d.id AND t.version = d.version""";

    /**
     * Finished jobs, deleted in one statement that also writes their {@code layover.job_history}
     * rows (a data-modifying CTE: no second round trip). A row whose version moved on is left
     * alone and gets no history row. Parameters: arrays of names, ids, versions, run starts
     * (ISO-8601 text, null when unknown), handler durations in ms (null when unknown), the last
     * run's fallback trail (jsonb text, null when none), results, then the tokens each run's call
     * reported (input, output, cached input) and reserved (bigint, null when none); then
     * whether to keep the args (boolean).
     */
    static final String DELETE_DONE_WITH_HISTORY = """
            WITH moved AS (
                DELETE FROM layover.scheduled_tasks t
                USING unnest(?::text[], ?::text[], ?::bigint[], ?::text[], ?::float8[], ?::text[], ?::text[],
                             ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[])
                      AS d(name, id, version, started_at, duration_ms, trail, result, input_tokens, output_tokens,
                           cached_input_tokens, estimated_tokens)
                WHERE t.task_name = d.name AND t.task_instance = d.id AND t.version = d.version
                RETURNING t.task_name, t.task_instance, t.consecutive_failures, t.reschedules, t.provider_key,
                          t.picked_by, t.first_enqueued_at, t.dead_letter_id, t.replay_kind, t.provider_trail,
                          CASE WHEN ?::boolean THEN layover.args_jsonb(t.task_data) END AS args,
                          d.started_at, d.duration_ms, d.trail, d.result, t.limit_keys, d.input_tokens,
                          d.output_tokens, d.cached_input_tokens, d.estimated_tokens
            )
            INSERT INTO layover.job_history
                (job_type, job_id, outcome, attempts, reschedules, provider_key, worker, enqueued_at,
                 started_at, duration_ms, dead_letter_id, replay_kind, provider_trail, args, result,
                 limit_keys, input_tokens, output_tokens, cached_input_tokens, estimated_tokens)
            SELECT m.task_name, m.task_instance, 'completed', coalesce(m.consecutive_failures, 0), m.reschedules,
                   m.provider_key, m.picked_by, m.first_enqueued_at, m.started_at::timestamptz, m.duration_ms,
                   m.dead_letter_id, m.replay_kind,
                   -- trail_append is not inlined: call it only for a run that has a trail
                   CASE WHEN m.trail IS NULL THEN nullif(m.provider_trail, '[]'::jsonb)
                        ELSE nullif(layover.trail_append(m.provider_trail, m.trail::jsonb), '[]'::jsonb) END,
                   m.args, m.result::jsonb,
                   m.limit_keys, m.input_tokens, m.output_tokens, m.cached_input_tokens, m.estimated_tokens
            FROM moved m""";

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
                permit_at = ?, provider_trail = layover.trail_append(provider_trail, ?::jsonb),
                batch_item = CASE WHEN batch_item = ?::bigint THEN NULL ELSE batch_item END
            WHERE task_name = ? AND task_instance = ? AND version = ? AND reschedules < ?""";

    /**
     * A retry: spends an attempt and records its error and the run's fallback trail. The bucket
     * permit the job held, if any, is gone (spent by this run, or lapsed): {@code permit_at}
     * cleared, as by every write that moves a job off its permit's run time (a take spends a
     * held permit without writing the row).
     */
    static final String RETRY = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL, permit_at = NULL,
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
            SET execution_time = ?, picked = false, picked_by = NULL, last_heartbeat = NULL, permit_at = NULL,
                version = version + 1, last_reschedule_reason = 'batched', last_reschedule_detail = ?
            WHERE task_name = ? AND task_instance = ? AND version = ?""";

    /** Layover's columns of one job, read only when an outcome needs them. */
    static final String JOB_EXTRAS = """
            SELECT reschedules, provider_key FROM layover.scheduled_tasks
            WHERE task_name = ? AND task_instance = ?""";

    /** Who wrote a job whose args do not read: its args shape and when it was first enqueued (database time). */
    static final String ARGS_ORIGIN = """
            SELECT args_shape, first_enqueued_at, reschedules, now() AS db_now FROM layover.scheduled_tasks
            WHERE task_name = ? AND task_instance = ?""";

    /**
     * Parks a job: deletes its row (version-checked) and, in the same statement, inserts its dead
     * letter, or updates the dead letter it was replayed from, and writes its
     * {@code layover.job_history} row when history is on. A cancel is a park too (failure type
     * {@code cancelled}, history outcome {@code cancelled}). Returns how many rows were moved, the
     * dead letter's id and the job's provider key; the caller commits only when both are there.
     *
     * <p>Parameters: task name, id, version, whether a picked row may be parked (the engine parks
     * the job it runs; an operator's cancel may not take a running one); then for the update:
     * whether a sweep replay goes to review, failure type, error class, message, new error (jsonb),
     * attempts (null: the row's), the last run's fallback trail (jsonb); then the five after the
     * first for the insert; then for the history row: outcome, failure type, message, attempts
     * (null: the row's), the run's start (ISO-8601 text or null), its handler duration in ms (or
     * null), the last run's fallback trail, whether to keep the args, whether history is on. The
     * first four parameters: the tokens the last run's call reported (input, output, cached
     * input) and reserved (each null when none), written to the history row and the dead
     * letter. The job's fallback trail moves with it to the dead letter.
     */
    static final String PARK = """
            WITH tok AS (SELECT ?::bigint AS input_tokens, ?::bigint AS output_tokens, ?::bigint AS cached_input_tokens,
                                ?::bigint AS estimated_tokens),
            moved AS (
                DELETE FROM layover.scheduled_tasks t
                WHERE t.task_name = ? AND t.task_instance = ? AND t.version = ? AND (NOT t.picked OR ?::boolean)
                RETURNING t.*
            ), linked AS (
                -- a sweep replay that failed again needs a person; one parked by an open breaker never
                -- reached the provider, so the sweep may try it again (its replay budget caps that);
                -- the state is layover.dead_letter_next_state
                UPDATE layover.dead_letters d
                SET state = layover.dead_letter_next_state(d.state,
                        CASE WHEN m.replay_kind = 'sweep' AND ?::boolean THEN 'sweep_replay_failed' ELSE 'parked_again' END),
                    state_changed_at = now(), parked_at = now(), park_count = d.park_count + 1,
                    failure_type = ?, error_class = ?, error_message = ?,
                    errors = d.errors || m.errors || ?::jsonb, attempts = coalesce(?::int, m.consecutive_failures, 0),
                    provider_trail = layover.trail_append(d.provider_trail, layover.trail_append(m.provider_trail, ?::jsonb)),
                    reschedules = m.reschedules,
                    args = layover.args_jsonb(m.task_data),
                    args_raw = CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
                    provider_key = m.provider_key, limit_keys = m.limit_keys, fairness_key = m.fairness_key,
                    input_tokens = tok.input_tokens, output_tokens = tok.output_tokens,
                    cached_input_tokens = tok.cached_input_tokens, estimated_tokens = tok.estimated_tokens
                FROM moved m, tok
                WHERE d.id = m.dead_letter_id
                RETURNING d.id
            ), inserted AS (
                INSERT INTO layover.dead_letters
                    (job_type, job_id, args, args_raw, provider_key, failure_type, error_class,
                     error_message, errors, attempts, provider_trail, reschedules, priority, first_enqueued_at,
                     limit_keys, input_tokens, output_tokens, cached_input_tokens, estimated_tokens, fairness_key)
                SELECT m.task_name, m.task_instance, layover.args_jsonb(m.task_data),
                       CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
                       m.provider_key, ?, ?, ?, m.errors || ?::jsonb, coalesce(?::int, m.consecutive_failures, 0),
                       layover.trail_append(m.provider_trail, ?::jsonb), m.reschedules, m.priority,
                       m.first_enqueued_at, m.limit_keys, tok.input_tokens, tok.output_tokens, tok.cached_input_tokens,
                       tok.estimated_tokens, m.fairness_key
                FROM moved m, tok
                WHERE NOT EXISTS (SELECT 1 FROM layover.dead_letters d WHERE d.id = m.dead_letter_id)
                RETURNING id
            ), history AS (
                INSERT INTO layover.job_history
                    (job_type, job_id, outcome, failure_type, detail, attempts, reschedules, provider_key, worker,
                     enqueued_at, started_at, duration_ms, dead_letter_id, replay_kind, provider_trail, args,
                     limit_keys, input_tokens, output_tokens, cached_input_tokens, estimated_tokens)
                SELECT m.task_name, m.task_instance, ?, ?, ?, coalesce(?::int, m.consecutive_failures, 0), m.reschedules,
                       m.provider_key, m.picked_by, m.first_enqueued_at, ?::timestamptz, ?::float8,
                       (SELECT id FROM linked UNION ALL SELECT id FROM inserted LIMIT 1), m.replay_kind,
                       nullif(layover.trail_append(m.provider_trail, ?::jsonb), '[]'::jsonb),
                       CASE WHEN ?::boolean THEN layover.args_jsonb(m.task_data) END,
                       m.limit_keys, tok.input_tokens, tok.output_tokens, tok.cached_input_tokens, tok.estimated_tokens
                FROM moved m, tok
                WHERE ?::boolean
            )
            SELECT (SELECT count(*) FROM moved) AS moved,
                   (SELECT id FROM linked UNION ALL SELECT id FROM inserted LIMIT 1) AS dead_letter_id,
                   (SELECT provider_key FROM moved LIMIT 1) AS provider_key""";

    // ---- admission and control (docs/admission-and-control.md) ----------------------------------

    /** The run time of a job a pause holds: no worker picks it; {@code paused_run_at} keeps its own. */
    static final String PAUSED_RUN_AT = "9999-12-31T00:00:00Z";

    /**
     * A hold: no concurrency slot was free. Moves the run time a little forward (full jitter over
     * a delay doubling with the job's holds, from the base up to the cap), counts it in {@code
     * holds}, never in {@code reschedules} (no cap, no attempt); a bucket permit the job held is
     * gone ({@code permit_at} cleared, as by {@link #RETRY}). Parameters: now, cap (s), base (s),
     * reason, detail, task name, id, version.
     */
    static final String HOLD = """
            UPDATE layover.scheduled_tasks
            SET execution_time = ?::timestamptz
                    + make_interval(secs => least(?::float8, ?::float8 * power(2, least(holds, 16))) * (0.5 + random() / 2)),
                picked = false, picked_by = NULL, last_heartbeat = NULL, version = version + 1, holds = holds + 1,
                permit_at = NULL, last_reschedule_reason = ?, last_reschedule_detail = ?
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
                limit_keys = coalesce(t.limit_keys, ?::text[]),
                picked = false, picked_by = NULL, last_heartbeat = NULL, version = t.version + 1, holds = t.holds + 1,
                last_reschedule_reason = CASE WHEN EXISTS (SELECT 1 FROM pz) THEN 'paused' ELSE t.last_reschedule_reason END,
                last_reschedule_detail = CASE WHEN EXISTS (SELECT 1 FROM pz) THEN ? ELSE t.last_reschedule_detail END
            WHERE t.task_name = ? AND t.task_instance = ? AND t.version = ?
            RETURNING t.paused_run_at IS NOT NULL AS held""".formatted(PAUSED_RUN_AT);

    /** The rows a worker holds picked, for its lifeline. Parameter: worker. */
    static final String PICKED_BY = """
            SELECT task_name, task_instance, version FROM layover.scheduled_tasks WHERE picked AND picked_by = ?""";

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
                last_reschedule_reason = 'paused', last_reschedule_detail = ?
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

    // ---- provider state

    /** Jobs that are due. */
    private static final String DUE = "t.execution_time <= p.now";

    /**
     * Jobs that are due, and jobs in the key's waiting line whatever their place (a bucket's
     * reschedule or a place taken at enqueue, holding no permit; never a job of a fair queue,
     * whose turn its tag decides): the line's front is booked
     * ahead of its places, so that a permit taken around the line costs its jobs one write each, not
     * one write and one pick more each, job after job, to the line's end.
     */
    private static final String DUE_OR_IN_LINE =
            "(t.execution_time <= p.now OR (t.last_reschedule_reason = 'bucket' AND t.fairness_key IS NULL))";

    /**
     * The unpicked jobs of a key that a backlog statement may move, oldest first, locked (never
     * a job with a batch item: its line, not a permit, is what it waits for): those the statement's
     * {@code %s} selects ({@link #DUE} or {@link #DUE_OR_IN_LINE}). The CTE {@code locked} of
     * {@link #RESERVE_BACKLOG}, {@link #PLACE_BACKLOG} and {@link #WAITLIST_BACKLOG}, which
     * define {@code p} (key, now, max_jobs, types, caps) and {@code b} (the key's bucket row).
     */
    private static final String BACKLOG = """
            locked AS (
                SELECT t.task_name, t.task_instance, t.execution_time
                FROM layover.scheduled_tasks t
                JOIN p ON t.provider_key = p.key
                JOIN unnest((SELECT types FROM p), (SELECT caps FROM p)) AS ty(name, cap) ON t.task_name = ty.name
                WHERE NOT t.picked AND %s AND t.permit_at IS NULL AND t.limit_keys IS NULL
                  AND t.deadline IS NULL AND t.cancel_requested_at IS NULL AND t.reschedules < ty.cap
                  AND t.batch_item IS NULL
                  AND EXISTS (SELECT 1 FROM b)
                -- run-time order as the key's index gives it: a tie-break column would sort every job of a
                -- backlog enqueued at one instant (a million rows, spilled to disk) before the first came out
                ORDER BY t.execution_time
                LIMIT (SELECT max_jobs FROM p)
                FOR UPDATE OF t SKIP LOCKED
            ), """;

    /**
     * Reserves bucket permits for a key's backlog in one statement: the due, unpicked jobs of the
     * key and then its waiting line's front, ahead of their places ({@link #DUE_OR_IN_LINE}; oldest
     * run time first, skipping rows another transaction holds) get the next slots of the bucket,
     * as if each had asked in turn (GCRA: the k-th, from 1, gets {@code greatest(now, start + (k -
     * capacity) / rate)} with {@code start = greatest(tat, now)}), as their run time and their held
     * permit ({@code permit_at}); the bucket's tat moves past them
     * ({@code layover.book_requests}, the gate's). Only as many jobs as there are slots within the
     * horizon are locked (at most {@code max_jobs}), so the statement, which holds the bucket row,
     * stays short; the rest of a deeper backlog is placed in the key's waiting line by
     * {@link #PLACE_BACKLOG}. Only jobs of the given types, below their reschedule cap, without
     * limit keys, deadline or cancel request. A reschedule of each (reason {@code bucket}), no
     * attempt spent.
     *
     * <p>Parameters: key, now, request rate (/s), request capacity, max jobs, horizon (s), job type
     * names (text[]), their reschedule caps (int[]). Returns the jobs reserved per job type
     * ({@code task_name}, {@code reserved}; no row when none).
     */
    static final String RESERVE_BACKLOG = """
            WITH p0 AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::float8 AS rate, ?::float8 AS cap,
                               ?::int AS max_asked, ?::float8 AS horizon_s, ?::text[] AS types, ?::int[] AS caps),
            b AS (
                SELECT greatest(bk.request_tat, p0.now) AS start
                FROM layover.buckets bk JOIN p0 ON bk.provider_key = p0.key
                FOR UPDATE OF bk
            ), p AS (
                SELECT p0.*, least(p0.max_asked, greatest(0, floor(
                           extract(epoch FROM p0.now + make_interval(secs => p0.horizon_s) - b.start) * p0.rate + p0.cap)))::int
                           AS max_jobs
                FROM p0 LEFT JOIN b ON true
            ), """
            + BACKLOG.formatted(DUE_OR_IN_LINE) + """
            slots AS (
                SELECT l.task_name, l.task_instance,
                       greatest(p.now, layover.gcra_fits_at(b.start + make_interval(secs =>
                           (row_number() OVER (ORDER BY l.execution_time, l.task_instance) - 1) / p.rate), p.rate, p.cap, 1))
                           AS slot
                FROM locked l, b, p
            ), moved AS (
                UPDATE layover.scheduled_tasks t
                SET execution_time = s.slot, permit_at = s.slot, version = t.version + 1,
                    reschedules = t.reschedules + 1, last_reschedule_reason = 'bucket',
                    last_reschedule_detail = 'bucket of ' || p.key || ': a permit reserved with its backlog',
                    last_rescheduled_at = p.now
                FROM slots s, p
                WHERE t.task_name = s.task_name AND t.task_instance = s.task_instance
                  AND s.slot <= p.now + make_interval(secs => p.horizon_s)
                RETURNING t.task_name
            ), booked AS (
                SELECT layover.book_requests(p.key, (SELECT start FROM b), (SELECT count(*) FROM moved), p.rate)
                FROM p
            )
            SELECT m.task_name, count(*) AS reserved FROM moved m, (SELECT count(*) FROM booked) booking GROUP BY m.task_name""";

    /**
     * A place in a key's waiting line ahead of now, one probe of {@code scheduled_tasks_line_idx}
     * ({@code max()}/{@code min()} may be planned as a read of the whole line): {@code %1$s} the
     * key's column, {@code %2$s} now, {@code %3$s} {@code ASC} for the line's first place,
     * {@code DESC} for its last. The statement's gate counterpart is {@code StateSql}'s line probe
     * (the gate's SQL stays in its package).
     */
    private static final String LINE_PROBE = """
            (SELECT t.execution_time FROM layover.scheduled_tasks t
             WHERE t.provider_key = %1$s AND NOT t.picked AND t.permit_at IS NULL
               AND t.last_reschedule_reason = 'bucket' AND t.execution_time > %2$s
             ORDER BY t.execution_time %3$s LIMIT 1)""";

    /**
     * The end of {@link #PLACE_BACKLOG} and {@link #REALIGN_LINE}: each job of the CTE
     * {@code places} ({@code task_name}, {@code task_instance}, {@code place}) rescheduled to its
     * place in the key's waiting line, holding no permit (reason {@code bucket}, {@code reschedules}
     * + 1, no attempt); returns the jobs moved per job type.
     */
    private static final String TO_PLACES = """
            moved AS (
                UPDATE layover.scheduled_tasks t
                SET execution_time = s.place, permit_at = NULL, version = t.version + 1,
                    reschedules = t.reschedules + 1, last_reschedule_reason = 'bucket',
                    last_reschedule_detail = 'bucket of ' || p.key || ': """ + LINE_PLACE + "',\n" + """
                    last_rescheduled_at = p.now
                FROM places s, p
                WHERE t.task_name = s.task_name AND t.task_instance = s.task_instance
                RETURNING t.task_name
            )
            SELECT m.task_name, count(*) AS reserved FROM moved m GROUP BY m.task_name""";

    /**
     * Places a key's backlog beyond its booking horizon in the key's waiting line, in one
     * statement that never holds the bucket row (admissions of the key go on meanwhile): the due,
     * unpicked jobs of the key that {@link #RESERVE_BACKLOG} left (oldest first, at most
     * {@code max_jobs}, skipping rows another transaction holds) are rescheduled, holding no
     * permit, one request's time apart at the bucket's rate, from the line's end: the latest of
     * the bucket's tat (just past the permits {@link #RESERVE_BACKLOG} booked), now, and the last job placed before (the key's latest
     * unpicked job rescheduled for its bucket without a permit). So a deep backlog comes due about
     * when permits are there for it, instead of staying due ahead of the jobs that hold permits
     * (which a pick then let lapse: docs/benchmarks.md, "Deep backlog"); and a job the reservation
     * skipped (a pick held its row at that moment) is placed right behind the booked permits, not
     * a booking horizon ahead while the bucket stands idle. Placements of one key are
     * serialized by a transaction-scoped advisory lock. A reschedule of each (reason
     * {@code bucket}), no attempt spent; same job filter as the reservation.
     *
     * <p>Parameters: key, now, request rate (/s), max jobs, job type names (text[]),
     * their reschedule caps (int[]). Returns the jobs placed per job type ({@code task_name},
     * {@code reserved}).
     */
    static final String PLACE_BACKLOG = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::float8 AS rate, ?::int AS max_jobs,
                              ?::text[] AS types, ?::int[] AS caps),
            serial AS (SELECT pg_advisory_xact_lock(hashtext('layover.backlog_line:' || p.key)) FROM p),
            b AS (
                SELECT greatest(bk.request_tat, p.now,
                                -- a request's time behind the line's last place
                                """ + LINE_PROBE.formatted("p.key", "p.now", "DESC")
            + " + make_interval(secs => 1 / p.rate)) AS line_start\n" + """
                FROM layover.buckets bk JOIN p ON bk.provider_key = p.key, (SELECT count(*) FROM serial) one
                WHERE bk.request_tat IS NOT NULL
            ), """
            + BACKLOG.formatted(DUE) + """
            places AS (
                SELECT l.task_name, l.task_instance,
                       b.line_start + make_interval(secs => (row_number() OVER (ORDER BY l.execution_time, l.task_instance) - 1)
                           / p.rate) AS place
                FROM locked l, b, p
            ), """ + TO_PLACES;

    /**
     * Tries the lock that serializes a key's line moves across the fleet ({@link #PLACE_BACKLOG}
     * waits for the same one): true when taken, held to the end of the transaction; false, at
     * once, when another transaction holds it. Parameter: key.
     */
    static final String TRY_LOCK_LINE = "SELECT pg_try_advisory_xact_lock(hashtext('layover.backlog_line:' || ?::text))";

    /**
     * Realigns a key's waiting line with its bucket: when permits were booked ahead of the line
     * (jobs whose permits lapsed while no worker ran, told to wait while the line's end was beyond
     * their {@code maxDeferral}; a stall; jobs with deadlines), the bucket's tat has passed the
     * places at the line's front, and each of those jobs would be refused at its place and booked
     * again, and the line behind it with it, a write per job to the line's end. Instead, when the
     * tat has passed the line's first place still ahead by a request's time or more, and the line
     * reaches past the tat, the line's jobs whose places are ahead of now and behind the tat (the
     * places whose permits are gone; oldest place first, at most {@code max_jobs}, skipping rows
     * another transaction holds; the reservation's job filter) move to the line's end, one
     * request's time apart behind its last place, holding no permit: a write for each permit taken
     * ahead of the line, not one for each job behind it. A reschedule of each (reason
     * {@code bucket}, a place in its waiting line), no attempt spent. Reads the bucket row without
     * locking it; run after {@link #TRY_LOCK_LINE} took the lock, in the same transaction (so a
     * fresh snapshot), so that two workers never move the same shift twice.
     *
     * <p>Parameters: key, now, request rate (/s), max jobs, job type names (text[]), their
     * reschedule caps (int[]). Returns the jobs moved per job type ({@code task_name},
     * {@code reserved}; no row when none).
     */
    static final String REALIGN_LINE = """
            WITH p0 AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::float8 AS rate,
                               ?::int AS max_asked, ?::text[] AS types, ?::int[] AS caps),
            b AS (
                -- the line's first place ahead and its last place
                SELECT bk.request_tat AS tat,
                       """ + LINE_PROBE.formatted("p0.key", "p0.now", "ASC") + " AS line_front,\n"
            + LINE_PROBE.formatted("p0.key", "p0.now", "DESC") + " AS line_end\n" + """
                FROM layover.buckets bk JOIN p0 ON bk.provider_key = p0.key
                WHERE p0.rate > 0
            ), p AS (
                SELECT p0.*, b.tat, b.line_end,
                       CASE WHEN b.line_end > b.tat
                            THEN least(p0.max_asked, greatest(0, floor(extract(epoch FROM b.tat - b.line_front) * p0.rate)))::int
                            ELSE 0 END AS max_jobs
                FROM p0 JOIN b ON true
            ), """
            + BACKLOG.formatted("t.last_reschedule_reason = 'bucket' AND t.fairness_key IS NULL"
                    + " AND t.execution_time > p.now AND t.execution_time < p.tat") + """
            places AS (
                SELECT l.task_name, l.task_instance,
                       p.line_end + make_interval(secs => (row_number() OVER (ORDER BY l.execution_time, l.task_instance))
                           / p.rate) AS place
                FROM locked l, p
            ), """ + TO_PLACES;

    /**
     * A discovered pace's backlog: the key's due, unpicked jobs (the same ones as
     * {@link #RESERVE_BACKLOG}'s) each rescheduled to its place in the pace's waiting line, in
     * enqueue order, holding no permit: one request's time apart at the pace's rate, or in slow
     * start at a rate doubling every interval, from the line's end (at least the booking horizon
     * ahead), at most {@code max_s} ahead. Reads the pace from {@code layover.buckets}; the gate
     * moves the line's end. Parameters: key, now, interval (s), horizon (s), max ahead (s), max
     * jobs, job type names, their reschedule caps. Returns the jobs moved per type and the last place.
     */
    static final String WAITLIST_BACKLOG = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::float8 AS e, ?::float8 AS horizon_s,
                              ?::float8 AS max_s, ?::int AS max_jobs, ?::text[] AS types, ?::int[] AS caps),
            b AS (
                SELECT bk.requests_per_minute / 60.0 AS rate, bk.discovery_phase = 'slow_start' AS slow,
                       extract(epoch FROM greatest(bk.discovery_waitlist, bk.request_tat,
                                                   p.now + make_interval(secs => p.horizon_s)) - p.now) AS start_s
                FROM layover.buckets bk JOIN p ON bk.provider_key = p.key
                WHERE bk.discovered AND bk.requests_per_minute > 0
            ), """
            + BACKLOG.formatted(DUE) + """
            places AS (
                SELECT l.task_name, l.task_instance,
                       p.now + make_interval(secs => least(p.max_s, CASE WHEN b.slow
                           THEN p.e * ln(1 + (b.rate * p.e / ln(2) * (power(2, b.start_s / p.e) - 1) + l.n) * ln(2)
                                             / (b.rate * p.e)) / ln(2)
                           ELSE b.start_s + l.n / b.rate END)) AS place
                FROM (SELECT *, row_number() OVER (ORDER BY execution_time, task_instance) AS n FROM locked) l, b, p
            ), moved AS (
                UPDATE layover.scheduled_tasks t
                SET execution_time = s.place, version = t.version + 1,
                    reschedules = t.reschedules + 1, last_reschedule_reason = 'pace',
                    last_reschedule_detail = 'discovered pace of ' || p.key || ': a place in its waiting line',
                    last_rescheduled_at = p.now
                FROM places s, p
                WHERE t.task_name = s.task_name AND t.task_instance = s.task_instance
                RETURNING t.task_name, s.place
            )
            SELECT task_name, count(*) AS moved, max(place) AS last_place FROM moved GROUP BY task_name""";

    // ---- the dead-letter store's writes (JobWrites)

    /**
     * One fresh job per dead letter, with every column a fresh enqueue writes (no deadline: a
     * replay is a new decision); the dead letters are read by id, the caller holding them locked.
     * Nothing is inserted where a live job has that type and id. Parameters: run at (or null for
     * now), spread in ms, replay kind, dead letter ids (bigint[]), edited args per id (text[],
     * nulls for the stored args). Returns the dead letter, job id and run time of each job inserted.
     * The replays are counted in the time series ({@code layover.time_series_add()}, one call).
     */
    static final String INSERT_REPLAYS = """
            WITH inserted AS (
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version, priority,
                 consecutive_failures, provider_key, limit_keys, dead_letter_id, replay_kind, fairness_key)
            SELECT d.job_type, d.job_id,
                   CASE WHEN u.edited IS NOT NULL THEN convert_to(u.edited, 'UTF8')
                        ELSE coalesce(convert_to(d.args::text, 'UTF8'), d.args_raw) END,
                   coalesce(p.run_at, now()) + random() * p.spread_ms * interval '1 millisecond',
                   false, 1, d.priority, 0, d.provider_key, d.limit_keys, d.id, p.kind, d.fairness_key
            FROM (SELECT ?::timestamptz AS run_at, ?::bigint AS spread_ms, ?::text AS kind) p,
                 unnest(?::bigint[], ?::text[]) WITH ORDINALITY AS u(id, edited, n)
            JOIN layover.dead_letters d ON d.id = u.id
            ORDER BY u.n
            ON CONFLICT (task_name, task_instance) DO NOTHING
            RETURNING dead_letter_id, task_instance, execution_time, task_name, provider_key, replay_kind
            ), counted AS (
                SELECT layover.time_series_add(array_agg(g.task_name), array_agg(g.provider_key),
                           array_agg('replayed'::text), array_agg(g.replay_kind), array_agg(g.n)) AS written
                FROM (SELECT task_name, coalesce(provider_key, '') AS provider_key, replay_kind, count(*) AS n
                      FROM inserted GROUP BY 1, 2, 3) g
            )
            SELECT i.dead_letter_id, i.task_instance, i.execution_time FROM inserted i, counted""";

    /**
     * Brings a recurring task's next run forward to now (after a breaker close was heard), when it
     * is not running; the version moves as with any change of a db-scheduler row. Parameter: task
     * name.
     */
    static final String NUDGE_RECURRING = """
            UPDATE layover.scheduled_tasks
            SET execution_time = now(), version = version + 1
            WHERE task_name = ? AND task_instance = 'recurring' AND NOT picked AND execution_time > now()""";

    /** A recurring task's first run, as db-scheduler's own start-up scheduling would write it. Parameters: name, instance. */
    static final String SCHEDULE_RECURRING = """
            INSERT INTO layover.scheduled_tasks
                (task_name, task_instance, task_data, execution_time, picked, version, priority, consecutive_failures)
            VALUES (?, ?, NULL, now(), false, 1, 0, 0)
            ON CONFLICT (task_name, task_instance) DO NOTHING""";
}
