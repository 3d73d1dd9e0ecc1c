-- Layover schema, version 27: fewer writes of a job row per call behind a busy bucket (issue 23
-- part 2): a job enqueued behind it books its permit as it is inserted, and a held permit is
-- spent without a write.
--
-- Traced on the provider etiquette run (5,000 jobs enqueued at once behind 50 requests/s, 2 JVMs x
-- 8 threads; every write of the job table logged by a trigger): each success cost its pick and
-- its delete, and besides (a) a reschedule of every job of the backlog by a worker after the
-- enqueue, booking its permit (V10's reservation) or placing it in the key's line (V23); (b) one
-- more write when it spent its booked permit (spend_held_permit cleared permit_at); (c) for the
-- jobs picked before the reservation reached them, a pick and a reschedule more.
--
-- (a) Core's enqueue statements (JobSql.INSERT, INSERT_KEYED, INSERT_BATCH), on Layover's own
--     connection, ask layover.enqueue_permits to book the permits the key's bucket has for the
--     new jobs within the booking horizon (the job type's maxDeferral, at most 60 s, as a worker
--     books a backlog), and insert each such job at its permit, holding it (permit_at, reason
--     'bucket', no reschedule counted): the pick takes it first when it comes due (V23's permit
--     branch) and its take spends the permit. The jobs beyond the horizon are inserted due, as
--     before, and a worker places them in the key's line. An enqueue in the caller's transaction
--     books nothing (the bucket row would stay locked, and every take of the key wait, until the
--     caller commits).
-- (b) Core's takes (StateSql.TAKE_PERMITS, TokenSql.TAKE) ask layover.holds_permit, which writes
--     nothing. The permit is the job's while its row stays at the permit's run time
--     (execution_time = permit_at, as the pick's permit branch reads it) and the row is this run's
--     (version): every write that moves the row's run time ends the hold (a retry, a reschedule, a
--     revival by db-scheduler, a gather), and a run remembers in memory that it has carried its
--     permit (a second take of the same run pays as any call does). V25's fair rounds still spend
--     with spend_held_permit.
--
-- Tried and left out: placing the jobs beyond the horizon in the line at enqueue too, holding no
-- permit. A line of places is kept only while nothing else takes the bucket's permits; one taken
-- around it (a worker's stall at the start, a lease not spent in time, jobs back from a
-- cooldown) shifts the whole line: the job whose permit is gone books the next, the permit of
-- the job placed behind it, and so on to the line's end (traced: 4.2-4.9 writes per success).
--
-- Forward-only; workers of earlier versions read jobs booked at enqueue as their own reservations
-- (reason 'bucket', permit_at), enqueue due and spend held permits with a write as before (a row
-- they cleared holds nothing for a newer worker).

-- Books the permits the bucket of a key has for `p_count` jobs enqueued now, in order, within
-- `p_horizon_s` seconds: one request's time apart from the bucket's tat (when its bookings drain,
-- or now), less what half its burst allows, never before now; the bucket's tat moves past them
-- (V10's book_requests). Half the burst is left free (GCRA: each slot is at most burst - 1 - half
-- ahead of the tat before it): a batch no larger than that runs at once, a larger one is paced
-- with the margin kept for the calls' jitter at the provider, whose own bucket a paced line at the
-- full burst leaves empty (traced on the provider etiquette run: 429s at 1.5-2.1 % of the calls
-- with the whole burst booked at enqueue, against 0.0-0.1 % before), and for the jobs that do not
-- book (a raised priority, a deadline). Returns those slots (fewer than p_count when the horizon ends
-- first; empty when none is within it), or NULL when the bucket books nothing at enqueue: no
-- bucket row, a learned or discovered pace (it changes under the bookings), a token limit (a
-- job's cost is not one request), no request limit. An operators' limit at run time (V25's
-- limit_overrides) replaces the configured request rate; one with token limits books nothing.
-- Holds the bucket row to the end of the caller's statement's transaction.
CREATE FUNCTION layover.enqueue_permits(p_key text, p_count int, p_horizon_s float8)
    RETURNS timestamptz[] LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_now   timestamptz := now();
    v_rpm   float8;
    v_rate  float8;
    v_cap   float8;
    v_start timestamptz;
    v_slots timestamptz[];
    b       record;
    o       record;
BEGIN
    IF p_key IS NULL OR coalesce(p_count, 0) < 1 OR coalesce(p_horizon_s, 0) <= 0 THEN
        RETURN NULL;
    END IF;
    SELECT * INTO b FROM layover.buckets bk WHERE bk.provider_key = p_key FOR UPDATE;
    IF NOT FOUND OR b.learned_until IS NOT NULL OR coalesce(b.requests_per_minute, 0) <= 0
       OR b.tokens_per_minute IS NOT NULL OR b.input_tokens_per_minute IS NOT NULL
       OR b.output_tokens_per_minute IS NOT NULL THEN
        RETURN NULL;
    END IF;
    v_rpm := b.requests_per_minute;
    SELECT * INTO o FROM layover.limit_overrides lo WHERE lo.limit_key = p_key;
    IF FOUND THEN
        IF o.tokens_per_minute IS NOT NULL OR o.input_tokens_per_minute IS NOT NULL
           OR o.output_tokens_per_minute IS NOT NULL THEN
            RETURN NULL;
        END IF;
        v_rpm := coalesce(o.requests_per_minute, v_rpm);
    END IF;
    v_rate := v_rpm / 60.0;
    v_cap := greatest(1, v_rate * b.burst_ms / 1000.0);
    v_start := greatest(b.request_tat, v_now);
    v_slots := ARRAY(
        SELECT x.slot FROM (
            SELECT i, greatest(v_now, v_start + make_interval(secs => (i - (v_cap - 1 - floor(v_cap / 2))) / v_rate)) AS slot
            FROM generate_series(0, p_count - 1) i) x
        WHERE x.slot <= v_now + make_interval(secs => p_horizon_s)
        ORDER BY x.i);
    PERFORM layover.book_requests(p_key, v_start, cardinality(v_slots), v_rate);
    RETURN v_slots;
END
$$;

COMMENT ON FUNCTION layover.enqueue_permits(text, int, float8) IS
    'Books the permits a key''s bucket has for jobs enqueued now within a horizon and returns their slots, in order '
    '(V27; the tat moves past them); NULL when the bucket books nothing at enqueue (no configured request-only bucket). '
    'Called by core''s enqueue statements, which insert each job at its slot holding it.';

-- Whether the job (task name, id, version: the run's) holds a bucket permit for about now: its
-- row is at the permit's run time and the permit is not older than the grace. Reads only.
CREATE FUNCTION layover.holds_permit(p_task_name text, p_task_id text, p_version bigint,
        p_now timestamptz, p_grace_s float8)
    RETURNS boolean LANGUAGE sql STABLE AS
$$
    SELECT EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                   WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.version = p_version
                     AND t.permit_at IS NOT NULL AND t.execution_time = t.permit_at
                     AND t.permit_at >= p_now - make_interval(secs => p_grace_s))
$$;

COMMENT ON FUNCTION layover.holds_permit(text, text, bigint, timestamptz, float8) IS
    'Whether a job''s run holds a bucket permit for about now (V27): its row at the permit''s run time '
    '(execution_time = permit_at), version-checked, within the grace. Reads only: the run remembers its carry.';
