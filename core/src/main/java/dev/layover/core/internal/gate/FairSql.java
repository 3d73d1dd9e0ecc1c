package dev.layover.core.internal.gate;

/**
 * The SQL of {@link Fairness}: V20's {@code layover.fair_round} (a round of a key's fair queue)
 * and the configured weights ({@code layover.fairness_weights}).
 */
final class FairSql {

    private FairSql() {}

    /**
     * One round of a key's fair queue ({@code layover.fair_round}, V20: spends the caller's held
     * permit, tags new waiting jobs, books the next permits in tag order). Parameters: key, now,
     * request rate (/s), capacity, horizon (s), low-priority share, max jobs to tag, the caller's
     * task name, id and version (nulls: a pump round), permit grace (s). Returns carried, slot,
     * estimate, booked, tagged, waiting (all null: the key has no request bucket row).
     */
    static final String ROUND = """
            SELECT carried, slot, estimate, booked, tagged, waiting
            FROM layover.fair_round(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""";

    /**
     * A configured weight, written by a worker at start: replaces a configured row, never an
     * operator's. Parameters: pattern, weight, worker.
     */
    static final String CONFIGURE_WEIGHT = """
            INSERT INTO layover.fairness_weights AS w (pattern, weight, origin, configured_by, configured_at)
            VALUES (?, ?, 'config', ?, now())
            ON CONFLICT (pattern) DO UPDATE
            SET weight = excluded.weight, configured_by = excluded.configured_by, configured_at = now()
            WHERE w.origin = 'config' AND w.weight IS DISTINCT FROM excluded.weight""";
}
