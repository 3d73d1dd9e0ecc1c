-- Layover schema, version 19 (issue 18): what a key's calls really use of their token reservations;
-- the tokens of a dead letter's last run.
--
-- A call reserves its input estimate + output ceiling, and the part its provider reports unused
-- is given back after the call (V17). A call that cannot be admitted now books the first slot at
-- which the bucket admits it; booked with its whole reservation, the slots of a backlog are
-- spaced by reservations, and what the calls before it give back is only usable by calls booked
-- after the give-back: a key whose answers use 60 % of their ceiling would run at about
-- used / reserved of its limit. So a booking takes what the key's calls have been using of their
-- reservations (the share below) instead, and is settled after its call like any other: the
-- bucket then holds what the calls counted, and the provider's window sees about its limit.
-- Forward-only: nothing here changes what earlier versions stored.
--
--   token_share / input_share / output_share   per token dimension, an exponentially weighted
--       mean (weight 0.05 per call) of counted / reserved over the calls that reported usage,
--       written by the settle after each call (core TokenSql.SETTLE); NULL until the first report
--       (a booking then takes the whole reservation). A booking takes need x the share clamped to
--       [0.05, 1]: never more than the whole reservation, never almost nothing.
ALTER TABLE layover.buckets
    ADD COLUMN token_share  float8,
    ADD COLUMN input_share  float8,
    ADD COLUMN output_share float8;

COMMENT ON COLUMN layover.buckets.token_share IS
    'Mean share of their combined token reservation the key''s calls reported using (EWMA, weight 0.05); NULL: no report yet.';
COMMENT ON COLUMN layover.buckets.input_share IS 'The same for the input token dimension.';
COMMENT ON COLUMN layover.buckets.output_share IS 'The same for the output token dimension (the answers'' share of their ceiling).';

-- layover.token_buckets (V17) gains used_share: the dimension's share above (NULL: no report yet).
CREATE OR REPLACE VIEW layover.token_buckets AS
SELECT bk.provider_key, d.dimension, d.per_minute,
       layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms)) AS capacity,
       layover.gcra_free(d.tat, now(), d.per_minute / 60.0,
                         layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms))) AS free_now,
       CASE WHEN d.tat > now() THEN d.tat END AS booked_until,
       d.share AS used_share
FROM layover.buckets bk
CROSS JOIN LATERAL (VALUES ('tokens', bk.tokens_per_minute, bk.token_tat, bk.token_share),
                           ('input_tokens', bk.input_tokens_per_minute, bk.input_tat, bk.input_share),
                           ('output_tokens', bk.output_tokens_per_minute, bk.output_tat, bk.output_share))
    AS d(dimension, per_minute, tat, share)
WHERE d.per_minute > 0;

COMMENT ON VIEW layover.token_buckets IS
    'The token dimensions of each bucket: limit per minute, capacity, tokens free now, booked until, share of reservations used.';

-- ---------------------------------------------------------------------------
-- Dead letters record the tokens of the run that parked them, as job_history does (V17): written
-- by the park statement (core JobSql.PARK), replaced when a replay parks again.
--   input_tokens         every input token the last run's call reported (cache included); NULL:
--                        no usage reported (the call failed before answering, or never ran)
--   output_tokens        its output tokens
--   cached_input_tokens  the part of input_tokens read from a prompt cache
--   estimated_tokens     its reservation (input estimate + output ceiling); NULL: none
-- ---------------------------------------------------------------------------
ALTER TABLE layover.dead_letters
    ADD COLUMN input_tokens        bigint,
    ADD COLUMN output_tokens       bigint,
    ADD COLUMN cached_input_tokens bigint,
    ADD COLUMN estimated_tokens    bigint;

COMMENT ON COLUMN layover.dead_letters.input_tokens IS
    'Input tokens the run that parked it reported (cache included); NULL when no usage was reported.';
COMMENT ON COLUMN layover.dead_letters.output_tokens IS 'Output tokens the run that parked it reported.';
COMMENT ON COLUMN layover.dead_letters.cached_input_tokens IS 'Of input_tokens, those read from a prompt cache.';
COMMENT ON COLUMN layover.dead_letters.estimated_tokens IS 'The parking run''s token reservation (input estimate + output ceiling).';
