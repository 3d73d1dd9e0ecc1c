-- An occurrence triggered by hand was enqueued: the last occurrence's columns; the next does not move.
UPDATE layover.schedules
SET last_at = :last_at::timestamptz, last_job_id = :last_job_id, last_enqueued_at = :last_at::timestamptz,
    last_outcome = 'triggered'
WHERE tenant = :tenant AND name = :name
