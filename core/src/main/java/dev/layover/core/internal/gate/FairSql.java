package dev.layover.core.internal.gate;

/**
 * The SQL of {@link Fairness}: the fairness weights ({@code layover.fairness_weights}), configured
 * at start and set by operators.
 */
final class FairSql {

    private FairSql() {}

    /**
     * A configured weight, written by a worker at start: replaces a configured row, never an
     * operator's. Parameters: pattern, weight, worker.
     */
    static final String CONFIGURE_WEIGHT = """
            INSERT INTO layover.fairness_weights AS w (pattern, weight, origin, configured_weight, configured_by,
                                                       configured_at)
            VALUES (?, ?, 'config', ?, ?, now())
            ON CONFLICT (pattern) DO UPDATE
            SET weight = CASE WHEN w.origin = 'config' THEN excluded.weight ELSE w.weight END,
                configured_weight = excluded.configured_weight,
                configured_by = CASE WHEN w.origin = 'config' THEN excluded.configured_by ELSE w.configured_by END,
                configured_at = CASE WHEN w.origin = 'config' THEN now() ELSE w.configured_at END
            WHERE w.configured_weight IS DISTINCT FROM excluded.configured_weight
               OR (w.origin = 'config' AND w.weight IS DISTINCT FROM excluded.weight)""";

    /**
     * An operator's weight: replaces whatever the row held (the configured weight stays in
     * {@code configured_weight}). Parameters: pattern, weight, by, reason. Returns the weight
     * in force before (null: the pattern had no row).
     */
    static final String SET_WEIGHT = """
            WITH p AS (SELECT ?::text AS pattern, ?::float8 AS weight, ?::text AS by, ?::text AS reason),
            before AS (SELECT w.weight FROM layover.fairness_weights w, p WHERE w.pattern = p.pattern)
            INSERT INTO layover.fairness_weights AS w (pattern, weight, origin, configured_by, configured_at, reason)
            SELECT p.pattern, p.weight, 'operator', p.by, now(), p.reason FROM p
            ON CONFLICT (pattern) DO UPDATE
            SET weight = excluded.weight, origin = 'operator', configured_by = excluded.configured_by,
                configured_at = now(), reason = excluded.reason
            RETURNING (SELECT weight FROM before) AS before""";

    /**
     * Reverts an operator's weight: the configured weight again, or no row (weight 1) when none
     * is configured. Parameters: pattern, by. Returns the operator's weight removed (no
     * row: the pattern had none).
     */
    static final String REVERT_WEIGHT = """
            WITH p AS (SELECT ?::text AS pattern, ?::text AS by),
            op AS (
                SELECT w.pattern, w.weight, w.configured_weight FROM layover.fairness_weights w, p
                WHERE w.pattern = p.pattern AND w.origin = 'operator' FOR UPDATE OF w
            ), restored AS (
                UPDATE layover.fairness_weights w
                SET weight = op.configured_weight, origin = 'config', configured_by = p.by, configured_at = now(), reason = NULL
                FROM op, p WHERE w.pattern = op.pattern AND op.configured_weight IS NOT NULL
                RETURNING 1
            ), removed AS (
                DELETE FROM layover.fairness_weights w USING op
                WHERE w.pattern = op.pattern AND op.configured_weight IS NULL
                RETURNING 1
            )
            SELECT op.weight AS removed FROM op, (SELECT count(*) FROM restored) r, (SELECT count(*) FROM removed) d""";
}
