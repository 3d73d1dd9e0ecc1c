-- Claims due schedules this worker can fire (its job types; a code schedule whose args are computed
-- only where the code defines it), locked for the transaction that enqueues their occurrences and
-- advances them; another worker's claim skips them. last_live: the previous occurrence's job is
-- still in the queue (waiting, running, backing off). db_now: the time the claim decided on.
SELECT s.tenant, s.name, s.job_type, s.cron, s.zone, s.every_ms, s.args::text AS args, s.args_from_code,
       s.missed, s.missed_window_ms, s.overlap, s.jitter_ms, s.priority, s.next_at, s.held, s.last_job_id,
       EXISTS (SELECT 1 FROM layover.scheduled_tasks t
               WHERE t.task_name = s.job_type AND t.task_instance = s.last_job_id) AS last_live,
       coalesce(:now::timestamptz, now()) AS db_now
FROM layover.schedules s
WHERE s.due_at <= coalesce(:now::timestamptz, now())
  AND s.job_type = ANY (:types::text[])
  AND (NOT s.args_from_code OR (s.tenant = '' AND s.name = ANY (:code_names::text[])))
ORDER BY s.due_at
LIMIT :limit
FOR UPDATE OF s SKIP LOCKED
