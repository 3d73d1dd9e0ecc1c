-- Many keys (issue 40): a key with rows of its own is not matched to the prefix* patterns again (the
-- patterns get partial indexes); the pick walks only keys with a due job, at most p_walk of them, and
-- a pick that is not full hands the next one its turn past every key it walked (verdict 'turn'), so
-- keys with nothing due or nothing admitted cannot hide the keys behind them.
CREATE INDEX buckets_patterns_idx ON layover.buckets (provider_key) WHERE provider_key LIKE '%*';
CREATE INDEX concurrency_limits_patterns_idx ON layover.concurrency_limits (limit_key) WHERE limit_key LIKE '%*';

CREATE OR REPLACE FUNCTION layover.limit_rows(p_keys text[]) RETURNS void
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
        WHERE NOT u.k LIKE '%*' AND NOT EXISTS (SELECT 1 FROM layover.buckets x WHERE x.provider_key = u.k)
        ON CONFLICT ON CONSTRAINT buckets_pkey DO NOTHING;
    END IF;
    IF EXISTS (SELECT 1 FROM layover.concurrency_limits c WHERE c.limit_key LIKE '%*') THEN
        INSERT INTO layover.concurrency_limits (limit_key, max_in_flight, configured_by, pattern)
        SELECT u.k, p.max_in_flight, p.configured_by, p.limit_key
        FROM unnest(p_keys) u(k)
        CROSS JOIN LATERAL (SELECT * FROM layover.concurrency_limits c
                            WHERE c.limit_key LIKE '%*' AND starts_with(u.k, left(c.limit_key, -1))
                            ORDER BY length(c.limit_key) DESC LIMIT 1) p
        WHERE NOT u.k LIKE '%*' AND NOT EXISTS (SELECT 1 FROM layover.concurrency_limits x WHERE x.limit_key = u.k)
        ON CONFLICT ON CONSTRAINT concurrency_limits_pkey DO NOTHING;
    END IF;
    INSERT INTO layover.buckets (provider_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute,
                                 output_tokens_per_minute, burst_ms, learned_until, configured_by)
    SELECT o.limit_key, o.requests_per_minute, o.tokens_per_minute, o.input_tokens_per_minute,
           o.output_tokens_per_minute, 1000, '-infinity', 'operator'
    FROM layover.limit_overrides o
    WHERE o.limit_key = ANY(p_keys)
      AND coalesce(o.requests_per_minute, o.tokens_per_minute, o.input_tokens_per_minute, o.output_tokens_per_minute) > 0
      AND NOT EXISTS (SELECT 1 FROM layover.buckets x WHERE x.provider_key = o.limit_key)
    ON CONFLICT ON CONSTRAINT buckets_pkey DO NOTHING;
END
$$;

DROP FUNCTION layover.pick_keys(text, int);

CREATE FUNCTION layover.pick_keys(p_after text, p_max int, p_walk int, p_now timestamptz, p_types text[])
    RETURNS TABLE (k text, due boolean) LANGUAGE plpgsql STABLE AS
$$
#variable_conflict use_column
BEGIN
    -- plpgsql, not sql: its plan is kept for the session, where a sql function's is made at every call
    RETURN QUERY
    WITH RECURSIVE walk(k, wrapped, n, due, n_due) AS (
        SELECT p_after, false, 0, false, 0
        UNION ALL
        SELECT y.k, y.wrapped, w.n + 1, y.due, w.n_due + y.due::int
        FROM walk w
        CROSS JOIN LATERAL (
            -- the next key after w's (the first one, once past the last)
            SELECT least((SELECT t.provider_key FROM layover.scheduled_tasks t
                          WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL
                            AND t.provider_key > w.k
                          ORDER BY t.provider_key LIMIT 1),
                         (SELECT t.provider_key FROM layover.scheduled_tasks t
                          WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL
                            AND t.provider_key > w.k
                          ORDER BY t.provider_key LIMIT 1)) AS k
        ) a
        CROSS JOIN LATERAL (
            SELECT CASE WHEN a.k IS NULL AND NOT w.wrapped
                        THEN least((SELECT t.provider_key FROM layover.scheduled_tasks t
                                    WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL
                                    ORDER BY t.provider_key LIMIT 1),
                                   (SELECT t.provider_key FROM layover.scheduled_tasks t
                                    WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL
                                    ORDER BY t.provider_key LIMIT 1)) END AS k
        ) b
        CROSS JOIN LATERAL (
            -- whether it has a due job: its oldest job not picked, through (provider_key, execution_time), past
            -- only its running jobs (ordered, so that no plan scans the table from its start instead)
            SELECT coalesce(a.k, b.k) AS k, w.wrapped OR a.k IS NULL AS wrapped,
                   (SELECT t.execution_time FROM layover.scheduled_tasks t
                    WHERE t.provider_key = coalesce(a.k, b.k) AND t.execution_time <= p_now AND NOT t.picked
                      AND t.task_name = ANY(p_types)
                    ORDER BY t.execution_time LIMIT 1) IS NOT NULL AS due
        ) y
        WHERE y.k IS NOT NULL AND (NOT y.wrapped OR y.k <= p_after) AND w.n_due < p_max AND w.n < p_walk
    )
    SELECT w.k, w.due FROM walk w WHERE w.n > 0 ORDER BY w.n;
END
$$;

CREATE OR REPLACE FUNCTION layover.pick(p_worker text, p_now timestamptz, p_limit int, p_types text[], p_after text,
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
    v_ishare       float8 := coalesce((p_options ->> 'interactive_share')::float8, 0.25);
    v_iwindow      float8 := coalesce((p_options ->> 'interactive_window_s')::float8, 1);
    v_keyed        int;
    v_keys         text[] := '{}';
    v_last         text;
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
    -- and no JIT: its queries' estimates pass jit_above_cost on a deep queue, and compiling them cost
    -- each pick tens of milliseconds, far more than running them
    PERFORM set_config('jit', 'off', true);
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
    IF v_keyed > 0 THEN
        SELECT coalesce(array_agg(w.k ORDER BY w.ord) FILTER (WHERE w.due), '{}'), (array_agg(w.k ORDER BY w.ord DESC))[1]
        INTO v_keys, v_last
        FROM layover.pick_keys(coalesce(p_after, ''), greatest(p_limit, 64), 512, v_now, p_types)
             WITH ORDINALITY w(k, due, ord);
    END IF;
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
                             -- less the share left for interactive calls while they are arriving
                             CASE WHEN l.rr > 0 THEN layover.gcra_free(l.request_tat, v_now, l.rr, l.rc)
                                                     - ir.share * l.rc END AS req_free,
                             CASE WHEN l.tr > 0 THEN layover.gcra_free(l.token_tat, v_now, l.tr, l.tc)
                                                     - ir.share * l.tc END AS tok_free,
                             CASE WHEN l.ir > 0 THEN layover.gcra_free(l.input_tat, v_now, l.ir, l.ic)
                                                     - ir.share * l.ic END AS in_free,
                             CASE WHEN l.orr > 0 THEN layover.gcra_free(l.output_tat, v_now, l.orr, l.oc)
                                                     - ir.share * l.oc END AS out_free,
                             CASE WHEN l.max_in_flight IS NOT NULL THEN l.max_in_flight - (
                                  SELECT count(*) FROM layover.scheduled_tasks x
                                  WHERE x.provider_key = u.k AND x.picked AND x.last_heartbeat > v_now - v_dead) END AS slots_free
                      FROM layover.limits_in_force(u.k, v_now) l
                      CROSS JOIN LATERAL (SELECT coalesce(max(layover.interactive_reserve(bk.interactive_at, v_now,
                                                                                          v_ishare, v_iwindow)), 0)
                                          FROM layover.buckets bk WHERE bk.provider_key = u.k) ir(share)
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
        v_keyed := v_keyed - v_n;
    END IF;
    -- not full: every key walked had its turn, and the next pick starts after the last of them (a row
    -- of its own: verdict 'turn', no job)
    IF v_keyed > 0 AND v_last IS NOT NULL THEN
        RETURN QUERY SELECT NULL::text, NULL::text, NULL::bytea, NULL::timestamptz, NULL::boolean, NULL::text,
                            NULL::timestamptz, NULL::timestamptz, NULL::int, NULL::timestamptz, NULL::bigint,
                            NULL::smallint, v_last, 'turn'::text, NULL::text, NULL::float8[], NULL::float8[],
                            NULL::text, 9223372036854775807::bigint;
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
