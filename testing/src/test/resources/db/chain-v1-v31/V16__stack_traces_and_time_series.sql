-- Layover schema, version 16: what got through, over time.
--
-- Stack traces need no schema: a failed attempt's trace is a field (stack_trace) of its entry in
-- the jsonb errors log that the job row and its dead letter already keep (bounded by
-- Layover.Builder.stackTraceChars).
--
-- The time series: each running instance counts in memory, per job type and provider key, what
-- its jobs did (completed, 429s, reschedules by reason, retries by kind, parks by failure type)
-- and writes the counts every 10 s (Layover.Builder.timeSeriesFlushInterval) with one call of
-- layover.time_series_add(): one INSERT ... ON CONFLICT DO UPDATE into the current 10-second,
-- one-minute and one-hour buckets of the database's clock. No job writes a row. The queue's depth (due and
-- waiting jobs) is sampled by the same flush, at most once per 10-second bucket for the cluster.
-- Replays are counted by the statement that makes them (one call per replay, not per job).
-- Each flush also deletes rows past their retention (default: 10-second rows 1 hour, minute and
-- hour rows 7 days; the hour rows keep a week's chart to 168 buckets). Read it through the view layover.time_series.
--
-- Forward-only: a released file is never edited; a change is a new file.

-- ---------------------------------------------------------------------------
-- time_series_counts: one row per bucket, job type, provider key, counter and detail.
--   bucket_seconds: 10, 60 or 3600
--   bucket:         the bucket's start (database time, a multiple of bucket_seconds since the epoch)
--   job_type:       the job type
--   provider_key:   '' for a job type without a provider key (or when the write did not know it)
--   counter:        completed | rate_limited | rescheduled | retried | parked | replayed | due | waiting
--   detail:         rescheduled: the reason (rate_limited, bucket, cooldown, ...); retried: the
--                   kind (transient, overloaded, error, worker_lost); parked: the failure type;
--                   replayed: manual | sweep | trial; '' otherwise
--   amount:         a count over the bucket; for due and waiting the largest sample in it
-- Rows per bucket are bounded by job types x keys x counters in use; retention bounds the buckets.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.time_series_counts (
    bucket_seconds int         NOT NULL CHECK (bucket_seconds IN (10, 60, 3600)),
    bucket         timestamptz NOT NULL,
    job_type       text        NOT NULL,
    provider_key   text        NOT NULL DEFAULT '',
    counter        text        NOT NULL,
    detail         text        NOT NULL DEFAULT '',
    amount         bigint      NOT NULL,
    -- (resolution, time) first: reads of a time range and retention's deletes walk it in order
    PRIMARY KEY (bucket_seconds, bucket, job_type, provider_key, counter, detail)
);

-- one key's window (a provider key's page), through the view's nullif(provider_key, '')
CREATE INDEX time_series_counts_key_idx
    ON layover.time_series_counts ((nullif(provider_key, '')), bucket_seconds, bucket);

COMMENT ON TABLE layover.time_series_counts IS
    'Counts per 10 s, per minute and per hour, per job type and provider key, flushed by the engine; read layover.time_series.';

-- Adds counts (or, for the gauges due and waiting, samples) to the current 10-second, minute and
-- hour buckets of now(). The arrays are parallel; one (job type, key, counter, detail) at most once.
-- Returns the rows written.
CREATE FUNCTION layover.time_series_add(job_types text[], provider_keys text[], counters text[],
                                        details text[], amounts bigint[]) RETURNS bigint
LANGUAGE sql AS $$
    WITH written AS (
        INSERT INTO layover.time_series_counts AS t
            (bucket_seconds, bucket, job_type, provider_key, counter, detail, amount)
        SELECT s.seconds, to_timestamp(floor(extract(epoch FROM now()) / s.seconds) * s.seconds),
               i.job_type, coalesce(i.provider_key, ''), i.counter, coalesce(i.detail, ''), i.amount
        FROM unnest(job_types, provider_keys, counters, details, amounts)
                 AS i(job_type, provider_key, counter, detail, amount),
             (VALUES (10), (60), (3600)) AS s(seconds)
        WHERE i.amount IS NOT NULL AND i.job_type IS NOT NULL AND i.counter IS NOT NULL
        -- one order for every writer: two flushes at once lock their rows in the same order (no deadlock)
        ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (bucket_seconds, bucket, job_type, provider_key, counter, detail) DO UPDATE
        SET amount = CASE WHEN excluded.counter IN ('due', 'waiting') THEN greatest(t.amount, excluded.amount)
                          ELSE t.amount + excluded.amount END
        RETURNING 1
    )
    SELECT count(*) FROM written;
$$;

COMMENT ON FUNCTION layover.time_series_add(text[], text[], text[], text[], bigint[]) IS
    'Adds counts (due/waiting: keeps the largest sample) to the current 10 s, minute and hour buckets of layover.time_series_counts.';

-- The documented view. One row per bucket, job type, provider key, counter and detail; a bucket
-- without a row counted nothing. Examples:
--   429s per minute on a key in the last hour:
--     SELECT bucket_start, sum(amount) FROM layover.time_series
--     WHERE bucket_seconds = 60 AND counter = 'rate_limited' AND provider_key = 'openai:gpt-4o-mini'
--       AND bucket_start > now() - interval '1 hour' GROUP BY 1 ORDER BY 1;
CREATE VIEW layover.time_series AS
SELECT c.bucket_seconds,
       c.bucket                                                  AS bucket_start,
       c.bucket + make_interval(secs => c.bucket_seconds)        AS bucket_end,
       c.job_type,
       nullif(c.provider_key, '')                                AS provider_key,
       c.counter,
       nullif(c.detail, '')                                      AS detail,
       c.amount
FROM layover.time_series_counts c;

COMMENT ON VIEW layover.time_series IS
    'What got through over time: per 10 s (last hour), per minute and per hour (7 days), per job type and provider key: completed, rate_limited (429s), rescheduled (detail: reason), retried (detail: kind), parked (detail: failure type), replayed (detail: kind), due and waiting (largest queue depth sampled in the bucket).';
