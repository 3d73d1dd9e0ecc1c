-- Observability and enqueue from SQL (docs/observability.md, docs/enqueue-from-sql.md): the trace
-- context a job keeps from its enqueue (and its dead letter), the job types workers register, the
-- SQL enqueue, the price table and the view of token costs.
ALTER TABLE layover.scheduled_tasks ADD COLUMN trace_context jsonb;
ALTER TABLE layover.dead_letters ADD COLUMN trace_context jsonb;


-- ---------------------------------------------------------------------------
-- Trace context. scheduled_tasks.trace_context holds the W3C trace context current when the job
-- was enqueued, {"traceparent": "00-<trace id>-<span id>-<flags>", "tracestate": "..."} (tracestate
-- only when there is one): the context of the enqueue's span. Each run of the job is a span linked
-- to it (a link, not a parent). Written once, at enqueue (core's job_insert*.sql, layover.enqueue);
-- a reschedule or a retry updates the row and keeps it; a park moves it to the dead letter
-- (dead_letters.trace_context), and a replay writes it back into the job it makes. NULL: nothing
-- was traced at enqueue. A value a worker cannot read is ignored (the run's span has no link).
-- ---------------------------------------------------------------------------
COMMENT ON COLUMN layover.scheduled_tasks.trace_context IS
    'The W3C trace context of the job''s enqueue, {"traceparent", "tracestate"}: each run''s span links to it. '
    'Kept through reschedules and retries, moved to the dead letter by a park and back by a replay. NULL: none.';
COMMENT ON COLUMN layover.dead_letters.trace_context IS
    'The W3C trace context of the parked job''s enqueue ({"traceparent", "tracestate"}); a replay keeps it. NULL: none.';

-- ---------------------------------------------------------------------------
-- job_types: the job types workers run, as the last worker to start registered them (written by the
-- job store, core JobSql.REGISTER_TYPES, when a Layover instance starts its workers; in a rolling
-- deploy the newest start's row stands). layover.enqueue reads it: a type no worker registered is
-- refused, and a key the type derives in Java from its args must be passed by the SQL caller.
--   args_shape              the fingerprint of the args type's shape, written with each job
--   args_properties         the properties the args type declares: an SQL enqueue may name only these
--                           (NULL: any, for an args type that is a Map or a JsonNode)
--   max_args_bytes          the worker's size cap of args (Layover.Builder#maxArgsBytes)
--   provider_key            the type's fixed provider key (JobType.Builder#providerKey(String)); NULL
--                           when it has none or derives it from args
--   provider_key_from_args  the provider key is a function of the args (JobType.Builder#providerKey(Function))
--   fairness_key_from_args  the type has a fairness key function (JobType.Builder#fairnessKey)
--   limit_keys_from_args    the type has a limit keys function (JobType.Builder#limitKeys)
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_types (
    job_type               text        PRIMARY KEY,
    args_shape             text        NOT NULL,
    args_properties        text[],
    max_args_bytes         int         NOT NULL,
    provider_key           text,
    provider_key_from_args boolean     NOT NULL,
    fairness_key_from_args boolean     NOT NULL,
    limit_keys_from_args   boolean     NOT NULL,
    registered_by          text        NOT NULL,
    registered_at          timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE layover.job_types IS
    'The job types workers run, as the last worker to start registered them; read by layover.enqueue.';

-- ---------------------------------------------------------------------------
-- layover.enqueue: a job from SQL, written as Layover's Java enqueue writes it (job_insert.sql): the
-- same columns, the args as UTF-8 JSON (the text of the jsonb), the args shape of the type's
-- registration, the fair-queue tag of a job due now with a fairness key (layover.fair_tags), the
-- token estimate {combined, input, output}, nothing written for an idempotency key that names a
-- live job, a dead letter still parked or in review, or a job completed within the history's
-- retention. The job store's (it writes the job table). Refuses, with an error naming the problem
-- (SQLSTATE 22023) and writing nothing: a job type no worker registered (layover.job_types); args
-- that are not a JSON object, name a property the args type does not declare, or are larger than
-- the cap; a key of 0 or more than 200 characters; a provider key the type derives from args and
-- the call does not pass (pass '' for none, as the type's function returning null); likewise a
-- fairness key ('' for none) and limit keys ('{}' for none); a provider key that differs from the
-- type's fixed one, or a key the type does not have; a priority outside smallint; a token estimate
-- without a provider key, negative or above 10^9; a malformed traceparent. A job id is the key, else
-- a new time-ordered UUID (version 7: the database's millisecond, then random bits). Returns the id
-- and whether the job was created.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.enqueue(job_type text, args jsonb, run_at timestamptz DEFAULT NULL, key text DEFAULT NULL,
                                priority int DEFAULT 0, deadline timestamptz DEFAULT NULL,
                                provider_key text DEFAULT NULL, fairness_key text DEFAULT NULL,
                                limit_keys text[] DEFAULT NULL, input_tokens bigint DEFAULT NULL,
                                output_tokens bigint DEFAULT NULL, tokens bigint DEFAULT NULL,
                                traceparent text DEFAULT NULL, tracestate text DEFAULT NULL)
    RETURNS TABLE (job_id text, created boolean)
    LANGUAGE plpgsql AS
$$
#variable_conflict use_variable
DECLARE
    v_type   layover.job_types%ROWTYPE;
    v_now    timestamptz := clock_timestamp();
    v_run_at timestamptz;
    v_id     text;
    v_data   bytea;
    v_pkey   text;
    v_fkey   text;
    v_lkeys  text[];
    v_est    float8[];
    v_trace  jsonb;
    v_odd    text[];
    v_hex    text;
    v_rows   int;
BEGIN
    SELECT * INTO v_type FROM layover.job_types jt WHERE jt.job_type = enqueue.job_type;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: unknown job type %L: no worker '
            'registered it (layover.job_types lists the types workers run; a worker registers its types when it starts)',
            job_type);
    END IF;
    IF args IS NULL OR jsonb_typeof(args) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: the args of job type %L must be a '
            'JSON object, got %s', job_type, coalesce(jsonb_typeof(args), 'NULL'));
    END IF;
    v_odd := ARRAY(SELECT p FROM jsonb_object_keys(args) p
                   WHERE v_type.args_properties IS NOT NULL AND p <> ALL (v_type.args_properties) ORDER BY p);
    IF cardinality(v_odd) > 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: the args of job type %L name '
            'properties its args type does not declare: %s (it declares: %s)', job_type, array_to_string(v_odd, ', '),
            array_to_string(v_type.args_properties, ', '));
    END IF;
    v_data := convert_to(args::text, 'UTF8');
    IF octet_length(v_data) > v_type.max_args_bytes THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: the args of job type %L are %s '
            'bytes as JSON, over the cap of %s bytes; store large payloads elsewhere and pass a reference', job_type,
            octet_length(v_data), v_type.max_args_bytes);
    END IF;
    IF key IS NOT NULL AND length(key) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: an idempotency key must be 1-200 '
            'characters, was %s', length(key));
    END IF;
    IF priority IS NULL OR priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: priority must fit a smallint, '
            'was %s', coalesce(priority::text, 'NULL'));
    END IF;

    -- the provider key: the type's fixed one, or the one the caller computed as the type's function would
    IF v_type.provider_key_from_args THEN
        IF provider_key IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L computes its '
                'provider key in Java from its args; pass provider_key => the key its function gives for these args '
                '('''' when it gives none)', job_type);
        END IF;
        v_pkey := nullif(provider_key, '');
    ELSIF v_type.provider_key IS NOT NULL THEN
        IF provider_key IS NOT NULL AND provider_key <> v_type.provider_key THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has the fixed '
                'provider key %L; got %L', job_type, v_type.provider_key, provider_key);
        END IF;
        v_pkey := v_type.provider_key;
    ELSIF nullif(provider_key, '') IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has no provider key; '
            'got %L', job_type, provider_key);
    END IF;
    IF length(v_pkey) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: a provider key must be 1-200 '
            'characters, was %s', length(v_pkey));
    END IF;

    IF v_type.fairness_key_from_args THEN
        IF fairness_key IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L computes its '
                'fairness key in Java from its args; pass fairness_key => the key its function gives for these args '
                '('''' when it gives none)', job_type);
        END IF;
        v_fkey := nullif(fairness_key, '');
    ELSIF nullif(fairness_key, '') IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has no fairness key; '
            'got %L', job_type, fairness_key);
    END IF;
    IF length(v_fkey) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: a fairness key must be 1-200 '
            'characters, was %s', length(v_fkey));
    END IF;

    IF v_type.limit_keys_from_args THEN
        IF limit_keys IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L computes its limit '
                'keys in Java from its args; pass limit_keys => the keys its function gives for these args (''{}'' '
                'when it gives none)', job_type);
        END IF;
        -- as JobType#limitKeysOf: distinct, in order, without nulls and without the provider key
        v_lkeys := ARRAY(SELECT u.k FROM unnest(limit_keys) WITH ORDINALITY AS u(k, n)
                         WHERE u.k IS NOT NULL AND u.k IS DISTINCT FROM v_pkey
                         GROUP BY u.k ORDER BY min(u.n));
        IF EXISTS (SELECT 1 FROM unnest(v_lkeys) k WHERE length(k) NOT BETWEEN 1 AND 200) THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: limit keys must be 1-200 characters';
        END IF;
        v_lkeys := nullif(v_lkeys, '{}'::text[]);
    ELSIF cardinality(limit_keys) > 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has no limit keys; '
            'got %s', job_type, limit_keys);
    END IF;

    -- the token estimate {combined, input, output}: input + output ceiling (JobType.Builder#tokenEstimate),
    -- or one number counted in every dimension (Layover.Builder#tokenCost)
    IF input_tokens IS NOT NULL OR output_tokens IS NOT NULL OR tokens IS NOT NULL THEN
        IF v_pkey IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: a token estimate reserves '
                'tokens of a provider key''s limits, and this job of type %L has no provider key', job_type);
        END IF;
        IF tokens IS NOT NULL AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL) THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: give tokens, or input_tokens and '
                'output_tokens, not both';
        END IF;
        IF least(input_tokens, output_tokens, tokens) < 0 OR greatest(input_tokens, output_tokens, tokens) > 1000000000 THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: token counts must be 0 to 10^9';
        END IF;
        v_est := CASE WHEN tokens IS NOT NULL THEN ARRAY[tokens, tokens, tokens]::float8[]
                      ELSE ARRAY[coalesce(input_tokens, 0) + coalesce(output_tokens, 0), coalesce(input_tokens, 0),
                                 coalesce(output_tokens, 0)]::float8[] END;
    END IF;

    IF traceparent IS NOT NULL THEN
        IF traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' OR left(traceparent, 2) = 'ff'
           OR substr(traceparent, 4, 32) = repeat('0', 32) OR substr(traceparent, 37, 16) = repeat('0', 16) THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: malformed traceparent %L '
                '(W3C: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lower case, ids not all zero)',
                traceparent);
        END IF;
        IF length(tracestate) > 512 THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: a tracestate is at most 512 characters';
        END IF;
        v_trace := jsonb_strip_nulls(jsonb_build_object('traceparent', traceparent, 'tracestate', tracestate));
    ELSIF tracestate IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: a tracestate needs its traceparent';
    END IF;

    v_run_at := coalesce(run_at, v_now);
    v_id := key;
    IF v_id IS NULL THEN
        v_hex := replace(gen_random_uuid()::text, '-', '');
        v_hex := lpad(to_hex(floor(extract(epoch FROM v_now) * 1000)::bigint), 12, '0') || '7'
                 || substr(v_hex, 14, 3) || substr(v_hex, 17, 16);
        v_id := substr(v_hex, 1, 8) || '-' || substr(v_hex, 9, 4) || '-' || substr(v_hex, 13, 4) || '-'
                || substr(v_hex, 17, 4) || '-' || substr(v_hex, 21, 12);
    END IF;

    INSERT INTO layover.scheduled_tasks
        (task_name, task_instance, task_data, execution_time, picked, version, priority, consecutive_failures,
         provider_key, deadline, limit_keys, args_shape, fairness_key, token_estimate, fair_tag, trace_context)
    SELECT v_type.job_type, v_id, v_data, v_run_at, false, 1, priority::smallint, 0, v_pkey, deadline, v_lkeys,
           v_type.args_shape, v_fkey, v_est,
           CASE WHEN v_fkey IS NOT NULL AND v_pkey IS NOT NULL AND v_run_at <= v_now
                THEN (layover.fair_tags(v_pkey, v_run_at, ARRAY[v_fkey], ARRAY[priority], ARRAY[v_est[1]],
                                        ARRAY[v_est[2]], ARRAY[v_est[3]]))[1] END,
           v_trace
    WHERE key IS NULL
       OR (NOT EXISTS (SELECT 1 FROM layover.dead_letters d
                       WHERE d.job_type = v_type.job_type AND d.job_id = v_id AND d.state IN ('parked', 'review'))
           AND NOT EXISTS (SELECT 1 FROM layover.job_history h
                           WHERE h.job_type = v_type.job_type AND h.job_id = v_id AND h.outcome = 'completed'))
    ON CONFLICT (task_name, task_instance) DO NOTHING;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    job_id := v_id;
    created := v_rows = 1;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION layover.enqueue(text, jsonb, timestamptz, text, int, timestamptz, text, text, text[], bigint, bigint,
                                    bigint, text, text) IS
    'Enqueues a job from SQL as Layover''s Java enqueue does; returns its id and whether it was created (docs/enqueue-from-sql.md).';

-- ---------------------------------------------------------------------------
-- model_prices: what tokens cost, per model, as the application configured it (Layover.Builder#prices,
-- the Spring Boot starter's layover.prices.*; written by core's internal.observe.PriceSql when an
-- instance with a price table starts: its models are upserted, others are left). No price ships
-- with Layover. Prices per million tokens in `currency`; cached input tokens at
-- cached_input_per_million (NULL: the input price). provider_keys: the provider keys, or prefix*
-- patterns, priced as this model; a key no row names is priced as the model its text after the
-- first ':' names ('openai:gpt-4o-mini' -> 'gpt-4o-mini'), see layover.model_of.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.model_prices (
    model                    text        PRIMARY KEY,
    currency                 text        NOT NULL,
    input_per_million        numeric     NOT NULL CHECK (input_per_million >= 0),
    cached_input_per_million numeric     CHECK (cached_input_per_million >= 0),
    output_per_million       numeric     NOT NULL CHECK (output_per_million >= 0),
    provider_keys            text[]      NOT NULL DEFAULT '{}',
    configured_by            text        NOT NULL,
    configured_at            timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE layover.model_prices IS
    'Token prices per model (per million tokens), as the application configured them; read by layover.token_costs.';

-- The model a provider key is priced as: the row naming the key, else the row with the longest prefix*
-- pattern matching it, else the key's text after its first ':' (the key itself without one); NULL for
-- no key.
CREATE FUNCTION layover.model_of(p_provider_key text) RETURNS text
    LANGUAGE sql STABLE AS
$$
    SELECT coalesce(
        (SELECT m.model FROM layover.model_prices m, unnest(m.provider_keys) k
         WHERE k = p_provider_key OR (right(k, 1) = '*' AND starts_with(p_provider_key, left(k, -1)))
         ORDER BY k = p_provider_key DESC, length(k) DESC, m.model
         LIMIT 1),
        CASE WHEN strpos(p_provider_key, ':') > 0 THEN substr(p_provider_key, strpos(p_provider_key, ':') + 1)
             ELSE nullif(p_provider_key, '') END)
$$;

-- ---------------------------------------------------------------------------
-- The documented view of token use and its cost: per day (UTC), job type, provider key and fairness
-- key (the tenant), the tokens the runs reported, from the time series' hour rows (kept 7 days by
-- default; counters input_tokens, output_tokens, cached_input_tokens, detail the fairness key), priced
-- by layover.model_prices. cost is NULL when the key's model has no price (priced false); a provider
-- key '*' (the keys past the 100 busiest of a flush) or a fairness key '*' (past the busiest) sums the
-- rest. Input tokens include the cached ones, which are priced at the cached price.
-- ---------------------------------------------------------------------------
CREATE VIEW layover.token_costs AS
SELECT u.day, u.job_type, u.provider_key, u.fairness_key, m.model, p.model IS NOT NULL AS priced, p.currency,
       u.input_tokens, u.output_tokens, u.cached_input_tokens,
       round((greatest(u.input_tokens - u.cached_input_tokens, 0) * p.input_per_million
              + u.cached_input_tokens * coalesce(p.cached_input_per_million, p.input_per_million)
              + u.output_tokens * p.output_per_million) / 1000000, 6) AS cost
FROM (SELECT (c.bucket AT TIME ZONE 'UTC')::date AS day, c.job_type, nullif(c.provider_key, '') AS provider_key,
             nullif(c.detail, '') AS fairness_key,
             coalesce(sum(c.amount) FILTER (WHERE c.counter = 'input_tokens'), 0) AS input_tokens,
             coalesce(sum(c.amount) FILTER (WHERE c.counter = 'output_tokens'), 0) AS output_tokens,
             coalesce(sum(c.amount) FILTER (WHERE c.counter = 'cached_input_tokens'), 0) AS cached_input_tokens
      FROM layover.time_series_counts c
      WHERE c.bucket_seconds = 3600 AND c.counter IN ('input_tokens', 'output_tokens', 'cached_input_tokens')
      GROUP BY 1, 2, 3, 4) u
     CROSS JOIN LATERAL (SELECT layover.model_of(u.provider_key) AS model) m
     LEFT JOIN layover.model_prices p ON p.model = m.model;

COMMENT ON VIEW layover.token_costs IS
    'Tokens reported per day (UTC), job type, provider key and fairness key, and their cost by layover.model_prices '
    '(NULL when the model has no price); from the time series'' hour rows.';


