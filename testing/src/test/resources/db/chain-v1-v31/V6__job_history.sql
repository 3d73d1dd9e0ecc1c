-- Layover schema, version 6: the record of finished jobs.
--
-- db-scheduler deletes a finished job; without a record "did job X run, and how?" has no answer
-- in SQL. layover.job_history keeps one row per job that left the queue: completed, parked or
-- cancelled. The row is written by the same statement that removes the job (a data-modifying
-- CTE in the batched delete of finished jobs, and in the park), so the hot path pays no extra
-- round trip. Layover deletes rows older than its retention period (default 7 days, a background
-- thread of each running instance, JobHistoryRetention); `Layover.Builder.history(false)` writes none.
--
-- Forward-only: a released file is never edited; a change is a new file.

-- ---------------------------------------------------------------------------
-- job_history: one row per finished job. Append-only (retention deletes the oldest).
--   outcome:       completed | parked | cancelled
--   failure_type:  parked: the dead letter's failure type (provider_unavailable, ...)
--   detail:        parked: the error message; cancelled: who cancelled it and why
--   attempts:      attempts spent (failed runs), as in layover.jobs; a job that succeeded the
--                  first time has 0; for a parked job, as on its dead letter
--   reschedules:   times it was rescheduled without spending an attempt
--   worker:        the worker that ran its last run (picked_by)
--   enqueued_at:   when it was first enqueued
--   started_at:    when its last run started (NULL when no run of it was in progress: a
--                  cancel, a job revived after its worker died)
--   finished_at:   when it left the queue (the time of the statement that removed it)
--   duration_ms:   how long its last run's handler took (NULL when no handler ran, e.g. parked
--                  because its breaker was open or its args were unreadable)
--   dead_letter_id: parked: its dead letter; a job made by a replay: the dead letter it came from
--   replay_kind:   manual | sweep | trial when the job was made by a replay
--   provider_trail: its fallback trail (see layover.jobs.provider_trail), the last run
--                  included; NULL when no fallback chain was used
--   args:          its arguments, only when Layover.Builder.historyArgs(true) (NULL otherwise)
-- No primary key: nothing refers to a row, and each index costs every finished job an insert.
-- Publishing this table with logical replication needs REPLICA IDENTITY FULL (or an added key).
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_history (
    job_type        text             NOT NULL,
    job_id          text             NOT NULL,
    outcome         text             NOT NULL,
    failure_type    text,
    detail          text,
    attempts        int              NOT NULL DEFAULT 0,
    reschedules     int              NOT NULL DEFAULT 0,
    provider_key    text,
    worker          text,
    enqueued_at     timestamptz      NOT NULL,
    started_at      timestamptz,
    finished_at     timestamptz      NOT NULL DEFAULT now(),
    duration_ms     double precision,
    dead_letter_id  bigint,
    replay_kind     text,
    provider_trail  jsonb,
    args            jsonb,
    CONSTRAINT job_history_outcome_check CHECK (outcome IN ('completed', 'parked', 'cancelled'))
);

-- "did job X run?": WHERE job_type = ? AND job_id = ?
CREATE INDEX job_history_job_idx ON layover.job_history (job_type, job_id);
-- time ranges ("parked in the last hour"), the newest rows, and retention's deletes of the oldest
CREATE INDEX job_history_finished_at_idx ON layover.job_history (finished_at);

COMMENT ON TABLE layover.job_history IS
    'Finished jobs (completed, parked, cancelled), written with their removal from the queue; kept 7 days by default.';
