-- Layover schema, version 2: fleet-wide provider state.
--
-- Every worker in every JVM reads and writes the same rows, so a limit learned by one worker
-- spares all the others. Three tables, one row per provider key (e.g. 'openai:gpt-4o-mini'):
--   breakers  - circuit breaker: closed -> open -> half_open -> closed (or open again)
--   cooldowns - "do not call before `until`"; `until` only ever moves forward
--   buckets   - admission limits (requests and/or tokens per minute) as GCRA arrival times
-- Layover changes each row with one conditional UPDATE (the check is inside the write). A change
-- of breaker state or of a cooldown sends NOTIFY layover_provider_state (trigger below), so that
-- other JVMs refresh their cached copy at once.
--
-- Also: the fallback trail of a job (which endpoint answered, why earlier ones were passed over)
-- on jobs and dead letters, and the `jobs` view extended with it.

-- ---------------------------------------------------------------------------
-- breakers
--   closed:    calls pass; calls and failures are counted in a tumbling window
--              (window_started_at); enough failures open it.
--   open:      no call before open_until; a job picked meanwhile is parked `breaker_open`.
--              open_until = 'infinity' when an operator forced it open without an end.
--   half_open: open_until has passed and one worker holds the trial (trial_token) until
--              trial_expires_at; a stale claim (its worker died) can be taken over.
--              'open' with open_until in the past also means "waiting for its trial":
--              the first worker to claim it moves it to half_open.
-- A row is created (closed) the first time a worker sees the key. Inserting a row does not
-- notify (a new row is closed); updates of state, open_until or the trial claim do.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.breakers (
    provider_key       text        PRIMARY KEY,
    state              text        NOT NULL DEFAULT 'closed',
    previous_state     text,                                -- the state before the last change
    window_started_at  timestamptz NOT NULL DEFAULT now(),  -- start of the counting window (closed state)
    calls              int         NOT NULL DEFAULT 0,      -- successes + failures in the window
    failures           int         NOT NULL DEFAULT 0,      -- failures in the window
    opened_at          timestamptz,                         -- the last transition to open
    open_until         timestamptz,                         -- open: no call before this
    open_count         int         NOT NULL DEFAULT 0,      -- openings since the last close (the cool-off doubles with each)
    closed_at          timestamptz,                         -- the last transition to closed (NULL: never opened)
    trial_token        text,                                -- half_open: the claim of the one trial call
    trial_claimed_by   text,                                -- worker holding the trial
    trial_claimed_at   timestamptz,
    trial_expires_at   timestamptz,                         -- after this the claim is stale and can be taken over
    reason             text,                                -- why the last transition happened
    last_failure       text,                                -- the last failure counted, in the provider's words
    last_failure_at    timestamptz,
    changed_at         timestamptz NOT NULL DEFAULT now(),  -- the last state change
    changed_by         text,                                -- worker (or operator) that made it
    change_origin      text,                                -- Layover instance id that made it (tells NOTIFY receivers which changes are their own)
    CONSTRAINT breakers_state_check CHECK (state IN ('closed', 'open', 'half_open'))
);

CREATE INDEX breakers_state_idx ON layover.breakers (state) WHERE state <> 'closed';

COMMENT ON TABLE layover.breakers IS
    'Circuit breaker per provider key. state: closed -> open -> half_open -> closed | open. '
    'open: no call before open_until. closed_at: the last close (the recovery sweep reads it).';

-- ---------------------------------------------------------------------------
-- cooldowns: a provider key asked everyone to wait (429, a spent quota with a known reset,
-- overload). `until` only moves forward: GREATEST(until, new) in every write.
-- strikes counts back-to-back cooldowns; waits without a retry-after escalate with it.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.cooldowns (
    provider_key   text        PRIMARY KEY,
    until          timestamptz NOT NULL,   -- no call before this
    reason         text        NOT NULL,   -- rate_limited, quota_exhausted, overloaded
    detail         text,                   -- the provider's words
    strikes        int         NOT NULL DEFAULT 1,
    started_at     timestamptz NOT NULL,   -- first cooldown of the current run of strikes
    updated_at     timestamptz NOT NULL,
    updated_by     text,
    change_origin  text
);

COMMENT ON TABLE layover.cooldowns IS
    'Per provider key: no call before until (only moves forward). Jobs picked earlier are rescheduled to until + jitter.';

-- ---------------------------------------------------------------------------
-- buckets: admission limits shared by the fleet, as GCRA "theoretical arrival times".
-- For each limited dimension (requests, tokens), *_tat is the time at which everything
-- handed out so far will have drained; a reservation moves it forward by cost / rate in one
-- UPDATE and gets the moment its permit exists. The limits are written by the workers from
-- their configuration when they start (the last one started wins).
-- ---------------------------------------------------------------------------
CREATE TABLE layover.buckets (
    provider_key         text        PRIMARY KEY,
    requests_per_minute  float8,                  -- NULL: no request limit
    tokens_per_minute    float8,                  -- NULL: no token limit
    burst_ms             int         NOT NULL,    -- how much of the rate may be used at once
    request_tat          timestamptz NOT NULL DEFAULT '-infinity',  -- -infinity: nothing handed out yet
    token_tat            timestamptz NOT NULL DEFAULT '-infinity',
    configured_at        timestamptz NOT NULL DEFAULT now(),
    configured_by        text,
    last_slot            timestamptz,             -- the last reservation: when its permit exists
    last_granted_requests float8,                 -- and how much it took (a lease takes several)
    last_granted_tokens  float8,
    CONSTRAINT buckets_limit_check CHECK (requests_per_minute > 0 OR tokens_per_minute > 0)
);

COMMENT ON TABLE layover.buckets IS
    'Admission limits per provider key (GCRA). request_tat/token_tat: when the permits handed out so far drain.';

-- ---------------------------------------------------------------------------
-- The fallback trail of a job: a jsonb array, oldest first, one object per endpoint a
-- FallbackChain considered: {"at", "attempt", "key", "result", "detail", "wait_ms"}.
-- result: answered, rate_limited, overloaded, transient, quota_exhausted, auth_refused,
-- rejected, error, skipped_cooldown, skipped_breaker_open, skipped_half_open, skipped_bucket.
-- permit_at: a bucket permit the job holds, for the run time it was rescheduled to.
-- ---------------------------------------------------------------------------
ALTER TABLE layover.scheduled_tasks
    ADD COLUMN provider_trail jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN permit_at      timestamptz;

ALTER TABLE layover.dead_letters
    ADD COLUMN provider_trail jsonb NOT NULL DEFAULT '[]'::jsonb;

-- Appends entries to a trail and keeps the newest 50, so a job rescheduled all day stays small.
CREATE FUNCTION layover.trail_append(trail jsonb, more jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN more IS NULL OR jsonb_array_length(more) = 0 THEN coalesce(trail, '[]'::jsonb)
           WHEN jsonb_array_length(coalesce(trail, '[]'::jsonb) || more) <= 50 THEN coalesce(trail, '[]'::jsonb) || more
           ELSE (SELECT jsonb_agg(e ORDER BY n)
                 FROM jsonb_array_elements(coalesce(trail, '[]'::jsonb) || more) WITH ORDINALITY AS x(e, n)
                 WHERE n > jsonb_array_length(coalesce(trail, '[]'::jsonb) || more) - 50)
       END
$$;

-- ---------------------------------------------------------------------------
-- NOTIFY on change, so that every JVM's cache follows within milliseconds. Counter updates
-- (calls, failures) do not notify; only state, open_until, the trial claim, and cooldowns.
-- Payload: {"table", "key", "from", "to", "by", "origin", "reason"} (reason cut to 300 chars).
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.notify_breaker_change() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'breakers',
            'key', NEW.provider_key,
            'from', CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END,
            'to', NEW.state,
            'by', NEW.changed_by,
            'origin', NEW.change_origin,
            'reason', left(NEW.reason, 300))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER breakers_notify_update AFTER UPDATE ON layover.breakers
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state
          OR OLD.open_until IS DISTINCT FROM NEW.open_until
          OR OLD.trial_token IS DISTINCT FROM NEW.trial_token)
    EXECUTE FUNCTION layover.notify_breaker_change();

CREATE FUNCTION layover.notify_cooldown_change() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'cooldowns',
            'key', NEW.provider_key,
            'until', NEW.until,
            'by', NEW.updated_by,
            'origin', NEW.change_origin,
            'reason', NEW.reason)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER cooldowns_notify_insert AFTER INSERT ON layover.cooldowns
    FOR EACH ROW EXECUTE FUNCTION layover.notify_cooldown_change();
CREATE TRIGGER cooldowns_notify_update AFTER UPDATE ON layover.cooldowns
    FOR EACH ROW
    WHEN (OLD.until IS DISTINCT FROM NEW.until)
    EXECUTE FUNCTION layover.notify_cooldown_change();

-- ---------------------------------------------------------------------------
-- provider_keys: one row per known provider key with its breaker, cooldown and bucket state.
-- ---------------------------------------------------------------------------
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
       bk.requests_per_minute                              AS requests_per_minute,
       bk.tokens_per_minute                                AS tokens_per_minute,
       CASE WHEN greatest(bk.request_tat, bk.token_tat) > now()
            THEN greatest(bk.request_tat, bk.token_tat) END AS bucket_booked_until
FROM (SELECT provider_key FROM layover.breakers
      UNION SELECT provider_key FROM layover.cooldowns
      UNION SELECT provider_key FROM layover.buckets) k
LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key;

COMMENT ON VIEW layover.provider_keys IS
    'Per provider key: breaker state, active cooldown, bucket limits and how far ahead its permits are booked.';

-- ---------------------------------------------------------------------------
-- jobs: the view of V1 with provider_trail appended (existing columns unchanged, in order).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE VIEW layover.jobs AS
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
       t.provider_trail                             AS provider_trail
FROM layover.scheduled_tasks t
-- rows of Layover's own recurring tasks (recovery sweep, retention) are not jobs
WHERE t.task_name NOT LIKE 'layover-%';
