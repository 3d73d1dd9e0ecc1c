-- One finished step of a job (JobContext#step), or a durable sleep it began (JobContext#sleep): its row of
-- layover.job_steps, one statement per finished step. A row of the same name is replaced (a step that ran again:
-- its stored result expired, or no longer read as its type). Times on the database's clock: finished now,
-- started :duration_ms before; :valid_for_s (or null) sets expires_at, :sleep_s (or null) sets wake_at.
-- Returns the row's wake_at.
INSERT INTO layover.job_steps AS s
    (job_type, job_id, name, kind, result_type, result, result_bytes, provider_key, attempt, started_at,
     finished_at, duration_ms, expires_at, wake_at, input_tokens, output_tokens, cached_input_tokens, worker)
VALUES (:job_type, :job_id, :name, :kind, :result_type, :result::jsonb, :result_bytes::int, :provider_key,
        :attempt::int, now() - make_interval(secs => coalesce(:duration_ms::float8, 0) / 1000), now(),
        :duration_ms::float8, now() + make_interval(secs => :valid_for_s::float8),
        now() + make_interval(secs => :sleep_s::float8), :input_tokens::bigint, :output_tokens::bigint,
        :cached_input_tokens::bigint, :worker)
ON CONFLICT (job_type, job_id, name) DO UPDATE
SET kind = excluded.kind, result_type = excluded.result_type, result = excluded.result,
    result_bytes = excluded.result_bytes, provider_key = excluded.provider_key, attempt = excluded.attempt,
    started_at = excluded.started_at, finished_at = excluded.finished_at, duration_ms = excluded.duration_ms,
    expires_at = excluded.expires_at, wake_at = excluded.wake_at, input_tokens = excluded.input_tokens,
    output_tokens = excluded.output_tokens, cached_input_tokens = excluded.cached_input_tokens,
    worker = excluded.worker
RETURNING s.wake_at
