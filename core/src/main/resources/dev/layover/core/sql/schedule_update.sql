-- A changed definition (run-time update, or a code schedule whose definition or generation changed).
-- The next occurrence stays when the timing stays (an occurrence held by the overlap policy too);
-- else it is the new timing's first after now (:next_at). A code schedule's tombstone comes back.
UPDATE layover.schedules s
SET job_type = :job_type,
    cron = :cron,
    zone = :zone,
    every_ms = :every_ms::bigint,
    args = :args::jsonb,
    args_from_code = :args_from_code,
    missed = :missed,
    missed_window_ms = :missed_window_ms::bigint,
    overlap = :overlap,
    jitter_ms = :jitter_ms::bigint,
    priority = :priority::smallint,
    next_at = CASE WHEN same.timing THEN s.next_at ELSE :next_at::timestamptz END,
    due_at = CASE WHEN s.paused THEN NULL WHEN same.timing THEN s.due_at ELSE :next_at::timestamptz END,
    held = same.timing AND s.held,
    definition_hash = :definition_hash,
    generation = :generation::bigint,
    removed_at = NULL,
    updated_at = now()
FROM (SELECT x.tenant, x.name,
             x.removed_at IS NULL AND x.cron IS NOT DISTINCT FROM :cron::text AND x.zone IS NOT DISTINCT FROM :zone::text
             AND x.every_ms IS NOT DISTINCT FROM :every_ms::bigint AS timing
      FROM layover.schedules x WHERE x.tenant = :tenant AND x.name = :name) same
WHERE s.tenant = same.tenant AND s.name = same.name AND s.source = :source
