-- Layover schema, version 26: a bucket take without a plan of its own each time (issue 23 part 4).
--
-- Every take of a bucket permit (core's StateSql.TAKE_PERMITS, TokenSql's take, V25's
-- fair_round_limit) first asks layover.spend_held_permit whether the job holds a permit booked
-- for about now. V10 wrote it in LANGUAGE sql with a data-modifying CTE, which PostgreSQL can
-- neither inline nor keep a plan of: its UPDATE was parsed and planned again at every call.
-- Measured on a copy of the schema with 10,000 bucket rows and 20,000 jobs (3 × 3,000 calls,
-- alternated, one backend, load average 14): 550–610 µs per call in SQL, 48–55 µs in PL/pgSQL,
-- whose statements keep their plans for the session. With one key a take leases 8 permits; with
-- 10,000 keys each key's next job comes after its lease lapsed, so every job paid the re-planning.
--
-- Same name, arguments, result and effect as V10's: the job's permit_at is cleared when the job
-- (task name, id and version) holds a permit not older than the grace; true when it did.
-- Forward-only; workers of earlier versions call it as before.
CREATE OR REPLACE FUNCTION layover.spend_held_permit(p_task_name text, p_task_id text, p_version bigint,
        p_now timestamptz, p_grace_s float8)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.scheduled_tasks t SET permit_at = NULL
    WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.version = p_version
      AND t.permit_at IS NOT NULL AND t.permit_at >= p_now - make_interval(secs => p_grace_s);
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION layover.spend_held_permit(text, text, bigint, timestamptz, float8) IS
    'A job that holds a bucket permit for about now (scheduled_tasks.permit_at, within the grace) spends it: '
    'permit_at cleared, version-checked; true when it did. PL/pgSQL since V26 (its UPDATE keeps its plan).';
