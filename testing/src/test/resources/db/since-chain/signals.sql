-- job_steps: a step of kind signal (JobContext#awaitSignal), and its outcomes in the view layover.steps
ALTER TABLE layover.job_steps DROP CONSTRAINT job_steps_kind_check;
ALTER TABLE layover.job_steps ADD CONSTRAINT job_steps_kind_check CHECK (kind IN ('call', 'sleep', 'signal'));

CREATE OR REPLACE VIEW layover.steps AS
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
            WHEN s.kind = 'signal' THEN CASE WHEN s.result IS NOT NULL THEN 'signalled'
                                             WHEN s.wake_at > now() THEN 'waiting' ELSE 'timed_out' END
            WHEN s.expires_at <= now() THEN 'expired'
            ELSE 'finished' END                 AS outcome,
       CASE WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                         WHERE t.task_name = s.job_type AND t.task_instance = s.job_id) THEN 'live'
            WHEN EXISTS (SELECT 1 FROM layover.dead_letters d
                         WHERE d.job_type = s.job_type AND d.job_id = s.job_id
                           AND d.state IN ('parked', 'review')) THEN 'parked'
            ELSE 'none' END                     AS job_state
FROM layover.job_steps s;

-- ===========================================================================
-- Signals: a job that waits for a named signal (issue 46, docs/composition.md)
-- ===========================================================================

-- A signal to a job waiting for it (JobContext#awaitSignal stored a step of kind 'signal' whose
-- wake_at is its timeout): the step keeps the payload (result, jsonb; SQL NULL is stored as JSON
-- null) and wake_at = now(), and the job is made due (a paused one gets its paused run time now).
-- A job whose run is writing its wait at the same moment reads the step's wake_at in that write, so
-- the signal is never lost to the race. Returns false, writing nothing, when the job has no such
-- step still waiting (no job of that type and id waits for that name, it timed out, or it was
-- signalled already). Callable from any language: SELECT layover.signal('approve', 'doc-1',
-- 'approved', '{"by": "alice"}').
CREATE FUNCTION layover.signal(p_job_type text, p_job_id text, p_name text, p_payload jsonb) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.job_steps s
    SET result = coalesce(p_payload, 'null'::jsonb), result_type = 'signal', wake_at = now(),
        result_bytes = octet_length(coalesce(p_payload, 'null'::jsonb)::text)
    WHERE s.job_type = p_job_type AND s.job_id = p_job_id AND s.name = p_name AND s.kind = 'signal'
      AND s.result IS NULL AND s.wake_at > now();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- the job waits until its timeout, after now (its wait's write reads the step's wake_at if it runs now)
    IF layover.job_make_due(p_job_type, p_job_id, 'signalled', 'signal ''' || p_name || ''' arrived', now()) THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION layover.signal(text, text, text, jsonb) IS
    'Delivers a named signal (a jsonb payload) to a job waiting for it (JobContext#awaitSignal) and makes it due; '
    'false when no such wait is open.';
