-- Many jobs of one type in one statement; returns the ids it inserted. Jobs with a fairness key enqueued
-- due get their tags in their keys' fair queues, in the batch's order (layover.fair_tags, one call per
-- key). Ids that name a live job, a dead letter still parked or in review, or a job completed within the
-- history's retention are skipped. Run times and deadlines are ISO-8601 text, limit keys and token
-- estimates array literals; :now decides which jobs are due; :trace_context (jsonb or null) is the enqueue's
-- W3C trace context, the same for every job of the call. :group_id (or null): the group the jobs join; each job
-- inserted gets its layover.group_members row (state pending) in this statement.
WITH j AS (
    SELECT u.ord, u.id, u.data, u.run_at_text::timestamptz AS run_at, u.priority_int::smallint AS priority,
           u.provider_key, u.deadline_text::timestamptz AS deadline, u.limit_keys_text::text[] AS limit_keys,
           u.fairness_key, u.token_estimate_text::float8[] AS token_estimate
    FROM unnest(:ids::text[], :data::bytea[], :run_ats::text[], :priorities::int[], :provider_keys::text[],
                :deadlines::text[], :limit_keys::text[], :fairness_keys::text[], :token_estimates::text[])
         WITH ORDINALITY AS u(id, data, run_at_text, priority_int, provider_key, deadline_text, limit_keys_text,
                              fairness_key, token_estimate_text, ord)
), tagged AS (
    SELECT t.ord, t.tag
    FROM (SELECT j.provider_key, array_agg(j.ord ORDER BY j.ord) AS ords,
                 array_agg(j.fairness_key ORDER BY j.ord) AS flows, array_agg(j.priority::int ORDER BY j.ord) AS prios,
                 array_agg(j.token_estimate[1] ORDER BY j.ord) AS t, array_agg(j.token_estimate[2] ORDER BY j.ord) AS i,
                 array_agg(j.token_estimate[3] ORDER BY j.ord) AS o
          FROM j
          WHERE j.fairness_key IS NOT NULL AND j.provider_key IS NOT NULL AND j.run_at <= :now::timestamptz
          GROUP BY j.provider_key) k,
         LATERAL unnest(layover.fair_tags(k.provider_key, :now::timestamptz, k.flows, k.prios, k.t, k.i, k.o), k.ords)
             AS t(tag, ord)
), inserted AS (
INSERT INTO layover.scheduled_tasks
    (task_name, task_instance, task_data, execution_time, picked, version, priority, consecutive_failures,
     provider_key, deadline, limit_keys, args_shape, fairness_key, token_estimate, fair_tag, trace_context, group_id)
SELECT :type, j.id, j.data, j.run_at, false, 1, j.priority, 0, j.provider_key, j.deadline, j.limit_keys,
       :args_shape, j.fairness_key, j.token_estimate, tg.tag, :trace_context::jsonb, :group_id::text
FROM j LEFT JOIN tagged tg ON tg.ord = j.ord
WHERE NOT EXISTS (SELECT 1 FROM layover.dead_letters d
                  WHERE d.job_type = :type AND d.job_id = j.id AND d.state IN ('parked', 'review'))
  AND NOT EXISTS (SELECT 1 FROM layover.job_history h
                  WHERE h.job_type = :type AND h.job_id = j.id AND h.outcome = 'completed')
ON CONFLICT (task_name, task_instance) DO NOTHING
RETURNING task_instance
), members AS (
    INSERT INTO layover.group_members (group_id, job_type, job_id)
    SELECT :group_id::text, :type, i.task_instance FROM inserted i WHERE :group_id::text IS NOT NULL
)
SELECT task_instance FROM inserted
