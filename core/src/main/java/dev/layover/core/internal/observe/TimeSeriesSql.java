package dev.layover.core.internal.observe;

/**
 * The statements of the time series ({@link TimeSeries}): its flush and its retention. The upsert
 * itself is V16's {@code layover.time_series_add()}, which the replay statement calls too.
 */
final class TimeSeriesSql {

    private TimeSeriesSql() {}

    /**
     * One flush: the counters (parallel arrays: job types, provider keys, counters, details,
     * amounts) and a sample of the queue's depth per job type and provider key, in one call of
     * {@code layover.time_series_add()}. The sample (a grouped count of the job table) is skipped
     * when this 10-second bucket already has one (another instance's; a race only samples twice,
     * and the gauges keep the larger). Layover's own recurring tasks are not jobs. A job type's
     * keys beyond the {@link TimeSeries#KEYS_PER_FLUSH} deepest are summed as provider key
     * {@code '*'}. Parameters:
     * the five arrays. Returns the rows written.
     */
    static final String FLUSH = """
            WITH depth AS (
                SELECT j.task_name AS job_type, coalesce(j.provider_key, '') AS provider_key,
                       count(*) FILTER (WHERE NOT j.picked AND j.execution_time <= now()) AS due,
                       count(*) FILTER (WHERE j.execution_time > now()) AS waiting
                FROM layover.scheduled_tasks j
                WHERE j.task_name NOT LIKE 'layover-%'
                  AND NOT EXISTS (SELECT 1 FROM layover.time_series_counts c
                                  WHERE c.bucket_seconds = 10 AND c.counter = 'due'
                                    AND c.bucket = to_timestamp(floor(extract(epoch FROM now()) / 10) * 10))
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
