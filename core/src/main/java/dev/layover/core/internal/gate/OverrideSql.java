package dev.layover.core.internal.gate;

/** The SQL of {@link Overrides}: {@code layover.limit_overrides}, its only writer. */
final class OverrideSql {

    private OverrideSql() {}

    private static final String COLUMNS = "limit_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute, "
            + "output_tokens_per_minute, max_in_flight";

    /** One key's override. Parameter: key. */
    static final String READ_ONE = "SELECT " + COLUMNS + " FROM layover.limit_overrides WHERE limit_key = ?";

    /** Every override. */
    static final String READ_ALL = "SELECT " + COLUMNS + " FROM layover.limit_overrides";

    /**
     * Sets a key's override, replacing the one it had. Parameters: key, requests/min, tokens/min,
     * input tokens/min, output tokens/min, max in flight (each null: as configured), by, reason.
     * Returns the override before, its columns prefixed {@code b_} (all null: none).
     */
    static final String SET = """
            WITH p AS (SELECT ?::text AS k, ?::float8 AS rpm, ?::float8 AS tpm, ?::float8 AS itpm, ?::float8 AS otpm,
                              ?::int AS mif, ?::text AS by, ?::text AS reason),
            before AS (SELECT o.* FROM layover.limit_overrides o, p WHERE o.limit_key = p.k),
            written AS (
                INSERT INTO layover.limit_overrides AS o (limit_key, requests_per_minute, tokens_per_minute,
                        input_tokens_per_minute, output_tokens_per_minute, max_in_flight, set_by, set_at, reason)
                SELECT p.k, p.rpm, p.tpm, p.itpm, p.otpm, p.mif, p.by, now(), p.reason FROM p
                ON CONFLICT (limit_key) DO UPDATE
                SET requests_per_minute = excluded.requests_per_minute, tokens_per_minute = excluded.tokens_per_minute,
                    input_tokens_per_minute = excluded.input_tokens_per_minute,
                    output_tokens_per_minute = excluded.output_tokens_per_minute, max_in_flight = excluded.max_in_flight,
                    set_by = excluded.set_by, set_at = now(), reason = excluded.reason
                RETURNING 1
            )
            SELECT b.limit_key AS b_key, b.requests_per_minute AS b_requests_per_minute,
                   b.tokens_per_minute AS b_tokens_per_minute, b.input_tokens_per_minute AS b_input_tokens_per_minute,
                   b.output_tokens_per_minute AS b_output_tokens_per_minute, b.max_in_flight AS b_max_in_flight
            FROM (SELECT count(*) FROM written) w LEFT JOIN before b ON true""";

    /** Deletes a key's override. Parameter: key. Returns the row removed. */
    static final String REVERT = "DELETE FROM layover.limit_overrides WHERE limit_key = ? RETURNING " + COLUMNS;
}
