package dev.layover.core.internal.observe;

/** The reads of the metrics sampler ({@link StateSampler}): the documented views and state tables, never a write. */
final class SampleSql {

    private SampleSql() {}

    /**
     * Gauges: live jobs by type and state (the states of {@code layover.jobs}), and how many of
     * them are due and not running. One scan of the job table, every gauge interval.
     */
    static final String SAMPLE_JOBS = """
            SELECT job_type, state, count(*) AS n,
                   count(*) FILTER (WHERE state <> 'running' AND run_at <= now()) AS due
            FROM layover.jobs
            GROUP BY job_type, state""";

    /** Gauges: dead letters waiting for a decision, by type, failure type and state. */
    static final String SAMPLE_DEAD_LETTERS = """
            SELECT job_type, failure_type, state, count(*) AS n
            FROM layover.dead_letters
            WHERE state IN ('parked', 'review')
            GROUP BY job_type, failure_type, state""";

    /**
     * Gauges: every provider key's breaker state, cooldown end and free bucket permits (GCRA:
     * capacity = rate x burst, at least 1; free = capacity - what is booked past now). Also the
     * database's clock.
     */
    static final String SAMPLE_PROVIDER_KEYS = """
            SELECT k.provider_key, coalesce(b.state, 'closed') AS breaker_state, c.until AS cooldown_until,
                   CASE WHEN bk.requests_per_minute > 0 THEN
                       greatest(1, bk.requests_per_minute / 60.0 * bk.burst_ms / 1000.0)
                       - extract(epoch FROM greatest(bk.request_tat, now()) - now()) * bk.requests_per_minute / 60.0
                   END AS request_permits,
                   CASE WHEN bk.tokens_per_minute > 0 THEN
                       greatest(1, bk.tokens_per_minute / 60.0 * bk.burst_ms / 1000.0)
                       - extract(epoch FROM greatest(bk.token_tat, now()) - now()) * bk.tokens_per_minute / 60.0
                   END AS token_permits,
                   now() AS sampled_at
            FROM (SELECT provider_key FROM layover.breakers
                  UNION SELECT provider_key FROM layover.cooldowns
                  UNION SELECT provider_key FROM layover.buckets) k
            LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
            LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
            LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key""";
}
