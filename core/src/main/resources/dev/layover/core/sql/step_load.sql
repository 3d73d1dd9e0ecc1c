-- The stored steps of one job, read once by a run at its first step. expired and woken are judged on the
-- database's clock.
SELECT name, kind, result_type, result::text AS result, provider_key,
       coalesce(expires_at <= now(), false) AS expired, wake_at, coalesce(wake_at <= now(), true) AS woken
FROM layover.job_steps
WHERE job_type = :job_type AND job_id = :job_id
