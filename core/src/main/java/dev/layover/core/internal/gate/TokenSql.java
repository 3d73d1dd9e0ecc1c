package dev.layover.core.internal.gate;

/**
 * The SQL of {@link TokenLedger}: a bucket with token dimensions (requests, tokens, input tokens,
 * output tokens), taken in one statement, settled after the call in one statement. The
 * arithmetic is {@code layover.gcra_*} functions and {@code layover.gcra_settle}.
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
    private static final String FULL_SLOT = "greatest(p.now,"
            + " layover.gcra_fits_at(bk.request_tat, p.rr, p.rc, p.rn),"
            + " layover.gcra_fits_at(bk.token_tat, p.tr, p.tc, p.tn),"
            + " layover.gcra_fits_at(bk.input_tat, p.ir, p.ic, p.inn),"
            + " layover.gcra_fits_at(bk.output_tat, p.orr, p.oc, p.onn))";

    // what a booking takes of a dimension's need: the key's share, clamped to [0.05, 1]
    private static final String SHARE = "least(1, greatest(0.05, coalesce(%s, 1)))";

    /**
     * Takes one call's request permit and its token reservation in every limited dimension, or
     * nothing. When the job already holds a permit for about now ({@code permit_at}, kept from the
     * reschedule that reserved it) that permit is spent ({@code layover.holds_permit}, no
     * write) and the bucket is left alone. Otherwise: when every dimension admits the whole need now,
     * each takes it; when one does not and the caller may wait, the call books the first moment
     * at which every dimension admits what the key's calls have been using of such a need (the
     * shares: need x share per dimension, the job waits for that slot holding the booking); when
     * it may not wait, nothing is taken. Returns carried (0/1); when the row exists, the slot (=
     * now when it fits) and the tokens taken per dimension (tn, inn, onn); and the key's shares
     * now (ts, ins, ons: what a held permit's booking took, about).
     *
     * <p>Parameters: key, now; request rate, capacity, need; combined token rate, capacity, need;
     * input rate, capacity, need; output rate, capacity, need; may wait, task name, task id,
     * version (the job; nulls for none), permit grace (s).
     */
    // Like StateSql.TAKE_PERMITS, the take commits without waiting for its WAL flush (see there).
    static final String TAKE = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now,
                              ?::float8 AS rr, ?::float8 AS rc, ?::float8 AS rn,
                              ?::float8 AS tr, ?::float8 AS tc, ?::float8 AS tn,
                              ?::float8 AS ir, ?::float8 AS ic, ?::float8 AS inn,
                              ?::float8 AS orr, ?::float8 AS oc, ?::float8 AS onn,
                              ?::boolean AS may_wait, ?::text AS task_name, ?::text AS task_id, ?::bigint AS version,
                              ?::float8 AS grace_s,
                              set_config('synchronous_commit', 'off', true) AS async_commit),
            carried AS (
                SELECT layover.holds_permit(p.task_name, p.task_id, p.version, p.now, p.grace_s) AS spent FROM p
            ), cur AS (
                SELECT bk.provider_key, %1$s <= p.now AS fits,
                       %2$s AS ts, %3$s AS ins, %4$s AS ons
                FROM layover.buckets bk JOIN p ON bk.provider_key = p.key
                WHERE NOT (SELECT spent FROM carried)
                FOR UPDATE OF bk
            ), n AS (
                SELECT c.provider_key, c.fits, c.fits OR p.may_wait AS takes,
                       CASE WHEN c.fits THEN p.tn ELSE p.tn * c.ts END AS tn,
                       CASE WHEN c.fits THEN p.inn ELSE p.inn * c.ins END AS inn,
                       CASE WHEN c.fits THEN p.onn ELSE p.onn * c.ons END AS onn
                FROM cur c, p
            ), taken AS (
                UPDATE layover.buckets b
                SET request_tat = CASE WHEN n.takes THEN layover.gcra_take(b.request_tat, p.now, p.rr, p.rn) ELSE b.request_tat END,
                    token_tat = CASE WHEN n.takes THEN layover.gcra_take(b.token_tat, p.now, p.tr, n.tn) ELSE b.token_tat END,
                    input_tat = CASE WHEN n.takes THEN layover.gcra_take(b.input_tat, p.now, p.ir, n.inn) ELSE b.input_tat END,
                    output_tat = CASE WHEN n.takes THEN layover.gcra_take(b.output_tat, p.now, p.orr, n.onn) ELSE b.output_tat END,
                    last_slot = CASE WHEN n.fits THEN p.now ELSE greatest(p.now,
                            layover.gcra_fits_at(b.request_tat, p.rr, p.rc, p.rn),
                            layover.gcra_fits_at(b.token_tat, p.tr, p.tc, n.tn),
                            layover.gcra_fits_at(b.input_tat, p.ir, p.ic, n.inn),
                            layover.gcra_fits_at(b.output_tat, p.orr, p.oc, n.onn)) END,
                    last_granted_requests = CASE WHEN n.takes AND p.rr > 0 THEN p.rn ELSE 0 END,
                    last_granted_tokens = CASE WHEN n.takes THEN n.tn ELSE 0 END
                FROM p, n
                WHERE b.provider_key = n.provider_key
                RETURNING b.last_slot, CASE WHEN n.takes THEN n.tn ELSE 0 END AS tn,
                          CASE WHEN n.takes THEN n.inn ELSE 0 END AS inn, CASE WHEN n.takes THEN n.onn ELSE 0 END AS onn
            )
            SELECT CASE WHEN (SELECT spent FROM carried) THEN 1 ELSE 0 END AS carried, taken.last_slot,
                   taken.tn, taken.inn, taken.onn, s.ts, s.ins, s.ons
            FROM (SELECT 1) one LEFT JOIN taken ON true
            LEFT JOIN (SELECT %2$s AS ts, %3$s AS ins, %4$s AS ons
                       FROM layover.buckets bk JOIN p ON bk.provider_key = p.key) s ON true"""
            .formatted(FULL_SLOT, SHARE.formatted("bk.token_share"), SHARE.formatted("bk.input_share"),
                    SHARE.formatted("bk.output_share"));

    /**
     * Replaces reservations by what the calls counted, for several buckets in one statement: per
     * key and token dimension, delta = counted - reserved, applied by {@code layover.gcra_settle}
     * (given back, or charged up to one minute of the dimension's limit); and, where the call's
     * whole need is given (a report, not a refined estimate), the key's share of the dimension moves
     * towards counted / need (weight 0.05; a ratio above 2 counts as 2). Parameters: now; then arrays, one element per key:
     * keys, combined rate (/s), combined delta, input rate, input delta, output rate, output
     * delta, combined counted, input counted, output counted, combined need, input need, output
     * need (counted and need null or 0 where no share is learned).
     */
    static final String SETTLE = """
            WITH p AS (SELECT ?::timestamptz AS now)
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
