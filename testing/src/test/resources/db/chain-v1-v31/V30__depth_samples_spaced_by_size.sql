-- Layover schema, version 30: the queue's depth sampled less often as the job table grows, each
-- sample marked (issue 23).
--
-- Each flush of the time series (core's TimeSeriesSql.FLUSH) may sample the queue's depth (due and
-- waiting jobs per job type and provider key), and a sample is a grouped count of the whole job
-- table. The cluster took one per 10-second bucket: 0.3-0.5 s of a database core every 10 s with a
-- million jobs waiting. It now takes one per 10 s up to 100,000 jobs, 10 s more per 100,000 (the
-- planner's estimate of layover.scheduled_tasks' rows, pg_class.reltuples, the same for every
-- instance), at most 60 s.
--
-- Each sample writes a marker beside its gauges: counter 'sampled', job_type '' and provider_key '',
-- amount 1 (into the 10-second, minute and hour buckets, as every count; two instances sampling at
-- once make it 2). A bucket without a marker was not sampled: its due and waiting are unknown, not
-- 0, and the console carries the last sample forward there. A marked bucket without a due or
-- waiting row had none of those jobs. For the depth at a time from SQL, take the latest marked
-- bucket at or before it.
--
-- No table changes: the view's comment names the marker. Workers of earlier versions still sample
-- once per 10-second bucket that holds no 'due' row, without a marker; the console takes a bucket
-- with their gauge rows as sampled.
--
-- Forward-only: a released file is never edited; a change is a new file.

COMMENT ON VIEW layover.time_series IS
    'What got through over time: per 10 s (last hour), per minute and per hour (7 days), per job type and provider key: completed, rate_limited (429s), rescheduled (detail: reason), retried (detail: kind), parked (detail: failure type), replayed (detail: kind), due and waiting (largest queue depth sampled in the bucket; the depth is sampled every 10 to 60 s, less often as the job table grows), and sampled (job type and provider key empty: the bucket holds a sample of the depth; a bucket without it was not sampled). Past the 100 busiest provider keys of a job type in a flush, the rest are summed under provider_key ''*''.';
