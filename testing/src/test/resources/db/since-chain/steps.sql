-- ===========================================================================
-- Steps: the finished steps of live and parked jobs (issue 45, docs/steps.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- job_steps: one row per finished step of a job (JobContext#step) and per durable sleep it began
-- (JobContext#sleep), keyed by the job's type and id, which a replay of its dead letter keeps: a
-- later run of the job (after a reschedule, a retry, a crash, a replay) reads the job's rows once
-- and returns each stored result without calling again. Written only by core's step store
-- (StepSql: one INSERT .. ON CONFLICT per finished step, one SELECT per run that uses steps); the
-- done delete of the job store removes a finished job's rows in its statement; a park keeps them
-- (with the dead letter, which a replay resumes from); layover.forget_steps() drops them (a
-- discard, a replay from scratch).
--   kind          call (a step's result) or sleep (a durable sleep: wake_at)
--   result_type   the Java class the result was stored as (a step asked as another type is an error)
--   result        the result as JSON, Jackson, as args are; result_bytes its size in UTF-8
--   provider_key  the key the step was admitted by (StepOptions#providerKey), NULL: the job's own call
--   attempt       the job's attempt that finished the step (rate-limit reschedules do not count)
--   started_at    finished_at minus the step's duration (database time)
--   expires_at    the result is not reused from then on (StepOptions#validFor); NULL: never expires
--   wake_at       a sleep's end (database time): the run that passes it after then goes on
--   *_tokens      the usage the step's calls reported (JobContext#reportUsage inside the step)
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_steps (
    job_type            text        NOT NULL,
    job_id              text        NOT NULL,
    name                text        NOT NULL,
    kind                text        NOT NULL DEFAULT 'call',
    result_type         text,
    result              jsonb,
    result_bytes        int,
    provider_key        text,
    attempt             int         NOT NULL DEFAULT 1,
    started_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz NOT NULL DEFAULT now(),
    duration_ms         float8,
    expires_at          timestamptz,
    wake_at             timestamptz,
    input_tokens        bigint,
    output_tokens       bigint,
    cached_input_tokens bigint,
    worker              text,
    PRIMARY KEY (job_type, job_id, name),
    CONSTRAINT job_steps_kind_check CHECK (kind IN ('call', 'sleep'))
);

COMMENT ON TABLE layover.job_steps IS
    'Finished steps (and durable sleeps) of live and parked jobs; a later run returns a stored result without calling. '
    'Read layover.steps.';

-- Drops the steps of some jobs (a dead letter discarded, or replayed from scratch): the step store's
-- function for the dead-letter store's statements. Returns the rows deleted.
CREATE FUNCTION layover.forget_steps(p_job_types text[], p_job_ids text[]) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH gone AS (
        DELETE FROM layover.job_steps s
        USING unnest(p_job_types, p_job_ids) AS u(job_type, job_id)
        WHERE s.job_type = u.job_type AND s.job_id = u.job_id
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

COMMENT ON FUNCTION layover.forget_steps(text[], text[]) IS
    'Drops the stored steps of the given jobs (job types and ids, pairwise): a discard, a replay from scratch.';

-- ---------------------------------------------------------------------------
-- steps: the public view of stored steps, one row per step.
--   outcome    finished (its result is reused), expired (validFor passed: it runs again),
--              sleeping (a sleep whose wake_at is ahead), slept (a sleep passed)
--   job_state  live (the job is queued or running), parked (its dead letter is parked or in
--              review: a replay resumes from these steps), none (neither)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.steps AS
SELECT s.job_type,
       s.job_id,
       s.name                                   AS step,
       s.kind,
       s.provider_key,
       s.attempt,
       s.started_at,
       s.finished_at,
       s.duration_ms,
       s.input_tokens,
       s.output_tokens,
       s.cached_input_tokens,
       s.result_type,
       s.result_bytes,
       s.result,
       s.expires_at,
       s.wake_at,
       CASE WHEN s.kind = 'sleep' THEN CASE WHEN s.wake_at > now() THEN 'sleeping' ELSE 'slept' END
            WHEN s.expires_at <= now() THEN 'expired'
            ELSE 'finished' END                 AS outcome,
       CASE WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                         WHERE t.task_name = s.job_type AND t.task_instance = s.job_id) THEN 'live'
            WHEN EXISTS (SELECT 1 FROM layover.dead_letters d
                         WHERE d.job_type = s.job_type AND d.job_id = s.job_id
                           AND d.state IN ('parked', 'review')) THEN 'parked'
            ELSE 'none' END                     AS job_state
FROM layover.job_steps s;

COMMENT ON VIEW layover.steps IS
    'Stored steps of live and parked jobs: step, kind, provider key, started/finished, duration, tokens, outcome, job state.';

-- forget_job_type forgets the job type's steps too.
CREATE OR REPLACE FUNCTION layover.forget_job_type(p_job_type text) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH jobs AS (DELETE FROM layover.scheduled_tasks WHERE task_name = p_job_type RETURNING 1),
         letters AS (DELETE FROM layover.dead_letters WHERE job_type = p_job_type RETURNING 1),
         steps AS (DELETE FROM layover.job_steps WHERE job_type = p_job_type RETURNING 1)
    SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM letters) + (SELECT count(*) FROM steps)
$$;
