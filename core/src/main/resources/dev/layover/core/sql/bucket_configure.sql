-- A bucket's limits, every dimension, as configured by a worker (an exact key, or a prefix* pattern
-- whose copies, one per key met, follow it); a pace the key learned (stated or discovered) becomes a
-- configured bucket. Rates are per minute, null for none.
WITH copies AS (
    UPDATE layover.buckets
    SET requests_per_minute = :rpm, tokens_per_minute = :tpm, input_tokens_per_minute = :itpm,
        output_tokens_per_minute = :otpm, burst_ms = :burst_ms, token_burst_ms = :token_burst_ms,
        configured_at = now(), configured_by = :worker
    WHERE pattern = :key
      AND (requests_per_minute, tokens_per_minute, input_tokens_per_minute, output_tokens_per_minute, burst_ms,
           token_burst_ms)
          IS DISTINCT FROM (:rpm::float8, :tpm::float8, :itpm::float8, :otpm::float8, :burst_ms::int, :token_burst_ms::int)
)
INSERT INTO layover.buckets (provider_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute,
                             output_tokens_per_minute, burst_ms, token_burst_ms, configured_by)
VALUES (:key, :rpm, :tpm, :itpm, :otpm, :burst_ms, :token_burst_ms, :worker)
ON CONFLICT (provider_key) DO UPDATE
SET requests_per_minute = excluded.requests_per_minute, tokens_per_minute = excluded.tokens_per_minute,
    input_tokens_per_minute = excluded.input_tokens_per_minute,
    output_tokens_per_minute = excluded.output_tokens_per_minute,
    burst_ms = excluded.burst_ms, token_burst_ms = excluded.token_burst_ms,
    configured_at = now(), configured_by = excluded.configured_by, learned_until = NULL, discovered = false,
    pattern = NULL
