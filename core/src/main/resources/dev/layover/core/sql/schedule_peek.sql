-- Whether any schedule this worker can fire is due: the scheduler loop's idle poll, one probe of
-- schedules_due_idx. :now is the test clock's time, or null for the database's now().
SELECT 1 FROM layover.schedules s
WHERE s.due_at <= coalesce(:now::timestamptz, now())
  AND s.job_type = ANY (:types::text[])
  AND (NOT s.args_from_code OR (s.tenant = '' AND s.name = ANY (:code_names::text[])))
LIMIT 1
