-- Layover schema, version 15: paces discovered for keys whose 429s state no limit (DiscoverySettings,
-- docs/provider-state.md "Discovered pace").
--
-- Gemini, Bedrock, Azure without limit headers and OpenAI-compatible servers answer 429 without
-- saying what the limit is, so no pace can be learned from them (V8). For such a key (no
-- configured bucket, no stated pace in force) the fleet discovers the rate itself: a row of
-- layover.buckets with learned_until set and discovered = true, whose requests_per_minute the
-- workers move with additive increase / multiplicative decrease:
--   * the first 429 that states nothing creates it in slow start at the initial rate;
--   * slow start doubles the rate every interval until the first 429 (or, after a restart, until
--     the rate before it), then the pace is steady;
--   * steady: every interval in which the pace's permits were all in use (request_tat ahead of
--     now), the rate grows by a share of the ceiling (the rate of the last 429 burst); past the
--     ceiling by 10 % it grows by 10 % per interval and the ceiling moves up with it (probing);
--   * a 429 burst multiplies the rate by the decrease factor once for the fleet: a 429 within one
--     interval of the last decrease belongs to the same burst;
--   * a long cooldown (a stated wait, a quota reset, an overload) restarts slow start.
-- Each change is one conditional UPDATE whose WHERE holds the condition, with the database's
-- clock (now()): an increase only where discovery_adjusted_at is at least one interval old, so
-- however many workers succeed, the fleet writes at most one increase per key and interval.
-- Precedence: a configured bucket (learned_until NULL) is never touched; a pace learned from a
-- stated limit (discovered = false, learned_until in force) is never replaced by a discovered
-- one, and replaces a discovered one (V8's upsert clears discovered).
-- Operators reset a discovered pace by deleting its row:
--   DELETE FROM layover.buckets WHERE provider_key = '...' AND discovered;
--
-- Forward-only: a released file is never edited; a change is a new file.

ALTER TABLE layover.buckets
    ADD COLUMN discovered              boolean NOT NULL DEFAULT false,  -- learned_until set: a discovered, not a stated, pace
    ADD COLUMN discovery_phase         text,                            -- slow_start | steady (discovered rows only)
    ADD COLUMN discovery_ceiling       float8,                          -- requests/min of the last 429 burst; NULL before the first
    ADD COLUMN discovery_adjusted_at   timestamptz,                     -- the last increase, decrease or restart (database time)
    ADD COLUMN discovery_decreased_at  timestamptz,                     -- the last decrease (or the start): later 429s within one interval are its burst
    ADD COLUMN discovery_increases     int NOT NULL DEFAULT 0,
    ADD COLUMN discovery_decreases     int NOT NULL DEFAULT 0,
    ADD COLUMN discovery_waitlist      timestamptz,                     -- where the next job beyond the booking horizon waits (no permit held)
    ADD CONSTRAINT buckets_discovery_phase_check CHECK (discovery_phase IN ('slow_start', 'steady'));

COMMENT ON COLUMN layover.buckets.discovered IS
    'With learned_until set: true for a pace discovered from 429s that stated no limit, false for a pace a 429 stated.';
COMMENT ON COLUMN layover.buckets.discovery_ceiling IS
    'A discovered pace: the requests per minute at which its last 429 burst came (NULL before the first).';

-- A discovered pace's new rate reaches every worker at once (they also re-read it each second):
-- the channel of V2's breaker and cooldown notifications; workers re-read the key's state.
CREATE FUNCTION layover.notify_discovered_pace() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
        'table', 'buckets', 'key', NEW.provider_key, 'requests_per_minute', NEW.requests_per_minute)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER buckets_notify_discovered_insert AFTER INSERT ON layover.buckets
    FOR EACH ROW WHEN (NEW.discovered)
    EXECUTE FUNCTION layover.notify_discovered_pace();
CREATE TRIGGER buckets_notify_discovered_update AFTER UPDATE OF requests_per_minute, discovered ON layover.buckets
    FOR EACH ROW WHEN (NEW.discovered AND (OLD.requests_per_minute IS DISTINCT FROM NEW.requests_per_minute
                                           OR NOT OLD.discovered))
    EXECUTE FUNCTION layover.notify_discovered_pace();

-- provider_keys: the view of V10 with the pace's source and the discovery state appended
-- (existing columns unchanged, in order):
--   pace_source             configured | stated | discovered (NULL: no bucket, or a lapsed pace)
--   discovery_phase         slow_start | steady
--   discovery_ceiling_per_minute, discovery_adjusted_at, discovery_decreased_at,
--   discovery_increases, discovery_decreases
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
LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key;

COMMENT ON VIEW layover.provider_keys IS
    'Per provider key: breaker state (and whether its trial is due or in flight), active cooldown, bucket limits '
    '(configured, stated by a 429 or discovered: pace_source, pace_learned_until, discovery_*), permits free now and '
    'how far ahead they are booked.';
