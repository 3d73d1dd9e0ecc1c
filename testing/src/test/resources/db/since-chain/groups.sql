-- the job table: a member's group
ALTER TABLE layover.scheduled_tasks ADD COLUMN group_id text;

-- ===========================================================================
-- Groups: fan-out and fan-in (issue 46, docs/composition.md, docs/decisions/0005-groups.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- groups: one row per group of jobs whose callback job runs once every member has finished.
-- Written by core's group store (GroupSql: the row at creation, sealed_at at the seal) and by
-- layover.group_settle() (callback_state and settled_at, once). The callback is an ordinary job of
-- a registered job type, inserted with the group and waiting (run time 9999-12-31, reason 'group')
-- until the group settles: then layover.group_settle() makes it due, in the transaction that wrote
-- the last member's end, or deletes it (policy on_success with a discarded member).
--   id              the group's id (GroupOptions#key, else a time-ordered UUID); also the callback job's id
--   callback_type   the callback's job type
--   policy          on_complete: the callback runs once every member is done or discarded;
--                   on_success: only when every member is done (a discarded member skips it)
--   sealed_at       members may be added until then (GroupOptions#open); a group created sealed has it at creation
--   callback_state  waiting (members open, or not sealed), released (the callback was made due),
--                   skipped (on_success and a member was discarded: the callback job was deleted)
--   settled_at      when callback_state left waiting
-- ---------------------------------------------------------------------------
CREATE TABLE layover.groups (
    id             text        PRIMARY KEY,
    callback_type  text        NOT NULL,
    policy         text        NOT NULL DEFAULT 'on_complete',
    created_at     timestamptz NOT NULL DEFAULT now(),
    sealed_at      timestamptz,
    callback_state text        NOT NULL DEFAULT 'waiting',
    settled_at     timestamptz,
    CONSTRAINT groups_policy_check CHECK (policy IN ('on_complete', 'on_success')),
    CONSTRAINT groups_callback_state_check CHECK (callback_state IN ('waiting', 'released', 'skipped'))
);

COMMENT ON TABLE layover.groups IS
    'Groups of jobs (fan-out, fan-in): the callback job, its policy, sealed, the callback''s state. Read layover.job_groups.';

-- ---------------------------------------------------------------------------
-- group_members: one row per member job of a group, written in the statement that inserts the job
-- (job_insert_batch.sql), its end written in the statement that ends the job: the done delete
-- (state done, the handler's result), the park (parked), a replay (pending again), a discard
-- (layover.group_members_discarded(): discarded). No statement writes the group's row per member:
-- "is any member open" is one probe of group_members_open under the group's advisory lock
-- (layover.group_settle(), decision 0005).
--   state   pending (a live job), parked (its dead letter waits for a replay or a discard),
--           done (completed; result: Outcome.done(result) as JSON), discarded
-- ---------------------------------------------------------------------------
CREATE TABLE layover.group_members (
    group_id    text        NOT NULL REFERENCES layover.groups (id) ON DELETE CASCADE,
    job_type    text        NOT NULL,
    job_id      text        NOT NULL,
    state       text        NOT NULL DEFAULT 'pending',
    result      jsonb,
    added_at    timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (group_id, job_type, job_id),
    CONSTRAINT group_members_state_check CHECK (state IN ('pending', 'parked', 'done', 'discarded'))
);

-- the members still open, per group: the settle's probe
CREATE INDEX group_members_open ON layover.group_members (group_id) WHERE state IN ('pending', 'parked');
-- a job is an open member of one group at most; a replay finds its member row by the job's type and id
CREATE UNIQUE INDEX group_members_job ON layover.group_members (job_type, job_id) WHERE state IN ('pending', 'parked');

COMMENT ON TABLE layover.group_members IS
    'Members of groups: state (pending, parked, done, discarded) and a done member''s result.';

-- Makes a waiting job due now (a group's callback, a dependent, a job waiting for a signal): its run
-- time now, or, while a pause holds it, its paused run time now (the pause's reason kept). Only a job
-- not picked whose run time (or paused run time) is at or after p_waiting_after. Returns whether it did.
CREATE FUNCTION layover.job_make_due(p_type text, p_id text, p_reason text, p_detail text,
                                     p_waiting_after timestamptz) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.scheduled_tasks t
    SET execution_time = CASE WHEN t.paused_run_at IS NULL THEN now() ELSE t.execution_time END,
        paused_run_at = CASE WHEN t.paused_run_at IS NULL THEN NULL ELSE least(t.paused_run_at, now()) END,
        version = t.version + 1,
        last_reschedule_reason = CASE WHEN t.paused_run_at IS NULL THEN p_reason ELSE t.last_reschedule_reason END,
        last_reschedule_detail = CASE WHEN t.paused_run_at IS NULL THEN p_detail ELSE t.last_reschedule_detail END
    WHERE t.task_name = p_type AND t.task_instance = p_id AND NOT t.picked
      AND coalesce(t.paused_run_at, t.execution_time) >= p_waiting_after;
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION layover.job_make_due(text, text, text, text, timestamptz) IS
    'Makes a waiting job due now (or its paused run time now), when it is not picked and waits past the given time.';

-- Settles groups whose members may all have ended: for each (in id order), under the group's
-- transaction-scoped advisory lock, a group that is sealed, still waiting and has no open member
-- gets its callback made due (released; a paused callback gets its paused run time), or deleted
-- (skipped: policy on_success with a discarded member; when that callback is a member of a parent
-- group, it ends there discarded and the parent is settled). A VOLATILE function's statements each take a
-- fresh snapshot: a caller that wrote its members' ends before calling sees every end committed
-- before it got the lock, so of two transactions ending a group's last two members the later one
-- settles it; callback_state = 'waiting' makes a second settle a no-op. Returns the groups released.
CREATE FUNCTION layover.group_settle(p_groups text[]) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    g        text;
    r        record;
    parents  text[];
    released int := 0;
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
                PERFORM layover.group_settle(parents);
            END IF;
        ELSE
            UPDATE layover.groups SET callback_state = 'released', settled_at = now() WHERE id = g;
            PERFORM layover.job_make_due(r.callback_type, g, 'group_complete',
                                         'every member of group ' || g || ' has finished', '9999-12-31T00:00:00Z');
            released := released + 1;
        END IF;
    END LOOP;
    IF released > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN released;
END
$$;

COMMENT ON FUNCTION layover.group_settle(text[]) IS
    'Releases (or skips) the callback of each given group that is sealed and has no open member, once, under the group''s advisory lock.';

-- Members whose dead letters were discarded (job types and ids, pairwise): their member rows end
-- discarded and their groups are settled. The group store's function for the dead-letter store's
-- discard. Returns the groups released.
CREATE FUNCTION layover.group_members_discarded(p_job_types text[], p_job_ids text[]) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    gs text[];
BEGIN
    WITH m AS (
        UPDATE layover.group_members gm SET state = 'discarded', finished_at = now()
        FROM unnest(p_job_types, p_job_ids) AS u(job_type, job_id)
        WHERE gm.job_type = u.job_type AND gm.job_id = u.job_id AND gm.state = 'parked'
        RETURNING gm.group_id)
    SELECT array_agg(DISTINCT m.group_id) INTO gs FROM m;
    IF gs IS NULL THEN
        RETURN 0;
    END IF;
    RETURN layover.group_settle(gs);
END
$$;

COMMENT ON FUNCTION layover.group_members_discarded(text[], text[]) IS
    'A discard of dead letters: their group members end discarded and their groups are settled.';

-- ---------------------------------------------------------------------------
-- job_groups: the public view of groups, one row per group.
--   size, pending, parked, done, discarded   its members by state
--   callback_state  waiting, skipped, or once released: queued (its job is live), parked (its
--                   dead letter is parked or in review), finished (neither)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.job_groups AS
SELECT g.id                                                     AS group_id,
       g.callback_type,
       g.policy,
       g.created_at,
       g.sealed_at,
       g.settled_at,
       coalesce(c.size, 0)                                      AS size,
       coalesce(c.pending, 0)                                   AS pending,
       coalesce(c.parked, 0)                                    AS parked,
       coalesce(c.done, 0)                                      AS done,
       coalesce(c.discarded, 0)                                 AS discarded,
       CASE WHEN g.callback_state <> 'released' THEN g.callback_state
            WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                         WHERE t.task_name = g.callback_type AND t.task_instance = g.id) THEN 'queued'
            WHEN EXISTS (SELECT 1 FROM layover.dead_letters d
                         WHERE d.job_type = g.callback_type AND d.job_id = g.id
                           AND d.state IN ('parked', 'review')) THEN 'parked'
            ELSE 'finished' END                                 AS callback_state
FROM layover.groups g
LEFT JOIN LATERAL (
    SELECT count(*)                                    AS size,
           count(*) FILTER (WHERE m.state = 'pending')   AS pending,
           count(*) FILTER (WHERE m.state = 'parked')    AS parked,
           count(*) FILTER (WHERE m.state = 'done')      AS done,
           count(*) FILTER (WHERE m.state = 'discarded') AS discarded
    FROM layover.group_members m WHERE m.group_id = g.id) c ON true;

COMMENT ON VIEW layover.job_groups IS
    'Groups: callback type, policy, sealed, members by state (size, pending, parked, done, discarded), callback state.';
