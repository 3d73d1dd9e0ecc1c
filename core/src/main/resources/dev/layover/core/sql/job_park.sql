-- Parks a job: deletes its row (version-checked) and, in the same statement, inserts its dead letter
-- or updates the dead letter it was replayed from, and writes its layover.job_history row when
-- history is on. A cancel is a park too (failure type cancelled, history outcome cancelled). Returns
-- how many rows were moved, the dead letter's id and the job's provider key; the caller commits only
-- when both are there. A group member's state becomes parked (decision 0005).
--   :job_type, :job_id, :version     the row, as the run read it
--   :may_be_picked                   whether a picked row may be parked (the engine parks the job it
--                                    runs; an operator's cancel may not take a running one)
--   :review_if_sweep                 whether a recovery sweep's replay that fails again goes to review
--   :failure_type, :error_class, :message, :error (jsonb, appended to errors), :trail (jsonb, the last
--                                    run's fallback trail), :attempts (null: the row's)
--   :history_outcome, :started_at (ISO-8601 text or null), :duration_ms (or null), :keep_args (the
--                                    history row keeps the args), :history (history is on)
--   :input_tokens, :output_tokens, :cached_input_tokens (what the last call reported),
--   :estimated_tokens (what it reserved): each null when none
-- The job's fallback trail and its enqueue's trace context move with it to the dead letter.
WITH tok AS (SELECT :input_tokens::bigint AS input_tokens, :output_tokens::bigint AS output_tokens,
                    :cached_input_tokens::bigint AS cached_input_tokens, :estimated_tokens::bigint AS estimated_tokens),
moved AS (
    DELETE FROM layover.scheduled_tasks t
    WHERE t.task_name = :job_type AND t.task_instance = :job_id AND t.version = :version
      AND (NOT t.picked OR :may_be_picked::boolean)
    RETURNING t.*
), grouped AS (
    -- a group member's dead letter holds its group open until a replay or a discard
    UPDATE layover.group_members g SET state = 'parked'
    FROM moved m
    WHERE m.group_id IS NOT NULL AND g.group_id = m.group_id AND g.job_type = m.task_name
      AND g.job_id = m.task_instance AND g.state = 'pending'
), linked AS (
    -- a sweep replay that failed again needs a person; one parked by an open breaker never
    -- reached the provider, so the sweep may try it again (its replay budget caps that);
    -- the state is V10's layover.dead_letter_next_state
    UPDATE layover.dead_letters d
    SET state = layover.dead_letter_next_state(d.state,
            CASE WHEN m.replay_kind = 'sweep' AND :review_if_sweep::boolean THEN 'sweep_replay_failed' ELSE 'parked_again' END),
        state_changed_at = now(), parked_at = now(), park_count = d.park_count + 1,
        failure_type = :failure_type, error_class = :error_class, error_message = :message,
        errors = d.errors || m.errors || :error::jsonb, attempts = coalesce(:attempts::int, m.consecutive_failures, 0),
        provider_trail = layover.trail_append(d.provider_trail, layover.trail_append(m.provider_trail, :trail::jsonb)),
        reschedules = m.reschedules,
        args = layover.args_jsonb(m.task_data),
        args_raw = CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
        provider_key = m.provider_key, limit_keys = m.limit_keys, fairness_key = m.fairness_key,
        input_tokens = tok.input_tokens, output_tokens = tok.output_tokens,
        cached_input_tokens = tok.cached_input_tokens, estimated_tokens = tok.estimated_tokens,
        trace_context = m.trace_context
    FROM moved m, tok
    WHERE d.id = m.dead_letter_id
    RETURNING d.id
), inserted AS (
    INSERT INTO layover.dead_letters
        (job_type, job_id, args, args_raw, provider_key, failure_type, error_class,
         error_message, errors, attempts, provider_trail, reschedules, priority, first_enqueued_at,
         limit_keys, input_tokens, output_tokens, cached_input_tokens, estimated_tokens, fairness_key,
         trace_context)
    SELECT m.task_name, m.task_instance, layover.args_jsonb(m.task_data),
           CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
           m.provider_key, :failure_type, :error_class, :message, m.errors || :error::jsonb, coalesce(:attempts::int, m.consecutive_failures, 0),
           layover.trail_append(m.provider_trail, :trail::jsonb), m.reschedules, m.priority,
           m.first_enqueued_at, m.limit_keys, tok.input_tokens, tok.output_tokens, tok.cached_input_tokens,
           tok.estimated_tokens, m.fairness_key, m.trace_context
    FROM moved m, tok
    WHERE NOT EXISTS (SELECT 1 FROM layover.dead_letters d WHERE d.id = m.dead_letter_id)
    RETURNING id
), history AS (
    INSERT INTO layover.job_history
        (job_type, job_id, outcome, failure_type, detail, attempts, reschedules, provider_key, worker,
         enqueued_at, started_at, duration_ms, dead_letter_id, replay_kind, provider_trail, args,
         limit_keys, input_tokens, output_tokens, cached_input_tokens, estimated_tokens)
    SELECT m.task_name, m.task_instance, :history_outcome, :failure_type, :message, coalesce(:attempts::int, m.consecutive_failures, 0), m.reschedules,
           m.provider_key, m.picked_by, m.first_enqueued_at, :started_at::timestamptz, :duration_ms::float8,
           (SELECT id FROM linked UNION ALL SELECT id FROM inserted LIMIT 1), m.replay_kind,
           nullif(layover.trail_append(m.provider_trail, :trail::jsonb), '[]'::jsonb),
           CASE WHEN :keep_args::boolean THEN layover.args_jsonb(m.task_data) END,
           m.limit_keys, tok.input_tokens, tok.output_tokens, tok.cached_input_tokens, tok.estimated_tokens
    FROM moved m, tok
    WHERE :history::boolean
)
SELECT (SELECT count(*) FROM moved) AS moved,
       (SELECT id FROM linked UNION ALL SELECT id FROM inserted LIMIT 1) AS dead_letter_id,
       (SELECT provider_key FROM moved LIMIT 1) AS provider_key
