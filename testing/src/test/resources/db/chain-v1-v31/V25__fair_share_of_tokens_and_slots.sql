-- Layover schema, version 25: fair share where a key's limit counts tokens, and for concurrency
-- limits (issue 19, docs/fairness.md).
--
-- V20 shares a key's request permits among its fairness keys (start-time fair queueing, every
-- job costing one permit). Two limits it left first come, first served:
--
--   * A bucket that limits tokens. One permit is not one unit of the scarce thing any more: a
--     tenant sending 8,000-token prompts takes twenty times what one sending 400 takes. A job's
--     cost is now what it takes of the key's bottleneck: the largest, over the bucket's limited
--     dimensions, of the time the dimension needs to admit it (1 / request rate for the request,
--     need x share / rate for each token dimension: V19's share, what the key's calls use of their
--     reservation), in units of one request permit when the bucket limits requests (so that a
--     request-only bucket is exactly V20: cost 1), else in seconds. Tags advance by cost / weight,
--     so each tenant receives tokens (not calls) in proportion to its weight (what "Fairness in
--     Serving Large Language Models", Sheng et al. 2024, calls a virtual token counter; here kept
--     as SFQ tags). A round books, in tag order, the jobs that every dimension admits by the end of
--     the horizon (each job's slot is the latest of its dimensions' GCRA slots, cumulated over the
--     jobs booked before it), and moves every dimension's tat past them.
--     The cost needs each job's token estimate before it is picked: scheduled_tasks.token_estimate,
--     written at enqueue for jobs with a fairness key whose job type has a token estimate. A job
--     without one (an older worker enqueued it, a replay, a type without an estimate) costs the
--     line's mean cost (fair_lines.mean_cost, learned from the jobs with one; 1 before any).
--
--   * A concurrency limit (layover.concurrency_limits). The permit is a slot: a round counts the
--     key's free slots (neither held by a live run, as V7 counts them, nor promised to a job called
--     by an earlier round and not picked yet) and calls that many waiting jobs in tag order: their
--     run time becomes now and they hold the call (permit_at) until picked; then they claim the
--     slot as every job does (layover.admit_tokens). Every job costs 1. A job picked without a call
--     while jobs wait ahead of it in the line waits its turn instead of taking a free slot.
--
-- Rounds of both kinds are layover.fair_round_limit; V20's layover.fair_round (called by workers
-- of earlier versions during a rolling deploy) is now that function for a request-only bucket:
-- one implementation of the discipline runs.
--
-- And layover.limit_overrides (below): an operator's limits for a key at run time.
--
-- Forward-only: nothing here changes what earlier versions stored.

ALTER TABLE layover.scheduled_tasks ADD COLUMN token_estimate float8[];
COMMENT ON COLUMN layover.scheduled_tasks.token_estimate IS
    'The job''s token estimate {combined, input, output} (JobType.Builder#tokenEstimate), written at enqueue for jobs '
    'with a fairness key (V25): its cost in a fair queue whose bucket limits tokens. NULL: none (the line''s mean cost).';

ALTER TABLE layover.fair_lines ADD COLUMN mean_cost float8;
COMMENT ON COLUMN layover.fair_lines.mean_cost IS
    'The mean cost of the jobs tagged with a token estimate (an exponentially weighted mean, V25): what a job without '
    'one costs. NULL: none seen yet (such a job costs 1).';

-- A job's cost in a fair queue (V25): 1 for a request-only bucket (and for a concurrency limit:
-- p_rr 1, no token rates); with token dimensions, the largest time a limited dimension needs to
-- admit it (its need x the key's share / the dimension's rate), in request permits when the
-- bucket limits requests (x p_rr), else in seconds. p_est: {combined, input, output} or NULL
-- (then p_mean, or 1). Shares are clamped to [0.05, 1] as V19's bookings clamp them.
CREATE FUNCTION layover.fair_cost(p_est float8[], p_rr float8, p_tr float8, p_ir float8, p_or float8,
        p_ts float8, p_is float8, p_os float8, p_mean float8)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
    SELECT CASE
        WHEN coalesce(p_tr, 0) <= 0 AND coalesce(p_ir, 0) <= 0 AND coalesce(p_or, 0) <= 0 THEN 1.0
        WHEN p_est IS NULL THEN coalesce(p_mean, 1.0)
        ELSE greatest(
            CASE WHEN p_rr > 0 THEN 1.0 ELSE 0 END,
            CASE WHEN p_tr > 0 THEN p_est[1] * least(1, greatest(0.05, coalesce(p_ts, 1))) / p_tr END
                * CASE WHEN p_rr > 0 THEN p_rr ELSE 1 END,
            CASE WHEN p_ir > 0 THEN p_est[2] * least(1, greatest(0.05, coalesce(p_is, 1))) / p_ir END
                * CASE WHEN p_rr > 0 THEN p_rr ELSE 1 END,
            CASE WHEN p_or > 0 THEN p_est[3] * least(1, greatest(0.05, coalesce(p_os, 1))) / p_or END
                * CASE WHEN p_rr > 0 THEN p_rr ELSE 1 END,
            1e-6)
    END
$$;

-- The slot of the k-th job a round books (V25), GCRA in every limited dimension: the request
-- dimension's k-th permit from p_start (k - capacity) / rate later; with token dimensions
-- (p_tok: rate and capacity of combined, input, output tokens; NULL: none), each dimension's
-- cumulated need p_cum from its start p_tstarts; the latest of them, never before p_now.
CREATE FUNCTION layover.fair_slot(p_now timestamptz, p_rr float8, p_rc float8, p_start timestamptz, p_k bigint,
        p_tok float8[], p_tstarts timestamptz[], p_cum float8[])
    RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
    SELECT greatest(p_now,
        CASE WHEN p_rr > 0 THEN p_start + make_interval(secs => (p_k - p_rc) / p_rr) END,
        CASE WHEN p_tok[1] > 0 THEN p_tstarts[1] + make_interval(secs => (p_cum[1] - p_tok[2]) / p_tok[1]) END,
        CASE WHEN p_tok[3] > 0 THEN p_tstarts[2] + make_interval(secs => (p_cum[2] - p_tok[4]) / p_tok[3]) END,
        CASE WHEN p_tok[5] > 0 THEN p_tstarts[3] + make_interval(secs => (p_cum[3] - p_tok[6]) / p_tok[5]) END)
$$;

-- ---------------------------------------------------------------------------
-- layover.fair_round_limit: one round of a key's fair queue, V20's round generalised (see V20 for
-- the discipline: tags, the service frontier, the reserved low-priority share, the estimates).
--   p_mode 'bucket': the key's bucket row (any limited dimension) is the limit; p_rr/p_rc the
--          request rate and capacity, p_tr/p_tc, p_ir/p_ic, p_or/p_oc the combined, input and
--          output token rates (/s) and capacities (0: not limited); bookings take every dimension.
--   p_mode 'slots': the key's concurrency limit of p_slots slots is the limit (its row locked for
--          the round); a round calls as many waiting jobs as slots are free, run time now.
--   p_rate: cost units a second the limit serves, for the estimates of waiting jobs (bucket: the
--          request rate, or 1 when only tokens are limited; slots: the caller's guess).
-- Returns V20's columns and, for a token bucket, the key's shares (what a booking took of a need).
-- No limit row: every column NULL (the caller writes it and asks again).
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.fair_round_limit(
        p_key text, p_now timestamptz, p_mode text, p_rr float8, p_rc float8, p_tr float8, p_tc float8,
        p_ir float8, p_ic float8, p_or float8, p_oc float8, p_slots int, p_dead_after_s float8, p_rate float8,
        p_horizon_s float8, p_low_share float8, p_max_jobs int,
        p_task_name text, p_task_id text, p_version bigint, p_grace_s float8)
    RETURNS TABLE (carried boolean, slot timestamptz, estimate timestamptz, booked int, tagged int, waiting boolean,
                   token_share float8, input_share float8, output_share float8)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_clock     float8;
    v_weight    float8;
    v_weight_at timestamptz;
    v_start     timestamptz;           -- request dimension: greatest(request_tat, now)
    v_tstart    timestamptz;           -- token dimensions
    v_istart    timestamptz;
    v_ostart    timestamptz;
    v_ts        float8;
    v_is        float8;
    v_os        float8;
    v_mean      float8;
    v_tokens    boolean := coalesce(p_tr, 0) > 0 OR coalesce(p_ir, 0) > 0 OR coalesce(p_or, 0) > 0;
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
    v_sums      float8[];
    v_avg       float8;
    v_unit      float8;                -- a job without an estimate: the line's mean cost, in seconds of each dimension
    v_rate      float8 := greatest(coalesce(p_rate, 1), 1e-9);
BEGIN
    IF p_mode = 'bucket' THEN
        SELECT bk.token_share, bk.input_share, bk.output_share INTO v_ts, v_is, v_os
        FROM layover.buckets bk WHERE bk.provider_key = p_key;
    END IF;
    IF p_task_id IS NOT NULL
       AND layover.spend_held_permit(p_task_name, p_task_id, p_version, p_now, p_grace_s) THEN
        RETURN QUERY SELECT true, p_now, NULL::timestamptz, 0, 0, true, v_ts, v_is, v_os;
        RETURN;
    END IF;

    IF p_mode = 'bucket' THEN
        SELECT greatest(bk.request_tat, p_now), greatest(bk.token_tat, p_now), greatest(bk.input_tat, p_now),
               greatest(bk.output_tat, p_now)
        INTO v_start, v_tstart, v_istart, v_ostart
        FROM layover.buckets bk
        WHERE bk.provider_key = p_key
          AND (bk.requests_per_minute > 0 OR bk.tokens_per_minute > 0 OR bk.input_tokens_per_minute > 0
               OR bk.output_tokens_per_minute > 0)
        FOR UPDATE;
    ELSE
        PERFORM 1 FROM layover.concurrency_limits cl WHERE cl.limit_key = p_key FOR UPDATE;
    END IF;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::boolean, NULL::timestamptz, NULL::timestamptz, NULL::int, NULL::int, NULL::boolean,
            NULL::float8, NULL::float8, NULL::float8;
        RETURN;
    END IF;
    INSERT INTO layover.fair_lines AS l (provider_key) VALUES (p_key) ON CONFLICT (provider_key) DO NOTHING;
    SELECT l.vclock, l.class_clocks, l.active_weight, l.active_weight_at, l.low_credit, l.mean_cost
    INTO v_clock, v_clocks, v_weight, v_weight_at, v_credit, v_mean
    FROM layover.fair_lines l WHERE l.provider_key = p_key FOR UPDATE;
    IF v_weight_at IS NULL OR v_weight_at < p_now - interval '1 second' THEN
        SELECT coalesce(sum(f.weight), 0) INTO v_weight
        FROM layover.fair_flows f
        WHERE f.provider_key = p_key AND f.vfinish > layover.fair_class_clock(v_clocks, f.priority);
        UPDATE layover.fair_lines l SET active_weight = v_weight, active_weight_at = p_now WHERE l.provider_key = p_key;
    END IF;

    -- 1b. bookings that lapsed unpicked (their permit is past the grace: the workers were busy, or
    -- gone) go back to the line, keeping their tags, so the next bookings are theirs again; left
    -- booked, a pick would take them first (due permit holders first) only to book them anew, one
    -- locked round each, while the fresh bookings behind them lapse in turn
    WITH lapsed AS (
        SELECT t.task_name, t.task_instance
        FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL AND NOT t.picked
          AND t.permit_at < p_now - make_interval(secs => p_grace_s)
        ORDER BY t.fair_tag
        LIMIT 1000
        FOR UPDATE OF t SKIP LOCKED
    )
    UPDATE layover.scheduled_tasks t
    SET permit_at = NULL, execution_time = v_hend + interval '2 seconds', version = t.version + 1,
        last_reschedule_reason = 'fair',
        last_reschedule_detail = 'fair share of ' || p_key || ': its booked turn lapsed unpicked; it waits for the next',
        last_rescheduled_at = p_now
    FROM lapsed l
    WHERE t.task_name = l.task_name AND t.task_instance = l.task_instance;

    -- 2. tags (start + the flow's costs so far / its weight), and the new jobs moved to the
    -- estimate of their turn (the caller's row its worker writes)
    WITH locked AS (
        SELECT t.task_name, t.task_instance, t.fairness_key, t.execution_time, t.picked, t.priority,
               CASE WHEN p_mode = 'bucket'
                    THEN layover.fair_cost(t.token_estimate, p_rr, p_tr, p_ir, p_or, v_ts, v_is, v_os, v_mean)
                    ELSE 1.0 END AS cost,
               t.token_estimate IS NOT NULL AS estimated
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
        SELECT l.task_name, l.task_instance, l.fairness_key, l.picked, l.priority, l.cost, l.estimated,
               fl.start_v + sum(l.cost) OVER (PARTITION BY l.fairness_key, l.priority
                                               ORDER BY l.execution_time, l.task_instance) / fl.w AS tag
        FROM locked l JOIN flows fl ON fl.fairness_key = l.fairness_key AND fl.priority = l.priority
    ), per AS MATERIALIZED ( -- cost units per unit of the clock: the active flows' weight, the flows waking up now with it
        SELECT greatest(1e-9, coalesce(v_weight, 0)
                   + coalesce((SELECT sum(fl.w) FROM flows fl WHERE fl.idle), 0)) AS w
    ), ahead AS MATERIALIZED ( -- per priority of the new jobs: the waiting jobs of a higher one, booked before them
        SELECT pr.priority,
               (SELECT count(*) FROM (SELECT 1 FROM layover.scheduled_tasks t
                                      WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL
                                        AND NOT t.picked AND t.priority > pr.priority LIMIT 100000) x)
                   * coalesce(v_mean, 1)
               + (SELECT coalesce(sum(l.cost), 0) FROM locked l WHERE l.priority > pr.priority) AS n
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
                    + coalesce((SELECT a.n FROM ahead a WHERE a.priority = g.priority), 0)) / v_rate))) END,
            version = CASE WHEN g.picked THEN t.version ELSE t.version + 1 END,
            last_reschedule_reason = CASE WHEN g.picked THEN t.last_reschedule_reason ELSE 'fair' END,
            last_reschedule_detail = CASE WHEN g.picked THEN t.last_reschedule_detail
                ELSE 'fair share of ' || p_key || ': waits its turn among the key''s fairness keys' END,
            last_rescheduled_at = CASE WHEN g.picked THEN t.last_rescheduled_at ELSE p_now END
        FROM tags g
        WHERE t.task_name = g.task_name AND t.task_instance = g.task_instance
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM job_rows), (SELECT w FROM per),
           (SELECT avg(g.cost) FILTER (WHERE g.estimated) FROM tags g)
    INTO v_tagged, v_weight, v_avg
    FROM (SELECT count(*) FROM flow_rows) written;
    IF v_tagged > 0 THEN
        UPDATE layover.fair_lines l
        SET active_weight = v_weight,
            mean_cost = CASE WHEN v_avg IS NULL THEN l.mean_cost ELSE coalesce(0.8 * l.mean_cost + 0.2 * v_avg, v_avg) END
        WHERE l.provider_key = p_key
        RETURNING l.mean_cost INTO v_mean;
    END IF;

    -- 2b. newly tagged jobs may have lower tags than jobs of their priority already booked and not
    -- picked yet (a tenant arriving behind the booked horizon): those give their permits to them,
    -- so that the newcomer is served from the permits already booked, not after them. The losers
    -- wait again holding no permit (their tags keep their place); the winners take the losers'
    -- slots in order. Within one priority only: the reserved share of a lower priority stays.
    -- (With token costs a winner may need more or less than the loser it replaces; the difference
    -- is the settle's to correct, as for any estimate.)
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

    -- 3. bookings. Bucket: the permits the request dimension has until the horizon (GCRA: the
    -- k-th from greatest(tat, now), k from 1, fits at start + (k - capacity) / rate), or up to
    -- p_max_jobs candidates when only tokens are limited; of them, in booking order, those whose
    -- slot (the latest over the limited dimensions, cumulated) is within the horizon. Slots: the
    -- free slots, each called now.
    v_unit := coalesce(v_mean, 1) * CASE WHEN p_rr > 0 THEN 1 / p_rr ELSE 1 END;
    IF p_mode = 'bucket' THEN
        v_slots := CASE WHEN p_rr > 0
                        THEN greatest(0, floor(extract(epoch FROM v_hend - v_start) * p_rr + p_rc))::int
                        ELSE least(p_max_jobs, 500) END;
        IF v_tokens AND v_slots > 0 THEN -- candidates: four times the jobs of the line's mean cost the tokens left by the horizon end admit
            v_slots := least(v_slots, greatest(5, ceil(4 * least(
                CASE WHEN p_tr > 0 THEN (extract(epoch FROM v_hend - v_tstart) * p_tr + p_tc) / (v_unit * p_tr) END,
                CASE WHEN p_ir > 0 THEN (extract(epoch FROM v_hend - v_istart) * p_ir + p_ic) / (v_unit * p_ir) END,
                CASE WHEN p_or > 0 THEN (extract(epoch FROM v_hend - v_ostart) * p_or + p_oc) / (v_unit * p_or) END)))::int);
        END IF;
    ELSE
        SELECT greatest(0, p_slots
                   - (SELECT count(*) FROM layover.concurrency_slots s
                      WHERE s.limit_key = p_key AND s.slot < p_slots AND s.holder_id IS NOT NULL
                        AND (s.claimed_at >= now()
                             OR EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                                        WHERE t.task_name = s.holder_type AND t.task_instance = s.holder_id
                                          AND t.version = s.holder_version AND t.picked
                                          AND t.last_heartbeat > p_now - make_interval(secs => p_dead_after_s))))
                   - (SELECT count(*) FROM layover.scheduled_tasks t
                      WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL
                        AND NOT t.picked AND t.permit_at >= p_now - make_interval(secs => p_grace_s)))::int
        INTO v_slots;
    END IF;
    IF v_slots > 0 THEN
        SELECT t.priority INTO v_top FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
        ORDER BY t.priority DESC, t.fair_tag LIMIT 1;
        -- the reserved share counts the jobs a round books: a token-only bucket's candidates are many
        -- more, so it counts the horizon's worth of jobs at the line's mean cost (seconds) instead
        v_credit := v_credit + p_low_share * CASE WHEN p_mode = 'bucket' AND p_rr <= 0
                                                  THEN least(v_slots, greatest(1, p_horizon_s / greatest(coalesce(v_mean, 1), 1e-6)))
                                                  ELSE v_slots END;
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
        ), each_need AS ( -- per job: what each token dimension takes of it (its need times the key's share,
            -- at most the dimension's capacity, as GCRA admits a need: a job too large for the bucket is
            -- booked like a full one, and parked as too large when picked); a job without an estimate
            -- takes the line's mean cost of every dimension
            SELECT f.*,
                   least(p_tc, CASE WHEN t.token_estimate IS NULL THEN v_unit * p_tr
                       ELSE t.token_estimate[1] * least(1, greatest(0.05, coalesce(v_ts, 1))) END) AS nt,
                   least(p_ic, CASE WHEN t.token_estimate IS NULL THEN v_unit * p_ir
                       ELSE t.token_estimate[2] * least(1, greatest(0.05, coalesce(v_is, 1))) END) AS ni,
                   least(p_oc, CASE WHEN t.token_estimate IS NULL THEN v_unit * p_or
                       ELSE t.token_estimate[3] * least(1, greatest(0.05, coalesce(v_os, 1))) END) AS no
            FROM first f
            JOIN layover.scheduled_tasks t ON t.task_name = f.task_name AND t.task_instance = f.task_instance
        ), may_fit AS ( -- the prefix that fits within the horizon, before any row is locked (a token bucket's
            -- candidates are many more than fit: locking them all would hold rows the workers pick)
            SELECT e.* FROM (
                SELECT e.*, layover.fair_slot(p_now, p_rr, p_rc, v_start, row_number() OVER w,
                           CASE WHEN v_tokens THEN ARRAY[p_tr, p_tc, p_ir, p_ic, p_or, p_oc] END,
                           ARRAY[v_tstart, v_istart, v_ostart],
                           ARRAY[sum(e.nt) OVER w, sum(e.ni) OVER w, sum(e.no) OVER w]) AS at
                FROM each_need e
                WINDOW w AS (ORDER BY e.cls, e.priority DESC, e.fair_tag ROWS UNBOUNDED PRECEDING)) e
            WHERE p_mode = 'slots' OR NOT v_tokens OR e.at <= v_hend
        ), locked AS (
            SELECT m.task_name, m.task_instance, m.fair_tag, m.priority, m.cls, m.nt, m.ni, m.no
            FROM may_fit m
            JOIN layover.scheduled_tasks t ON t.task_name = m.task_name AND t.task_instance = m.task_instance
            FOR UPDATE OF t SKIP LOCKED
        ), fitting AS ( -- the slots of the rows locked, in booking order (no more than may_fit gave them)
            SELECT l.*, CASE WHEN p_mode = 'slots' THEN p_now
                        ELSE layover.fair_slot(p_now, p_rr, p_rc, v_start, row_number() OVER w,
                           CASE WHEN v_tokens THEN ARRAY[p_tr, p_tc, p_ir, p_ic, p_or, p_oc] END,
                           ARRAY[v_tstart, v_istart, v_ostart],
                           ARRAY[sum(l.nt) OVER w, sum(l.ni) OVER w, sum(l.no) OVER w]) END AS at
            FROM locked l
            WINDOW w AS (ORDER BY l.cls, l.priority DESC, l.fair_tag ROWS UNBOUNDED PRECEDING)
        ), moved AS (
            UPDATE layover.scheduled_tasks t
            SET execution_time = s.at, permit_at = s.at, version = t.version + 1, last_reschedule_reason = 'fair',
                last_reschedule_detail = CASE WHEN p_mode = 'slots'
                    THEN 'fair share of ' || p_key || ': a concurrency slot free in its turn'
                    ELSE 'fair share of ' || p_key || ': a permit booked in its turn' END,
                last_rescheduled_at = p_now
            FROM fitting s
            WHERE t.task_name = s.task_name AND t.task_instance = s.task_instance
              AND (p_task_id IS NULL OR NOT (s.task_name = p_task_name AND s.task_instance = p_task_id))
            RETURNING t.task_name
        ), flow_counts AS (
            UPDATE layover.fair_flows f
            SET booked = f.booked + c.n, last_booked_at = p_now
            FROM (SELECT t.fairness_key, t.priority, count(*) AS n FROM fitting s
                  JOIN layover.scheduled_tasks t ON t.task_name = s.task_name AND t.task_instance = s.task_instance
                  GROUP BY t.fairness_key, t.priority) c
            WHERE f.provider_key = p_key AND f.fairness_key = c.fairness_key AND f.priority = c.priority
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM fitting), (SELECT max(fair_tag) FROM fitting),
               coalesce(v_my_slot, (SELECT at FROM fitting WHERE task_name = p_task_name AND task_instance = p_task_id)),
               (SELECT count(*) FROM fitting WHERE cls = 0),
               (SELECT coalesce(jsonb_object_agg(x.priority::text,
                           greatest(x.tag, layover.fair_class_clock(v_clocks, x.priority))), '{}'::jsonb)
                FROM (SELECT priority, max(fair_tag) AS tag FROM fitting GROUP BY priority) x),
               (SELECT ARRAY[sum(f2.nt), sum(f2.ni), sum(f2.no)] FROM fitting f2),
               (SELECT count(*) FROM fitting f3 WHERE f3.at <= p_now)
        INTO v_booked, v_max_tag, v_my_slot, v_low, v_clocks, v_sums, v_due
        FROM (SELECT count(*) FROM moved) m, (SELECT count(*) FROM flow_counts) fc;

        IF v_booked > 0 THEN
            IF p_mode = 'bucket' THEN
                IF p_rr > 0 THEN
                    PERFORM layover.book_requests(p_key, v_start, v_booked, p_rr);
                END IF;
                IF v_tokens THEN
                    UPDATE layover.buckets bk
                    SET token_tat = layover.gcra_take(bk.token_tat, p_now, p_tr, v_sums[1]),
                        input_tat = layover.gcra_take(bk.input_tat, p_now, p_ir, v_sums[2]),
                        output_tat = layover.gcra_take(bk.output_tat, p_now, p_or, v_sums[3])
                    WHERE bk.provider_key = p_key;
                END IF;
            ELSIF v_due > 0 THEN
                PERFORM pg_notify('layover_jobs', ''); -- the called jobs are due: wake the workers
            END IF;
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
                        * greatest(coalesce(v_weight, 1), 1e-9) / v_rate)));
        END IF;
    END IF;
    RETURN QUERY SELECT false, v_my_slot, v_my_est, v_booked, v_tagged,
        EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked),
        v_ts, v_is, v_os;
END
$$;

COMMENT ON FUNCTION layover.fair_round_limit(text, timestamptz, text, float8, float8, float8, float8, float8, float8,
        float8, float8, int, float8, float8, float8, float8, int, text, text, bigint, float8) IS
    'One round of a provider key''s fair queue (V25): a bucket of any dimensions (token costs) or a concurrency limit.';

-- V20's round, for workers of earlier versions: the general round on a request-only bucket.
CREATE OR REPLACE FUNCTION layover.fair_round(
        p_key text, p_now timestamptz, p_rate float8, p_cap float8, p_horizon_s float8, p_low_share float8,
        p_max_jobs int, p_task_name text, p_task_id text, p_version bigint, p_grace_s float8)
    RETURNS TABLE (carried boolean, slot timestamptz, estimate timestamptz, booked int, tagged int, waiting boolean)
    LANGUAGE sql VOLATILE AS
$$
    SELECT r.carried, r.slot, r.estimate, r.booked, r.tagged, r.waiting
    FROM layover.fair_round_limit(p_key, p_now, 'bucket', p_rate, p_cap, 0, 0, 0, 0, 0, 0, 0, 0, p_rate,
             p_horizon_s, p_low_share, p_max_jobs, p_task_name, p_task_id, p_version, p_grace_s) r
$$;

COMMENT ON FUNCTION layover.fair_round(text, timestamptz, float8, float8, float8, float8, int, text, text, bigint, float8) IS
    'For workers before V25: layover.fair_round_limit on a request-only bucket (one implementation, V25).';

-- ---------------------------------------------------------------------------
-- layover.limit_overrides: an operator's limits for a key at run time (ProviderStates#setLimit,
-- the console's key page; issue 19: "change a weight or a limit at run time, audited, reverted on
-- request"). Every worker uses a row's dimensions for its key in place of the ones it configured
-- (Layover.Builder#bucket, #concurrencyLimit), within about a second: a change NOTIFYs
-- layover_provider_state, and the one-second provider-state refresh reads the table too. A NULL
-- dimension keeps the configured one. Deleting the row (ProviderStates#revertLimit) gives the
-- configured limits back. The console records both in layover.audit_log.
--   limit_key           a provider key or a limit key (exact; no patterns)
--   requests_per_minute, tokens_per_minute, input_tokens_per_minute, output_tokens_per_minute
--                       the key's bucket dimensions (NULL: as configured)
--   max_in_flight       the key's concurrency limit (NULL: as configured)
--   set_by, set_at, reason   who set it, when, why
-- Written by core's internal.gate.Overrides only.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.limit_overrides (
    limit_key                text        PRIMARY KEY,
    requests_per_minute      float8,
    tokens_per_minute        float8,
    input_tokens_per_minute  float8,
    output_tokens_per_minute float8,
    max_in_flight            int,
    set_by                   text        NOT NULL,
    set_at                   timestamptz NOT NULL DEFAULT now(),
    reason                   text,
    CONSTRAINT limit_overrides_key_check CHECK (length(limit_key) BETWEEN 1 AND 200),
    CONSTRAINT limit_overrides_some_check CHECK (coalesce(requests_per_minute, tokens_per_minute, input_tokens_per_minute,
        output_tokens_per_minute, max_in_flight) IS NOT NULL),
    CONSTRAINT limit_overrides_rates_check CHECK (coalesce(requests_per_minute, 1) > 0 AND coalesce(tokens_per_minute, 1) > 0
        AND coalesce(input_tokens_per_minute, 1) > 0 AND coalesce(output_tokens_per_minute, 1) > 0),
    CONSTRAINT limit_overrides_in_flight_check CHECK (coalesce(max_in_flight, 1) BETWEEN 1 AND 100000)
);

COMMENT ON TABLE layover.limit_overrides IS
    'Operators'' limits for a key at run time (V25): in place of the configured ones in every worker until deleted.';

CREATE FUNCTION layover.notify_limit_override() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'limit_overrides',
            'key', coalesce(NEW.limit_key, OLD.limit_key),
            'by', coalesce(NEW.set_by, OLD.set_by))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER limit_overrides_notify AFTER INSERT OR UPDATE OR DELETE ON layover.limit_overrides
    FOR EACH ROW EXECUTE FUNCTION layover.notify_limit_override();
