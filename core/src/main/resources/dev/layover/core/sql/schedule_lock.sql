-- One schedule, locked (trigger now, resume), with the claim's columns.
SELECT s.tenant, s.name, s.job_type, s.cron, s.zone, s.every_ms, s.args::text AS args, s.args_from_code,
       s.missed, s.missed_window_ms, s.overlap, s.jitter_ms, s.priority, s.next_at, s.held, s.last_job_id,
       EXISTS (SELECT 1 FROM layover.scheduled_tasks t
               WHERE t.task_name = s.job_type AND t.task_instance = s.last_job_id) AS last_live,
       coalesce(:now::timestamptz, now()) AS db_now,
       s.paused, s.source, s.removed_at IS NOT NULL AS removed
FROM layover.schedules s
WHERE s.tenant = :tenant AND s.name = :name
FOR UPDATE OF s
