-- Layover schema, version 29: the bucket arithmetic inlined into the statements that call it, and
-- the held-permit check with a plan kept for the session (issue 23 part 4).
--
-- PostgreSQL inlines a SQL function that is a single expression into the calling statement, but
-- not when the function is declared IMMUTABLE and its body is not: timestamptz + interval is
-- STABLE (it reads the TimeZone setting for days and months). V10's gcra_fits_at and gcra_take,
-- V17's gcra_settle and V25's fair_slot add intervals to timestamps, so each of their calls ran as
-- a function call of its own, its body parsed and planned again at every execution of the
-- statement. A take of a bucket permit (core's StateSql.TAKE_PERMITS) made ten such calls.
-- V27's holds_permit, a query, is never inlined: it was planned again at every take too.
--
-- Measured on a copy of the schema with 10,000 bucket rows and 20,000 jobs (pgbench, one client,
-- prepared statements, the take of a key with no held permit, quiet machine): 0.417 ms per take
-- with V28's functions, 0.320 ms with gcra_fits_at and gcra_take STABLE, 0.205 ms with
-- holds_permit in PL/pgSQL as well (0.17 ms once TAKE_PERMITS wrote out its gcra_take, whose
-- count argument is too costly an expression to inline). With 10,000 keys every job pays a take (a key's next job comes after its
-- lease of permits lapsed), so that is most of the database time per admitted job.
--
-- Same names, arguments, results and effects: STABLE is these functions' true volatility (the
-- same result for the same arguments within a statement). Nothing declares an index, a check or
-- a generated column with them. Forward-only; workers of earlier versions call them as before.
ALTER FUNCTION layover.gcra_fits_at(timestamptz, float8, float8, float8) STABLE;
ALTER FUNCTION layover.gcra_take(timestamptz, timestamptz, float8, float8) STABLE;
ALTER FUNCTION layover.gcra_settle(timestamptz, timestamptz, float8, float8, float8) STABLE;
ALTER FUNCTION layover.fair_slot(timestamptz, float8, float8, timestamptz, bigint, float8[], timestamptz[], float8[]) STABLE;

CREATE OR REPLACE FUNCTION layover.holds_permit(p_task_name text, p_task_id text, p_version bigint,
        p_now timestamptz, p_grace_s float8)
    RETURNS boolean LANGUAGE plpgsql STABLE AS
$$
BEGIN
    RETURN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                   WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.version = p_version
                     AND t.permit_at IS NOT NULL AND t.execution_time = t.permit_at
                     AND t.permit_at >= p_now - make_interval(secs => p_grace_s));
END
$$;

COMMENT ON FUNCTION layover.holds_permit(text, text, bigint, timestamptz, float8) IS
    'Whether a job''s run holds a bucket permit for about now (V27): its row at the permit''s run time '
    '(execution_time = permit_at), version-checked, within the grace. Reads only: the run remembers its carry. '
    'PL/pgSQL since V29 (its query keeps its plan for the session).';
