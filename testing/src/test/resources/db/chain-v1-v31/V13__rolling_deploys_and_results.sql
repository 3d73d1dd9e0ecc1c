-- Layover schema, version 13: rolling deploys, and what a finished job returned.
--
-- Each job carries the fingerprint of the shape of the args type that wrote it (its properties
-- and their types, hashed: ArgsShape). A worker that cannot read a job's args tells from it
-- whether another version of the job type wrote them: then the job waits for a worker that can
-- (rescheduled, reason args_newer_version, no attempt spent, up to the job type's newerArgsWait),
-- instead of being parked bad_args at once. NULL: written before this version, or by SQL.
-- Forward-only; nothing stored before changes.

ALTER TABLE layover.scheduled_tasks ADD COLUMN args_shape text;

COMMENT ON COLUMN layover.scheduled_tasks.args_shape IS
    'Fingerprint of the args type''s JSON shape that wrote the job (a rolling deploy''s versions differ); NULL: unknown.';

-- ---------------------------------------------------------------------------
-- What a handler returned with done (Outcome.done(result)), as JSON, on the job's history row:
-- a caller looking its idempotency key up (Layover.lookup) reads it. NULL: none, or history off.
-- ---------------------------------------------------------------------------
ALTER TABLE layover.job_history ADD COLUMN result jsonb;

COMMENT ON COLUMN layover.job_history.result IS
    'What the handler returned with done (Outcome.done(result)) as JSON, at most 64 KiB; NULL when none.';
