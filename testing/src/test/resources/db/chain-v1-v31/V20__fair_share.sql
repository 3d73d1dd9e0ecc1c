-- Layover schema, version 20: fair share within a provider key's limit (issue 19, docs/fairness.md).
--
-- Many tenants share one provider key. Without fairness the key's permits go to whichever due
-- job is picked first, so one tenant's 50,000-job backlog holds every other tenant back for its
-- whole length. With a fairness key on its jobs (JobType.Builder#fairnessKey, stored in
-- scheduled_tasks.fairness_key), a key's permits go to its active fairness keys (the flows) in
-- proportion to their weights, work-conserving.
--
-- The discipline is start-time fair queueing (SFQ, Goyal et al. 1996), kept in Postgres:
--   * every waiting job of a flow gets a virtual start tag when it first waits:
--       tag = greatest(flow's last tag, the key's virtual clock) + rank / weight
--     (rank: its place among the flow's new jobs, oldest first), so a flow's jobs are 1 / weight
--     apart in virtual time and a flow that was idle starts at the clock, not in the past: no
--     credit is banked while idle, and a new tenant is served from its first job on;
--   * permits are handed out in tag order; the key's virtual clock is the tag of the last job
--     given a permit;
--   * a round (layover.fair_round) books the permits of the next moments of the key's bucket
--     (a short horizon, by default 100 ms) for the waiting jobs with the lowest tags, as
--     execution_time and permit_at (V10's held permit), and moves jobs tagged for the first time
--     past an estimate of their turn, so that a backlog is not picked job by job; a flow waking up
--     starts at the service frontier (the lowest tag booked, not started) and takes the permits of
--     booked jobs of its priority with higher tags. Rounds run when a job with a fairness key is
--     picked without a permit, and every half horizon in each worker that knows the key has
--     waiting jobs (the engine's fair pump).
-- Why SFQ and not deficit round robin: its state is one number per flow and one per key, a pick
-- touches only the jobs it books (the cost does not grow with the number of flows: the booking
-- reads the tag index in order), weights are exact, and a flow arriving late interleaves at once
-- instead of waiting for the round robin's next turn.
--
-- Priorities within a key: a round books the highest job priority first (scheduled_tasks.priority,
-- EnqueueOptions#priority), tags within a priority; a reserved share of each round's permits
-- (FairnessSettings#lowPriorityShare, default 0.1) goes to the jobs below the highest priority
-- waiting, so batch work is slowed by interactive work but never starved.
--
-- Jobs without a fairness key take the key's permits as before (first come, first served). The
-- fairness applies to request-rate limits (configured buckets and paces learned from a stated limit); on a key whose
-- bucket limits tokens, or on concurrency limits, jobs with a fairness key are admitted as jobs
-- without one (docs/fairness.md says so).
--
-- Forward-only: nothing here changes what earlier versions stored.

ALTER TABLE layover.scheduled_tasks
    ADD COLUMN fairness_key text,
    ADD COLUMN fair_tag     float8;

COMMENT ON COLUMN layover.scheduled_tasks.fairness_key IS
    'The job''s fairness key (JobType.Builder#fairnessKey, e.g. tenant:42): its flow within its provider key''s limit; NULL: none.';
COMMENT ON COLUMN layover.scheduled_tasks.fair_tag IS
    'Its virtual start tag in its provider key''s fair queue (V20, layover.fair_round); NULL: not waiting in it yet.';

-- a dead letter keeps its job's fairness key (core JobSql.PARK), and its replay gets it back (JobSql.INSERT_REPLAYS)
ALTER TABLE layover.dead_letters ADD COLUMN fairness_key text;
COMMENT ON COLUMN layover.dead_letters.fairness_key IS 'The parked job''s fairness key (V20); its replay gets it back.';

-- the booking reads the waiting jobs of one key in priority and tag order (jobs with a fairness key
-- always have a priority: EnqueueOptions' default is 0)
CREATE INDEX scheduled_tasks_fair_queue_idx ON layover.scheduled_tasks (provider_key, priority DESC, fair_tag)
    WHERE fair_tag IS NOT NULL AND permit_at IS NULL AND NOT picked;
-- a round reads the booked, not yet picked jobs of one key (the service frontier; 2b below)
CREATE INDEX scheduled_tasks_fair_booked_idx ON layover.scheduled_tasks (provider_key, fair_tag)
    WHERE fair_tag IS NOT NULL AND permit_at IS NOT NULL AND NOT picked;
-- the tagging reads the due, untagged jobs of one key
CREATE INDEX scheduled_tasks_fair_new_idx ON layover.scheduled_tasks (provider_key, execution_time)
    WHERE fairness_key IS NOT NULL AND fair_tag IS NULL AND permit_at IS NULL;

-- ---------------------------------------------------------------------------
-- One row per provider key with a fair queue: its virtual clock. Written by layover.fair_round only.
--   vclock         the highest tag given a permit
--   class_clocks   per job priority ({"0": 12.5, "5": 40}): the highest tag of that priority given
--                  a permit; a flow waking up starts at its priority's clock, so that serving one
--                  priority does not put the flows of another behind (each priority is its own
--                  fair queue; the booking takes the highest priority first)
--   active_weight  the weights of the flows with waiting jobs (vfinish past the clock), recomputed
--                  at most once a second (active_weight_at): the clock moves 1 / it per permit, so
--                  a job tagged t waits about (t - clock) x active_weight permits
--   low_credit     the permits owed to lower-priority jobs (the reserved share of every round's
--                  permits, added up; a round books the whole ones; at most 1 carried when none wait)
--   rounds, last_round_at, booked   what the rounds did
-- ---------------------------------------------------------------------------
CREATE TABLE layover.fair_lines (
    provider_key  text PRIMARY KEY,
    vclock        float8      NOT NULL DEFAULT 0,
    class_clocks  jsonb       NOT NULL DEFAULT '{}'::jsonb,
    active_weight    float8,
    active_weight_at timestamptz,
    low_credit    float8      NOT NULL DEFAULT 0,
    rounds        bigint      NOT NULL DEFAULT 0,
    booked        bigint      NOT NULL DEFAULT 0,
    last_round_at timestamptz
);

-- ---------------------------------------------------------------------------
-- One row per flow (provider key, fairness key, job priority) that has waited. Written by
-- layover.fair_round only.
--   vfinish        the tag of its last job tagged (its jobs wait up to there)
--   weight         the weight its jobs were tagged with last
--   tagged, booked how many of its jobs were tagged and given a permit by rounds
-- ---------------------------------------------------------------------------
CREATE TABLE layover.fair_flows (
    provider_key   text        NOT NULL,
    fairness_key   text        NOT NULL,
    priority       smallint    NOT NULL DEFAULT 0,
    vfinish        float8      NOT NULL,
    weight         float8      NOT NULL,
    tagged         bigint      NOT NULL DEFAULT 0,
    booked         bigint      NOT NULL DEFAULT 0,
    last_booked_at timestamptz,
    PRIMARY KEY (provider_key, fairness_key, priority)
);

-- A priority's clock in a line's class_clocks (0 before any of its jobs was given a permit).
CREATE FUNCTION layover.fair_class_clock(p_clocks jsonb, p_priority smallint)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT coalesce((p_clocks ->> coalesce(p_priority, 0)::text)::float8, 0) $$;

-- ---------------------------------------------------------------------------
-- Weights of fairness keys: a key, or a pattern with '*' for any text ('tenant:premium-*'); the
-- longest matching pattern wins; none: 1. origin 'config' rows are written by workers at start
-- (Layover.Builder#fairnessWeight; a start replaces config rows, never operator rows); origin
-- 'operator' rows by an operator at run time (ProviderStates#setFairnessWeight; the console
-- audits it in layover.audit_log with the weight before). configured_weight keeps what the
-- configuration says under an operator's weight, so that reverting (ProviderStates
-- #revertFairnessWeight) restores it (no configured weight: the row goes, the weight is 1 again).
-- A change applies to jobs tagged from then on.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.fairness_weights (
    pattern       text        PRIMARY KEY,
    weight        float8      NOT NULL,
    origin        text        NOT NULL DEFAULT 'config',
    configured_weight float8,
    configured_by text,
    configured_at timestamptz NOT NULL DEFAULT now(),
    reason        text,
    CONSTRAINT fairness_weights_weight_check CHECK (weight > 0 AND weight <= 1000000),
    CONSTRAINT fairness_weights_origin_check CHECK (origin IN ('config', 'operator')),
    CONSTRAINT fairness_weights_pattern_check CHECK (length(pattern) BETWEEN 1 AND 200)
);

-- The weight of a fairness key: the longest matching pattern's, operator rows before config rows.
CREATE FUNCTION layover.fairness_weight(p_fairness_key text)
    RETURNS float8 LANGUAGE sql STABLE AS
$$ SELECT coalesce((SELECT w.weight FROM layover.fairness_weights w
                    WHERE p_fairness_key LIKE replace(replace(replace(w.pattern, '\', '\\'), '%', '\%'), '*', '%')
                    ORDER BY (w.origin = 'operator') DESC, length(w.pattern) DESC, w.pattern
                    LIMIT 1), 1.0) $$;

-- ---------------------------------------------------------------------------
-- layover.fair_round: one round of a key's fair queue, in one call (the key's line and bucket rows
-- locked for its length: rounds of one key are serial, fleet-wide).
--   1. A caller that holds a permit (permit_at, from an earlier round) spends it: carried.
--   2. Tags the key's due, untagged jobs with a fairness key (at most p_max_jobs, oldest first,
--      skipping rows other transactions hold), the caller among them: SFQ tags as above; each
--      moved (but the caller, whose row its worker writes) past the estimate of its turn: horizon
--      end + max(2 s, twice ((tag - clock) x the active flows' weight + the waiting jobs of higher
--      priority) / rate). Deliberately late: the rounds book in tag order whatever the run times,
--      and a job due before its turn would only be picked to be told to wait again; the run time
--      is the fallback that restarts the rounds when no worker pumps the key (after a restart).
--   3. Books the bucket's permits from greatest(request_tat, now) up to now + p_horizon_s for the
--      waiting tagged jobs (unpicked, holding no permit; the caller too), highest priority first,
--      then by tag; of them, p_low_share of the slots (added up over rounds in low_credit) first
--      to the jobs below the highest priority waiting. Each booked job (but the caller) gets execution_time = permit_at = its
--      slot; request_tat moves past them (V10's book_requests); the clock moves to the highest
--      tag booked.
-- Returns: carried; the caller's slot when booked (= now: go), else NULL; the caller's estimate
-- when tagged but not booked; jobs booked and tagged; whether jobs are still waiting (the pump
-- goes on). No bucket row: every column NULL (the caller writes the bucket and asks again).
-- Parameters: key, now, request rate (/s), capacity, horizon (s), low-priority share, max jobs
-- to tag, the caller's task name, id, version (NULLs: a pump round), permit grace (s).
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.fair_round(
        p_key text, p_now timestamptz, p_rate float8, p_cap float8, p_horizon_s float8, p_low_share float8,
        p_max_jobs int, p_task_name text, p_task_id text, p_version bigint, p_grace_s float8)
    RETURNS TABLE (carried boolean, slot timestamptz, estimate timestamptz, booked int, tagged int, waiting boolean)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_clock     float8;
    v_weight    float8;
    v_weight_at timestamptz;
    v_start     timestamptz;
    v_hend      timestamptz := p_now + make_interval(secs => p_horizon_s);
    v_slots     int;
    v_reserve   int;
    v_top       smallint;
    v_booked    int := 0;
    v_tagged    int := 0;
    v_max_tag   float8;
    v_my_slot   timestamptz;
    v_my_est    timestamptz;
    v_my_tag    float8;
    v_credit    float8;
    v_low       int := 0;
    v_clocks    jsonb;
    v_my_prio   smallint;
    v_due       int := 0;
BEGIN
    IF p_task_id IS NOT NULL
       AND layover.spend_held_permit(p_task_name, p_task_id, p_version, p_now, p_grace_s) THEN
        RETURN QUERY SELECT true, p_now, NULL::timestamptz, 0, 0, true;
        RETURN;
    END IF;

    SELECT greatest(bk.request_tat, p_now) INTO v_start
    FROM layover.buckets bk WHERE bk.provider_key = p_key AND bk.requests_per_minute > 0
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::boolean, NULL::timestamptz, NULL::timestamptz, NULL::int, NULL::int, NULL::boolean;
        RETURN;
    END IF;
    INSERT INTO layover.fair_lines AS l (provider_key) VALUES (p_key) ON CONFLICT (provider_key) DO NOTHING;
    SELECT l.vclock, l.class_clocks, l.active_weight, l.active_weight_at, l.low_credit
    INTO v_clock, v_clocks, v_weight, v_weight_at, v_credit
    FROM layover.fair_lines l WHERE l.provider_key = p_key FOR UPDATE;
    IF v_weight_at IS NULL OR v_weight_at < p_now - interval '1 second' THEN
        SELECT coalesce(sum(f.weight), 0) INTO v_weight
        FROM layover.fair_flows f
        WHERE f.provider_key = p_key AND f.vfinish > layover.fair_class_clock(v_clocks, f.priority);
        UPDATE layover.fair_lines l SET active_weight = v_weight, active_weight_at = p_now WHERE l.provider_key = p_key;
    END IF;

    -- 2. tags, and the new jobs moved to the estimate of their turn (the caller's row its worker writes)
    WITH locked AS (
        SELECT t.task_name, t.task_instance, t.fairness_key, t.execution_time, t.picked, t.priority
        FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fairness_key IS NOT NULL AND t.fair_tag IS NULL AND t.permit_at IS NULL
          AND t.execution_time <= p_now
          AND (NOT t.picked OR (t.task_name = p_task_name AND t.task_instance = p_task_id))
        ORDER BY t.execution_time, t.task_instance
        LIMIT p_max_jobs
        FOR UPDATE OF t SKIP LOCKED
    ), frontier AS MATERIALIZED ( -- per priority: the lowest tag booked and not started yet (the next to start)
        SELECT t.priority, min(t.fair_tag) AS tag
        FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL AND NOT t.picked
        GROUP BY t.priority
    ), flows AS (
        -- a flow waking up starts where service is (the frontier, else its priority's clock), so
        -- its first jobs come before permits booked but not started yet (2b swaps them)
        SELECT k.fairness_key, k.priority, greatest(coalesce(f.vfinish, k.cc), k.cc) AS start_v,
               layover.fairness_weight(k.fairness_key) AS w, coalesce(f.vfinish, k.cc) <= k.cc AS idle
        FROM (SELECT DISTINCT l.fairness_key, l.priority,
                     least(layover.fair_class_clock(v_clocks, l.priority),
                           coalesce((SELECT fr.tag FROM frontier fr WHERE fr.priority = l.priority), 'infinity')) AS cc
              FROM locked l) k
        LEFT JOIN layover.fair_flows f
               ON f.provider_key = p_key AND f.fairness_key = k.fairness_key AND f.priority = k.priority
    ), tags AS (
        SELECT l.task_name, l.task_instance, l.fairness_key, l.picked, l.priority,
               fl.start_v + row_number() OVER (PARTITION BY l.fairness_key, l.priority
                                               ORDER BY l.execution_time, l.task_instance) / fl.w AS tag
        FROM locked l JOIN flows fl ON fl.fairness_key = l.fairness_key AND fl.priority = l.priority
    ), per AS MATERIALIZED ( -- permits per unit of the clock: the active flows' weight, the flows waking up now with it
        SELECT greatest(1e-9, coalesce(v_weight, 0)
                   + coalesce((SELECT sum(fl.w) FROM flows fl WHERE fl.idle), 0)) AS w
    ), ahead AS MATERIALIZED ( -- per priority of the new jobs: the waiting jobs of a higher one, booked before them
        SELECT pr.priority,
               (SELECT count(*) FROM (SELECT 1 FROM layover.scheduled_tasks t
                                      WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL
                                        AND NOT t.picked AND t.priority > pr.priority LIMIT 100000) x)
               + (SELECT count(*) FROM locked l WHERE l.priority > pr.priority) AS n
        FROM (SELECT DISTINCT priority FROM locked) pr
    ), flow_rows AS (
        INSERT INTO layover.fair_flows AS f (provider_key, fairness_key, priority, vfinish, weight, tagged)
        SELECT p_key, g.fairness_key, g.priority, g.vfinish, fl.w, g.n
        FROM (SELECT fairness_key, priority, max(tag) AS vfinish, count(*) AS n FROM tags GROUP BY fairness_key, priority) g
        JOIN flows fl ON fl.fairness_key = g.fairness_key AND fl.priority = g.priority
        ON CONFLICT (provider_key, fairness_key, priority) DO UPDATE
        SET vfinish = greatest(f.vfinish, excluded.vfinish), weight = excluded.weight, tagged = f.tagged + excluded.tagged
        RETURNING 1
    ), job_rows AS (
        UPDATE layover.scheduled_tasks t
        SET fair_tag = g.tag,
            execution_time = CASE WHEN g.picked THEN t.execution_time
                ELSE v_hend + make_interval(secs => least(86400, greatest(2, 2 * ((g.tag
                        - layover.fair_class_clock(v_clocks, g.priority)) * (SELECT w FROM per)
                    + coalesce((SELECT a.n FROM ahead a WHERE a.priority = g.priority), 0)) / p_rate))) END,
            version = CASE WHEN g.picked THEN t.version ELSE t.version + 1 END,
            last_reschedule_reason = CASE WHEN g.picked THEN t.last_reschedule_reason ELSE 'fair' END,
            last_reschedule_detail = CASE WHEN g.picked THEN t.last_reschedule_detail
                ELSE 'fair share of ' || p_key || ': waits its turn among the key''s fairness keys' END,
            last_rescheduled_at = CASE WHEN g.picked THEN t.last_rescheduled_at ELSE p_now END
        FROM tags g
        WHERE t.task_name = g.task_name AND t.task_instance = g.task_instance
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM job_rows), (SELECT w FROM per) INTO v_tagged, v_weight
    FROM (SELECT count(*) FROM flow_rows) written;
    IF v_tagged > 0 THEN
        UPDATE layover.fair_lines l SET active_weight = v_weight WHERE l.provider_key = p_key;
    END IF;

    -- 2b. newly tagged jobs may have lower tags than jobs of their priority already booked and not
    -- picked yet (a tenant arriving behind the booked horizon): those give their permits to them,
    -- so that the newcomer is served from the permits already booked, not after them. The losers
    -- wait again holding no permit (their tags keep their place); the winners take the losers'
    -- slots in order. Within one priority only: the reserved share of a lower priority stays.
    IF v_tagged > 0 THEN
        WITH booked AS (
            SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, t.permit_at
            FROM layover.scheduled_tasks t
            WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL AND NOT t.picked
              AND t.permit_at >= p_now - make_interval(secs => p_grace_s)
            ORDER BY t.fair_tag
            LIMIT 1000
            FOR UPDATE OF t SKIP LOCKED
        ), per_priority AS (SELECT b.priority, count(*) AS n FROM booked b GROUP BY b.priority
        ), challengers AS ( -- within each priority only: a reserved lower-priority permit is not taken
            SELECT c.* FROM per_priority pp
            CROSS JOIN LATERAL (
                SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, NULL::timestamptz AS permit_at
                FROM layover.scheduled_tasks t
                WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
                  AND t.priority = pp.priority
                ORDER BY t.fair_tag
                LIMIT pp.n
                FOR UPDATE OF t SKIP LOCKED) c
        ), caller AS ( -- the caller competes too (its worker writes its row)
            SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, NULL::timestamptz AS permit_at
            FROM layover.scheduled_tasks t
            WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.fair_tag IS NOT NULL
              AND t.priority IN (SELECT priority FROM per_priority)
        ), ranked AS (
            SELECT x.*, row_number() OVER (PARTITION BY x.priority ORDER BY x.fair_tag) AS k, pp.n AS booked_n
            FROM (SELECT * FROM booked UNION ALL SELECT * FROM challengers UNION ALL SELECT * FROM caller) x
            JOIN per_priority pp ON pp.priority = x.priority
        ), losers AS (
            SELECT r.*, row_number() OVER (PARTITION BY r.priority ORDER BY r.permit_at) AS n
            FROM ranked r WHERE r.permit_at IS NOT NULL AND r.k > r.booked_n
        ), winners AS (
            SELECT r.*, row_number() OVER (PARTITION BY r.priority ORDER BY r.k) AS n
            FROM ranked r WHERE r.permit_at IS NULL AND r.k <= r.booked_n
        ), moved AS ( -- each pair: the loser unbooked, the winner booked at the loser's slot
            UPDATE layover.scheduled_tasks t
            SET permit_at = CASE WHEN t.task_instance = w.task_instance AND t.task_name = w.task_name THEN l.permit_at END,
                execution_time = CASE WHEN t.task_instance = w.task_instance AND t.task_name = w.task_name THEN l.permit_at
                                      ELSE v_hend + interval '2 seconds' END,
                version = t.version + 1, last_reschedule_reason = 'fair',
                last_reschedule_detail = CASE WHEN t.task_instance = w.task_instance AND t.task_name = w.task_name
                    THEN 'fair share of ' || p_key || ': a permit booked in its turn'
                    ELSE 'fair share of ' || p_key || ': its permit went to a job ahead of it in the fair queue' END,
                last_rescheduled_at = p_now
            FROM losers l JOIN winners w ON w.n = l.n AND w.priority = l.priority
            WHERE ((t.task_name = l.task_name AND t.task_instance = l.task_instance)
                   OR (t.task_name = w.task_name AND t.task_instance = w.task_instance))
              AND (p_task_id IS NULL OR NOT (t.task_name = p_task_name AND t.task_instance = p_task_id))
            RETURNING t.permit_at
        )
        SELECT (SELECT count(*) FROM moved m WHERE m.permit_at <= p_now),
               (SELECT l.permit_at FROM losers l JOIN winners w ON w.n = l.n AND w.priority = l.priority
                WHERE w.task_name = p_task_name AND w.task_instance = p_task_id)
        INTO v_due, v_my_slot;
        IF v_due > 0 THEN
            PERFORM pg_notify('layover_jobs', ''); -- the winners are due: wake the workers
        END IF;
    END IF;

    -- 3. bookings: how many permits the bucket has until the horizon (GCRA: the k-th from
    -- greatest(tat, now), k from 1, fits at start + (k - capacity) / rate)
    v_slots := greatest(0, floor(extract(epoch FROM v_hend - v_start) * p_rate + p_cap))::int;
    IF v_slots > 0 THEN
        SELECT t.priority INTO v_top FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
        ORDER BY t.priority DESC, t.fair_tag LIMIT 1;
        v_credit := v_credit + v_slots * p_low_share;
        v_reserve := floor(v_credit)::int;
        WITH chosen AS (
            (SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, 0 AS cls FROM layover.scheduled_tasks t
             WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
               AND t.priority < v_top
             ORDER BY t.priority DESC, t.fair_tag LIMIT v_reserve)
            UNION ALL
            (SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, 1 AS cls FROM layover.scheduled_tasks t
             WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
             ORDER BY t.priority DESC, t.fair_tag LIMIT v_slots)
            UNION ALL
            (SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, 1 AS cls FROM layover.scheduled_tasks t
             WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.fair_tag IS NOT NULL
               AND v_my_slot IS NULL)
        ), once AS (
            SELECT DISTINCT ON (c.task_name, c.task_instance) c.* FROM chosen c
            ORDER BY c.task_name, c.task_instance, c.cls
        ), first AS (
            SELECT o.* FROM once o ORDER BY o.cls, o.priority DESC, o.fair_tag LIMIT v_slots
        ), locked AS (
            SELECT f.task_name, f.task_instance, f.fair_tag, f.priority, f.cls
            FROM first f
            JOIN layover.scheduled_tasks t ON t.task_name = f.task_name AND t.task_instance = f.task_instance
            FOR UPDATE OF t SKIP LOCKED
        ), slots AS (
            SELECT l.*, greatest(p_now, v_start + make_interval(secs =>
                       (row_number() OVER (ORDER BY l.cls, l.priority DESC, l.fair_tag) - p_cap) / p_rate)) AS at
            FROM locked l
        ), moved AS (
            UPDATE layover.scheduled_tasks t
            SET execution_time = s.at, permit_at = s.at, version = t.version + 1, last_reschedule_reason = 'fair',
                last_reschedule_detail = 'fair share of ' || p_key || ': a permit booked in its turn',
                last_rescheduled_at = p_now
            FROM slots s
            WHERE t.task_name = s.task_name AND t.task_instance = s.task_instance
              AND (p_task_id IS NULL OR NOT (s.task_name = p_task_name AND s.task_instance = p_task_id))
            RETURNING t.task_name
        ), flow_counts AS (
            UPDATE layover.fair_flows f
            SET booked = f.booked + c.n, last_booked_at = p_now
            FROM (SELECT t.fairness_key, t.priority, count(*) AS n FROM slots s
                  JOIN layover.scheduled_tasks t ON t.task_name = s.task_name AND t.task_instance = s.task_instance
                  GROUP BY t.fairness_key, t.priority) c
            WHERE f.provider_key = p_key AND f.fairness_key = c.fairness_key AND f.priority = c.priority
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM slots), (SELECT max(fair_tag) FROM slots),
               coalesce(v_my_slot, (SELECT at FROM slots WHERE task_name = p_task_name AND task_instance = p_task_id)),
               (SELECT count(*) FROM slots WHERE cls = 0),
               (SELECT coalesce(jsonb_object_agg(x.priority::text,
                           greatest(x.tag, layover.fair_class_clock(v_clocks, x.priority))), '{}'::jsonb)
                FROM (SELECT priority, max(fair_tag) AS tag FROM slots GROUP BY priority) x)
        INTO v_booked, v_max_tag, v_my_slot, v_low, v_clocks
        FROM (SELECT count(*) FROM moved) m, (SELECT count(*) FROM flow_counts) fc;

        IF v_booked > 0 THEN
            PERFORM layover.book_requests(p_key, v_start, v_booked, p_rate);
            UPDATE layover.fair_lines l
            SET vclock = greatest(l.vclock, v_max_tag), class_clocks = l.class_clocks || v_clocks,
                booked = l.booked + v_booked
            WHERE l.provider_key = p_key;
        END IF;
    END IF;
    UPDATE layover.fair_lines l
    SET rounds = l.rounds + 1, last_round_at = p_now,
        low_credit = CASE WHEN v_credit IS NULL THEN l.low_credit ELSE least(greatest(v_credit - v_low, 0), 1) END
    WHERE l.provider_key = p_key;

    IF v_my_slot IS NULL AND p_task_id IS NOT NULL THEN
        SELECT t.fair_tag, t.priority INTO v_my_tag, v_my_prio FROM layover.scheduled_tasks t
        WHERE t.task_name = p_task_name AND t.task_instance = p_task_id;
        SELECT l.class_clocks, l.active_weight INTO v_clocks, v_weight FROM layover.fair_lines l WHERE l.provider_key = p_key;
        IF v_my_tag IS NOT NULL THEN
            v_my_est := v_hend + make_interval(secs => least(86400, greatest(2, 2 * greatest(0,
                            v_my_tag - layover.fair_class_clock(v_clocks, v_my_prio))
                        * greatest(coalesce(v_weight, 1), 1e-9) / p_rate)));
        END IF;
    END IF;
    RETURN QUERY SELECT false, v_my_slot, v_my_est, v_booked, v_tagged,
        EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked);
END
$$;

COMMENT ON FUNCTION layover.fair_round(text, timestamptz, float8, float8, float8, float8, int, text, text, bigint, float8) IS
    'One round of a provider key''s fair queue (V20): tags new waiting jobs (SFQ), books the next permits in tag order.';

-- ---------------------------------------------------------------------------
-- layover.fairness: each provider key's flows with waiting jobs (or booked ones), their weight and
-- share. One row per (provider_key, fairness_key) of a job with a fairness key that has not run.
--   waiting     jobs tagged, waiting for a permit      booked   jobs holding a permit
--   untagged    due jobs not in the queue yet (the next round tags them)
--   weight      the weight a job tagged now gets (layover.fairness_weight)
--   share       weight / the sum of the weights of the key's flows with waiting jobs: the share of
--               the key's permits the flow gets while all of them wait
--   lag         how far the flow's last tag is ahead of its priority's clock (virtual time)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.fairness AS
WITH jobs AS (
    SELECT t.provider_key, t.fairness_key,
           count(*) FILTER (WHERE t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked) AS waiting,
           count(*) FILTER (WHERE t.permit_at IS NOT NULL) AS booked,
           count(*) FILTER (WHERE t.fair_tag IS NULL AND t.permit_at IS NULL AND NOT t.picked) AS untagged,
           count(*) FILTER (WHERE t.picked) AS running
    FROM layover.scheduled_tasks t
    WHERE t.fairness_key IS NOT NULL AND t.provider_key IS NOT NULL
    GROUP BY t.provider_key, t.fairness_key
), weighted AS (
    SELECT j.*, layover.fairness_weight(j.fairness_key) AS weight FROM jobs j
)
SELECT w.provider_key, w.fairness_key, w.waiting, w.booked, w.untagged, w.running, w.weight,
       CASE WHEN w.waiting > 0
            THEN w.weight / sum(w.weight) FILTER (WHERE w.waiting > 0) OVER (PARTITION BY w.provider_key) END AS share,
       f.lag, f.tagged, f.booked AS booked_total, f.last_booked_at
FROM weighted w
LEFT JOIN (SELECT ff.provider_key, ff.fairness_key,
                  max(ff.vfinish - layover.fair_class_clock(fl.class_clocks, ff.priority)) AS lag,
                  sum(ff.tagged) AS tagged, sum(ff.booked) AS booked, max(ff.last_booked_at) AS last_booked_at
           FROM layover.fair_flows ff JOIN layover.fair_lines fl ON fl.provider_key = ff.provider_key
           GROUP BY ff.provider_key, ff.fairness_key) f
       ON f.provider_key = w.provider_key AND f.fairness_key = w.fairness_key;

COMMENT ON VIEW layover.fairness IS
    'Each provider key''s fairness keys with jobs: waiting, booked, untagged, running, weight, share of the key''s permits.';
