-- Layover schema, version 28: a backlog deeper than the booking horizon takes its place in the
-- key's waiting line as it is inserted, and the line's front is booked ahead of its places
-- (issue 23 part 3).
--
-- Measured before (docs/benchmarks.md, "Deep backlog"): a million jobs enqueued behind a bucket of
-- 50 requests/s came in due; a worker then placed each in the key's line (V23), a write per job in
-- the first minutes while the key runs 3,000 jobs a minute: 172 writes of a job row per success in
-- a 120 s run, against 4.6 for 10,000 jobs.
--
-- Core's enqueue statements (JobSql.INSERT, INSERT_KEYED, INSERT_BATCH) now ask
-- layover.enqueue_places instead of V27's enqueue_permits: the permits within the horizon are
-- booked as before (half the burst left free), and the jobs beyond it are inserted at their place
-- in the key's line, holding no permit (reason 'bucket', permit_at NULL, no reschedule counted):
-- one request's time apart from the line's end (the latest of the bucket's tat after the
-- bookings, now, and the last place already in the line, as V23's placement reads it). While the
-- key has a line, an enqueue books no permit: its jobs go behind the line (a permit booked ahead
-- of it would shift every place in it, and run a job before jobs enqueued earlier). The insert
-- is then the job's only write until its place comes near.
--
-- V27 left this out: a line of places holds only while nothing else takes the bucket's permits,
-- and one taken around it (a stall, a job with a deadline or a raised priority, jobs back from a
-- cooldown) shifted the whole line, job after job (each found its permit gone, booked the next,
-- the permit of the job behind it). What bounds that now: the backlog reservation (JobSql's
-- RESERVE_BACKLOG, run when a job of the key is told to wait) books the line's front as well as
-- the key's due jobs, oldest place first, within the horizon: after a refusal the next horizon of
-- the line holds exact permits (a write each, as every booked job had before), and the line is
-- read again from there. A line job that finds its permit free when it comes due takes it at its
-- pick (no write before it).
--
-- Forward-only; workers of earlier versions see line jobs as V23's placements (due at their
-- place, taking a permit or told to wait), and keep calling enqueue_permits.

-- A key's waiting line in place order (jobs placed for its bucket, holding no permit): its last
-- place is one index probe for enqueue_places, whatever the line's length. Written with ORDER BY
-- ... DESC LIMIT 1, not max(): with statistics taken before a deep backlog came in, max() was
-- planned as a read of the whole line (26 ms at 27,000 jobs, each enqueueBatch of a million-job
-- backlog slower than the one before).
CREATE INDEX scheduled_tasks_line_idx ON layover.scheduled_tasks (provider_key, execution_time)
    WHERE permit_at IS NULL AND last_reschedule_reason = 'bucket' AND NOT picked;

-- The request rate (/s) at which the bucket of a key books permits at enqueue, or NULL when it
-- books nothing there (V27's rules: no bucket row, a learned or discovered pace, a token limit, no
-- request limit; an operators' limit with tokens books nothing, one of requests only replaces the
-- configured rate). Reads only.
CREATE FUNCTION layover.enqueue_rate(p_key text) RETURNS float8 LANGUAGE sql STABLE AS
$$
    SELECT coalesce(lo.requests_per_minute, b.requests_per_minute) / 60.0
    FROM layover.buckets b LEFT JOIN layover.limit_overrides lo ON lo.limit_key = b.provider_key
    WHERE b.provider_key = p_key AND b.learned_until IS NULL AND coalesce(b.requests_per_minute, 0) > 0
      AND b.tokens_per_minute IS NULL AND b.input_tokens_per_minute IS NULL AND b.output_tokens_per_minute IS NULL
      AND (lo.limit_key IS NULL OR (lo.tokens_per_minute IS NULL AND lo.input_tokens_per_minute IS NULL
                                    AND lo.output_tokens_per_minute IS NULL))
$$;

COMMENT ON FUNCTION layover.enqueue_rate(text) IS
    'The request rate (/s) at which a key''s bucket books permits and places at enqueue; NULL when it books nothing there (V28).';

-- V27's function, its checks now enqueue_rate's (same rules, same result).
CREATE OR REPLACE FUNCTION layover.enqueue_permits(p_key text, p_count int, p_horizon_s float8)
    RETURNS timestamptz[] LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_now   timestamptz := now();
    v_rate  float8;
    v_cap   float8;
    v_start timestamptz;
    v_slots timestamptz[];
    b       record;
BEGIN
    IF p_key IS NULL OR coalesce(p_count, 0) < 1 OR coalesce(p_horizon_s, 0) <= 0 THEN
        RETURN NULL;
    END IF;
    SELECT * INTO b FROM layover.buckets bk WHERE bk.provider_key = p_key FOR UPDATE;
    v_rate := layover.enqueue_rate(p_key);
    IF v_rate IS NULL THEN
        RETURN NULL;
    END IF;
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

-- The run times for `p_count` jobs enqueued now behind the bucket of a key, in order: the first
-- `permits` hold permits booked within `p_horizon_s` seconds (enqueue_permits, which books them),
-- the rest are places in the key's waiting line, holding nothing, one request's time apart from
-- the line's end (the latest of the bucket's tat, now, and the line's last place). While the key
-- has a line, nothing is booked: new jobs go behind it (a permit booked ahead of the line would
-- shift every place in it, and run the job before jobs enqueued earlier). NULL slots (and 0
-- permits) when the bucket books nothing at enqueue (enqueue_rate). Holds the bucket row to the
-- end of the caller's transaction, so that two enqueues into one key take places one after the
-- other; the line's last place is read after the row is locked (each statement of this function
-- sees what committed before it).
CREATE FUNCTION layover.enqueue_places(p_key text, p_count int, p_horizon_s float8,
        OUT slots timestamptz[], OUT permits int)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_now   timestamptz := now();
    v_rate  float8;
    v_start timestamptz;
    v_last  timestamptz;
BEGIN
    permits := 0;
    IF p_key IS NULL OR coalesce(p_count, 0) < 1 OR coalesce(p_horizon_s, 0) <= 0 THEN
        RETURN;
    END IF;
    SELECT greatest(bk.request_tat, v_now) INTO v_start FROM layover.buckets bk WHERE bk.provider_key = p_key FOR UPDATE;
    v_rate := layover.enqueue_rate(p_key);
    IF v_rate IS NULL THEN
        RETURN;
    END IF;
    SELECT t.execution_time + make_interval(secs => 1 / v_rate) INTO v_last
      FROM layover.scheduled_tasks t
     WHERE t.provider_key = p_key AND NOT t.picked AND t.permit_at IS NULL
       AND t.last_reschedule_reason = 'bucket' AND t.execution_time > v_now
     ORDER BY t.execution_time DESC LIMIT 1;
    IF v_last IS NULL THEN
        slots := layover.enqueue_permits(p_key, p_count, p_horizon_s);
        permits := cardinality(slots);
        IF permits >= p_count THEN
            RETURN;
        END IF;
        SELECT greatest(bk.request_tat, v_now) INTO v_start FROM layover.buckets bk WHERE bk.provider_key = p_key;
    ELSE
        slots := '{}';
        v_start := greatest(v_start, v_last);
    END IF;
    slots := slots || ARRAY(SELECT v_start + make_interval(secs => i / v_rate)
                            FROM generate_series(0, p_count - permits - 1) i ORDER BY i);
END
$$;

COMMENT ON FUNCTION layover.enqueue_places(text, int, float8) IS
    'Run times for jobs enqueued now behind a key''s bucket, in order (V28): the first `permits` hold permits booked '
    'within the horizon (enqueue_permits; none while the key has a waiting line), the rest are places in the key''s '
    'waiting line holding nothing. NULL slots when the bucket books nothing at enqueue. Called by core''s enqueue statements.';
