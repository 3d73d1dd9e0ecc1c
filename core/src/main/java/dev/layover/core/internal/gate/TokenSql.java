package dev.layover.core.internal.gate;

/**
 * The SQL of {@link TokenLedger}: a bucket with token dimensions (requests, tokens, input tokens,
 * output tokens; V17), taken in one statement, settled after the call in one statement. The
 * arithmetic is V10's {@code layover.gcra_*} functions and V17's {@code layover.gcra_settle}.
 */
final class TokenSql {

    private TokenSql() {}

    /**
     * Writes a bucket's limits, every dimension, as configured by a worker; a learned pace of the
     * key (stated or discovered) becomes a configured bucket. Parameters: key, requests/min, tokens/min, input tokens/min,
     * output tokens/min (each null for none), burst ms, token burst ms, worker.
     */
    static final String CONFIGURE_BUCKET = """
            INSERT INTO layover.buckets (provider_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute,
                                         output_tokens_per_minute, burst_ms, token_burst_ms, configured_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (provider_key) DO UPDATE
            SET requests_per_minute = excluded.requests_per_minute, tokens_per_minute = excluded.tokens_per_minute,
                input_tokens_per_minute = excluded.input_tokens_per_minute,
                output_tokens_per_minute = excluded.output_tokens_per_minute,
                burst_ms = excluded.burst_ms, token_burst_ms = excluded.token_burst_ms,
                configured_at = now(), configured_by = excluded.configured_by, learned_until = NULL,
                discovered = false""";

    // per dimension: rate (units/s, 0 none), capacity, need; a dimension not limited or not needed
    // gives a NULL fits_at, which greatest() ignores
    private static final String SLOT = "greatest(p.now,"
            + " layover.gcra_fits_at(b.request_tat, p.rr, p.rc, p.rn),"
            + " layover.gcra_fits_at(b.token_tat, p.tr, p.tc, p.tn),"
            + " layover.gcra_fits_at(b.input_tat, p.ir, p.ic, p.inn),"
            + " layover.gcra_fits_at(b.output_tat, p.orr, p.oc, p.onn))";
    private static final String TAKES = "(" + SLOT + " <= p.now OR p.may_wait)";

    /**
     * Takes one call's request permit and its token reservation in every limited dimension, or
     * nothing. When the job already holds a permit for about now ({@code permit_at}, kept from the
     * reschedule that reserved it) that permit is spent (V10's {@code layover.spend_held_permit})
     * and the bucket is left alone. Otherwise: when every dimension admits the need now, each takes
     * it; when one does not and the caller may wait, each takes it from the first moment all admit
     * it (the job waits for that slot holding the reservation); when it may not wait, nothing is
     * taken. Returns carried (0/1) and, when the row exists, the slot (= now when it fits).
     *
     * <p>Parameters: key, now; request rate, capacity, need; combined token rate, capacity, need;
     * input rate, capacity, need; output rate, capacity, need; may wait, task name, task id,
     * version (the job; nulls for none), permit grace (s).
     */
    static final String TAKE = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now,
                              ?::float8 AS rr, ?::float8 AS rc, ?::float8 AS rn,
                              ?::float8 AS tr, ?::float8 AS tc, ?::float8 AS tn,
                              ?::float8 AS ir, ?::float8 AS ic, ?::float8 AS inn,
                              ?::float8 AS orr, ?::float8 AS oc, ?::float8 AS onn,
                              ?::boolean AS may_wait, ?::text AS task_name, ?::text AS task_id, ?::bigint AS version,
                              ?::float8 AS grace_s),
            carried AS (
                SELECT layover.spend_held_permit(p.task_name, p.task_id, p.version, p.now, p.grace_s) AS spent FROM p
            ), taken AS (
                UPDATE layover.buckets b
                SET request_tat = CASE WHEN %1$s THEN layover.gcra_take(b.request_tat, p.now, p.rr, p.rn) ELSE b.request_tat END,
                    token_tat = CASE WHEN %1$s THEN layover.gcra_take(b.token_tat, p.now, p.tr, p.tn) ELSE b.token_tat END,
                    input_tat = CASE WHEN %1$s THEN layover.gcra_take(b.input_tat, p.now, p.ir, p.inn) ELSE b.input_tat END,
                    output_tat = CASE WHEN %1$s THEN layover.gcra_take(b.output_tat, p.now, p.orr, p.onn) ELSE b.output_tat END,
                    last_slot = %2$s,
                    last_granted_requests = CASE WHEN %1$s AND p.rr > 0 THEN p.rn ELSE 0 END,
                    last_granted_tokens = CASE WHEN %1$s THEN p.tn ELSE 0 END
                FROM p
                WHERE b.provider_key = p.key AND NOT (SELECT spent FROM carried)
                RETURNING b.last_slot
            )
            SELECT CASE WHEN (SELECT spent FROM carried) THEN 1 ELSE 0 END AS carried, taken.last_slot
            FROM (SELECT 1) one LEFT JOIN taken ON true""".formatted(TAKES, SLOT);

    /**
     * Replaces reservations by what the calls counted, for several buckets in one statement: per
     * key and token dimension, delta = counted - reserved, applied by {@code layover.gcra_settle}
     * (given back, or charged up to one minute of the dimension's limit). Parameters: now; then
     * arrays, one element per key: keys, combined rate (/s), combined delta, input rate, input
     * delta, output rate, output delta.
     */
    static final String SETTLE = """
            WITH p AS (SELECT ?::timestamptz AS now)
            UPDATE layover.buckets b
            SET token_tat = layover.gcra_settle(b.token_tat, p.now, d.tr, d.td, d.tr * 60),
                input_tat = layover.gcra_settle(b.input_tat, p.now, d.ir, d.id, d.ir * 60),
                output_tat = layover.gcra_settle(b.output_tat, p.now, d.orr, d.od, d.orr * 60)
            FROM p, unnest(?::text[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[])
                    AS d(key, tr, td, ir, id, orr, od)
            WHERE b.provider_key = d.key""";

    /**
     * The provider's own count corrects the bucket, tightening only: per token dimension the
     * provider reported, the tokens it holds as used in its window (its stated limit, else the
     * bucket's capacity, minus what it says remains) are at least what the bucket holds as booked:
     * {@code tat} moves to {@code now + used / rate} when that is later. Never loosens (the bucket
     * may know of calls the provider has not seen yet). Parameters: now, key, then for combined,
     * input and output tokens: the provider's limit (null: unknown) and remaining (null: not
     * reported).
     */
    static final String CORRECT = """
            WITH p AS (SELECT ?::timestamptz AS now, ?::text AS key,
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
