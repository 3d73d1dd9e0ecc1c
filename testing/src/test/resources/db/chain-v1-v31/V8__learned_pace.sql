-- Layover schema, version 8: paces learned from 429s (CooldownSettings, "Learned pace").
--
-- A 429 that states the key's request limit (OpenAI's message or x-ratelimit-*-requests headers,
-- Anthropic's anthropic-ratelimit-requests-*) teaches the fleet a pace for a key without a
-- configured bucket: a row of layover.buckets whose learned_until is set. Workers read it with
-- the key's breaker and cooldown and take permits from it exactly as from a configured bucket
-- (the GCRA columns are shared), until learned_until passes; each further 429 that states a
-- limit renews it. A configured bucket (learned_until NULL) is never overwritten by learning.
--
-- Forward-only: a released file is never edited; a change is a new file.

ALTER TABLE layover.buckets
    ADD COLUMN learned_until timestamptz;  -- NULL: configured by a worker; else learned, in force until then

COMMENT ON COLUMN layover.buckets.learned_until IS
    'NULL: a configured bucket. Set: a pace learned from a 429 that stated the limit, in force until then.';

-- provider_keys: the view of V2 with the learned pace appended (existing columns unchanged, in order).
CREATE OR REPLACE VIEW layover.provider_keys AS
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
            THEN greatest(bk.request_tat, bk.token_tat) END AS bucket_booked_until,
       CASE WHEN bk.learned_until > now() THEN bk.learned_until END AS pace_learned_until
FROM (SELECT provider_key FROM layover.breakers
      UNION SELECT provider_key FROM layover.cooldowns
      UNION SELECT provider_key FROM layover.buckets) k
LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key;

COMMENT ON VIEW layover.provider_keys IS
    'Per provider key: breaker state, active cooldown, bucket limits (configured or learned: pace_learned_until) and how far ahead its permits are booked.';
