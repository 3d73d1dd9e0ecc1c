-- Layover schema, version 1: the job table, the dead-letter store and the `jobs` view.
--
-- Migrations are forward-only: a released file is never edited; a change is a new
-- file with the next version. Flyway runs them with schema `layover` as default.

-- ---------------------------------------------------------------------------
-- scheduled_tasks: db-scheduler's table. Its column names are fixed by
-- db-scheduler; Layover adds its own columns at the end (db-scheduler's inserts
-- name their columns, and its reads ignore columns it does not know).
-- This table is private: read jobs through the `layover.jobs` view.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.scheduled_tasks (
    task_name              text        NOT NULL,
    task_instance          text        NOT NULL,
    task_data              bytea,                  -- the job's args, UTF-8 JSON
    execution_time         timestamptz NOT NULL,   -- when the job may run next
    picked                 boolean     NOT NULL,
    picked_by              text,
    last_success           timestamptz,
    last_failure           timestamptz,
    consecutive_failures   int,                    -- attempts spent; a reschedule never touches it
    last_heartbeat         timestamptz,
    version                bigint      NOT NULL,
    priority               smallint,

    -- Layover's own columns
    provider_key           text,                   -- e.g. 'openai:gpt-4o-mini'; breakers and cooldowns belong to it
    reschedules            int         NOT NULL DEFAULT 0,  -- run time pushed forward without spending an attempt
    last_reschedule_reason text,                   -- rate_limited, quota_exhausted, snooze, cooldown, ...
    last_reschedule_detail text,                   -- the provider's words, or the reason in a sentence
    last_rescheduled_at    timestamptz,
    first_enqueued_at      timestamptz NOT NULL DEFAULT now(),
    errors                 jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- one object per failed attempt
    dead_letter_id         bigint,                 -- set on a job created by replaying that dead letter
    replay_kind            text,                   -- manual, sweep or trial: how that replay was made

    PRIMARY KEY (task_name, task_instance)
);

-- db-scheduler's own indexes
CREATE INDEX execution_time_idx ON layover.scheduled_tasks (execution_time);
CREATE INDEX last_heartbeat_idx ON layover.scheduled_tasks (last_heartbeat);
CREATE INDEX priority_execution_time_idx ON layover.scheduled_tasks (priority DESC, execution_time ASC);
-- "what is waiting on this provider"
CREATE INDEX scheduled_tasks_provider_key_idx ON layover.scheduled_tasks (provider_key, execution_time)
    WHERE provider_key IS NOT NULL;

COMMENT ON TABLE layover.scheduled_tasks IS
    'db-scheduler''s job table plus Layover columns. Private: query layover.jobs instead.';

-- ---------------------------------------------------------------------------
-- Arguments are stored as UTF-8 JSON in a bytea (db-scheduler's column). This
-- turns them into jsonb, or NULL when the bytes are not JSON (only possible for
-- rows written by something other than Layover), so one odd row cannot break a
-- query over the view or a park.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.args_jsonb(data bytea) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS
$$
BEGIN
    IF data IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN convert_from(data, 'UTF8')::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

-- ---------------------------------------------------------------------------
-- dead_letters: parked jobs, with everything needed to replay them.
-- A job is moved here in one transaction with the delete of its job row.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.dead_letters (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_type           text        NOT NULL,
    job_id             text        NOT NULL,       -- the parked job's id (its idempotency key, if it had one)
    args               jsonb,                      -- exactly what a replay enqueues
    args_raw           bytea,                      -- only when the stored args were not JSON
    provider_key       text,
    failure_type       text        NOT NULL,       -- provider_unavailable, rate_limit_exhausted, bad_args, ...
    error_class        text,
    error_message      text,
    errors             jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- the error of every attempt, oldest first
    attempts           int         NOT NULL DEFAULT 0,
    reschedules        int         NOT NULL DEFAULT 0,
    priority           smallint,
    first_enqueued_at  timestamptz NOT NULL,
    parked_at          timestamptz NOT NULL DEFAULT now(),
    park_count         int         NOT NULL DEFAULT 1,   -- > 1 when a replay parked again
    state              text        NOT NULL DEFAULT 'parked',
    state_changed_at   timestamptz NOT NULL DEFAULT now(),
    replay_count       int         NOT NULL DEFAULT 0,   -- every replay, manual or automatic
    auto_replay_count  int         NOT NULL DEFAULT 0,   -- replays by the recovery sweep (spends the replay budget)
    replays            jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- [{job_id, at, by, automatic}], one per replay
    CONSTRAINT dead_letters_state_check CHECK (state IN ('parked', 'replayed', 'review', 'discarded'))
);

CREATE INDEX dead_letters_parked_at_idx ON layover.dead_letters (parked_at DESC, id DESC);
CREATE INDEX dead_letters_state_idx ON layover.dead_letters (state, parked_at DESC, id DESC);
CREATE INDEX dead_letters_provider_idx ON layover.dead_letters (provider_key, failure_type, state);
CREATE INDEX dead_letters_job_idx ON layover.dead_letters (job_type, job_id);

COMMENT ON TABLE layover.dead_letters IS
    'Parked jobs. state: parked -> replayed | review | discarded. args is exactly what a replay enqueues.';

-- ---------------------------------------------------------------------------
-- jobs: the public view over live jobs, with friendly names.
--   state: running     - picked by a worker (picked_by, heartbeat_at say which and when)
--          retrying    - the last run failed and spent an attempt
--          rescheduled - pushed forward without spending an attempt (rate limit, snooze, ...)
--          scheduled   - waiting for its first run
--   attempts: attempts spent so far (failed runs); a rate-limit reschedule never adds one.
-- ---------------------------------------------------------------------------
CREATE VIEW layover.jobs AS
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
       t.replay_kind                                AS replay_kind
FROM layover.scheduled_tasks t;

COMMENT ON VIEW layover.jobs IS
    'Live jobs. state in (scheduled, running, rescheduled, retrying); attempts = attempts spent; args as jsonb.';
