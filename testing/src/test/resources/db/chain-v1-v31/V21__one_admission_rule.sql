-- Layover schema, version 21: one implementation of the admission rule.
--
-- V17's layover.admit_tokens is V10's layover.admit (every bucket permit and concurrency slot of a
-- job's keys, or nothing) with the input and output token dimensions beside the combined one, and
-- the two bodies had been kept side by side. Workers of this version call admit_tokens only;
-- layover.admit stays for workers of earlier versions during a rolling deploy, and is now
-- admit_tokens with no input or output dimension (rates 0, needs 0: those dimensions limit
-- nothing), so a change of the rule is made once. Same arguments, same results as before.
-- Forward-only: nothing here changes what earlier versions stored.
CREATE OR REPLACE FUNCTION layover.admit(
        p_now timestamptz, p_task_name text, p_task_id text, p_version bigint, p_worker text,
        p_keys text[], p_rr float8[], p_rc float8[], p_tr float8[], p_tc float8[], p_max int[],
        p_tokens float8, p_dead_after_s float8)
    RETURNS TABLE (admitted boolean, reason text, limit_key text, retry_at timestamptz)
    LANGUAGE sql VOLATILE AS
$$
    SELECT a.admitted, a.reason, a.limit_key, a.retry_at
    FROM layover.admit_tokens(p_now, p_task_name, p_task_id, p_version, p_worker, p_keys, p_rr, p_rc, p_tr, p_tc,
             array_fill(0::float8, ARRAY[coalesce(array_length(p_keys, 1), 0)]),
             array_fill(0::float8, ARRAY[coalesce(array_length(p_keys, 1), 0)]),
             array_fill(0::float8, ARRAY[coalesce(array_length(p_keys, 1), 0)]),
             array_fill(0::float8, ARRAY[coalesce(array_length(p_keys, 1), 0)]),
             p_max, p_tokens, 0, 0, p_dead_after_s) a
$$;

COMMENT ON FUNCTION layover.admit(timestamptz, text, text, bigint, text, text[], float8[], float8[], float8[],
        float8[], int[], float8, float8) IS
    'For workers before V17: layover.admit_tokens without input and output dimensions (one rule, V21).';
