-- Finished jobs, deleted in one statement that also writes their layover.job_history rows, deletes
-- their stored steps and ends their group member rows as job_done.sql does (data-modifying CTEs: no
-- second round trip). A row whose version moved on is left alone and gets no history row. Returns
-- what job_done.sql returns.
--   :names, :ids, :versions, :results   one element per job, as job_done.sql
--   :started_at (ISO-8601 text), :duration_ms (the handler's), :trails (the last run's fallback trail,
--   jsonb text): one element per job, each null when unknown or none
--   :input_tokens, :output_tokens, :cached_input_tokens (what each run's call reported),
--   :estimated_tokens (what it reserved): one element per job, null when none
--   :keep_args   whether the history rows keep the args
WITH moved AS (
    DELETE FROM layover.scheduled_tasks t
    USING unnest(:names::text[], :ids::text[], :versions::bigint[], :started_at::text[], :duration_ms::float8[],
                 :trails::text[], :results::text[], :input_tokens::bigint[], :output_tokens::bigint[],
                 :cached_input_tokens::bigint[], :estimated_tokens::bigint[])
          AS d(name, id, version, started_at, duration_ms, trail, result, input_tokens, output_tokens,
               cached_input_tokens, estimated_tokens)
    WHERE t.task_name = d.name AND t.task_instance = d.id AND t.version = d.version
    RETURNING t.task_name, t.task_instance, t.consecutive_failures, t.reschedules, t.provider_key,
              t.picked_by, t.first_enqueued_at, t.dead_letter_id, t.replay_kind, t.provider_trail,
              CASE WHEN :keep_args::boolean THEN layover.args_jsonb(t.task_data) END AS args,
              d.started_at, d.duration_ms, d.trail, d.result, t.limit_keys, d.input_tokens,
              d.output_tokens, d.cached_input_tokens, d.estimated_tokens, t.group_id, t.has_dependents
), steps AS (
    DELETE FROM layover.job_steps s USING moved m
    WHERE s.job_type = m.task_name AND s.job_id = m.task_instance
), members AS (
    UPDATE layover.group_members g
    SET state = 'done', result = m.result::jsonb, finished_at = now()
    FROM moved m
    WHERE m.group_id IS NOT NULL AND g.group_id = m.group_id AND g.job_type = m.task_name
      AND g.job_id = m.task_instance AND g.state = 'pending'
    RETURNING g.group_id
), history AS (
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
    FROM moved m
)
SELECT (SELECT count(*) FROM moved), (SELECT array_agg(DISTINCT group_id) FROM members),
       (SELECT array_agg(task_name) FROM moved WHERE has_dependents),
       (SELECT array_agg(task_instance) FROM moved WHERE has_dependents)
