-- After a claim, every claimed schedule in one statement: the next occurrence, when to look again,
-- whether it is held by the overlap policy QUEUE, and what was done (with the last occurrence
-- enqueued, when one was). One element of each array per schedule; instants as ISO-8601 text.
UPDATE layover.schedules s
SET next_at = u.next_at::timestamptz,
    due_at = CASE WHEN s.paused THEN NULL ELSE u.due_at::timestamptz END,
    held = u.held,
    last_at = coalesce(u.last_at::timestamptz, s.last_at),
    last_job_id = coalesce(u.last_job_id, s.last_job_id),
    last_enqueued_at = CASE WHEN u.last_job_id IS NULL THEN s.last_enqueued_at ELSE :db_now::timestamptz END,
    last_outcome = coalesce(u.outcome, s.last_outcome)
FROM unnest(:tenants::text[], :names::text[], :next_ats::text[], :due_ats::text[], :helds::boolean[],
            :last_ats::text[], :last_job_ids::text[], :outcomes::text[])
     AS u(tenant, name, next_at, due_at, held, last_at, last_job_id, outcome)
WHERE s.tenant = u.tenant AND s.name = u.name
