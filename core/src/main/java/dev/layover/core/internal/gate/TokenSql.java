package dev.layover.core.internal.gate;

/**
 * The SQL of {@link TokenLedger}: token reservations settled after the call in one statement, and
 * a bucket corrected by a provider's own count. The arithmetic is {@code layover.gcra_settle}.
 */
final class TokenSql {

    private TokenSql() {}

    /**
     * Replaces reservations by what the calls counted, for several buckets in one statement: per
     * key and token dimension, delta = counted - reserved, applied by {@code layover.gcra_settle}
     * (given back, or charged up to one minute of the dimension's limit); and, where the call's
     * whole need is given (a report, not a refined estimate), the dimension's share moves
     * towards counted / need (weight 0.05; a ratio above 2 counts as 2). Parameters: now (null: the database's clock); then arrays, one element per key:
     * keys, combined rate (/s), combined delta, input rate, input delta, output rate, output
     * delta, combined counted, input counted, output counted, combined need, input need, output
     * need (counted and need null or 0 where no share is learned).
     */
    static final String SETTLE = """
            WITH p AS (SELECT coalesce(?::timestamptz, clock_timestamp()) AS now)
            UPDATE layover.buckets b
            SET token_tat = layover.gcra_settle(b.token_tat, p.now, d.tr, d.td, d.tr * 60),
                input_tat = layover.gcra_settle(b.input_tat, p.now, d.ir, d.id, d.ir * 60),
                output_tat = layover.gcra_settle(b.output_tat, p.now, d.orr, d.od, d.orr * 60),
                token_share = %1$s,
                input_share = %2$s,
                output_share = %3$s
            FROM p, unnest(?::text[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[],
                           ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[])
                    AS d(key, tr, td, ir, id, orr, od, tu, iu, ou, tw, iw, ow)
            WHERE b.provider_key = d.key""".formatted(share("token_share", "tr", "tu", "tw"),
                    share("input_share", "ir", "iu", "iw"), share("output_share", "orr", "ou", "ow"));

    private static String share(String column, String rate, String counted, String need) {
        String seen = "least(2, d.%s / d.%s)".formatted(counted, need); // one wild report moves it little
        return ("CASE WHEN d.%2$s > 0 AND d.%3$s > 0 AND d.%4$s IS NOT NULL"
                + " THEN coalesce(0.95 * b.%1$s + 0.05 * (%5$s), %5$s) ELSE b.%1$s END")
                .formatted(column, rate, need, counted, seen);
    }

    /**
     * The provider's own count corrects the bucket, tightening only: per token dimension the
     * provider reported, the tokens it holds as used in its window (its stated limit, else the
     * bucket's capacity, minus what it says remains) are at least what the bucket holds as in use:
     * {@code tat} moves to {@code now + used / rate} when that is later. Never loosens (the bucket
     * may know of calls the provider has not seen yet). Parameters: now (null: the database's clock), key, then for combined,
     * input and output tokens: the provider's limit (null: unknown) and remaining (null: not
     * reported).
     */
    static final String CORRECT = """
            WITH p AS (SELECT coalesce(?::timestamptz, clock_timestamp()) AS now, ?::text AS key,
                              ?::float8 AS tl, ?::float8 AS trem, ?::float8 AS il, ?::float8 AS irem,
                              ?::float8 AS ol, ?::float8 AS orem)
            UPDATE layover.buckets b
            SET token_tat = CASE WHEN p.trem IS NULL OR NOT b.tokens_per_minute > 0 THEN b.token_tat
                    ELSE greatest(b.token_tat, p.now + make_interval(secs => greatest(0, coalesce(p.tl,
                        layover.bucket_capacity(b.tokens_per_minute, coalesce(b.token_burst_ms, b.burst_ms))) - p.trem)
                        / (b.tokens_per_minute / 60.0))) END,
                input_tat = CASE WHEN p.irem IS NULL OR NOT b.input_tokens_per_minute > 0 THEN b.input_tat
                    ELSE greatest(b.input_tat, p.now + make_interval(secs => greatest(0, coalesce(p.il,
                        layover.bucket_capacity(b.input_tokens_per_minute, coalesce(b.token_burst_ms, b.burst_ms))) - p.irem)
                        / (b.input_tokens_per_minute / 60.0))) END,
                output_tat = CASE WHEN p.orem IS NULL OR NOT b.output_tokens_per_minute > 0 THEN b.output_tat
                    ELSE greatest(b.output_tat, p.now + make_interval(secs => greatest(0, coalesce(p.ol,
                        layover.bucket_capacity(b.output_tokens_per_minute, coalesce(b.token_burst_ms, b.burst_ms))) - p.orem)
                        / (b.output_tokens_per_minute / 60.0))) END
            FROM p
            WHERE b.provider_key = p.key
              AND (p.trem IS NOT NULL OR p.irem IS NOT NULL OR p.orem IS NOT NULL)""";
}
