-- Layover schema, version 10: each rule that the SQL of several owners used to repeat, defined once.
--
-- 1. The rate bucket arithmetic (GCRA), as functions every statement that takes, books or reads
--    permits calls: the engine's permits and backlog reservations, layover.admit, the metrics
--    sampler, the console and the layover.provider_keys view.
-- 2. The dead-letter state machine, as one function that every state change of
--    layover.dead_letters asks (the park of a replayed job in core, replay, discard, review and
--    move-back in the dead-letter store).
-- 3. Dead letters keep the limit keys of the job they came from, so that a replay writes every
--    column a fresh enqueue writes.
-- Forward-only: nothing here changes what earlier versions stored.

-- ---------------------------------------------------------------------------
-- 1. GCRA. A bucket dimension (requests, tokens) has a rate (units per second, > 0 when limited),
-- a capacity (units that may be spent at once: the rate times the burst, at least 1) and a
-- theoretical arrival time tat: the moment every unit handed out so far has drained. Its level at
-- time t is (tat - t) * rate when tat > t, else 0. A need of n units fits from the moment
-- tat - (capacity - n) / rate; taking n units moves tat to greatest(tat, now) + n / rate. A need
-- larger than the capacity waits for an empty bucket. These are IMMUTABLE SQL functions: the
-- planner inlines them, so they cost what the expressions they replace cost.
-- ---------------------------------------------------------------------------

-- The earliest time `need` units fit; NULL when the dimension is not limited (rate <= 0) or nothing
-- is needed, so that greatest(now, ...) over the dimensions ignores it.
CREATE FUNCTION layover.gcra_fits_at(tat timestamptz, rate float8, capacity float8, need float8)
    RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN rate > 0 AND need > 0
               THEN tat - make_interval(secs => (capacity - least(need, capacity)) / rate) END $$;

-- The tat after taking `n` units at `now`; unchanged when the dimension is not limited or n <= 0.
CREATE FUNCTION layover.gcra_take(tat timestamptz, now timestamptz, rate float8, n float8)
    RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN rate > 0 AND n > 0 THEN greatest(tat, now) + make_interval(secs => n / rate) ELSE tat END $$;

-- The units free at `now` (capacity minus what is booked past now; negative when booked ahead).
CREATE FUNCTION layover.gcra_free(tat timestamptz, now timestamptz, rate float8, capacity float8)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT capacity - extract(epoch FROM greatest(tat, now) - now)::float8 * rate $$;

-- The capacity of a bucket dimension stored as units per minute and a burst in milliseconds.
CREATE FUNCTION layover.bucket_capacity(per_minute float8, burst_ms int)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT greatest(1, per_minute / 60.0 * burst_ms / 1000.0) $$;

-- layover.admit of V7, its arithmetic now the functions above (same arguments, same rules).
CREATE OR REPLACE FUNCTION layover.admit(
        p_now timestamptz, p_task_name text, p_task_id text, p_version bigint, p_worker text,
        p_keys text[], p_rr float8[], p_rc float8[], p_tr float8[], p_tc float8[], p_max int[],
        p_tokens float8, p_dead_after_s float8)
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
BEGIN
    FOR i IN 1 .. n LOOP
        IF p_rr[i] > 0 OR (p_tr[i] > 0 AND p_tokens > 0) THEN
            SELECT bk.request_tat, bk.token_tat INTO b
            FROM layover.buckets bk WHERE bk.provider_key = p_keys[i]
            FOR UPDATE;
            IF NOT FOUND THEN
                RETURN QUERY SELECT false, 'missing_bucket'::text, p_keys[i], NULL::timestamptz;
                RETURN;
            END IF;
            fits_at := greatest(p_now,
                layover.gcra_fits_at(b.request_tat, p_rr[i], p_rc[i], 1),
                layover.gcra_fits_at(b.token_tat, p_tr[i], p_tc[i], p_tokens));
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
        IF p_rr[i] > 0 OR (p_tr[i] > 0 AND p_tokens > 0) THEN
            UPDATE layover.buckets bk
            SET request_tat = layover.gcra_take(bk.request_tat, p_now, p_rr[i], 1),
                token_tat = layover.gcra_take(bk.token_tat, p_now, p_tr[i], p_tokens),
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

-- ---------------------------------------------------------------------------
-- provider_keys: the view of V8 with the interpreted breaker and bucket state appended (existing
-- columns unchanged, in order), so that readers (the metrics sampler, the console, the recovery
-- sweep) do not each interpret the breakers' and buckets' columns:
--   breaker_trial_due   open, and its open period is over: the next call is the half-open trial
--   trial_in_flight     half-open, and a worker holds a live claim of its one trial call
--   request_permits     request permits free now (NULL: no request limit); negative: booked ahead
--   token_permits       the same for tokens
-- ---------------------------------------------------------------------------
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
                                                           AS token_permits
FROM (SELECT provider_key FROM layover.breakers
      UNION SELECT provider_key FROM layover.cooldowns
      UNION SELECT provider_key FROM layover.buckets) k
LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key;

COMMENT ON VIEW layover.provider_keys IS
    'Per provider key: breaker state (and whether its trial is due or in flight), active cooldown, bucket limits '
    '(configured or learned: pace_learned_until), permits free now and how far ahead they are booked.';

-- ---------------------------------------------------------------------------
-- 2. The dead-letter state machine. Every change of layover.dead_letters.state asks this
-- function for the state an event leads to; NULL means the event is not allowed in that state
-- (the statement then changes nothing).
--
--   event                 from              to
--   manual_replay         parked, review    replayed     a person's replay (console, API)
--   auto_replay           parked            replayed     the recovery sweep's or trial's replay
--   budget_spent          parked            review       the sweep's replay budget is spent
--   discard               parked, review    discarded    a person's decision
--   move_back             review            parked       a person's decision
--   parked_again          any               parked       a replay's job parked again
--   sweep_replay_failed   any               review       a sweep replay's job parked again
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.dead_letter_next_state(from_state text, event text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT CASE
       WHEN event = 'manual_replay' AND from_state IN ('parked', 'review') THEN 'replayed'
       WHEN event = 'auto_replay' AND from_state = 'parked' THEN 'replayed'
       WHEN event = 'budget_spent' AND from_state = 'parked' THEN 'review'
       WHEN event = 'discard' AND from_state IN ('parked', 'review') THEN 'discarded'
       WHEN event = 'move_back' AND from_state = 'review' THEN 'parked'
       WHEN event = 'parked_again' THEN 'parked'
       WHEN event = 'sweep_replay_failed' THEN 'review'
   END $$;

COMMENT ON FUNCTION layover.dead_letter_next_state(text, text) IS
    'The dead-letter state machine: the state an event leads to from a state, NULL when not allowed.';

-- ---------------------------------------------------------------------------
-- 3. The limit keys of the job a dead letter came from (copied by the park); a replay writes them
-- back, as a fresh enqueue would.
-- ---------------------------------------------------------------------------
ALTER TABLE layover.dead_letters ADD COLUMN limit_keys text[];

COMMENT ON COLUMN layover.dead_letters.limit_keys IS
    'The limit keys of the job it came from (JobType.Builder#limitKeys); written back to the job a replay creates.';

-- ---------------------------------------------------------------------------
-- 4. Writes of one table that a statement of another table's owner needs in the same statement,
-- each a function of the table's owner (docs/architecture.md lists the owners):
--   spend_held_permit (the job table; core's job store): a job that holds a bucket permit for
--     about now (scheduled_tasks.permit_at, set by the reschedule that gave it) spends it: the
--     column is cleared, version-checked. Called by the engine's permit statement.
--   book_requests (layover.buckets; core's provider gate): a backlog of n due jobs took n request
--     permits from `start` (already greatest(tat, now)): request_tat moves past them. Called by the
--     job store's backlog reservation.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.spend_held_permit(p_task_name text, p_task_id text, p_version bigint,
        p_now timestamptz, p_grace_s float8)
    RETURNS boolean LANGUAGE sql VOLATILE AS
$$
    WITH spent AS (
        UPDATE layover.scheduled_tasks t SET permit_at = NULL
        WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.version = p_version
          AND t.permit_at IS NOT NULL AND t.permit_at >= p_now - make_interval(secs => p_grace_s)
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM spent)
$$;

CREATE FUNCTION layover.book_requests(p_key text, p_start timestamptz, p_n bigint, p_rate float8)
    RETURNS void LANGUAGE sql VOLATILE AS
$$
    UPDATE layover.buckets SET request_tat = layover.gcra_take(p_start, p_start, p_rate, p_n)
    WHERE provider_key = p_key AND p_n > 0
$$;

-- ---------------------------------------------------------------------------
-- 5. Forgetting, for demos and tests that reuse a database: everything of one job type (its live
-- jobs and dead letters), and the provider state of some keys (breakers, cooldowns, buckets and
-- the recovery sweep's state). Not for production use: a live job of the type that runs meanwhile
-- finishes, but its outcome finds no row to write. Each returns the rows deleted.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.forget_job_type(p_job_type text) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH jobs AS (DELETE FROM layover.scheduled_tasks WHERE task_name = p_job_type RETURNING 1),
         letters AS (DELETE FROM layover.dead_letters WHERE job_type = p_job_type RETURNING 1)
    SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM letters)
$$;

CREATE FUNCTION layover.forget_provider_keys(p_keys text[]) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH b AS (DELETE FROM layover.breakers WHERE provider_key = ANY (p_keys) RETURNING 1),
         c AS (DELETE FROM layover.cooldowns WHERE provider_key = ANY (p_keys) RETURNING 1),
         k AS (DELETE FROM layover.buckets WHERE provider_key = ANY (p_keys) RETURNING 1),
         r AS (DELETE FROM layover.recovery_state WHERE provider_key = ANY (p_keys) RETURNING 1)
    SELECT (SELECT count(*) FROM b) + (SELECT count(*) FROM c) + (SELECT count(*) FROM k) + (SELECT count(*) FROM r)
$$;
