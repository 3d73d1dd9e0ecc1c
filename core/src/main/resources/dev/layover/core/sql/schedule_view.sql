-- Schedules as the documented view shows them: one (:name given) or a tenant's (:tenant null: all).
SELECT tenant, name, job_type, source, cron, zone, extract(epoch FROM every) * 1000 AS every_ms, args::text AS args,
       missed, overlap, paused, removed, next_at, held_by_overlap, last_at, last_job_id, last_outcome, last_job_state
FROM layover.schedules_view
WHERE (:tenant::text IS NULL OR tenant = :tenant::text) AND (:name::text IS NULL OR name = :name::text)
ORDER BY tenant, name
