-- Layover schema, version 7: admission and control (docs/admission-and-control.md).
--   * fleet-wide concurrency limits: a fixed set of slot rows per limit key, each held by one
--     (job, version) and counted only while that job row is picked with a fresh heartbeat;
--   * several limits on one job: limit_keys (e.g. a tenant key) next to provider_key, admitted
--     all-or-nothing by one function call (layover.admit);
--   * deadlines, cancellation and pauses of job types and keys.
--
-- Forward-only: a released file is never edited; a change is a new file. This file relies on
-- V1-V5 only (V6 may exist; nothing here reads what it adds).

-- ---------------------------------------------------------------------------
-- Job columns
--   deadline            past it the job is parked `deadline_exceeded` instead of run, rescheduled
--                       or retried (EnqueueOptions.withDeadline)
--   limit_keys          keys whose limits (concurrency, bucket) and pauses the job is subject to
--                       besides provider_key, e.g. {tenant:42}; derived from its args at enqueue
--   paused_run_at       set while a pause holds the job: its run time before the pause. The job's
--                       execution_time is then 9999-12-31 (no worker picks it); resume puts this back
--   holds               times the job was held back by a concurrency limit or a pause; such holds
--                       never count as reschedules (no maxReschedules, no attempt)
--   cancel_requested_*  an operator asked a running job to stop (JobContext.isCancelled())
-- ---------------------------------------------------------------------------
ALTER TABLE layover.scheduled_tasks
    ADD COLUMN deadline            timestamptz,
    ADD COLUMN limit_keys          text[],
    ADD COLUMN paused_run_at       timestamptz,
    ADD COLUMN holds               int NOT NULL DEFAULT 0,
    ADD COLUMN cancel_requested_at timestamptz,
    ADD COLUMN cancel_requested_by text,
    ADD COLUMN cancel_reason       text;

-- Each worker looks once a second for waiting jobs whose deadline passed (or whose next run is
-- after it) and for cancel requests; these partial indexes keep that to the few rows concerned.
CREATE INDEX scheduled_tasks_deadline_idx ON layover.scheduled_tasks (deadline)
    WHERE deadline IS NOT NULL;
CREATE INDEX scheduled_tasks_after_deadline_idx ON layover.scheduled_tasks (task_name)
    WHERE deadline < execution_time AND paused_run_at IS NULL;
CREATE INDEX scheduled_tasks_cancel_idx ON layover.scheduled_tasks (task_name)
    WHERE cancel_requested_at IS NOT NULL;
-- A resume gives back the run time of the jobs its pause held.
CREATE INDEX scheduled_tasks_paused_idx ON layover.scheduled_tasks (task_name)
    WHERE paused_run_at IS NOT NULL;
-- Pausing a limit key finds its waiting jobs: limit_keys @> ARRAY[key].
CREATE INDEX scheduled_tasks_limit_keys_idx ON layover.scheduled_tasks USING gin (limit_keys)
    WHERE limit_keys IS NOT NULL;

-- ---------------------------------------------------------------------------
-- concurrency_limits / concurrency_slots: at most max_in_flight calls of a limit key in flight
-- across every JVM. A worker writes its configured limit when it first meets the key, and makes
-- sure slots 0 .. max_in_flight - 1 exist (it never deletes slots: during a rolling change of the
-- limit each worker uses the slots below its own limit).
--
-- A slot is free when nobody holds it, or when its holder is no longer running: the job row
-- (holder_type, holder_id) is gone, has another version (rescheduled, retried, parked and
-- replayed), is not picked, or its heartbeat is older than the dead-worker limit. So a finished
-- job gives its slot back with the write that ends its run, and a killed worker's slot comes back
-- when its heartbeat goes stale: no release statement, no separate leak path.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.concurrency_limits (
    limit_key      text        PRIMARY KEY,
    max_in_flight  int         NOT NULL,
    configured_at  timestamptz NOT NULL DEFAULT now(),
    configured_by  text,
    CONSTRAINT concurrency_limits_max_check CHECK (max_in_flight >= 1)
);

CREATE TABLE layover.concurrency_slots (
    limit_key       text        NOT NULL REFERENCES layover.concurrency_limits ON DELETE CASCADE,
    slot            int         NOT NULL,
    holder_type     text,                  -- the job holding the slot: task_name,
    holder_id       text,                  -- task_instance
    holder_version  bigint,                -- and the version it was picked at
    claimed_at      timestamptz,           -- database time of the claim
    claimed_by      text,                  -- the worker
    PRIMARY KEY (limit_key, slot)
);

COMMENT ON TABLE layover.concurrency_slots IS
    'Fleet-wide concurrency limits: a slot counts only while its holder job row is picked at holder_version '
    'with a fresh heartbeat. Read layover.concurrency for what is in flight.';

-- ---------------------------------------------------------------------------
-- Claims every limit of one job at once, or nothing (layover.admit). Arguments, one array element
-- per limit key, keys sorted (so that two callers lock bucket rows in the same order):
--   p_rr, p_rc  request rate (/s) and capacity of the key's bucket (0: no request limit)
--   p_tr, p_tc  token rate (/s) and capacity (0: no token limit)
--   p_max       concurrency limit (0: none)
-- and the job (p_task_name, p_task_id, p_version as picked), its token estimate, the caller's
-- clock (p_now) and the dead-worker limit in seconds.
--
-- In order: each bucket row is locked (FOR UPDATE) and the moment the job's need fits is computed
-- (GCRA, as layover.buckets documents); if it does not fit now for any bucket, nothing is taken and
-- the latest of those moments is returned (reason 'bucket'). Then one free slot per limited key is
-- locked (FOR UPDATE SKIP LOCKED); if a key has none, nothing is taken (reason 'concurrency').
-- Only then are the permits taken and the slots claimed. A missing row gives 'missing_bucket' or
-- 'missing_slots' (the caller configures it and asks again).
--
-- Why the holder check is safe: a slot claimed in a transaction that started before this one
-- belongs to a job whose pick committed before that, so this transaction's snapshots see the pick;
-- a slot claimed later than this transaction's start counts as held.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.admit(
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
                CASE WHEN p_rr[i] > 0
                     THEN b.request_tat - make_interval(secs => (p_rc[i] - least(1, p_rc[i])) / p_rr[i]) END,
                CASE WHEN p_tr[i] > 0 AND p_tokens > 0
                     THEN b.token_tat - make_interval(secs => (p_tc[i] - least(p_tokens, p_tc[i])) / p_tr[i]) END);
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
            SET request_tat = CASE WHEN p_rr[i] > 0
                                   THEN greatest(bk.request_tat, p_now) + make_interval(secs => 1 / p_rr[i])
                                   ELSE bk.request_tat END,
                token_tat = CASE WHEN p_tr[i] > 0 AND p_tokens > 0
                                 THEN greatest(bk.token_tat, p_now) + make_interval(secs => p_tokens / p_tr[i])
                                 ELSE bk.token_tat END,
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

-- Writes a worker's concurrency limit for a key and creates the slots it needs.
CREATE FUNCTION layover.configure_concurrency(p_key text, p_max int, p_by text) RETURNS void
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    INSERT INTO layover.concurrency_limits (limit_key, max_in_flight, configured_by)
    VALUES (p_key, p_max, p_by)
    ON CONFLICT (limit_key) DO UPDATE
    SET max_in_flight = excluded.max_in_flight, configured_at = now(), configured_by = excluded.configured_by
    WHERE layover.concurrency_limits.max_in_flight <> excluded.max_in_flight;
    INSERT INTO layover.concurrency_slots (limit_key, slot)
    SELECT p_key, g FROM generate_series(0, p_max - 1) AS g
    ON CONFLICT (limit_key, slot) DO NOTHING;
END
$$;

-- ---------------------------------------------------------------------------
-- concurrency: per limit key, the limit and the calls in flight now (slots whose holder job is
-- picked at the version it claimed with; a killed worker's slot counts until its job is revived).
-- ---------------------------------------------------------------------------
CREATE VIEW layover.concurrency AS
SELECT l.limit_key,
       l.max_in_flight,
       count(t.task_instance)                 AS in_flight,
       max(s.claimed_at) FILTER (WHERE t.task_instance IS NOT NULL) AS last_claimed_at,
       l.configured_at,
       l.configured_by
FROM layover.concurrency_limits l
LEFT JOIN layover.concurrency_slots s ON s.limit_key = l.limit_key
LEFT JOIN layover.scheduled_tasks t
       ON t.task_name = s.holder_type AND t.task_instance = s.holder_id AND t.version = s.holder_version AND t.picked
GROUP BY l.limit_key, l.max_in_flight, l.configured_at, l.configured_by;

COMMENT ON VIEW layover.concurrency IS 'Per concurrency limit key: max_in_flight and the calls in flight now.';

-- ---------------------------------------------------------------------------
-- pauses: an operator paused a job type (scope 'job_type') or a key (scope 'key': a provider key
-- or a limit key such as tenant:42). While a pause is active (resumed_at IS NULL) nothing it
-- covers starts: its waiting jobs are moved out of the pickers' way (execution_time 9999-12-31,
-- the run time kept in paused_run_at), and a job picked anyway (enqueued after the pause, or
-- picked just before it) is held the same way without running. Nothing is lost or parked.
-- A resume gives every held job no other active pause covers its run time back.
-- Rows stay after the resume: the table is the record of who paused what, when and why.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.pauses (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope          text        NOT NULL,
    target         text        NOT NULL,   -- the job type name, or the key
    paused_at      timestamptz NOT NULL DEFAULT now(),
    paused_by      text        NOT NULL,
    reason         text,
    held_jobs      bigint      NOT NULL DEFAULT 0,  -- waiting jobs moved aside when the pause began
    resumed_at     timestamptz,
    resumed_by     text,
    released_jobs  bigint,                          -- held jobs given back their run time by the resume
    CONSTRAINT pauses_scope_check CHECK (scope IN ('job_type', 'key'))
);

CREATE UNIQUE INDEX pauses_active_idx ON layover.pauses (scope, target) WHERE resumed_at IS NULL;

COMMENT ON TABLE layover.pauses IS
    'Pauses of job types and keys; active while resumed_at IS NULL. Held jobs: scheduled_tasks.paused_run_at IS NOT NULL.';

-- Workers cache the active pauses; a change reaches them at once on the provider state channel.
CREATE FUNCTION layover.notify_pause_change() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'pauses', 'scope', NEW.scope, 'key', NEW.target,
            'paused', NEW.resumed_at IS NULL)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER pauses_notify AFTER INSERT OR UPDATE ON layover.pauses
    FOR EACH ROW EXECUTE FUNCTION layover.notify_pause_change();

-- ---------------------------------------------------------------------------
-- job_controls: the admission and control columns of live jobs (join layover.jobs on
-- job_type and id).
-- ---------------------------------------------------------------------------
CREATE VIEW layover.job_controls AS
SELECT t.task_instance                    AS id,
       t.task_name                        AS job_type,
       t.deadline                         AS deadline,
       t.limit_keys                       AS limit_keys,
       t.paused_run_at IS NOT NULL        AS paused,
       t.paused_run_at                    AS paused_run_at,
       t.holds                            AS holds,
       t.cancel_requested_at              AS cancel_requested_at,
       t.cancel_requested_by              AS cancel_requested_by,
       t.cancel_reason                    AS cancel_reason
FROM layover.scheduled_tasks t
WHERE t.task_name NOT LIKE 'layover-%';

COMMENT ON VIEW layover.job_controls IS
    'Per live job: deadline, limit keys, whether a pause holds it, holds, and a pending cancel request.';
