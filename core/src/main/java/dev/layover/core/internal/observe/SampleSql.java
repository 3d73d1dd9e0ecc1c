package dev.layover.core.internal.observe;

/** The reads of the metrics sampler ({@link StateSampler}): the documented views and state tables, never a write. */
final class SampleSql {

    private SampleSql() {}

    /**
     * Gauges: live jobs by type and state (the states of {@code layover.jobs}), and how many of
     * them are due and not running. One scan of the job table: every gauge interval up to 200,000
     * jobs, less often behind more ({@link StateSampler}).
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
     * Gauges: every provider key's breaker state, cooldown end and free bucket permits, as the view
     * {@code layover.provider_keys} interprets them. Also the database's clock.
     */
    static final String SAMPLE_PROVIDER_KEYS = """
            SELECT provider_key, breaker_state, cooldown_until, request_permits, token_permits, now() AS sampled_at
            FROM layover.provider_keys""";
}
