-- Layover schema, version 24: thousands of provider keys (tenant keys, a `prefix*` bucket per key).
--
-- Each worker re-reads the provider state of the keys it uses once a second. It used to read
-- every such key's breaker, cooldown and learned pace (10,000 rows a second with 10,000 tenant
-- keys); it now reads back only the keys that are not plain (a breaker not closed, a cooldown or
-- a learned pace in force, a breaker row missing) and takes every other key in use as closed,
-- cooling down never and paced by its configured bucket alone (core's StateSql.REFRESH). The
-- breakers not closed already have an index (V2); the paces in force get one here.
--
-- The time series writes at most the 100 busiest provider keys of a job type per flush and sums
-- the rest under provider_key '*' (core's TimeSeries); the view's comment says so.
--
-- Forward-only; workers of earlier versions ignore the index and read the view as before.

-- Keys with a learned pace (a 429's stated limit, a discovered pace): the refresh reads those in force.
CREATE INDEX buckets_learned_idx ON layover.buckets (learned_until) WHERE learned_until IS NOT NULL;

COMMENT ON VIEW layover.time_series IS
    'What got through over time: per 10 s (last hour), per minute and per hour (7 days), per job type and provider key: completed, rate_limited (429s), rescheduled (detail: reason), retried (detail: kind), parked (detail: failure type), replayed (detail: kind), due and waiting (largest queue depth sampled in the bucket). Past the 100 busiest provider keys of a job type in a flush, the rest are summed under provider_key ''*''.';
