package dev.layover.core.internal.observe;

/**
 * The statements of the time series ({@link TimeSeries}): its flush and its retention. The upsert
 * itself is {@code layover.time_series_add()}, which the replay statement calls too.
 */
final class TimeSeriesSql {

    private TimeSeriesSql() {}

    /**
     * The seconds between two samples of the queue's depth, from the job table's estimated rows:
     * 10 s per 100,000 (at least 10, at most 60). A table never analyzed estimates -1 rows: 10 s.
     */
    static final String SAMPLE_SECONDS = """
            SELECT least(60, greatest(10, floor(t.reltuples / 100000) * 10))
            FROM pg_class t WHERE t.oid = 'layover.scheduled_tasks'::regclass""";

    /**
     * One flush: the counters (parallel arrays: job types, provider keys, counters, details,
     * amounts) and, when one is due, a sample of the queue's depth per job type and provider key, in
     * one call of {@code layover.time_series_add()}. The sample is a grouped count of the job table,
     * a scan of all of it, so the cluster takes one per {@link #SAMPLE_SECONDS}: 10 s up to 100,000
     * jobs, 10 s more per 100,000 (the planner's estimate of the table's rows, {@code reltuples}, the
     * same for every instance), at most 60 s. A sample writes the marker {@code sampled} (job type and
     * provider key {@code ''}, amount 1) beside its gauges, and the next is due once no marker lies
     * within that interval (two instances at once only sample twice; the gauges keep the larger).
     * A bucket without a marker was not sampled: readers carry the last sample forward there, where a
     * sampled bucket without a gauge row had none of those jobs. Layover's own recurring tasks are not
     * jobs. A job type's keys beyond the {@link TimeSeries#KEYS_PER_FLUSH} deepest are summed as
     * provider key {@code '*'}. Parameters: the five arrays. Returns the rows written.
     */
    static final String FLUSH = """
            WITH go AS (
                SELECT NOT EXISTS (SELECT 1 FROM layover.time_series_counts c
                                   WHERE c.bucket_seconds = 10 AND c.counter = 'sampled' AND c.job_type = ''
                                     AND c.provider_key = '' AND c.detail = ''
                                     AND c.bucket > now() - make_interval(secs => (""" + SAMPLE_SECONDS + """
            ))) AS sample
            ), depth AS (
                SELECT j.task_name AS job_type, coalesce(j.provider_key, '') AS provider_key,
                       count(*) FILTER (WHERE NOT j.picked AND j.execution_time <= now()) AS due,
                       count(*) FILTER (WHERE j.execution_time > now()) AS waiting
                FROM layover.scheduled_tasks j
                WHERE j.task_name NOT LIKE 'layover-%' AND (SELECT sample FROM go)
                GROUP BY 1, 2
            ), sample AS (
                -- past the deepest keys of a job type, the rest are summed under '*'
                SELECT job_type, CASE WHEN rank <= """ + TimeSeries.KEYS_PER_FLUSH + """
             THEN provider_key ELSE '*' END AS provider_key,
                       sum(due)::bigint AS due, sum(waiting)::bigint AS waiting
                FROM (SELECT d.*, row_number() OVER (PARTITION BY job_type ORDER BY due + waiting DESC, provider_key) AS rank
                      FROM depth d) ranked
                GROUP BY 1, 2
            ), counted AS (
                SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[])
                    AS i(job_type, provider_key, counter, detail, amount)
                UNION ALL SELECT s.job_type, s.provider_key, 'due', '', s.due FROM sample s
                UNION ALL SELECT s.job_type, s.provider_key, 'waiting', '', s.waiting FROM sample s
                UNION ALL SELECT '', '', 'sampled', '', 1 FROM go WHERE go.sample
            )
            SELECT layover.time_series_add(array_agg(job_type), array_agg(provider_key), array_agg(counter),
                                           array_agg(detail), array_agg(amount)) AS written
            FROM counted""";

    /**
     * Retention: 10-second rows, and minute and hour rows, older than their periods. Parameters:
     * both periods in seconds.
     */
    static final String PURGE = """
            DELETE FROM layover.time_series_counts
            WHERE (bucket_seconds = 10 AND bucket < now() - make_interval(secs => ?::float8))
               OR (bucket_seconds IN (60, 3600) AND bucket < now() - make_interval(secs => ?::float8))""";
}
