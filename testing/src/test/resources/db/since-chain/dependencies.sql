-- the job table: a job that others run after
ALTER TABLE layover.scheduled_tasks ADD COLUMN has_dependents boolean NOT NULL DEFAULT false;

-- ===========================================================================
-- Dependencies: jobs that run after other jobs (issue 46, docs/composition.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- job_dependencies: one row per edge "job (job_type, job_id) runs after (after_type, after_id)",
-- written with the dependent's insert (Enqueuer, in the enqueue's transaction), which also marks
-- the prerequisite's row has_dependents (without moving its version: its run's writes still match,
-- and its done delete, waiting for that row lock, returns the flag). A dependent waits (run time
-- 9999-12-31, reason 'dependencies') until every edge is completed: the transaction that deletes a
-- done prerequisite with has_dependents calls layover.dependencies_completed(), which ends its
-- edges and makes due each dependent left with none open (under the dependent's advisory lock).
-- A prerequisite that parks holds its dependents (the view layover.waiting_dependents says so); a
-- replay's job keeps them; a discard (layover.dependencies_failed(), the dead-letter store's
-- function) ends its edges failed and parks each waiting dependent 'dependency_failed'.
-- Dependencies name jobs that exist when the dependent is enqueued, so no cycle can be built.
--   state   waiting, completed, failed
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_dependencies (
    job_type   text        NOT NULL,
    job_id     text        NOT NULL,
    after_type text        NOT NULL,
    after_id   text        NOT NULL,
    state      text        NOT NULL DEFAULT 'waiting',
    created_at timestamptz NOT NULL DEFAULT now(),
    ended_at   timestamptz,
    PRIMARY KEY (job_type, job_id, after_type, after_id),
    CONSTRAINT job_dependencies_state_check CHECK (state IN ('waiting', 'completed', 'failed'))
);

-- the open edges of a prerequisite: what its end looks up
CREATE INDEX job_dependencies_after ON layover.job_dependencies (after_type, after_id) WHERE state = 'waiting';

COMMENT ON TABLE layover.job_dependencies IS
    'Edges: a job (job_type, job_id) runs after (after_type, after_id); state waiting, completed, failed. '
    'Read layover.waiting_dependents.';

-- Prerequisites that completed (job types and ids, pairwise, in the transaction that deleted them):
-- their waiting edges end completed; each dependent with no edge left waiting is made due (under its
-- transaction-scoped advisory lock, a fresh snapshot per statement: of two transactions completing a
-- dependent's last two prerequisites the later one releases it). Returns the dependents made due.
CREATE FUNCTION layover.dependencies_completed(p_types text[], p_ids text[]) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    d        record;
    released int := 0;
BEGIN
    FOR d IN
        WITH ended AS (
            UPDATE layover.job_dependencies e SET state = 'completed', ended_at = now()
            FROM unnest(p_types, p_ids) AS u(t, i)
            WHERE e.after_type = u.t AND e.after_id = u.i AND e.state = 'waiting'
            RETURNING e.job_type, e.job_id)
        SELECT DISTINCT job_type, job_id FROM ended ORDER BY job_type, job_id
    LOOP
        PERFORM pg_advisory_xact_lock(1735357041, hashtext(d.job_type || '/' || d.job_id));
        CONTINUE WHEN EXISTS (SELECT 1 FROM layover.job_dependencies e
                              WHERE e.job_type = d.job_type AND e.job_id = d.job_id AND e.state <> 'completed');
        IF layover.job_make_due(d.job_type, d.job_id, 'dependencies_done', 'every job it runs after has completed',
                                '9999-12-31T00:00:00Z') THEN
            released := released + 1;
        END IF;
    END LOOP;
    IF released > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN released;
END
$$;

COMMENT ON FUNCTION layover.dependencies_completed(text[], text[]) IS
    'Prerequisites completed: their edges end completed and each dependent with none open is made due.';

-- Prerequisites whose dead letters were discarded (job types and ids, pairwise): their waiting edges
-- end failed, and each dependent still waiting is parked as a dead letter, failure type
-- dependency_failed (its own dependents then wait for it, as for any parked job). The job store's
-- function for the dead-letter store's discard. Returns the dependents parked.
CREATE FUNCTION layover.dependencies_failed(p_types text[], p_ids text[]) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    parked int;
BEGIN
    WITH ended AS (
        UPDATE layover.job_dependencies e SET state = 'failed', ended_at = now()
        FROM unnest(p_types, p_ids) AS u(t, i)
        WHERE e.after_type = u.t AND e.after_id = u.i AND e.state = 'waiting'
        RETURNING e.job_type, e.job_id, e.after_type, e.after_id
    ), moved AS (
        DELETE FROM layover.scheduled_tasks t
        USING (SELECT job_type, job_id, min(after_type || '/' || after_id) AS why FROM ended
               GROUP BY job_type, job_id) x
        WHERE t.task_name = x.job_type AND t.task_instance = x.job_id AND NOT t.picked
          AND coalesce(t.paused_run_at, t.execution_time) >= '9999-12-31T00:00:00Z'::timestamptz
        RETURNING t.*, x.why
    ), grouped AS (
        UPDATE layover.group_members g SET state = 'parked'
        FROM moved m
        WHERE m.group_id IS NOT NULL AND g.group_id = m.group_id AND g.job_type = m.task_name
          AND g.job_id = m.task_instance AND g.state = 'pending'
    ), letters AS (
        INSERT INTO layover.dead_letters
            (job_type, job_id, args, args_raw, provider_key, failure_type, error_class, error_message, errors,
             attempts, provider_trail, reschedules, priority, first_enqueued_at, limit_keys, fairness_key,
             trace_context)
        SELECT m.task_name, m.task_instance, layover.args_jsonb(m.task_data),
               CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
               m.provider_key, 'dependency_failed', NULL,
               'a job it runs after (' || m.why || ') was discarded', m.errors, coalesce(m.consecutive_failures, 0),
               m.provider_trail, m.reschedules, m.priority, m.first_enqueued_at, m.limit_keys, m.fairness_key,
               m.trace_context
        FROM moved m
        RETURNING 1
    )
    SELECT count(*) INTO parked FROM letters;
    RETURN parked;
END
$$;

COMMENT ON FUNCTION layover.dependencies_failed(text[], text[]) IS
    'Prerequisites discarded: their edges end failed and each waiting dependent is parked dependency_failed.';

-- ---------------------------------------------------------------------------
-- waiting_dependents: the public view of jobs waiting for other jobs, one row per open edge.
--   after_state  live (the prerequisite is queued or running), parked (its dead letter is parked or
--                in review: the dependent waits for its replay or discard), missing (neither)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.waiting_dependents AS
SELECT e.job_type,
       e.job_id,
       e.after_type,
       e.after_id,
       e.created_at,
       CASE WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                         WHERE t.task_name = e.after_type AND t.task_instance = e.after_id) THEN 'live'
            WHEN EXISTS (SELECT 1 FROM layover.dead_letters d
                         WHERE d.job_type = e.after_type AND d.job_id = e.after_id
                           AND d.state IN ('parked', 'review')) THEN 'parked'
            ELSE 'missing' END AS after_state
FROM layover.job_dependencies e
WHERE e.state = 'waiting';

COMMENT ON VIEW layover.waiting_dependents IS
    'Jobs waiting for other jobs: one row per open edge, with the prerequisite''s state (live, parked, missing).';
