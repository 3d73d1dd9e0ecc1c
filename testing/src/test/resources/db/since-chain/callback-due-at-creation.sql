-- A released group callback is due as of its group's creation (at most callback_lead back), and the
-- settle takes a test clock's time (issue 46): groups.callback_lead, job_make_due's run time, group_settle's p_now
ALTER TABLE layover.groups ADD COLUMN callback_lead interval NOT NULL DEFAULT interval '30 minutes';

DROP FUNCTION layover.job_make_due(text, text, text, text, timestamptz);
DROP FUNCTION layover.group_settle(text[]);


-- Makes a waiting job due (a group's callback, a dependent, a job waiting for a signal): its run
-- time p_at (now, or for a group's callback its group's creation), or, while a pause holds it, its
-- paused run time p_at (the pause's reason kept). Only a job not picked whose run time (or paused run
-- time) is at or after p_waiting_after. Returns whether it did.
CREATE FUNCTION layover.job_make_due(p_type text, p_id text, p_reason text, p_detail text,
                                     p_waiting_after timestamptz, p_at timestamptz) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.scheduled_tasks t
    SET execution_time = CASE WHEN t.paused_run_at IS NULL THEN p_at ELSE t.execution_time END,
        paused_run_at = CASE WHEN t.paused_run_at IS NULL THEN NULL ELSE least(t.paused_run_at, p_at) END,
        version = t.version + 1,
        last_reschedule_reason = CASE WHEN t.paused_run_at IS NULL THEN p_reason ELSE t.last_reschedule_reason END,
        last_reschedule_detail = CASE WHEN t.paused_run_at IS NULL THEN p_detail ELSE t.last_reschedule_detail END
    WHERE t.task_name = p_type AND t.task_instance = p_id AND NOT t.picked
      AND coalesce(t.paused_run_at, t.execution_time) >= p_waiting_after;
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION layover.job_make_due(text, text, text, text, timestamptz, timestamptz) IS
    'Makes a waiting job due at the given time (or its paused run time), when it is not picked and waits past the given time.';

-- Settles groups whose members may all have ended: for each (in id order), under the group's
-- transaction-scoped advisory lock, a group that is sealed, still waiting and has no open member
-- gets its callback made due (released; a paused callback gets its paused run time), or deleted
-- (skipped: policy on_success with a discarded member; when that callback is a member of a parent
-- group, it ends there discarded and the parent is settled). A VOLATILE function's statements each take a
-- fresh snapshot: a caller that wrote its members' ends before calling sees every end committed
-- before it got the lock, so of two transactions ending a group's last two members the later one
-- settles it; callback_state = 'waiting' makes a second settle a no-op. A released callback's run
-- time is its group's creation (so among due jobs of its priority it runs ahead of work enqueued after
-- its group, not behind the backlog that built up while its members ran), at most callback_lead before
-- p_now. p_now: NULL for the database's clock, else a test clock's time. Returns the groups released.
CREATE FUNCTION layover.group_settle(p_groups text[], p_now timestamptz DEFAULT NULL) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    g        text;
    r        record;
    parents  text[];
    released int := 0;
    v_now    timestamptz := coalesce(p_now, now());
BEGIN
    FOR g IN SELECT DISTINCT x FROM unnest(p_groups) AS x WHERE x IS NOT NULL ORDER BY x LOOP
        PERFORM pg_advisory_xact_lock(1735357040, hashtext(g));
        SELECT * INTO r FROM layover.groups WHERE id = g;
        CONTINUE WHEN NOT FOUND OR r.sealed_at IS NULL OR r.callback_state <> 'waiting';
        CONTINUE WHEN EXISTS (SELECT 1 FROM layover.group_members m
                              WHERE m.group_id = g AND m.state IN ('pending', 'parked'));
        IF r.policy = 'on_success'
           AND EXISTS (SELECT 1 FROM layover.group_members m WHERE m.group_id = g AND m.state = 'discarded') THEN
            UPDATE layover.groups SET callback_state = 'skipped', settled_at = now() WHERE id = g;
            -- a callback that is a member of a parent group (groups of groups) ends there discarded
            WITH gone AS (
                DELETE FROM layover.scheduled_tasks t
                WHERE t.task_name = r.callback_type AND t.task_instance = g AND NOT t.picked
                RETURNING t.group_id
            ), ended AS (
                UPDATE layover.group_members m SET state = 'discarded', finished_at = now()
                FROM gone
                WHERE gone.group_id IS NOT NULL AND m.group_id = gone.group_id AND m.job_type = r.callback_type
                  AND m.job_id = g AND m.state = 'pending'
                RETURNING m.group_id
            )
            SELECT array_agg(ended.group_id) INTO parents FROM ended;
            IF parents IS NOT NULL THEN
                PERFORM layover.group_settle(parents, p_now);
            END IF;
        ELSE
            UPDATE layover.groups SET callback_state = 'released', settled_at = now() WHERE id = g;
            PERFORM layover.job_make_due(r.callback_type, g, 'group_complete',
                                         'every member of group ' || g || ' has finished', '9999-12-31T00:00:00Z',
                                         greatest(least(r.created_at, v_now), v_now - r.callback_lead));
            released := released + 1;
        END IF;
    END LOOP;
    IF released > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN released;
END
$$;

COMMENT ON FUNCTION layover.group_settle(text[], timestamptz) IS
    'Releases (or skips) the callback of each given group that is sealed and has no open member, once, under the group''s advisory lock; '
    'a released callback is due as of its group''s creation.';

-- Prerequisites that completed (job types and ids, pairwise, in the transaction that deleted them):
-- their waiting edges end completed; each dependent with no edge left waiting is made due (under its
-- transaction-scoped advisory lock, a fresh snapshot per statement: of two transactions completing a
-- dependent's last two prerequisites the later one releases it). Returns the dependents made due.
CREATE OR REPLACE FUNCTION layover.dependencies_completed(p_types text[], p_ids text[]) RETURNS int
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
                                '9999-12-31T00:00:00Z', now()) THEN
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

-- A signal to a job waiting for it (JobContext#awaitSignal stored a step of kind 'signal' whose
-- wake_at is its timeout): the step keeps the payload (result, jsonb; SQL NULL is stored as JSON
-- null) and wake_at = now(), and the job is made due (a paused one gets its paused run time now).
-- A job whose run is writing its wait at the same moment reads the step's wake_at in that write, so
-- the signal is never lost to the race. Returns false, writing nothing, when the job has no such
-- step still waiting (no job of that type and id waits for that name, it timed out, or it was
-- signalled already). Callable from any language: SELECT layover.signal('approve', 'doc-1',
-- 'approved', '{"by": "alice"}').
CREATE OR REPLACE FUNCTION layover.signal(p_job_type text, p_job_id text, p_name text, p_payload jsonb) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.job_steps s
    SET result = coalesce(p_payload, 'null'::jsonb), result_type = 'signal', wake_at = now(),
        result_bytes = octet_length(coalesce(p_payload, 'null'::jsonb)::text)
    WHERE s.job_type = p_job_type AND s.job_id = p_job_id AND s.name = p_name AND s.kind = 'signal'
      AND s.result IS NULL AND s.wake_at > now();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- the job waits until its timeout, after now (its wait's write reads the step's wake_at if it runs now)
    IF layover.job_make_due(p_job_type, p_job_id, 'signalled', 'signal ''' || p_name || ''' arrived', now(), now()) THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION layover.signal(text, text, text, jsonb) IS
    'Delivers a named signal (a jsonb payload) to a job waiting for it (JobContext#awaitSignal) and makes it due; '
    'false when no such wait is open.';
