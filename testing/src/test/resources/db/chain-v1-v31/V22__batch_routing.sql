-- Layover schema, version 22: deadline-aware batch routing (docs/batches.md).
--
-- A job of a batchable job type whose deadline (or enqueue plus its type's tolerance) leaves room
-- for a provider's batch completion is gathered into a batch of its provider key instead of being
-- called: one row per batch in layover.batches, one row per gathered job in layover.batch_items,
-- and the job row names its item (scheduled_tasks.batch_item). The batch loop (core's
-- internal.batch, on its own thread in every instance) seals, submits, polls and collects batches;
-- a collected line is stored on its item and the job is made due: its next pick turns the line
-- into its outcome, through the engine's one outcome writer, exactly as a direct call's answer.
--
-- Owners: layover.batches and layover.batch_items are written by core's BatchStore / BatchSql only,
-- and by the functions below. The functions that also touch the job table (batch_gather,
-- batch_collect, batch_finish, batch_leave, batch_wake) are the only writes of scheduled_tasks
-- outside core's JobStore for batches; they never change a row's version or picked state except
-- where said (batch_gather, version-checked, as a reschedule of the picked job would).
--
-- Nothing here spends an attempt or counts a reschedule. Forward-only: nothing earlier changes.

CREATE TABLE layover.batches (
    id                bigserial PRIMARY KEY,
    provider_key      text NOT NULL,                 -- the provider key whose jobs it holds
    provider          text NOT NULL,                 -- the transport's name (openai, anthropic, ...)
    state             text NOT NULL DEFAULT 'open',
    ref               text GENERATED ALWAYS AS ('lo-batch-' || id) STORED,  -- Layover's stable reference, sent with the batch
    provider_batch_id text,                          -- the provider's id, once submitted
    lines             int NOT NULL DEFAULT 0,        -- items gathered
    bytes             bigint NOT NULL DEFAULT 0,     -- bytes of their request bodies
    succeeded         int NOT NULL DEFAULT 0,        -- lines collected as succeeded
    errored           int NOT NULL DEFAULT 0,        -- lines collected as errored
    returned          int NOT NULL DEFAULT 0,        -- items returned to the queue (expired, cancelled, no line, given up)
    input_tokens      bigint NOT NULL DEFAULT 0,     -- reported by its lines
    output_tokens     bigint NOT NULL DEFAULT 0,
    discount          float8 NOT NULL,               -- the provider's batch discount (0.5: half price), for saved_tokens
    earliest_deadline timestamptz,                   -- the earliest latest-useful-finish of its jobs
    created_at        timestamptz NOT NULL DEFAULT now(),
    sealed_at         timestamptz,
    submit_started_at timestamptz,                   -- the first submit attempt began (a rejoin looks from here)
    submit_attempts   int NOT NULL DEFAULT 0,
    submitted_at      timestamptz,
    cancel_asked_at   timestamptz,                   -- the rescue asked the provider to cancel
    finished_at       timestamptz,
    next_poll_at      timestamptz,
    lease_owner       text,                          -- the instance submitting or polling it
    lease_until       timestamptz,
    last_error        text,                          -- the last transport error, cut
    CONSTRAINT batches_state_check CHECK (state IN ('open', 'sealed', 'submitting', 'submitted', 'ended',
                                                    'expired', 'cancelled', 'failed'))
);

COMMENT ON TABLE layover.batches IS
    'One row per batch (V22): open (gathering) -> sealed -> submitting -> submitted -> ended | expired | cancelled | failed. Written by core BatchSql and the batch_* functions only.';

-- one open batch per provider key: concurrent gathers meet on it
CREATE UNIQUE INDEX batches_one_open ON layover.batches (provider_key) WHERE state = 'open';
CREATE INDEX batches_live ON layover.batches (state, next_poll_at) WHERE state IN ('open', 'sealed', 'submitting', 'submitted');
CREATE UNIQUE INDEX batches_provider_id ON layover.batches (provider, provider_batch_id) WHERE provider_batch_id IS NOT NULL;

CREATE TABLE layover.batch_items (
    id            bigserial PRIMARY KEY,
    batch_id      bigint NOT NULL REFERENCES layover.batches (id) ON DELETE CASCADE,
    task_name     text NOT NULL,                     -- the job (it may be gone: done, parked, cancelled)
    task_instance text NOT NULL,
    custom_id     text GENERATED ALWAYS AS ('lo-' || id) STORED,  -- the line's custom id, the same on every submit attempt
    request       text NOT NULL,                     -- the request body (JSON text) the job type made from its args
    latest        timestamptz,                       -- the job's latest useful finish (deadline, or enqueue + tolerance)
    state         text NOT NULL DEFAULT 'gathered',  -- gathered | result (a line is stored) | returned (back to the queue: expired, cancelled, no line, left)
    result_kind   text,                              -- succeeded | errored | expired | cancelled
    result_status int,                               -- the line's HTTP status (0 for expired, cancelled)
    result        text,                              -- the response or error body, JSON text
    input_tokens  bigint,
    output_tokens bigint,
    gathered_at   timestamptz NOT NULL DEFAULT now(),
    answered_at   timestamptz,
    CONSTRAINT batch_items_state_check CHECK (state IN ('gathered', 'result', 'returned')),
    CONSTRAINT batch_items_kind_check CHECK (result_kind IS NULL OR result_kind IN ('succeeded', 'errored', 'expired', 'cancelled'))
);

COMMENT ON TABLE layover.batch_items IS
    'One row per job gathered into a batch (V22); the job row names it in scheduled_tasks.batch_item. Written by core BatchSql and the batch_* functions only.';

CREATE INDEX batch_items_batch ON layover.batch_items (batch_id, id);
CREATE INDEX batch_items_job ON layover.batch_items (task_name, task_instance);

-- the job's live item; NULL for jobs never gathered. Cleared by the reschedule or retry that
-- applies its line (core JobSql), so the next run routes anew.
ALTER TABLE layover.scheduled_tasks ADD COLUMN batch_item bigint;
CREATE INDEX scheduled_tasks_batch_item ON layover.scheduled_tasks (batch_item) WHERE batch_item IS NOT NULL;

-- Gathers jobs into their key's open batch, in one transaction: the picked job (version-checked)
-- and, along with it, others of the key's due backlog the caller locked (FOR UPDATE SKIP LOCKED,
-- not picked, version-checked). Each gets an item, the open batch its line and bytes (sealed, and a
-- new one opened, when the next line would pass p_max_lines or p_max_bytes), and its job row the
-- item and a run time of p_wait_until[i] (a reschedule that counts nothing: reason 'batched').
-- Returns each gathered job's id and item; a job whose version changed is skipped.
CREATE OR REPLACE FUNCTION layover.batch_gather(
        p_task_name text, p_ids text[], p_versions bigint[], p_requests text[], p_latest timestamptz[],
        p_wait_until timestamptz[], p_key text, p_provider text, p_max_lines int, p_max_bytes bigint,
        p_discount float8)
    RETURNS TABLE (task_instance text, item bigint)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    b       layover.batches%ROWTYPE;
    v_len   bigint;
    v_item  bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        PERFORM 1 FROM layover.scheduled_tasks t
        WHERE t.task_name = p_task_name AND t.task_instance = p_ids[i] AND t.version = p_versions[i]
          AND (t.batch_item IS NULL
               OR EXISTS (SELECT 1 FROM layover.batch_items r WHERE r.id = t.batch_item AND r.state = 'returned'))
        FOR UPDATE OF t;
        CONTINUE WHEN NOT FOUND;
        v_len := octet_length(p_requests[i]);
        WHILE b.id IS NULL LOOP
            -- another gather may seal the open batch while this one waits for it: look again
            INSERT INTO layover.batches (provider_key, provider, discount)
            VALUES (p_key, p_provider, p_discount)
            ON CONFLICT (provider_key) WHERE state = 'open' DO NOTHING;
            SELECT * INTO b FROM layover.batches x WHERE x.provider_key = p_key AND x.state = 'open' FOR UPDATE;
        END LOOP;
        IF b.lines > 0 AND (b.lines + 1 > p_max_lines OR b.bytes + v_len > p_max_bytes) THEN
            UPDATE layover.batches SET state = 'sealed', sealed_at = now() WHERE id = b.id;
            INSERT INTO layover.batches (provider_key, provider, discount) VALUES (p_key, p_provider, p_discount)
            RETURNING * INTO b;
        END IF;
        INSERT INTO layover.batch_items (batch_id, task_name, task_instance, request, latest)
        VALUES (b.id, p_task_name, p_ids[i], p_requests[i], p_latest[i])
        RETURNING id INTO v_item;
        UPDATE layover.batches
        SET lines = lines + 1, bytes = bytes + v_len,
            earliest_deadline = CASE WHEN p_latest[i] IS NULL THEN earliest_deadline
                                     ELSE least(earliest_deadline, p_latest[i]) END
        WHERE id = b.id
        RETURNING * INTO b;
        UPDATE layover.scheduled_tasks t
        SET batch_item = v_item, execution_time = p_wait_until[i], picked = false, picked_by = NULL,
            last_heartbeat = NULL, version = t.version + 1,
            last_reschedule_reason = 'batched', last_reschedule_detail = 'in batch ' || b.id,
            last_rescheduled_at = now()
        WHERE t.task_name = p_task_name AND t.task_instance = p_ids[i];
        task_instance := p_ids[i];
        item := v_item;
        RETURN NEXT;
    END LOOP;
    IF b.id IS NOT NULL AND (b.lines >= p_max_lines OR b.bytes >= p_max_bytes) THEN
        UPDATE layover.batches SET state = 'sealed', sealed_at = now() WHERE id = b.id AND state = 'open';
    END IF;
END
$$;

COMMENT ON FUNCTION layover.batch_gather(text, text[], bigint[], text[], timestamptz[], timestamptz[], text, text,
        int, bigint, float8) IS
    'Gathers version-checked jobs into their key''s open batch (V22); no attempt, no reschedule counted.';

-- Stores a finished batch's result lines (a chunk of them; calling twice stores nothing twice:
-- only items still 'gathered' take a line; an expired or cancelled line returns its item), adds their counts and tokens to the batch, and makes
-- their waiting jobs due at once. Returns how many lines were stored.
CREATE OR REPLACE FUNCTION layover.batch_collect(
        p_batch bigint, p_custom_ids text[], p_kinds text[], p_statuses int[], p_results text[],
        p_input bigint[], p_output bigint[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    WITH lines AS (
        SELECT * FROM unnest(p_custom_ids, p_kinds, p_statuses, p_results, p_input, p_output)
                 AS l(custom_id, kind, status, result, input_tokens, output_tokens)
    ), stored AS (
        UPDATE layover.batch_items i
        SET state = CASE WHEN l.kind IN ('expired', 'cancelled') THEN 'returned' ELSE 'result' END, result_kind = l.kind, result_status = l.status, result = l.result,
            input_tokens = l.input_tokens, output_tokens = l.output_tokens, answered_at = now()
        FROM lines l
        WHERE i.batch_id = p_batch AND i.custom_id = l.custom_id AND i.state = 'gathered'
        RETURNING i.id, i.result_kind, i.input_tokens, i.output_tokens
    ), counted AS (
        UPDATE layover.batches b
        SET succeeded = b.succeeded + (SELECT count(*) FROM stored WHERE result_kind = 'succeeded'),
            errored = b.errored + (SELECT count(*) FROM stored WHERE result_kind = 'errored'),
            returned = b.returned + (SELECT count(*) FROM stored WHERE result_kind IN ('expired', 'cancelled')),
            input_tokens = b.input_tokens + (SELECT coalesce(sum(input_tokens), 0) FROM stored),
            output_tokens = b.output_tokens + (SELECT coalesce(sum(output_tokens), 0) FROM stored)
        WHERE b.id = p_batch
        RETURNING 1
    ), woken AS (
        UPDATE layover.scheduled_tasks t
        SET execution_time = now()
        FROM stored s
        WHERE t.batch_item = s.id AND NOT t.picked
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM stored) + 0 * (SELECT count(*) FROM counted) + 0 * (SELECT count(*) FROM woken)
    INTO v_n;
    IF v_n > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.batch_collect(bigint, text[], text[], int[], text[], bigint[], bigint[]) IS
    'Stores result lines on their items, once each (V22), and makes their jobs due.';

-- Ends a batch in state p_state (ended, expired, cancelled, failed): items still without a line
-- are returned (their jobs route anew at their next pick, made due at once). Returns how many
-- items were returned. A batch already finished is left as it is (0).
CREATE OR REPLACE FUNCTION layover.batch_finish(p_batch bigint, p_state text, p_error text)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    UPDATE layover.batches
    SET state = p_state, finished_at = now(), lease_owner = NULL, lease_until = NULL, next_poll_at = NULL,
        last_error = coalesce(p_error, last_error)
    WHERE id = p_batch AND state NOT IN ('ended', 'expired', 'cancelled', 'failed');
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    WITH back AS (
        UPDATE layover.batch_items SET state = 'returned', answered_at = now()
        WHERE batch_id = p_batch AND state = 'gathered'
        RETURNING id
    ), woken AS (
        UPDATE layover.scheduled_tasks t SET execution_time = now()
        FROM back WHERE t.batch_item = back.id AND NOT t.picked
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM back) + 0 * (SELECT count(*) FROM woken) INTO v_n;
    UPDATE layover.batches SET returned = returned + v_n WHERE id = p_batch;
    PERFORM pg_notify('layover_jobs', '');
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.batch_finish(bigint, text, text) IS
    'Ends a batch (V22); items without a line go back to the queue.';

-- A picked job whose batch was never submitted leaves it (its deadline came too close): its item
-- is returned, if the batch is still open or sealed (locked, so a submit cannot take it at the
-- same time). Returns whether it left; false: the batch is being submitted or was, and the job
-- must wait for its line.
CREATE OR REPLACE FUNCTION layover.batch_leave(p_item bigint)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_batch bigint;
BEGIN
    SELECT b.id INTO v_batch
    FROM layover.batch_items i JOIN layover.batches b ON b.id = i.batch_id
    WHERE i.id = p_item AND i.state = 'gathered' AND b.state IN ('open', 'sealed')
    FOR UPDATE OF b;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE layover.batch_items SET state = 'returned', answered_at = now() WHERE id = p_item;
    UPDATE layover.batches SET returned = returned + 1 WHERE id = v_batch;
    RETURN true;
END
$$;

COMMENT ON FUNCTION layover.batch_leave(bigint) IS
    'Takes a job out of a batch not yet submitted (V22).';

-- Makes due the waiting jobs whose item has a line or was returned, in batches finished since
-- p_since: a job picked while its line was being stored was rescheduled to wait, and this catches
-- it. Returns how many jobs were made due.
CREATE OR REPLACE FUNCTION layover.batch_wake(p_since timestamptz)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    UPDATE layover.scheduled_tasks t SET execution_time = now()
    FROM layover.batch_items i JOIN layover.batches b ON b.id = i.batch_id
    WHERE t.batch_item = i.id AND i.state <> 'gathered' AND NOT t.picked AND t.execution_time > now()
      AND b.finished_at >= p_since;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.batch_wake(timestamptz) IS
    'Makes due the jobs of recently finished batches that still wait (V22).';

-- The documented view of batches: what an operator asks of them.
--   state:        open | sealed | submitting | submitted | ended | expired | cancelled | failed
--   lines:        jobs gathered; succeeded, errored: lines collected; returned: back to the queue
--   pending:      lines not answered yet
--   age:          since it was opened (database time)
--   saved_tokens: tokens its lines reported times the discount: what calling them one by one would
--                 have cost on top (an estimate; the provider's price list decides)
CREATE VIEW layover.batch_status AS
SELECT b.id,
       b.ref,
       b.provider_key,
       b.provider,
       b.provider_batch_id,
       b.state,
       b.lines,
       b.bytes,
       b.succeeded,
       b.errored,
       b.returned,
       greatest(b.lines - b.succeeded - b.errored - b.returned, 0)       AS pending,
       b.input_tokens,
       b.output_tokens,
       b.discount,
       round((b.input_tokens + b.output_tokens) * b.discount)::bigint    AS saved_tokens,
       b.earliest_deadline,
       b.created_at,
       b.sealed_at,
       b.submitted_at,
       b.finished_at,
       coalesce(b.finished_at, now()) - b.created_at                   AS age,
       b.submit_attempts,
       b.cancel_asked_at,
       b.last_error
FROM layover.batches b;

COMMENT ON VIEW layover.batch_status IS 'Batches with their counts, age and estimated saving (V22, docs/batches.md).';

-- layover.jobs gains the job's batch: batch_id and its item's state (gathered | result | returned),
-- NULL for a job that never went by batch.
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
       t.provider_trail                             AS provider_trail,
       bi.batch_id                                  AS batch_id,
       bi.state                                     AS batch_item_state
FROM layover.scheduled_tasks t
LEFT JOIN layover.batch_items bi ON bi.id = t.batch_item
-- rows of Layover's own recurring tasks (recovery sweep, retention) are not jobs
WHERE t.task_name NOT LIKE 'layover-%';
