-- What the schema changed since the pre-release chain (V1-V31), applied after the chain by
-- BaselineSchemaTest, which then compares the result with the baseline: the baseline is the chain
-- plus exactly these changes. Each statement's text is the baseline's (a function is compared by its
-- definition). Grouped by change.

-- The pick is the admission (docs/decisions/0001-the-pick-is-the-admission.md): the job table's
-- permit column, waiting-line and booking indexes, the bookings and fair rounds, the concurrency slots
-- go; the pick's indexes and functions come.
DROP VIEW layover.jobs;
DROP VIEW layover.fairness;
DROP VIEW layover.concurrency;
DROP INDEX layover.scheduled_tasks_fair_queue_idx, layover.scheduled_tasks_fair_booked_idx,
    layover.scheduled_tasks_fair_new_idx, layover.scheduled_tasks_permit_due_idx, layover.scheduled_tasks_line_idx;
ALTER TABLE layover.scheduled_tasks DROP COLUMN permit_at;

-- The pick (layover.pick) reads a queue through each of these, only the entries it takes:
--   jobs without a provider key, oldest first;
CREATE INDEX jobs_free_due ON layover.scheduled_tasks (execution_time, task_instance)
    WHERE NOT picked AND provider_key IS NULL;
--   a key's jobs without a fair-queue tag, highest priority then oldest first (and, one probe per key,
--   the keys that have jobs);
CREATE INDEX jobs_keyed_due ON layover.scheduled_tasks (provider_key, priority DESC NULLS LAST, execution_time,
                                                        task_instance)
    WHERE NOT picked AND provider_key IS NOT NULL AND fair_tag IS NULL;
--   a key's fair queue, highest priority then lowest tag first (a tagged job is due: a write that moves
--   a job's run time later clears its tag);
CREATE INDEX jobs_fair_queue ON layover.scheduled_tasks (provider_key, priority DESC NULLS LAST, fair_tag)
    WHERE NOT picked AND provider_key IS NOT NULL AND fair_tag IS NOT NULL;
--   a flow's last tag, where an enqueue's tags start (layover.fair_tags);
CREATE INDEX jobs_fair_flow ON layover.scheduled_tasks (provider_key, fairness_key, priority, fair_tag DESC)
    WHERE NOT picked AND provider_key IS NOT NULL AND fair_tag IS NOT NULL;
--   a key's slots in use: its jobs picked (with a live heartbeat), against its concurrency limit.
CREATE INDEX jobs_running_key ON layover.scheduled_tasks (provider_key) WHERE picked AND provider_key IS NOT NULL;

CREATE INDEX jobs_running_limit_keys ON layover.scheduled_tasks USING gin (limit_keys)
    WHERE picked AND limit_keys IS NOT NULL;

COMMENT ON COLUMN layover.scheduled_tasks.fair_tag IS
    'Its tag in its provider key''s fair queue (layover.fair_tags, at enqueue when due then); NULL: not in the queue '
    '(no fairness key, or moved to a later run time since: then among the key''s due jobs by run time).';

COMMENT ON COLUMN layover.scheduled_tasks.token_estimate IS
    'The job''s token estimate {combined, input, output} (JobType.Builder#tokenEstimate or tokenCost), written at '
    'enqueue: what its pick reserves from its key''s token limits, and its cost in a fair queue. NULL: none.';

DROP FUNCTION layover.admit_tokens(timestamptz, text, text, bigint, text, text[], float8[], float8[], float8[],
    float8[], float8[], float8[], float8[], float8[], int[], float8, float8, float8, float8);
DROP FUNCTION layover.fair_round(text, timestamptz, float8, float8, float8, float8, int, text, text, bigint, float8);
DROP FUNCTION layover.fair_round_limit(text, timestamptz, text, float8, float8, float8, float8, float8, float8,
    float8, float8, int, float8, float8, float8, float8, int, text, text, bigint, float8);
DROP FUNCTION layover.enqueue_places(text, int, float8);
DROP FUNCTION layover.enqueue_permits(text, int, float8);
DROP FUNCTION layover.enqueue_rate(text);
DROP FUNCTION layover.book_requests(text, timestamptz, bigint, float8);
DROP FUNCTION layover.spend_held_permit(text, text, bigint, timestamptz, float8);
DROP FUNCTION layover.holds_permit(text, text, bigint, timestamptz, float8);
DROP FUNCTION layover.fair_class_clock(jsonb, smallint);
DROP FUNCTION layover.fair_cost(float8[], float8, float8, float8, float8, float8, float8, float8, float8);
DROP FUNCTION layover.fair_slot(timestamptz, float8, float8, timestamptz, bigint, float8[], timestamptz[], float8[]);
DROP TABLE layover.fair_flows;
DROP TABLE layover.fair_lines;
DROP TABLE layover.concurrency_slots;
ALTER TABLE layover.buckets DROP COLUMN last_slot, DROP COLUMN last_granted_requests, DROP COLUMN last_granted_tokens,
    DROP COLUMN discovery_waitlist, ADD COLUMN pattern text;
ALTER TABLE layover.concurrency_limits ADD COLUMN pattern text;

CREATE TABLE layover.fair_lines (
    provider_key     text        PRIMARY KEY,
    class_clocks     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    low_credit       float8      NOT NULL DEFAULT 0,
    picks            bigint      NOT NULL DEFAULT 0,
    last_pick_at     timestamptz
);

DROP FUNCTION layover.configure_concurrency(text, int, text);

CREATE FUNCTION layover.configure_concurrency(p_key text, p_max int, p_by text) RETURNS void
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    INSERT INTO layover.concurrency_limits (limit_key, max_in_flight, configured_by)
    VALUES (p_key, p_max, p_by)
    ON CONFLICT (limit_key) DO UPDATE
    SET max_in_flight = excluded.max_in_flight, configured_at = now(), configured_by = excluded.configured_by,
        pattern = NULL
    WHERE layover.concurrency_limits.max_in_flight <> excluded.max_in_flight
       OR layover.concurrency_limits.pattern IS NOT NULL;
    UPDATE layover.concurrency_limits
    SET max_in_flight = p_max, configured_at = now(), configured_by = p_by
    WHERE pattern = p_key AND max_in_flight <> p_max;
END
$$;

CREATE FUNCTION layover.clocks_merge(a jsonb, b jsonb)
    RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
    SELECT coalesce(jsonb_object_agg(k, greatest((a ->> k)::float8, (b ->> k)::float8)), '{}'::jsonb)
    FROM (SELECT jsonb_object_keys(coalesce(a, '{}'::jsonb)) UNION SELECT jsonb_object_keys(coalesce(b, '{}'::jsonb))) s(k)
$$;

CREATE FUNCTION layover.limits_in_force(p_key text, p_now timestamptz)
    RETURNS TABLE (rr float8, tr float8, ir float8, orr float8, rc float8, tc float8, ic float8, oc float8,
                   request_tat timestamptz, token_tat timestamptz, input_tat timestamptz, output_tat timestamptz,
                   token_share float8, input_share float8, output_share float8, max_in_flight int)
    LANGUAGE sql STABLE AS
$$
    SELECT r.rr, r.tr, r.ir, r.orr,
           CASE WHEN r.rr > 0 THEN layover.bucket_capacity(r.rr * 60, r.burst_ms) END,
           CASE WHEN r.tr > 0 THEN layover.bucket_capacity(r.tr * 60, r.tburst_ms) END,
           CASE WHEN r.ir > 0 THEN layover.bucket_capacity(r.ir * 60, r.tburst_ms) END,
           CASE WHEN r.orr > 0 THEN layover.bucket_capacity(r.orr * 60, r.tburst_ms) END,
           r.request_tat, r.token_tat, r.input_tat, r.output_tat,
           r.token_share, r.input_share, r.output_share, r.max_in_flight
    FROM (SELECT coalesce(o.requests_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                      THEN bk.requests_per_minute END) / 60.0 AS rr,
                 coalesce(o.tokens_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                    THEN bk.tokens_per_minute END) / 60.0 AS tr,
                 coalesce(o.input_tokens_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                          THEN bk.input_tokens_per_minute END) / 60.0 AS ir,
                 coalesce(o.output_tokens_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                           THEN bk.output_tokens_per_minute END) / 60.0 AS orr,
                 coalesce(bk.burst_ms, 1000) AS burst_ms, coalesce(bk.token_burst_ms, bk.burst_ms, 1000) AS tburst_ms,
                 bk.request_tat, bk.token_tat, bk.input_tat, bk.output_tat,
                 least(1, greatest(0.05, coalesce(bk.token_share, 1))) AS token_share,
                 least(1, greatest(0.05, coalesce(bk.input_share, 1))) AS input_share,
                 least(1, greatest(0.05, coalesce(bk.output_share, 1))) AS output_share,
                 coalesce(o.max_in_flight, cl.max_in_flight) AS max_in_flight
          FROM (SELECT 1) one
          LEFT JOIN layover.buckets bk ON bk.provider_key = p_key
          LEFT JOIN layover.limit_overrides o ON o.limit_key = p_key
          LEFT JOIN layover.concurrency_limits cl ON cl.limit_key = p_key) r
$$;

CREATE FUNCTION layover.fair_tags(p_key text, p_now timestamptz, p_flows text[], p_priorities int[],
                                  p_tokens float8[], p_input float8[], p_output float8[])
    RETURNS float8[] LANGUAGE sql STABLE AS
$$
    WITH j AS (
        SELECT * FROM unnest(p_flows, p_priorities, p_tokens, p_input, p_output) WITH ORDINALITY
                 AS u(flow, pr, t, i, o, ord)
    ), k AS (
        SELECT l.*, fl.class_clocks FROM layover.limits_in_force(p_key, p_now) l
        LEFT JOIN layover.fair_lines fl ON fl.provider_key = p_key
    ), f AS (
        SELECT d.flow, d.pr, layover.fairness_weight(d.flow) AS w,
               greatest(coalesce((k.class_clocks ->> d.pr::text)::float8, 0),
                        coalesce((SELECT t.fair_tag FROM layover.scheduled_tasks t
                                  WHERE t.provider_key = p_key AND t.fairness_key = d.flow AND t.priority = d.pr
                                    AND NOT t.picked AND t.fair_tag IS NOT NULL
                                  ORDER BY t.fair_tag DESC LIMIT 1), 0)) AS start
        FROM (SELECT DISTINCT flow, pr FROM j) d, k
    )
    SELECT array_agg(x.tag ORDER BY x.ord) FROM (
        SELECT j.ord, f.start + sum(
                   CASE WHEN coalesce(k.tr, 0) + coalesce(k.ir, 0) + coalesce(k.orr, 0) > 0
                        THEN greatest(CASE WHEN k.rr > 0 THEN 1 END,
                                      coalesce(j.t, 0) * k.token_share / nullif(k.tr, 0) * coalesce(k.rr, 1),
                                      coalesce(j.i, 0) * k.input_share / nullif(k.ir, 0) * coalesce(k.rr, 1),
                                      coalesce(j.o, 0) * k.output_share / nullif(k.orr, 0) * coalesce(k.rr, 1),
                                      1e-6)
                        ELSE 1 END / f.w) OVER (PARTITION BY j.flow, j.pr ORDER BY j.ord) AS tag
        FROM j JOIN f ON f.flow = j.flow AND f.pr = j.pr, k
    ) x
$$;

CREATE FUNCTION layover.limit_rows(p_keys text[]) RETURNS void
    LANGUAGE plpgsql AS
$$
BEGIN
    IF EXISTS (SELECT 1 FROM layover.buckets b WHERE b.provider_key LIKE '%*') THEN
        INSERT INTO layover.buckets (provider_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute,
                                     output_tokens_per_minute, burst_ms, token_burst_ms, configured_by, pattern)
        SELECT u.k, p.requests_per_minute, p.tokens_per_minute, p.input_tokens_per_minute,
               p.output_tokens_per_minute, p.burst_ms, p.token_burst_ms, p.configured_by, p.provider_key
        FROM unnest(p_keys) u(k)
        CROSS JOIN LATERAL (SELECT * FROM layover.buckets b
                            WHERE b.provider_key LIKE '%*' AND starts_with(u.k, left(b.provider_key, -1))
                            ORDER BY length(b.provider_key) DESC LIMIT 1) p
        WHERE NOT u.k LIKE '%*'
        ON CONFLICT ON CONSTRAINT buckets_pkey DO NOTHING;
    END IF;
    IF EXISTS (SELECT 1 FROM layover.concurrency_limits c WHERE c.limit_key LIKE '%*') THEN
        INSERT INTO layover.concurrency_limits (limit_key, max_in_flight, configured_by, pattern)
        SELECT u.k, p.max_in_flight, p.configured_by, p.limit_key
        FROM unnest(p_keys) u(k)
        CROSS JOIN LATERAL (SELECT * FROM layover.concurrency_limits c
                            WHERE c.limit_key LIKE '%*' AND starts_with(u.k, left(c.limit_key, -1))
                            ORDER BY length(c.limit_key) DESC LIMIT 1) p
        WHERE NOT u.k LIKE '%*'
        ON CONFLICT ON CONSTRAINT concurrency_limits_pkey DO NOTHING;
    END IF;
    INSERT INTO layover.buckets (provider_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute,
                                 output_tokens_per_minute, burst_ms, learned_until, configured_by)
    SELECT o.limit_key, o.requests_per_minute, o.tokens_per_minute, o.input_tokens_per_minute,
           o.output_tokens_per_minute, 1000, '-infinity', 'operator'
    FROM layover.limit_overrides o
    WHERE o.limit_key = ANY(p_keys)
      AND coalesce(o.requests_per_minute, o.tokens_per_minute, o.input_tokens_per_minute, o.output_tokens_per_minute) > 0
    ON CONFLICT ON CONSTRAINT buckets_pkey DO NOTHING;
END
$$;

CREATE FUNCTION layover.take(p_key text, p_now timestamptz, p_need float8[])
    RETURNS TABLE (taken boolean, fits_at timestamptz, reserved float8[], rates float8[])
    LANGUAGE plpgsql AS
$$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := coalesce(p_now, clock_timestamp());
    l      record;
    v_need float8[];
    v_fits timestamptz;
BEGIN
    PERFORM set_config('lock_timeout', '2s', true);
    PERFORM layover.limit_rows(ARRAY[p_key]);
    PERFORM 1 FROM layover.buckets b WHERE b.provider_key = p_key FOR UPDATE;
    SELECT * INTO l FROM layover.limits_in_force(p_key, v_now);
    -- what the key's calls use of such a need (its share of each dimension), as the pick reserves
    v_need := ARRAY[CASE WHEN l.tr > 0 THEN coalesce(p_need[1], 0) * l.token_share ELSE 0 END,
                    CASE WHEN l.ir > 0 THEN coalesce(p_need[2], 0) * l.input_share ELSE 0 END,
                    CASE WHEN l.orr > 0 THEN coalesce(p_need[3], 0) * l.output_share ELSE 0 END];
    v_fits := greatest(v_now,
                       layover.gcra_fits_at(l.request_tat, l.rr, l.rc, 1),
                       layover.gcra_fits_at(l.token_tat, l.tr, l.tc, v_need[1]),
                       layover.gcra_fits_at(l.input_tat, l.ir, l.ic, v_need[2]),
                       layover.gcra_fits_at(l.output_tat, l.orr, l.oc, v_need[3]));
    IF v_fits > v_now THEN
        RETURN QUERY SELECT false, v_fits, NULL::float8[], NULL::float8[];
        RETURN;
    END IF;
    UPDATE layover.buckets b
    SET request_tat = layover.gcra_take(b.request_tat, v_now, l.rr, 1),
        token_tat = layover.gcra_take(b.token_tat, v_now, l.tr, v_need[1]),
        input_tat = layover.gcra_take(b.input_tat, v_now, l.ir, v_need[2]),
        output_tat = layover.gcra_take(b.output_tat, v_now, l.orr, v_need[3])
    WHERE b.provider_key = p_key;
    RETURN QUERY SELECT true, v_now, v_need, ARRAY[coalesce(l.tr, 0), coalesce(l.ir, 0), coalesce(l.orr, 0)];
END
$$;

-- ---------------------------------------------------------------------------
-- How many more jobs a limit key (a tenant's, or a provider key named as one) admits now: the
-- requests its bucket has free, and the slots its concurrency limit has free (its jobs picked with
-- a live heartbeat, p_dead being how old a heartbeat may be); 1,000,000 when it limits neither.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.limit_free(p_key text, p_now timestamptz, p_dead interval)
    RETURNS float8 LANGUAGE sql STABLE AS
$$
    SELECT coalesce(least(
               CASE WHEN l.rr > 0 THEN floor(layover.gcra_free(l.request_tat, p_now, l.rr, l.rc)) END,
               l.max_in_flight - (SELECT count(*) FROM layover.scheduled_tasks x
                                  WHERE (x.provider_key = p_key OR x.limit_keys @> ARRAY[p_key])
                                    AND x.picked AND x.last_heartbeat > p_now - p_dead)),
           1000000)
    FROM layover.limits_in_force(p_key, p_now) l
$$;

CREATE FUNCTION layover.pick_keys(p_after text, p_max int)
    RETURNS text[] LANGUAGE sql STABLE AS
$$
    WITH RECURSIVE
    fifo_after AS (
        (SELECT t.provider_key AS k FROM layover.scheduled_tasks t
         WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL AND t.provider_key > p_after
         ORDER BY t.provider_key LIMIT 1)
        UNION ALL
        SELECT (SELECT t.provider_key FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL AND t.provider_key > f.k
                ORDER BY t.provider_key LIMIT 1)
        FROM fifo_after f WHERE f.k IS NOT NULL
    ),
    fifo_first AS (
        (SELECT t.provider_key AS k FROM layover.scheduled_tasks t
         WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL
         ORDER BY t.provider_key LIMIT 1)
        UNION ALL
        SELECT (SELECT t.provider_key FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL AND t.provider_key > f.k
                ORDER BY t.provider_key LIMIT 1)
        FROM fifo_first f WHERE f.k <= p_after
    ),
    fair_after AS (
        (SELECT t.provider_key AS k FROM layover.scheduled_tasks t
         WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL AND t.provider_key > p_after
         ORDER BY t.provider_key LIMIT 1)
        UNION ALL
        SELECT (SELECT t.provider_key FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL AND t.provider_key > f.k
                ORDER BY t.provider_key LIMIT 1)
        FROM fair_after f WHERE f.k IS NOT NULL
    ),
    fair_first AS (
        (SELECT t.provider_key AS k FROM layover.scheduled_tasks t
         WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL
         ORDER BY t.provider_key LIMIT 1)
        UNION ALL
        SELECT (SELECT t.provider_key FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL AND t.provider_key > f.k
                ORDER BY t.provider_key LIMIT 1)
        FROM fair_first f WHERE f.k <= p_after
    ),
    found AS (
        (SELECT k FROM fifo_after WHERE k IS NOT NULL LIMIT p_max)
        UNION (SELECT k FROM fair_after WHERE k IS NOT NULL LIMIT p_max)
        UNION (SELECT k FROM fifo_first WHERE k <= p_after LIMIT p_max)
        UNION (SELECT k FROM fair_first WHERE k <= p_after LIMIT p_max)
    )
    SELECT coalesce(array_agg(s.k ORDER BY s.k <= p_after, s.k), '{}')
    FROM (SELECT k FROM found ORDER BY k <= p_after, k LIMIT p_max) s
$$;

CREATE FUNCTION layover.pick(p_worker text, p_now timestamptz, p_limit int, p_types text[], p_after text,
                             p_options jsonb)
    RETURNS TABLE (task_name text, task_instance text, task_data bytea, execution_time timestamptz,
                   picked boolean, picked_by text, last_success timestamptz, last_failure timestamptz,
                   consecutive_failures int, last_heartbeat timestamptz, version bigint, priority smallint,
                   provider_key text, verdict text, trial_token text, reserved float8[], rates float8[], detail text,
                   turn bigint)
    LANGUAGE plpgsql AS
$$
#variable_conflict use_column
DECLARE
    v_now          timestamptz := coalesce(p_now, clock_timestamp());
    v_dead         interval := make_interval(secs => coalesce((p_options ->> 'dead_after_s')::float8, 40));
    v_trial        interval := make_interval(secs => coalesce((p_options ->> 'trial_timeout_s')::float8, 60));
    v_low          float8 := coalesce((p_options ->> 'low_priority_share')::float8, 0.1);
    v_keyed        int;
    v_keys         text[];
    v_lkeys        text[] := '{}';
    v_held         text[];
    v_free         text[];
    v_more         text[];
    v_blocked      text[] := '{}';
    v_lk_names     text[] := '{}';
    v_lk_free      float8[] := '{}';
    v_round        int;
    v_trial_keys   text[];
    v_trial_tokens text[];
    v_taken        int := 0;
    v_n            int;
BEGIN
    -- nothing here waits long for a lock another transaction holds (a bucket row a settle writes)
    PERFORM set_config('lock_timeout', '2s', true);
    -- 1. jobs whose deadline passed while they waited, whatever their key admits: their runs park them
    RETURN QUERY
    WITH chosen AS (
        SELECT t.task_name, t.task_instance FROM layover.scheduled_tasks t
        WHERE t.deadline < v_now AND NOT t.picked AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
        ORDER BY t.deadline LIMIT least(p_limit, 100)
        FOR UPDATE SKIP LOCKED
    )
    UPDATE layover.scheduled_tasks t
    SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
    FROM chosen c WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
    RETURNING t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
              t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
              'deadline'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint;
    GET DIAGNOSTICS v_taken = ROW_COUNT;

    -- 2. jobs with a provider key, as many of each key's as it admits
    v_keyed := CASE WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                                 WHERE NOT t.picked AND t.provider_key IS NULL AND t.execution_time <= v_now
                                   AND t.task_name = ANY(p_types))
                    THEN ceil((p_limit - v_taken) * 0.75)::int
                    ELSE p_limit - v_taken END;
    v_keys := layover.pick_keys(coalesce(p_after, ''), greatest(p_limit, 64));
    IF v_keyed > 0 AND cardinality(v_keys) > 0 THEN
        IF coalesce((p_options ->> 'limit_keys')::boolean, false) THEN
            -- the limit keys (tenants) of the jobs each key would admit first, in the orders of its queues below
            -- (a job whose limit keys are not held by this pick is not admitted by it). A limit key with nothing
            -- free now, or held by another pick, blocks: its jobs are passed over below, and the limit keys of
            -- the jobs behind them are gathered too (at most three rounds)
            FOR v_round IN 1..3 LOOP
                v_more := ARRAY(
                    SELECT DISTINCT lk FROM unnest(v_keys) u(k)
                    CROSS JOIN LATERAL (
                        (SELECT t.limit_keys FROM layover.scheduled_tasks t
                         WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NULL AND t.execution_time <= v_now
                           AND t.task_name = ANY(p_types) AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                         ORDER BY t.priority DESC NULLS LAST, t.execution_time, t.task_instance LIMIT v_keyed)
                        UNION ALL
                        (SELECT t.limit_keys FROM layover.scheduled_tasks t
                         WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                           AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                           AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                         ORDER BY t.priority DESC NULLS LAST, t.fair_tag LIMIT v_keyed)
                        UNION ALL
                        (SELECT t.limit_keys FROM layover.scheduled_tasks t
                         WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                           AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                           AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                           AND t.priority < (SELECT h.priority FROM layover.scheduled_tasks h
                                             WHERE h.provider_key = u.k AND NOT h.picked AND h.fair_tag IS NOT NULL
                                               AND h.task_name = ANY(p_types)
                                             ORDER BY h.priority DESC NULLS LAST, h.fair_tag LIMIT 1)
                         ORDER BY t.priority DESC NULLS LAST, t.fair_tag LIMIT v_keyed)) j
                    CROSS JOIN LATERAL unnest(j.limit_keys) lk
                    WHERE lk <> ALL(v_lkeys));
                EXIT WHEN cardinality(v_more) = 0;
                v_lkeys := v_lkeys || v_more;
                PERFORM layover.limit_rows(ARRAY(SELECT k FROM unnest(v_more) k
                                                 WHERE pg_try_advisory_xact_lock(1282371, hashtext(k))));
                -- what each admits now: requests free, slots free (its jobs picked with a live heartbeat)
                SELECT v_blocked || coalesce(array_agg(f.k) FILTER (WHERE f.free < 1), '{}'),
                       v_lk_names || coalesce(array_agg(f.k) FILTER (WHERE f.free >= 1), '{}'),
                       v_lk_free || coalesce(array_agg(f.free) FILTER (WHERE f.free >= 1), '{}')
                INTO v_blocked, v_lk_names, v_lk_free
                FROM (SELECT m.k, CASE WHEN NOT pg_try_advisory_xact_lock(1282371, hashtext(m.k)) THEN 0
                                       ELSE layover.limit_free(m.k, v_now, v_dead) END AS free
                      FROM unnest(v_more) m(k)) f;
                EXIT WHEN NOT (v_blocked && v_more);
            END LOOP;
        END IF;
        -- one pick at a time admits for a key: a key another pick holds is left to it
        v_held := ARRAY(SELECT k FROM unnest(v_keys || v_lkeys) k WHERE pg_try_advisory_xact_lock(1282371, hashtext(k)));
        PERFORM layover.limit_rows(v_held);
        -- the one trial call of each held key whose breaker's open period is over, for a key with a due job
        SELECT coalesce(array_agg(c.provider_key), '{}'), coalesce(array_agg(c.trial_token), '{}')
        INTO v_trial_keys, v_trial_tokens
        FROM layover.claim_trials(v_held, p_types, p_worker, v_now, v_trial) c;

        -- a new statement, whose snapshot sees every pick that held these keys before this one: each key in
        -- turn, as many of its jobs as it admits, until the pick is full (the keys' reads stop there)
        RETURN QUERY
        WITH cand AS (
            SELECT u.ord, s.*, j.*
            FROM unnest(v_keys) WITH ORDINALITY AS u(k, ord)
            CROSS JOIN LATERAL (
                -- the key: its mode, what its limits admit now (n jobs, free tokens), its fair queue's credit
                SELECT m.*,
                       CASE m.mode
                           WHEN 'run' THEN greatest(0, least(floor(coalesce(m.req_free, v_keyed)),
                                                             coalesce(m.slots_free, v_keyed), v_keyed))::int
                           WHEN 'trial' THEN 1
                           WHEN 'open' THEN least(v_keyed, 100)
                           ELSE 0 END AS n,
                       m.mode = 'run' AND EXISTS (
                           SELECT 1 FROM layover.scheduled_tasks t
                           WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                             AND t.task_name = ANY(p_types)
                             AND t.priority < (SELECT h.priority FROM layover.scheduled_tasks h
                                               WHERE h.provider_key = u.k AND NOT h.picked AND h.fair_tag IS NOT NULL
                                                 AND h.task_name = ANY(p_types)
                                               ORDER BY h.priority DESC NULLS LAST, h.fair_tag LIMIT 1)) AS has_low
                FROM (SELECT l.*,
                             CASE WHEN NOT (u.k = ANY(v_held)) THEN 'elsewhere'
                                  WHEN cd.until IS NOT NULL THEN 'cooling'
                                  WHEN br.state = 'open' AND br.open_until > v_now THEN 'open'
                                  WHEN u.k = ANY(v_trial_keys) THEN 'trial'
                                  WHEN coalesce(br.state, 'closed') <> 'closed' THEN 'trial_out'
                                  ELSE 'run' END AS mode,
                             v_trial_tokens[array_position(v_trial_keys, u.k)] AS token,
                             br.open_until, br.reason AS b_reason, coalesce(fl.low_credit, 0) AS low_credit,
                             CASE WHEN l.rr > 0 THEN layover.gcra_free(l.request_tat, v_now, l.rr, l.rc) END AS req_free,
                             CASE WHEN l.tr > 0 THEN layover.gcra_free(l.token_tat, v_now, l.tr, l.tc) END AS tok_free,
                             CASE WHEN l.ir > 0 THEN layover.gcra_free(l.input_tat, v_now, l.ir, l.ic) END AS in_free,
                             CASE WHEN l.orr > 0 THEN layover.gcra_free(l.output_tat, v_now, l.orr, l.oc) END AS out_free,
                             CASE WHEN l.max_in_flight IS NOT NULL THEN l.max_in_flight - (
                                  SELECT count(*) FROM layover.scheduled_tasks x
                                  WHERE x.provider_key = u.k AND x.picked AND x.last_heartbeat > v_now - v_dead) END AS slots_free
                      FROM layover.limits_in_force(u.k, v_now) l
                      LEFT JOIN layover.breakers br ON br.provider_key = u.k
                      LEFT JOIN layover.cooldowns cd ON cd.provider_key = u.k AND cd.until > v_now
                      LEFT JOIN layover.fair_lines fl ON fl.provider_key = u.k) m
            ) s
            CROSS JOIN LATERAL (
                -- its jobs in its order, each with its verdict: untagged due jobs, highest priority then oldest first
                -- (and a few past its admission, read to see whether a rate limit kept them waiting longer than
                -- their type's maxDeferral: a wait for a concurrency slot or a worker never parks), then the low
                -- share of its fair queue, then the fair queue in tag order; a job of a blocked limit key is passed over
                WITH d AS (
                    SELECT x.*, row_number() OVER (ORDER BY x.queue, x.pr DESC, x.ordkey, x.execution_time,
                                                            x.task_instance) AS rn0
                    FROM (
                        SELECT DISTINCT ON (a.task_instance, a.task_name) a.*
                        FROM (
                            (SELECT t.task_name, t.task_instance, t.execution_time, t.priority, t.fair_tag,
                                    t.token_estimate, t.limit_keys, 1 AS queue, coalesce(t.priority, -32768) AS pr,
                                    extract(epoch FROM t.execution_time)::float8 AS ordkey
                             FROM layover.scheduled_tasks t
                             WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NULL
                               AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                               AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                             ORDER BY t.priority DESC NULLS LAST, t.execution_time, t.task_instance
                             LIMIT s.n + 8)
                            UNION ALL
                            (SELECT t.task_name, t.task_instance, t.execution_time, t.priority, t.fair_tag,
                                    t.token_estimate, t.limit_keys, 2, coalesce(t.priority, -32768), t.fair_tag
                             FROM layover.scheduled_tasks t
                             WHERE s.has_low AND t.provider_key = u.k AND NOT t.picked
                               AND t.fair_tag IS NOT NULL AND t.execution_time <= v_now
                               AND t.task_name = ANY(p_types) AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                               AND t.priority < (SELECT h.priority FROM layover.scheduled_tasks h
                                                 WHERE h.provider_key = u.k AND NOT h.picked AND h.fair_tag IS NOT NULL
                                                   AND h.task_name = ANY(p_types)
                                                 ORDER BY h.priority DESC NULLS LAST, h.fair_tag LIMIT 1)
                             ORDER BY t.priority DESC NULLS LAST, t.fair_tag
                             LIMIT least(s.n, floor(s.low_credit + v_low * s.n))::int)
                            UNION ALL
                            (SELECT t.task_name, t.task_instance, t.execution_time, t.priority, t.fair_tag,
                                    t.token_estimate, t.limit_keys, 3, coalesce(t.priority, -32768), t.fair_tag
                             FROM layover.scheduled_tasks t
                             WHERE s.n > 0 AND t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                               AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                               AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                             ORDER BY t.priority DESC NULLS LAST, t.fair_tag
                             LIMIT s.n)
                        ) a
                        ORDER BY a.task_instance, a.task_name, a.queue
                    ) x
                ), tk AS (
                    -- whether each of its limit keys has a place left for it, in the key's order
                    SELECT y.task_name, y.task_instance, bool_and(y.ok) AS ok
                    FROM (SELECT d.task_name, d.task_instance,
                                 lk.key = u.k OR row_number() OVER (PARTITION BY lk.key ORDER BY d.rn0)
                                     <= coalesce(v_lk_free[array_position(v_lk_names, lk.key)], 0) AS ok
                          FROM d CROSS JOIN LATERAL unnest(d.limit_keys) lk(key)) y
                    GROUP BY y.task_name, y.task_instance
                )
                SELECT f.*,
                       CASE WHEN f.too_large AND s.mode IN ('run', 'trial') THEN 'too_large'
                            WHEN f.fits AND s.mode = 'open' THEN 'breaker_open'
                            WHEN f.fits AND s.mode = 'trial' THEN 'trial'
                            WHEN f.fits THEN 'run'
                            WHEN f.queue = 1 AND f.tenant_ok
                                 AND (s.mode IN ('cooling', 'trial_out')
                                      OR (s.mode = 'run' AND coalesce(s.slots_free, 1) > 0
                                          AND (f.rn <= s.n OR (s.rr > 0 AND f.rn > floor(greatest(s.req_free, 0))))))
                                 AND f.execution_time < v_now - make_interval(
                                     secs => coalesce((p_options -> 'deferral_s' ->> f.task_name)::float8, 3600))
                            THEN 'deferral' END AS verdict
                FROM (
                    SELECT r.*,
                           CASE s.mode
                               WHEN 'trial' THEN r.rn = 1 AND NOT r.too_large AND r.tenant_ok
                               WHEN 'open' THEN r.rn <= s.n
                               WHEN 'run' THEN r.rn <= s.n AND NOT r.too_large AND r.tenant_ok
                                   AND (coalesce(s.tr, 0) <= 0 OR sum(r.fit_t) OVER w <= greatest(s.tok_free, 0))
                                   AND (coalesce(s.ir, 0) <= 0 OR sum(r.fit_i) OVER w <= greatest(s.in_free, 0))
                                   AND (coalesce(s.orr, 0) <= 0 OR sum(r.fit_o) OVER w <= greatest(s.out_free, 0))
                               ELSE false END AS fits
                    FROM (
                        SELECT q.*,
                               q.need_t > coalesce(s.tc, 'infinity') OR q.need_i > coalesce(s.ic, 'infinity')
                                   OR q.need_o > coalesce(s.oc, 'infinity') AS too_large,
                               CASE WHEN q.need_t > coalesce(s.tc, 'infinity') THEN 0 ELSE q.need_t END AS fit_t,
                               CASE WHEN q.need_i > coalesce(s.ic, 'infinity') THEN 0 ELSE q.need_i END AS fit_i,
                               CASE WHEN q.need_o > coalesce(s.oc, 'infinity') THEN 0 ELSE q.need_o END AS fit_o
                        FROM (
                            -- a job its limit keys refuse (no place left in one of them) takes none of the key's
                            SELECT b.*, row_number() OVER (ORDER BY NOT b.tenant_ok, b.rn0) AS rn,
                                   CASE WHEN s.tr > 0 THEN coalesce(b.token_estimate[1], 0) * s.token_share ELSE 0 END AS need_t,
                                   CASE WHEN s.ir > 0 THEN coalesce(b.token_estimate[2], 0) * s.input_share ELSE 0 END AS need_i,
                                   CASE WHEN s.orr > 0 THEN coalesce(b.token_estimate[3], 0) * s.output_share ELSE 0 END AS need_o
                            FROM (
                                SELECT d.*, coalesce(tk.ok, true) AS tenant_ok
                                FROM d LEFT JOIN tk ON tk.task_name = d.task_name AND tk.task_instance = d.task_instance
                            ) b
                        ) q
                    ) r
                    WINDOW w AS (ORDER BY r.rn)
                ) f
            ) j
            WHERE s.mode NOT IN ('elsewhere') AND (s.mode <> 'trial' OR s.token IS NOT NULL) AND j.verdict IS NOT NULL
            ORDER BY u.ord, j.rn
            LIMIT v_keyed
        ), tenants AS (
            -- a job with limit keys: each of them admits it too (its place among the jobs they admit this pick)
            SELECT lk.task_name, lk.task_instance,
                   bool_and(lk.key = ANY(v_held) AND lk.place <= layover.limit_free(lk.key, v_now, v_dead)) AS ok
            FROM (SELECT c.task_name, c.task_instance, x.key,
                         row_number() OVER (PARTITION BY x.key ORDER BY c.ord, c.rn) AS place
                  FROM cand c CROSS JOIN LATERAL unnest(c.limit_keys) x(key)
                  WHERE c.verdict IN ('run', 'trial')) lk
            GROUP BY lk.task_name, lk.task_instance
        ), locked AS (
            -- the chosen rows, locked now; one another transaction holds (an operator's pause, a worker's
            -- write) is left for a later pick rather than waited for, and one changed since this statement's
            -- snapshot is rechecked
            SELECT c.*
            FROM cand c
            JOIN layover.scheduled_tasks x ON x.task_name = c.task_name AND x.task_instance = c.task_instance
            LEFT JOIN tenants tn ON tn.task_name = c.task_name AND tn.task_instance = c.task_instance
            WHERE NOT x.picked AND x.execution_time <= v_now
              AND (coalesce(tn.ok, true) OR c.verdict NOT IN ('run', 'trial'))
            FOR UPDATE OF x SKIP LOCKED
        ), taken AS (
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM locked c
            WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.*, c.ord, c.verdict, c.token, c.fair_tag AS tag, c.queue, c.has_low, c.low_credit,
                      c.need_t, c.need_i, c.need_o, c.rr, c.tr, c.ir, c.orr, c.b_reason, c.open_until
        ), spent AS (
            -- the permits and tokens the admitted jobs took from their keys' buckets (a limit key's: its requests),
            -- written by the statement that takes the jobs: an admission and what it spends are one write
            UPDATE layover.buckets b
            SET request_tat = layover.gcra_take(b.request_tat, v_now, l.rr, s.n),
                token_tat = layover.gcra_take(b.token_tat, v_now, l.tr, s.t),
                input_tat = layover.gcra_take(b.input_tat, v_now, l.ir, s.i),
                output_tat = layover.gcra_take(b.output_tat, v_now, l.orr, s.o)
            FROM (SELECT k.key, count(*)::float8 AS n, sum(t.need_t) FILTER (WHERE k.own) AS t,
                         sum(t.need_i) FILTER (WHERE k.own) AS i, sum(t.need_o) FILTER (WHERE k.own) AS o
                  FROM taken t
                  CROSS JOIN LATERAL (SELECT t.provider_key, true
                                      UNION ALL SELECT x, false FROM unnest(t.limit_keys) x WHERE x <> t.provider_key)
                      k(key, own)
                  WHERE t.verdict IN ('run', 'trial')
                  GROUP BY k.key) s
            CROSS JOIN LATERAL layover.limits_in_force(s.key, v_now) l
            WHERE b.provider_key = s.key
        ), lines AS (
            -- each priority's clock moves to the highest tag it admitted; the low share's credit carries
            INSERT INTO layover.fair_lines AS fl (provider_key, class_clocks, low_credit, picks, last_pick_at)
            SELECT g.key, g.clocks, CASE WHEN g.has_low THEN greatest(0, g.credit + v_low * g.fair - g.low) ELSE 0 END,
                   1, v_now
            FROM (SELECT c.key, jsonb_object_agg(c.pr::text, c.tag) AS clocks, sum(c.n) AS fair, sum(c.low) AS low,
                         bool_or(c.has_low) AS has_low, max(c.credit) AS credit
                  FROM (SELECT t.provider_key AS key, coalesce(t.priority, 0) AS pr, max(t.tag) AS tag, count(*) AS n,
                               count(*) FILTER (WHERE t.queue = 2) AS low, bool_or(t.has_low) AS has_low,
                               max(t.low_credit) AS credit
                        FROM taken t
                        WHERE t.verdict IN ('run', 'trial') AND t.tag IS NOT NULL
                        GROUP BY t.provider_key, coalesce(t.priority, 0)) c
                  GROUP BY c.key) g
            ON CONFLICT (provider_key) DO UPDATE
            SET class_clocks = layover.clocks_merge(fl.class_clocks, excluded.class_clocks),
                low_credit = excluded.low_credit, picks = fl.picks + 1, last_pick_at = v_now
        )
        SELECT t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
               t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
               t.verdict, t.token,
               CASE WHEN t.verdict IN ('run', 'trial') AND (t.need_t > 0 OR t.need_i > 0 OR t.need_o > 0)
                    THEN ARRAY[t.need_t, t.need_i, t.need_o] END,
               CASE WHEN t.verdict IN ('run', 'trial') AND (t.need_t > 0 OR t.need_i > 0 OR t.need_o > 0)
                    THEN ARRAY[coalesce(t.tr, 0), coalesce(t.ir, 0), coalesce(t.orr, 0)] END,
               CASE t.verdict
                   WHEN 'breaker_open' THEN 'the breaker of ' || t.provider_key || ' is open until ' || t.open_until
                                            || coalesce(': ' || t.b_reason, '')
                   WHEN 'deferral' THEN 'due since ' || t.execution_time || ', not admitted by ' || t.provider_key
                   WHEN 'too_large' THEN 'its token estimate (' || array_to_string(t.token_estimate, '/')
                                         || ') is more than ' || t.provider_key || ' can ever admit (its token capacity)'
               END,
               t.ord
        FROM taken t;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_taken := v_taken + v_n;
    END IF;

    -- 3. jobs without a provider key but with limit keys: each of their limit keys admits them, oldest first
    IF p_limit - v_taken > 0 AND coalesce((p_options ->> 'limit_keys')::boolean, false) THEN
        v_free := ARRAY(
            SELECT DISTINCT lk
            FROM (SELECT t.limit_keys FROM layover.scheduled_tasks t
                  WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NOT NULL
                    AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                  ORDER BY t.execution_time LIMIT p_limit - v_taken) j
            CROSS JOIN LATERAL unnest(j.limit_keys) lk
            WHERE pg_try_advisory_xact_lock(1282371, hashtext(lk)));
        PERFORM layover.limit_rows(v_free);
        RETURN QUERY
        WITH cand AS (
            SELECT t.task_name, t.task_instance, t.limit_keys, row_number() OVER (ORDER BY t.execution_time) AS rn
            FROM (SELECT t.task_name, t.task_instance, t.limit_keys, t.execution_time FROM layover.scheduled_tasks t
                  WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NOT NULL
                    AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                  ORDER BY t.execution_time LIMIT p_limit - v_taken) t
        ), admitted AS (
            SELECT lk.task_name, lk.task_instance,
                   bool_and(lk.key = ANY(v_free) AND lk.place <= layover.limit_free(lk.key, v_now, v_dead)) AS ok
            FROM (SELECT c.task_name, c.task_instance, x.key,
                         row_number() OVER (PARTITION BY x.key ORDER BY c.rn) AS place
                  FROM cand c CROSS JOIN LATERAL unnest(c.limit_keys) x(key)) lk
            GROUP BY lk.task_name, lk.task_instance
        ), locked AS (
            SELECT c.task_name, c.task_instance
            FROM cand c
            JOIN admitted a ON a.task_name = c.task_name AND a.task_instance = c.task_instance AND a.ok
            JOIN layover.scheduled_tasks x ON x.task_name = c.task_name AND x.task_instance = c.task_instance
            WHERE NOT x.picked AND x.execution_time <= v_now
            FOR UPDATE OF x SKIP LOCKED
        ), taken AS (
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM locked c
            WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.*
        ), spent AS (
            UPDATE layover.buckets b
            SET request_tat = layover.gcra_take(b.request_tat, v_now, l.rr, s.n)
            FROM (SELECT x AS key, count(*)::float8 AS n FROM taken t CROSS JOIN LATERAL unnest(t.limit_keys) x
                  GROUP BY x) s
            CROSS JOIN LATERAL layover.limits_in_force(s.key, v_now) l
            WHERE b.provider_key = s.key
        )
        SELECT t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
               t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
               'run'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint
        FROM taken t;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_taken := v_taken + v_n;
    END IF;

    -- 4. jobs without a provider key or limit keys: nothing to admit, oldest (or highest priority) first
    IF p_limit - v_taken > 0 THEN
        IF coalesce((p_options ->> 'priority')::boolean, false) THEN
            RETURN QUERY
            WITH chosen AS (
                SELECT t.task_name, t.task_instance FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NULL AND t.execution_time <= v_now
                  AND t.task_name = ANY(p_types)
                ORDER BY t.priority DESC NULLS LAST, t.execution_time, t.task_instance
                LIMIT p_limit - v_taken
                FOR UPDATE SKIP LOCKED
            )
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM chosen c WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
                      t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
                      'run'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint;
        ELSE
            RETURN QUERY
            WITH chosen AS (
                SELECT t.task_name, t.task_instance FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NULL AND t.execution_time <= v_now
                  AND t.task_name = ANY(p_types)
                ORDER BY t.execution_time, t.task_instance
                LIMIT p_limit - v_taken
                FOR UPDATE SKIP LOCKED
            )
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM chosen c WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
                      t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
                      'run'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint;
        END IF;
    END IF;
END
$$;

DROP FUNCTION layover.batch_gather(text, text[], bigint[], text[], timestamptz[], timestamptz[], text, text, int, bigint, float8);

CREATE FUNCTION layover.batch_gather(
        p_task_name text, p_ids text[], p_versions bigint[], p_requests text[], p_latest timestamptz[],
        p_wait_until timestamptz[], p_key text, p_provider text, p_max_lines int, p_max_bytes bigint,
        p_discount float8)
    RETURNS TABLE (task_instance text, item bigint)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    b       layover.batches%ROWTYPE;
    v_len   bigint;
    v_item  bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        PERFORM 1 FROM layover.scheduled_tasks t
        WHERE t.task_name = p_task_name AND t.task_instance = p_ids[i] AND t.version = p_versions[i]
          AND (t.batch_item IS NULL
               OR EXISTS (SELECT 1 FROM layover.batch_items r WHERE r.id = t.batch_item AND r.state = 'returned'))
        FOR UPDATE OF t;
        CONTINUE WHEN NOT FOUND;
        v_len := octet_length(p_requests[i]);
        WHILE b.id IS NULL LOOP
            -- another gather may seal the open batch while this one waits for it: look again
            INSERT INTO layover.batches (provider_key, provider, discount)
            VALUES (p_key, p_provider, p_discount)
            ON CONFLICT (provider_key) WHERE state = 'open' DO NOTHING;
            SELECT * INTO b FROM layover.batches x WHERE x.provider_key = p_key AND x.state = 'open' FOR UPDATE;
        END LOOP;
        IF b.lines > 0 AND (b.lines + 1 > p_max_lines OR b.bytes + v_len > p_max_bytes) THEN
            UPDATE layover.batches SET state = 'sealed', sealed_at = now() WHERE id = b.id;
            INSERT INTO layover.batches (provider_key, provider, discount) VALUES (p_key, p_provider, p_discount)
            RETURNING * INTO b;
        END IF;
        INSERT INTO layover.batch_items (batch_id, task_name, task_instance, request, latest)
        VALUES (b.id, p_task_name, p_ids[i], p_requests[i], p_latest[i])
        RETURNING id INTO v_item;
        UPDATE layover.batches
        SET lines = lines + 1, bytes = bytes + v_len,
            earliest_deadline = CASE WHEN p_latest[i] IS NULL THEN earliest_deadline
                                     ELSE least(earliest_deadline, p_latest[i]) END
        WHERE id = b.id
        RETURNING * INTO b;
        PERFORM layover.jobs_batched(p_task_name, p_ids[i], v_item, p_wait_until[i], 'in batch ' || b.id);
        task_instance := p_ids[i];
        item := v_item;
        RETURN NEXT;
    END LOOP;
    IF b.id IS NOT NULL AND (b.lines >= p_max_lines OR b.bytes >= p_max_bytes) THEN
        UPDATE layover.batches SET state = 'sealed', sealed_at = now() WHERE id = b.id AND state = 'open';
    END IF;
END
$$;

COMMENT ON FUNCTION layover.batch_gather(text, text[], bigint[], text[], timestamptz[], timestamptz[], text, text,
        int, bigint, float8) IS
    'Gathers version-checked jobs into their key''s open batch (V22); no attempt, no reschedule counted.';

CREATE VIEW layover.concurrency AS
SELECT l.limit_key,
       l.max_in_flight,
       (SELECT count(*) FROM layover.scheduled_tasks t
        WHERE t.picked AND (t.provider_key = l.limit_key OR t.limit_keys @> ARRAY[l.limit_key]))  AS in_flight,
       (SELECT max(t.last_heartbeat) FROM layover.scheduled_tasks t
        WHERE t.picked AND (t.provider_key = l.limit_key OR t.limit_keys @> ARRAY[l.limit_key]))  AS last_heartbeat_at,
       l.configured_at,
       l.configured_by
FROM layover.concurrency_limits l
WHERE l.limit_key NOT LIKE '%*';

COMMENT ON VIEW layover.concurrency IS 'Per concurrency limit key: max_in_flight and the calls in flight now.';

CREATE VIEW layover.fairness AS
WITH jobs AS (
    SELECT t.provider_key, t.fairness_key,
           count(*) FILTER (WHERE t.fair_tag IS NOT NULL AND NOT t.picked) AS waiting,
           count(*) FILTER (WHERE t.fair_tag IS NULL AND NOT t.picked AND t.execution_time <= now()) AS untagged,
           count(*) FILTER (WHERE t.picked) AS running,
           max(t.fair_tag - coalesce((fl.class_clocks ->> coalesce(t.priority, 0)::text)::float8, 0))
               FILTER (WHERE t.fair_tag IS NOT NULL AND NOT t.picked) AS lag
    FROM layover.scheduled_tasks t
    LEFT JOIN layover.fair_lines fl ON fl.provider_key = t.provider_key
    WHERE t.fairness_key IS NOT NULL AND t.provider_key IS NOT NULL
    GROUP BY t.provider_key, t.fairness_key
), weighted AS (
    SELECT j.*, layover.fairness_weight(j.fairness_key) AS weight FROM jobs j
)
SELECT w.provider_key, w.fairness_key, w.waiting, w.untagged, w.running, w.weight,
       CASE WHEN w.waiting > 0
            THEN w.weight / sum(w.weight) FILTER (WHERE w.waiting > 0) OVER (PARTITION BY w.provider_key) END AS share,
       w.lag
FROM weighted w;

COMMENT ON VIEW layover.fairness IS
    'Each provider key''s fairness keys with jobs: waiting (in the fair queue), untagged, running, weight, share.';

CREATE VIEW layover.jobs AS
SELECT t.task_instance                              AS id,
       t.task_name                                  AS job_type,
       CASE
           WHEN t.picked THEN 'running'
           WHEN t.last_failure IS NOT NULL
                AND (t.last_rescheduled_at IS NULL OR t.last_failure >= t.last_rescheduled_at) THEN 'retrying'
           WHEN t.reschedules > 0 THEN 'rescheduled'
           ELSE 'scheduled'
       END                                          AS state,
       t.execution_time                             AS run_at,
       coalesce(t.consecutive_failures, 0)          AS attempts,
       t.reschedules                                AS reschedules,
       t.provider_key                               AS provider_key,
       w.waiting_for                                AS waiting_for,
       w.waiting_detail                             AS waiting_detail,
       CASE WHEN w.waiting_for IS NOT NULL THEN (
           SELECT count(*) FROM (
               SELECT 1 FROM layover.scheduled_tasks x
               WHERE x.provider_key = t.provider_key AND NOT x.picked AND x.execution_time <= now()
                 AND (x.task_name, x.task_instance) <> (t.task_name, t.task_instance)
                 AND CASE WHEN t.fair_tag IS NULL
                          THEN x.fair_tag IS NULL
                               AND (coalesce(x.priority, -32768), -extract(epoch FROM x.execution_time))
                                   > (coalesce(t.priority, -32768), -extract(epoch FROM t.execution_time))
                          ELSE x.fair_tag IS NULL
                               OR (coalesce(x.priority, -32768), -x.fair_tag) > (coalesce(t.priority, -32768), -t.fair_tag)
                      END
               LIMIT 10000) a)
       END                                          AS ahead,
       t.last_reschedule_reason                     AS reschedule_reason,
       t.last_reschedule_detail                     AS reschedule_detail,
       t.last_rescheduled_at                        AS rescheduled_at,
       layover.args_jsonb(t.task_data)              AS args,
       t.errors -> -1                               AS last_error,
       t.errors                                     AS errors,
       t.last_failure                               AS failed_at,
       t.picked_by                                  AS picked_by,
       t.last_heartbeat                             AS heartbeat_at,
       t.first_enqueued_at                          AS enqueued_at,
       t.priority                                   AS priority,
       t.dead_letter_id                             AS dead_letter_id,
       t.replay_kind                                AS replay_kind,
       t.provider_trail                             AS provider_trail,
       bi.batch_id                                  AS batch_id,
       bi.state                                     AS batch_item_state
FROM layover.scheduled_tasks t
LEFT JOIN layover.batch_items bi ON bi.id = t.batch_item
LEFT JOIN LATERAL (
    -- a slot is in use while its job's heartbeat is live (the pick's default: 40 s, 8 missed beats of 5 s)
    SELECT CASE WHEN cd.until IS NOT NULL THEN 'cooldown'
                WHEN br.state = 'open' THEN 'breaker_open'
                WHEN br.state = 'half_open' THEN 'breaker_trial'
                WHEN l.rr > 0 AND layover.gcra_free(l.request_tat, now(), l.rr, l.rc) < 1 THEN 'rate_limit'
                WHEN (l.tr > 0 AND layover.gcra_free(l.token_tat, now(), l.tr, l.tc) <= 0)
                     OR (l.ir > 0 AND layover.gcra_free(l.input_tat, now(), l.ir, l.ic) <= 0)
                     OR (l.orr > 0 AND layover.gcra_free(l.output_tat, now(), l.orr, l.oc) <= 0) THEN 'rate_limit'
                WHEN l.max_in_flight <= slots.n THEN 'concurrency'
                WHEN lk.key IS NOT NULL THEN lk.why
           END AS waiting_for,
           CASE WHEN cd.until IS NOT NULL
                    THEN 'key ' || t.provider_key || ': cooling down until ' || cd.until || ' (' || cd.reason || ')'
                WHEN br.state = 'open'
                    THEN 'key ' || t.provider_key || ': breaker open until ' || coalesce(br.open_until::text, 'closed by hand')
                WHEN br.state = 'half_open' THEN 'key ' || t.provider_key || ': its one trial call is out'
                WHEN l.rr > 0 AND layover.gcra_free(l.request_tat, now(), l.rr, l.rc) < 1
                    THEN 'key ' || t.provider_key || ': no permit before ' || layover.gcra_fits_at(l.request_tat, l.rr, l.rc, 1)
                WHEN (l.tr > 0 AND layover.gcra_free(l.token_tat, now(), l.tr, l.tc) <= 0)
                     OR (l.ir > 0 AND layover.gcra_free(l.input_tat, now(), l.ir, l.ic) <= 0)
                     OR (l.orr > 0 AND layover.gcra_free(l.output_tat, now(), l.orr, l.oc) <= 0)
                    THEN 'key ' || t.provider_key || ': no tokens free now'
                WHEN l.max_in_flight <= slots.n
                    THEN 'key ' || t.provider_key || ': all ' || l.max_in_flight || ' concurrency slots in use'
                WHEN lk.key IS NOT NULL THEN 'limit key ' || lk.key || ': ' || lk.detail
           END AS waiting_detail
    FROM layover.limits_in_force(t.provider_key, now()) l
    LEFT JOIN layover.cooldowns cd ON cd.provider_key = t.provider_key AND cd.until > now()
    LEFT JOIN layover.breakers br ON br.provider_key = t.provider_key AND br.state <> 'closed'
    LEFT JOIN LATERAL (SELECT count(*) AS n FROM layover.scheduled_tasks x
                       WHERE x.provider_key = t.provider_key AND x.picked
                         AND x.last_heartbeat > now() - interval '40 seconds') slots ON l.max_in_flight IS NOT NULL
    LEFT JOIN LATERAL (
        -- the first of its limit keys (tenants) that has no permit or slot for it now
        SELECT k.key,
               CASE WHEN kl.rr > 0 AND layover.gcra_free(kl.request_tat, now(), kl.rr, kl.rc) < 1 THEN 'rate_limit'
                    ELSE 'concurrency' END AS why,
               CASE WHEN kl.rr > 0 AND layover.gcra_free(kl.request_tat, now(), kl.rr, kl.rc) < 1
                    THEN 'no permit before ' || layover.gcra_fits_at(kl.request_tat, kl.rr, kl.rc, 1)
                    ELSE 'all ' || kl.max_in_flight || ' concurrency slots in use' END AS detail
        FROM unnest(t.limit_keys) WITH ORDINALITY k(key, ord)
        CROSS JOIN LATERAL layover.limits_in_force(k.key, now()) kl
        WHERE (kl.rr > 0 AND layover.gcra_free(kl.request_tat, now(), kl.rr, kl.rc) < 1)
           OR kl.max_in_flight <= (SELECT count(*) FROM layover.scheduled_tasks x
                                   WHERE x.limit_keys @> ARRAY[k.key] AND x.picked
                                     AND x.last_heartbeat > now() - interval '40 seconds')
        ORDER BY k.ord LIMIT 1) lk ON true
    WHERE (t.provider_key IS NOT NULL OR t.limit_keys IS NOT NULL) AND NOT t.picked AND t.execution_time <= now()
) w ON true
-- rows of Layover's own recurring tasks (recovery sweep, retention) are not jobs
WHERE t.task_name NOT LIKE 'layover-%';

COMMENT ON VIEW layover.jobs IS
    'Live jobs. state in (scheduled, running, rescheduled, retrying); attempts = attempts spent; waiting_for and '
    'waiting_detail: why a due job''s key does not admit it now; args as jsonb.';

-- provider_keys and token_buckets: "booked" became "full at" (nothing is booked ahead), and a pattern's
-- own row (a key ending in *) is not listed as a key
DROP VIEW layover.provider_keys;
CREATE VIEW layover.provider_keys AS
SELECT k.provider_key,
       coalesce(b.state, 'closed')                         AS breaker_state,
       b.open_until                                        AS breaker_open_until,
       b.opened_at                                         AS breaker_opened_at,
       b.closed_at                                         AS breaker_closed_at,
       b.trial_claimed_by                                  AS trial_claimed_by,
       b.reason                                            AS breaker_reason,
       CASE WHEN c.until > now() THEN c.until END          AS cooldown_until,
       CASE WHEN c.until > now() THEN c.reason END         AS cooldown_reason,
       c.detail                                            AS cooldown_detail,
       CASE WHEN bk.learned_until IS NULL OR bk.learned_until > now()
            THEN bk.requests_per_minute END                AS requests_per_minute,
       bk.tokens_per_minute                                AS tokens_per_minute,
       CASE WHEN greatest(bk.request_tat, bk.token_tat) > now()
            THEN greatest(bk.request_tat, bk.token_tat) END AS bucket_full_at,
       CASE WHEN bk.learned_until > now() THEN bk.learned_until END AS pace_learned_until,
       coalesce(b.state = 'open' AND b.open_until <= now(), false) AS breaker_trial_due,
       coalesce(b.state = 'half_open' AND b.trial_token IS NOT NULL AND b.trial_expires_at > now(), false)
                                                           AS trial_in_flight,
       CASE WHEN bk.requests_per_minute > 0 AND (bk.learned_until IS NULL OR bk.learned_until > now())
            THEN layover.gcra_free(bk.request_tat, now(), bk.requests_per_minute / 60.0,
                                   layover.bucket_capacity(bk.requests_per_minute, bk.burst_ms)) END
                                                           AS request_permits,
       CASE WHEN bk.tokens_per_minute > 0
            THEN layover.gcra_free(bk.token_tat, now(), bk.tokens_per_minute / 60.0,
                                   layover.bucket_capacity(bk.tokens_per_minute, bk.burst_ms)) END
                                                           AS token_permits,
       CASE WHEN bk.provider_key IS NULL THEN NULL
            WHEN bk.learned_until IS NULL THEN 'configured'
            WHEN bk.learned_until <= now() THEN NULL
            WHEN bk.discovered THEN 'discovered'
            ELSE 'stated' END                              AS pace_source,
       CASE WHEN bk.discovered AND bk.learned_until > now() THEN bk.discovery_phase END AS discovery_phase,
       CASE WHEN bk.discovered AND bk.learned_until > now() THEN bk.discovery_ceiling END
                                                           AS discovery_ceiling_per_minute,
       CASE WHEN bk.discovered THEN bk.discovery_adjusted_at END AS discovery_adjusted_at,
       CASE WHEN bk.discovered THEN bk.discovery_decreased_at END AS discovery_decreased_at,
       CASE WHEN bk.discovered THEN bk.discovery_increases END AS discovery_increases,
       CASE WHEN bk.discovered THEN bk.discovery_decreases END AS discovery_decreases
FROM (SELECT provider_key FROM layover.breakers
      UNION SELECT provider_key FROM layover.cooldowns
      UNION SELECT provider_key FROM layover.buckets) k
LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key
WHERE k.provider_key NOT LIKE '%*';

COMMENT ON VIEW layover.provider_keys IS
    'Per provider key: breaker state (and whether its trial is due or in flight), active cooldown, bucket limits '
    '(configured, stated by a 429 or discovered: pace_source, pace_learned_until, discovery_*), permits free now and '
    'when the bucket is full again (bucket_full_at). Pattern rows (keys ending in *) are not keys.';

DROP VIEW layover.token_buckets;
CREATE VIEW layover.token_buckets AS
SELECT bk.provider_key, d.dimension, d.per_minute,
       layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms)) AS capacity,
       layover.gcra_free(d.tat, now(), d.per_minute / 60.0,
                         layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms))) AS free_now,
       CASE WHEN d.tat > now() THEN d.tat END AS full_at,
       d.share AS used_share
FROM layover.buckets bk
CROSS JOIN LATERAL (VALUES ('tokens', bk.tokens_per_minute, bk.token_tat, bk.token_share),
                           ('input_tokens', bk.input_tokens_per_minute, bk.input_tat, bk.input_share),
                           ('output_tokens', bk.output_tokens_per_minute, bk.output_tat, bk.output_share))
    AS d(dimension, per_minute, tat, share)
WHERE d.per_minute > 0 AND bk.provider_key NOT LIKE '%*';

COMMENT ON VIEW layover.token_buckets IS
    'The token dimensions of each bucket: limit per minute, capacity, tokens free now, when full again, share of reservations used.';

-- One owner per table (docs/architecture.md): the pick claims its breaker trials through the gate's
-- layover.claim_trials, and the batch functions write job rows through the job store's
-- layover.jobs_batched and jobs_wake_batched.
CREATE FUNCTION layover.claim_trials(p_keys text[], p_types text[], p_worker text, p_now timestamptz,
                                     p_timeout interval)
    RETURNS TABLE (provider_key text, trial_token text)
    LANGUAGE plpgsql AS
$$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE layover.breakers b
    SET previous_state = b.state, state = 'half_open', trial_token = md5(random()::text || clock_timestamp()::text),
        trial_claimed_by = p_worker, trial_claimed_at = p_now, trial_expires_at = p_now + p_timeout,
        reason = CASE WHEN b.state = 'open' THEN 'open period over; trial call claimed by ' || p_worker
                      ELSE 'stale trial claim taken over by ' || p_worker END,
        changed_at = CASE WHEN b.state = 'open' THEN p_now ELSE b.changed_at END,
        changed_by = p_worker, change_origin = 'pick'
    WHERE b.provider_key = ANY(p_keys) AND b.state <> 'closed'
      AND ((b.state = 'open' AND b.open_until <= p_now)
           OR (b.state = 'half_open' AND (b.trial_token IS NULL OR b.trial_expires_at <= p_now)))
      AND NOT EXISTS (SELECT 1 FROM layover.cooldowns cd WHERE cd.provider_key = b.provider_key AND cd.until > p_now)
      AND EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                  WHERE t.provider_key = b.provider_key AND NOT t.picked AND t.execution_time <= p_now
                    AND t.task_name = ANY(p_types))
    RETURNING b.provider_key, b.trial_token;
END
$$;

COMMENT ON FUNCTION layover.claim_trials(text[], text[], text, timestamptz, interval) IS
    'The pick''s claims of breaker trial calls (half_open, a new trial_token) for the keys it holds; the gate''s write of layover.breakers.';

-- A gathered job waits for its batch: writes its job row's batch_item (p_item) and run time
-- (p_wait_until), not picked (picked_by and last_heartbeat cleared), version + 1, fair_tag cleared
-- (its run time moved), and a reschedule that counts nothing: reason 'batched', detail p_detail.
CREATE FUNCTION layover.jobs_batched(p_task_name text, p_task_instance text, p_item bigint,
                                     p_wait_until timestamptz, p_detail text)
    RETURNS void
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.scheduled_tasks t
    SET batch_item = p_item, execution_time = p_wait_until, picked = false, picked_by = NULL,
        last_heartbeat = NULL, version = t.version + 1, fair_tag = NULL,
        last_reschedule_reason = 'batched', last_reschedule_detail = p_detail,
        last_rescheduled_at = now()
    WHERE t.task_name = p_task_name AND t.task_instance = p_task_instance;
END
$$;

COMMENT ON FUNCTION layover.jobs_batched(text, text, bigint, timestamptz, text) IS
    'The job store''s write of a gathered job: its batch item and wait (reason batched); called by layover.batch_gather.';

-- Makes due at once the jobs not picked whose batch item is one of p_items: writes their run time
-- (execution_time = now()), nothing else. Returns how many jobs were made due.
CREATE FUNCTION layover.jobs_wake_batched(p_items bigint[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    UPDATE layover.scheduled_tasks t SET execution_time = now()
    WHERE t.batch_item = ANY(p_items) AND NOT t.picked;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.jobs_wake_batched(bigint[]) IS
    'The job store''s write of the jobs waiting for batch items: made due; called by layover.batch_collect, batch_finish, batch_wake.';

CREATE OR REPLACE FUNCTION layover.batch_collect(
        p_batch bigint, p_custom_ids text[], p_kinds text[], p_statuses int[], p_results text[],
        p_input bigint[], p_output bigint[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_items bigint[];
    v_n     int;
BEGIN
    WITH lines AS (
        SELECT * FROM unnest(p_custom_ids, p_kinds, p_statuses, p_results, p_input, p_output)
                 AS l(custom_id, kind, status, result, input_tokens, output_tokens)
    ), stored AS (
        UPDATE layover.batch_items i
        SET state = CASE WHEN l.kind IN ('expired', 'cancelled') THEN 'returned' ELSE 'result' END, result_kind = l.kind, result_status = l.status, result = l.result,
            input_tokens = l.input_tokens, output_tokens = l.output_tokens, answered_at = now()
        FROM lines l
        WHERE i.batch_id = p_batch AND i.custom_id = l.custom_id AND i.state = 'gathered'
        RETURNING i.id, i.result_kind, i.input_tokens, i.output_tokens
    ), counted AS (
        UPDATE layover.batches b
        SET succeeded = b.succeeded + (SELECT count(*) FROM stored WHERE result_kind = 'succeeded'),
            errored = b.errored + (SELECT count(*) FROM stored WHERE result_kind = 'errored'),
            returned = b.returned + (SELECT count(*) FROM stored WHERE result_kind IN ('expired', 'cancelled')),
            input_tokens = b.input_tokens + (SELECT coalesce(sum(input_tokens), 0) FROM stored),
            output_tokens = b.output_tokens + (SELECT coalesce(sum(output_tokens), 0) FROM stored)
        WHERE b.id = p_batch
        RETURNING 1
    )
    -- counted runs whether read or not (a data-modifying WITH runs to completion)
    SELECT coalesce(array_agg(s.id), '{}') INTO v_items FROM stored s;
    v_n := cardinality(v_items);
    PERFORM layover.jobs_wake_batched(v_items);
    IF v_n > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN v_n;
END
$$;

CREATE OR REPLACE FUNCTION layover.batch_finish(p_batch bigint, p_state text, p_error text)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_items bigint[];
    v_n     int;
BEGIN
    UPDATE layover.batches
    SET state = p_state, finished_at = now(), lease_owner = NULL, lease_until = NULL, next_poll_at = NULL,
        last_error = coalesce(p_error, last_error)
    WHERE id = p_batch AND state NOT IN ('ended', 'expired', 'cancelled', 'failed');
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    WITH back AS (
        UPDATE layover.batch_items SET state = 'returned', answered_at = now()
        WHERE batch_id = p_batch AND state = 'gathered'
        RETURNING id
    )
    SELECT coalesce(array_agg(back.id), '{}') INTO v_items FROM back;
    v_n := cardinality(v_items);
    PERFORM layover.jobs_wake_batched(v_items);
    UPDATE layover.batches SET returned = returned + v_n WHERE id = p_batch;
    PERFORM pg_notify('layover_jobs', '');
    RETURN v_n;
END
$$;

CREATE OR REPLACE FUNCTION layover.batch_wake(p_since timestamptz)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    v_n := layover.jobs_wake_batched(ARRAY(
        SELECT i.id
        FROM layover.scheduled_tasks t
        JOIN layover.batch_items i ON i.id = t.batch_item
        JOIN layover.batches b ON b.id = i.batch_id
        WHERE i.state <> 'gathered' AND NOT t.picked AND t.execution_time > now() AND b.finished_at >= p_since));
    IF v_n > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN v_n;
END
$$;
