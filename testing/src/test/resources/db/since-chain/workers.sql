-- The running workers, each in a row of its own (issue 41): layover.workers, written through
-- layover.worker_heartbeat().
CREATE TABLE layover.workers (
    worker_name  text        PRIMARY KEY,
    host         text        NOT NULL,
    threads      int         NOT NULL,
    version      text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    limits       jsonb       NOT NULL DEFAULT '{}'::jsonb
);

COMMENT ON TABLE layover.workers IS
    'Running Layover instances: threads, version, heartbeat and the operators'' limits each applies, since when.';

-- The limits a worker reports, each with the applied_at it had in the row before when the values
-- are the same, else now().
CREATE FUNCTION layover.worker_limits(reported jsonb, before jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_object_agg(n.key,
               CASE WHEN o.value IS NOT NULL AND (o.value - 'applied_at') = n.value THEN o.value
                    ELSE n.value || jsonb_build_object('applied_at', now()) END), '{}'::jsonb)
    FROM jsonb_each(reported) n
    LEFT JOIN jsonb_each(coalesce(before, '{}'::jsonb)) o ON o.key = n.key
$$;

-- A worker's heartbeat (started: its first, at start), and the cleanup of rows an hour stale.
CREATE FUNCTION layover.worker_heartbeat(p_name text, p_host text, p_threads int, p_version text,
                                         p_limits jsonb, p_started boolean) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO layover.workers AS w (worker_name, host, threads, version, limits)
    VALUES (p_name, p_host, p_threads, p_version, layover.worker_limits(p_limits, NULL))
    ON CONFLICT (worker_name) DO UPDATE
    SET host = excluded.host, threads = excluded.threads, version = excluded.version, heartbeat_at = now(),
        started_at = CASE WHEN p_started THEN now() ELSE w.started_at END,
        limits = layover.worker_limits(p_limits, w.limits);
    DELETE FROM layover.workers WHERE heartbeat_at < now() - interval '1 hour';
$$;
