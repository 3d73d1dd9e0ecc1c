-- Layover schema, version 17: token-true admission (issue 18).
--
-- 1. Buckets get input and output token dimensions beside requests and combined tokens, each
--    optional, and a burst of their own for the token dimensions (their capacity: by default one
--    minute of the limit, as the providers' own token buckets hold).
-- 2. A call's reservation (input estimate + output ceiling) is replaced after the call by the
--    usage its provider reported: layover.gcra_settle is the rule for one dimension (the unused
--    part given back, an under-estimate charged, a charge bounded).
-- 3. job_history records each finished job's reported token usage and its limit keys (the
--    tenant), so "tokens used by tenant X today, and how many on calls that failed" is a query.
-- 4. layover.token_buckets: the token dimensions of every bucket, one row per key and dimension.
-- 5. layover.admit_tokens: layover.admit (V10) with every token dimension, for jobs with limits
--    on several keys.
-- Forward-only: nothing here changes what earlier versions stored.

-- ---------------------------------------------------------------------------
-- 1. Token dimensions. tokens_per_minute / token_tat (V2) stay the combined dimension (input and
-- output together: OpenAI's and Bedrock's TPM); input_* is Anthropic's ITPM and Gemini's TPM,
-- output_* Anthropic's OTPM. token_burst_ms: how much of each token rate may be spent at once
-- (NULL for rows written before V17: burst_ms, as they were admitted).
-- ---------------------------------------------------------------------------
ALTER TABLE layover.buckets
    ADD COLUMN input_tokens_per_minute  float8,
    ADD COLUMN output_tokens_per_minute float8,
    ADD COLUMN input_tat                timestamptz NOT NULL DEFAULT '-infinity',
    ADD COLUMN output_tat               timestamptz NOT NULL DEFAULT '-infinity',
    ADD COLUMN token_burst_ms           int;

ALTER TABLE layover.buckets DROP CONSTRAINT buckets_limit_check;
ALTER TABLE layover.buckets ADD CONSTRAINT buckets_limit_check
    CHECK (requests_per_minute > 0 OR tokens_per_minute > 0 OR input_tokens_per_minute > 0
           OR output_tokens_per_minute > 0);

COMMENT ON COLUMN layover.buckets.input_tokens_per_minute IS 'Input token limit (NULL: none); input_tat its GCRA time.';
COMMENT ON COLUMN layover.buckets.output_tokens_per_minute IS 'Output token limit (NULL: none); output_tat its GCRA time.';
COMMENT ON COLUMN layover.buckets.token_burst_ms IS
    'How much of each token rate may be spent at once (capacity = rate x this); NULL: burst_ms.';

-- ---------------------------------------------------------------------------
-- 2. Settling one dimension after a call: `delta` = what the call counts (reported usage) minus
-- what it reserved. A negative delta gives the unused tokens back: tat moves back by
-- -delta / rate (a tat in the past means a full bucket, so a give-back never banks more than the
-- capacity). A positive delta charges the under-estimate as a take does, from greatest(tat, now),
-- but at most `max_charge` tokens (the debt rule: one minute of the dimension's limit per call),
-- so that a report far above any real call cannot hold the key back for longer than a minute.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.gcra_settle(tat timestamptz, now timestamptz, rate float8, delta float8, max_charge float8)
    RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN rate <= 0 OR delta = 0 OR delta IS NULL THEN tat
               WHEN delta < 0 THEN tat + make_interval(secs => delta / rate)
               ELSE greatest(tat, now) + make_interval(secs => least(delta, max_charge) / rate) END $$;

COMMENT ON FUNCTION layover.gcra_settle(timestamptz, timestamptz, float8, float8, float8) IS
    'A token dimension after a call: the unused reservation given back (delta < 0), an under-estimate charged up to max_charge.';

-- ---------------------------------------------------------------------------
-- 3. Token usage in the history. Written by the statements that remove a job (core JobSql):
--   input_tokens         every input token the last run's call reported (cache reads and writes
--                        included, whatever the provider's convention); NULL: no usage reported
--   output_tokens        its output tokens (reasoning / thinking included)
--   cached_input_tokens  the part of input_tokens read from a prompt cache
--   estimated_tokens     what its reservation was (input estimate + output ceiling); NULL: none
--   limit_keys           the job's limit keys (JobType.Builder#limitKeys, e.g. {tenant:42})
-- ---------------------------------------------------------------------------
ALTER TABLE layover.job_history
    ADD COLUMN input_tokens        bigint,
    ADD COLUMN output_tokens       bigint,
    ADD COLUMN cached_input_tokens bigint,
    ADD COLUMN estimated_tokens    bigint,
    ADD COLUMN limit_keys          text[];

COMMENT ON COLUMN layover.job_history.input_tokens IS
    'Input tokens the last run reported (cache included); NULL when no usage was reported.';
COMMENT ON COLUMN layover.job_history.output_tokens IS 'Output tokens the last run reported.';
COMMENT ON COLUMN layover.job_history.cached_input_tokens IS 'Of input_tokens, those read from a prompt cache.';
COMMENT ON COLUMN layover.job_history.estimated_tokens IS 'The last run''s token reservation (input estimate + output ceiling).';
COMMENT ON COLUMN layover.job_history.limit_keys IS 'The job''s limit keys (a tenant key, ...), as on the job.';

-- "tokens by tenant": WHERE limit_keys @> ARRAY['tenant:42'] AND finished_at >= ...
CREATE INDEX job_history_limit_keys_idx ON layover.job_history USING gin (limit_keys) WHERE limit_keys IS NOT NULL;

-- ---------------------------------------------------------------------------
-- 4. layover.token_buckets: one row per bucket and limited token dimension.
--   dimension        tokens (input + output) | input_tokens | output_tokens
--   per_minute       the limit
--   capacity         tokens that may be spent at once
--   free_now         tokens free now (negative: booked ahead by reservations or charges)
--   booked_until     when everything handed out so far has drained (NULL: drained)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.token_buckets AS
SELECT bk.provider_key, d.dimension, d.per_minute,
       layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms)) AS capacity,
       layover.gcra_free(d.tat, now(), d.per_minute / 60.0,
                         layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms))) AS free_now,
       CASE WHEN d.tat > now() THEN d.tat END AS booked_until
FROM layover.buckets bk
CROSS JOIN LATERAL (VALUES ('tokens', bk.tokens_per_minute, bk.token_tat),
                           ('input_tokens', bk.input_tokens_per_minute, bk.input_tat),
                           ('output_tokens', bk.output_tokens_per_minute, bk.output_tat)) AS d(dimension, per_minute, tat)
WHERE d.per_minute > 0;

COMMENT ON VIEW layover.token_buckets IS
    'The token dimensions of each bucket: limit per minute, capacity, tokens free now, booked until.';

-- ---------------------------------------------------------------------------
-- 5. layover.admit_tokens: V10's layover.admit (same rules: every bucket's permit and every
-- concurrency slot of a job's keys, or nothing) with the input and output token dimensions beside
-- the combined one. A dimension's need is its own: p_tokens (combined: input estimate + output
-- ceiling), p_input, p_output. Returns as layover.admit does.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.admit_tokens(
        p_now timestamptz, p_task_name text, p_task_id text, p_version bigint, p_worker text,
        p_keys text[], p_rr float8[], p_rc float8[], p_tr float8[], p_tc float8[],
        p_ir float8[], p_ic float8[], p_or float8[], p_oc float8[], p_max int[],
        p_tokens float8, p_input float8, p_output float8, p_dead_after_s float8)
    RETURNS TABLE (admitted boolean, reason text, limit_key text, retry_at timestamptz)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    n          int := coalesce(array_length(p_keys, 1), 0);
    i          int;
    b          record;
    fits_at    timestamptz;
    worst      timestamptz := p_now;
    worst_key  text;
    found_slot int;
    slots      int[] := '{}';
    limited    boolean;
BEGIN
    FOR i IN 1 .. n LOOP
        limited := p_rr[i] > 0 OR (p_tr[i] > 0 AND p_tokens > 0) OR (p_ir[i] > 0 AND p_input > 0)
                   OR (p_or[i] > 0 AND p_output > 0);
        IF limited THEN
            SELECT bk.request_tat, bk.token_tat, bk.input_tat, bk.output_tat INTO b
            FROM layover.buckets bk WHERE bk.provider_key = p_keys[i]
            FOR UPDATE;
            IF NOT FOUND THEN
                RETURN QUERY SELECT false, 'missing_bucket'::text, p_keys[i], NULL::timestamptz;
                RETURN;
            END IF;
            fits_at := greatest(p_now,
                layover.gcra_fits_at(b.request_tat, p_rr[i], p_rc[i], 1),
                layover.gcra_fits_at(b.token_tat, p_tr[i], p_tc[i], p_tokens),
                layover.gcra_fits_at(b.input_tat, p_ir[i], p_ic[i], p_input),
                layover.gcra_fits_at(b.output_tat, p_or[i], p_oc[i], p_output));
            IF fits_at > worst THEN
                worst := fits_at;
                worst_key := p_keys[i];
            END IF;
        END IF;
    END LOOP;
    IF worst > p_now THEN
        RETURN QUERY SELECT false, 'bucket'::text, worst_key, worst;
        RETURN;
    END IF;

    FOR i IN 1 .. n LOOP
        found_slot := NULL;
        IF p_max[i] > 0 THEN
            SELECT s.slot INTO found_slot
            FROM layover.concurrency_slots s
            WHERE s.limit_key = p_keys[i] AND s.slot < p_max[i]
              AND (s.holder_id IS NULL
                   OR (s.claimed_at < now()
                       AND NOT EXISTS (
                           SELECT 1 FROM layover.scheduled_tasks t
                           WHERE t.task_name = s.holder_type AND t.task_instance = s.holder_id
                             AND t.version = s.holder_version AND t.picked
                             AND t.last_heartbeat > p_now - make_interval(secs => p_dead_after_s))))
            ORDER BY s.slot
            LIMIT 1
            FOR UPDATE SKIP LOCKED;
            IF found_slot IS NULL THEN
                IF NOT EXISTS (SELECT 1 FROM layover.concurrency_slots s
                               WHERE s.limit_key = p_keys[i] AND s.slot = p_max[i] - 1) THEN
                    RETURN QUERY SELECT false, 'missing_slots'::text, p_keys[i], NULL::timestamptz;
                ELSE
                    RETURN QUERY SELECT false, 'concurrency'::text, p_keys[i], NULL::timestamptz;
                END IF;
                RETURN;
            END IF;
        END IF;
        slots := slots || found_slot;
    END LOOP;

    FOR i IN 1 .. n LOOP
        IF p_rr[i] > 0 OR (p_tr[i] > 0 AND p_tokens > 0) OR (p_ir[i] > 0 AND p_input > 0)
           OR (p_or[i] > 0 AND p_output > 0) THEN
            UPDATE layover.buckets bk
            SET request_tat = layover.gcra_take(bk.request_tat, p_now, p_rr[i], 1),
                token_tat = layover.gcra_take(bk.token_tat, p_now, p_tr[i], p_tokens),
                input_tat = layover.gcra_take(bk.input_tat, p_now, p_ir[i], p_input),
                output_tat = layover.gcra_take(bk.output_tat, p_now, p_or[i], p_output),
                last_slot = p_now,
                last_granted_requests = CASE WHEN p_rr[i] > 0 THEN 1 ELSE 0 END,
                last_granted_tokens = CASE WHEN p_tr[i] > 0 THEN p_tokens ELSE 0 END
            WHERE bk.provider_key = p_keys[i];
        END IF;
        IF slots[i] IS NOT NULL THEN
            UPDATE layover.concurrency_slots s
            SET holder_type = p_task_name, holder_id = p_task_id, holder_version = p_version,
                claimed_at = now(), claimed_by = p_worker
            WHERE s.limit_key = p_keys[i] AND s.slot = slots[i];
        END IF;
    END LOOP;
    RETURN QUERY SELECT true, NULL::text, NULL::text, NULL::timestamptz;
END
$$;

COMMENT ON FUNCTION layover.admit_tokens(timestamptz, text, text, bigint, text, text[], float8[], float8[], float8[],
        float8[], float8[], float8[], float8[], float8[], int[], float8, float8, float8, float8) IS
    'layover.admit with input and output token dimensions: every limit of a job''s keys, or nothing.';
