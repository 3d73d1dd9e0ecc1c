package dev.layover.core.internal.gate;

/**
 * The SQL of {@link Limits}: the all-or-nothing claim of a job's buckets and concurrency slots is
 * one call of the function {@code layover.admit_tokens} (where its rules are documented).
 */
final class LimitSql {

    private LimitSql() {}

    /**
     * Claims every limit of one job, or nothing ({@code layover.admit_tokens}: every bucket permit
     * and concurrency slot of the job's keys, with the input and output token dimensions).
     * Parameters: now, task name, task id, version, worker, then one array element per key
     * (sorted): keys, request rates (/s), request capacities, combined token rates (/s) and
     * capacities, input token rates and capacities, output token rates and capacities, concurrency
     * limits (0: none); then the job's combined, input and output token needs and the dead-worker
     * limit (s).
     *
     * <p>The claim commits asynchronously ({@code synchronous_commit = off} for its transaction
     * alone), as a bucket take does ({@link StateSql#TAKE_PERMITS}): the claims of one key lock the
     * same rows, and would queue behind one WAL flush each. What a crash or a failover can lose is
     * the last few hundred milliseconds of claims: a slot lost that way counts as free again (its
     * holder row is gone), so that many calls more may be in flight for a moment, and that many
     * permits are handed out again.
     */
    static final String ADMIT = """
            SELECT admitted, reason, limit_key, retry_at
            FROM layover.admit_tokens(?::timestamptz, ?::text, ?::text, ?::bigint, ?::text, ?::text[], ?::float8[],
                                      ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[],
                                      ?::float8[], ?::int[], ?::float8, ?::float8, ?::float8, ?::float8),
                 (SELECT set_config('synchronous_commit', 'off', true) AS async_commit) a""";

    /** Writes a key's concurrency limit and makes sure its slots exist. Parameters: key, limit, worker. */
    static final String CONFIGURE_CONCURRENCY = "SELECT layover.configure_concurrency(?::text, ?::int, ?::text)";
}
