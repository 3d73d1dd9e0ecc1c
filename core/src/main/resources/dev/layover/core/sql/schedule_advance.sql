-- After a claim: the next occurrence, when to look again, whether it is held by the overlap policy
-- QUEUE, and what was done (with the last occurrence enqueued, when one was).
UPDATE layover.schedules
SET next_at = :next_at::timestamptz,
    due_at = CASE WHEN paused THEN NULL ELSE :due_at::timestamptz END,
    held = :held,
    last_at = coalesce(:last_at::timestamptz, last_at),
    last_job_id = coalesce(:last_job_id, last_job_id),
    last_enqueued_at = CASE WHEN :last_job_id::text IS NULL THEN last_enqueued_at ELSE :db_now::timestamptz END,
    last_outcome = coalesce(:outcome, last_outcome)
WHERE tenant = :tenant AND name = :name
