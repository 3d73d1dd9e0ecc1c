-- Layover schema, version 14: no job taken for dead because the database was away.
--
-- During a database outage no worker can write a heartbeat, so when it is back every job that
-- was running looks dead by its heartbeat. The first worker whose pool reconnects would revive
-- (and run a second time) the jobs of a worker whose pool takes a few seconds longer. Heartbeats
-- are therefore counted from no earlier than the database's return (the server's start, or the
-- time the first worker saw it answer again, whichever is later) plus a reconnect allowance of
-- 10 s: after an outage, every worker has the allowance plus its whole dead-execution limit to
-- renew the heartbeats of the jobs it holds.
--
-- db-scheduler's dead-execution query (picked = ? AND last_heartbeat <= ?) is rewritten by the
-- engine to last_heartbeat <= layover.dead_heartbeat_cutoff(?), which keeps its index.
-- Forward-only.

CREATE TABLE layover.database_returns (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    returned_at timestamptz NOT NULL
);

COMMENT ON TABLE layover.database_returns IS
    'One row: when a worker last saw the database answer again after an outage (database time). Written by layover.database_returned().';

-- A worker saw the database answer again after an outage (called before it lets its threads on).
CREATE FUNCTION layover.database_returned() RETURNS void
LANGUAGE sql AS $$
    INSERT INTO layover.database_returns (one, returned_at) VALUES (true, now())
    ON CONFLICT (one) DO UPDATE SET returned_at = greatest(layover.database_returns.returned_at, excluded.returned_at);
$$;

COMMENT ON FUNCTION layover.database_returned() IS
    'Records that the database answers again after an outage: heartbeats older than that (plus 10 s) are not taken for dead.';

-- The heartbeat cutoff db-scheduler asks with (now minus its dead-execution limit), or -infinity
-- (nothing is dead yet) while the cutoff is earlier than the database's return plus 10 s.
CREATE FUNCTION layover.dead_heartbeat_cutoff(cutoff timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN cutoff >= greatest(pg_postmaster_start_time(),
                                coalesce((SELECT returned_at FROM layover.database_returns), '-infinity'))
                       + interval '10 seconds'
        THEN cutoff
        ELSE '-infinity'::timestamptz
    END;
$$;

COMMENT ON FUNCTION layover.dead_heartbeat_cutoff(timestamptz) IS
    'The dead-execution cutoff, or -infinity until 10 s after the database returned from an outage (server start or a worker''s report).';
