-- One job. A job with a fairness key enqueued due (:tag) gets its tag in its key's fair queue
-- (layover.fair_tags: reads only). With :keyed, nothing is written when the id names a live job, a dead
-- letter still parked or in review, or a job completed within the history's retention. :trace_context: the
-- enqueue's W3C trace context (jsonb), or null. layover.enqueue (SQL) writes the same columns.
INSERT INTO layover.scheduled_tasks
    (task_name, task_instance, task_data, execution_time, picked, version, priority, consecutive_failures,
     provider_key, deadline, limit_keys, args_shape, fairness_key, token_estimate, fair_tag, trace_context)
SELECT :type, :id, :data::bytea, :run_at::timestamptz, false, 1, :priority::smallint, 0,
       :provider_key, :deadline::timestamptz, :limit_keys::text[], :args_shape, :fairness_key,
       :token_estimate::float8[],
       CASE WHEN :tag::boolean THEN (layover.fair_tags(:provider_key, :run_at::timestamptz, ARRAY[:fairness_key::text],
                                                       ARRAY[:priority::int], ARRAY[(:token_estimate::float8[])[1]],
                                                       ARRAY[(:token_estimate::float8[])[2]],
                                                       ARRAY[(:token_estimate::float8[])[3]]))[1] END,
       :trace_context::jsonb
WHERE NOT :keyed::boolean
   OR (NOT EXISTS (SELECT 1 FROM layover.dead_letters d
                   WHERE d.job_type = :type AND d.job_id = :id AND d.state IN ('parked', 'review'))
       AND NOT EXISTS (SELECT 1 FROM layover.job_history h
                       WHERE h.job_type = :type AND h.job_id = :id AND h.outcome = 'completed'))
ON CONFLICT (task_name, task_instance) DO NOTHING
