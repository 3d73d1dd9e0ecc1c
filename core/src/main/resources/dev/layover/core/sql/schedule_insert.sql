-- A new schedule (run-time create, or a code schedule's first start); nothing when the name is taken.
INSERT INTO layover.schedules
    (tenant, name, job_type, cron, zone, every_ms, args, args_from_code, missed, missed_window_ms, overlap,
     jitter_ms, priority, next_at, due_at, source, definition_hash, generation)
VALUES (:tenant, :name, :job_type, :cron, :zone, :every_ms::bigint, :args::jsonb, :args_from_code, :missed,
        :missed_window_ms::bigint, :overlap, :jitter_ms::bigint, :priority::smallint, :next_at::timestamptz,
        :next_at::timestamptz, :source, :definition_hash, :generation::bigint)
ON CONFLICT (tenant, name) DO NOTHING
