package dev.layover.core.internal.gate;

/**
 * Every SQL statement of the provider state, in one place. Each state change is one conditional
 * {@code UPDATE} (or upsert): the condition that allows the change is in its {@code WHERE}, and
 * Postgres re-checks it against the newest row version when two writers meet, so there is no
 * read-then-write race. {@code SET} expressions see the row as it was, which is how a statement
 * reports the state it changed from ({@code previous_state}) and what a reservation took
 * ({@code last_slot}, {@code last_granted_*}).
 *
 * <p>Times come from the caller's clock (as for every job run time), passed as {@code p.now}. The
 * rate bucket arithmetic is {@code layover.gcra_*} functions.
 */
final class StateSql {

    private StateSql() {}

    static final String NOTIFY_CHANNEL = "layover_provider_state";

    private static final String STATE_COLUMNS = """
                   b.provider_key IS NOT NULL AS has_breaker,
                   b.state, b.open_until, b.trial_token IS NOT NULL AS trial_claimed,
                   b.trial_claimed_at, b.trial_expires_at, b.reason,
                   c.until, c.reason AS cooldown_reason, c.detail AS cooldown_detail,
                   bk.requests_per_minute AS learned_rpm, bk.tokens_per_minute AS learned_tpm,
                   bk.input_tokens_per_minute AS learned_itpm, bk.output_tokens_per_minute AS learned_otpm,
                   bk.learned_until, coalesce(bk.discovered, false) AS discovered""";

    private static final String STATE_JOINS = """
            LEFT JOIN layover.breakers b ON b.provider_key = k.key
            LEFT JOIN layover.cooldowns c ON c.provider_key = k.key
            LEFT JOIN layover.buckets bk ON bk.provider_key = k.key AND bk.learned_until > now()""";

    /** The cached state of some keys (a notification's, or keys met again). Parameter: the keys (text[]). */
    static final String LOAD = "SELECT k.key, " + STATE_COLUMNS + "\nFROM unnest(?::text[]) AS k(key)\n" + STATE_JOINS;

    /**
     * The background refresh of the keys in use, at a cost that follows what is not plain rather
     * than how many keys there are: only keys whose breaker is not closed, whose cooldown is in
     * force or whose learned pace is in force come back (a few rows out of 10,000 tenant keys,
     * found through the partial indexes {@code breakers_state_idx} and {@code buckets_learned_idx}); every other key in use is closed, cooling
     * down never and paced only by its configured bucket, as read now. A breaker row that went
     * missing is found when a failure cannot be counted on it ({@link StateCache#breakerRowMissing}).
     * Parameter: the keys (text[], distinct).
     */
    static final String REFRESH = """
            WITH marked AS (
                SELECT provider_key AS key FROM layover.breakers WHERE state <> 'closed'
                UNION SELECT provider_key FROM layover.cooldowns WHERE until > now()
                UNION SELECT provider_key FROM layover.buckets WHERE learned_until > now()
            )
            SELECT k.key, """ + STATE_COLUMNS + "\nFROM unnest(?::text[]) AS k(key) JOIN marked m ON m.key = k.key\n"
            + STATE_JOINS;

    /**
     * The state of keys met for the first time (or read inline again), creating their closed
     * breakers in the same statement. Parameters: worker, origin, the keys (text[]), the keys again.
     */
    static final String LOAD_ENSURING = """
            WITH ensured AS (
                INSERT INTO layover.breakers (provider_key, changed_by, change_origin)
                SELECT DISTINCT u.key, ?, ? FROM unnest(?::text[]) AS u(key)
                ON CONFLICT (provider_key) DO NOTHING
                RETURNING provider_key
            )
            SELECT k.key, """ + STATE_COLUMNS.replace("b.provider_key IS NOT NULL AS has_breaker",
            "(b.provider_key IS NOT NULL OR k.key IN (SELECT provider_key FROM ensured)) AS has_breaker")
            + "\nFROM unnest(?::text[]) AS k(key)\n" + STATE_JOINS;

    /** Creates closed breakers for keys seen for the first time. Parameters: keys, worker, origin. */
    static final String ENSURE_BREAKERS = """
            INSERT INTO layover.breakers (provider_key, changed_by, change_origin)
            SELECT k, ?, ? FROM unnest(?::text[]) AS k
            ON CONFLICT (provider_key) DO NOTHING""";

    private static final String EXPIRED = "(b.window_started_at <= p.now - make_interval(secs => p.win))";
    private static final String CALLS = "((CASE WHEN " + EXPIRED + " THEN 0 ELSE b.calls END) + p.ok + 1)";
    private static final String FAILS = "((CASE WHEN " + EXPIRED + " THEN 0 ELSE b.failures END) + 1)";
    private static final String TRIP = "(" + CALLS + " >= p.min_calls AND " + FAILS + " >= p.min_failures AND "
            + FAILS + " >= p.ratio * " + CALLS + ")";
    private static final String NEXT_OPEN_UNTIL =
            "p.now + make_interval(secs => least(p.max_open_s, p.open_s * power(2, least(b.open_count, 30))))";

    /**
     * Successes counted locally since the last flush, for many keys: only a closed breaker counts
     * them (a new window starts when the old one ran out). Parameters: now, keys, counts, windows
     * in seconds.
     */
    static final String ADD_SUCCESSES = """
            WITH p AS (SELECT ?::timestamptz AS now)
            UPDATE layover.breakers b
            SET calls = CASE WHEN b.window_started_at <= p.now - make_interval(secs => d.win) THEN d.ok
                             ELSE b.calls + d.ok END,
                failures = CASE WHEN b.window_started_at <= p.now - make_interval(secs => d.win) THEN 0
                                ELSE b.failures END,
                window_started_at = CASE WHEN b.window_started_at <= p.now - make_interval(secs => d.win) THEN p.now
                                         ELSE b.window_started_at END
            FROM p, unnest(?::text[], ?::int[], ?::float8[]) AS d(key, ok, win)
            WHERE b.provider_key = d.key AND b.state = 'closed'""";

    /**
     * One failure (plus the successes not flushed yet) on a closed breaker; opens it when the
     * thresholds are crossed. Returns the row only when it was closed: {@code state = 'open'}
     * then means this statement opened it. Parameters: key, now, successes, window (s),
     * minimum calls, failure threshold, ratio, open (s), max open (s), the failure, worker, origin.
     */
    static final String ADD_FAILURE = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::int AS ok, ?::float8 AS win,
                              ?::int AS min_calls, ?::int AS min_failures, ?::float8 AS ratio,
                              ?::float8 AS open_s, ?::float8 AS max_open_s, ?::text AS failure,
                              ?::text AS by, ?::text AS origin)
            UPDATE layover.breakers b
            SET window_started_at = CASE WHEN %1$s THEN p.now ELSE b.window_started_at END,
                calls = %2$s,
                failures = %3$s,
                previous_state = CASE WHEN %4$s THEN b.state ELSE b.previous_state END,
                state = CASE WHEN %4$s THEN 'open' ELSE 'closed' END,
                opened_at = CASE WHEN %4$s THEN p.now ELSE b.opened_at END,
                open_until = CASE WHEN %4$s THEN %5$s ELSE b.open_until END,
                open_count = CASE WHEN %4$s THEN b.open_count + 1 ELSE b.open_count END,
                reason = CASE WHEN %4$s
                              THEN format('%%s failures in %%s calls within %%s s; last: %%s', %3$s, %2$s, p.win, p.failure)
                              ELSE b.reason END,
                changed_at = CASE WHEN %4$s THEN p.now ELSE b.changed_at END,
                changed_by = CASE WHEN %4$s THEN p.by ELSE b.changed_by END,
                change_origin = CASE WHEN %4$s THEN p.origin ELSE b.change_origin END,
                last_failure = p.failure,
                last_failure_at = p.now
            FROM p
            WHERE b.provider_key = p.key AND b.state = 'closed'
            RETURNING b.state, b.open_until, b.reason""".formatted(EXPIRED, CALLS, FAILS, TRIP, NEXT_OPEN_UNTIL);

    /**
     * Claims the one trial call: matches only an open breaker whose open period is over, or a
     * half-open one whose claim is missing or stale. One row back means this caller holds the
     * trial. Parameters: key, now, token, trial timeout (s), worker, origin.
     */
    static final String CLAIM_TRIAL = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::text AS token, ?::float8 AS timeout_s,
                              ?::text AS by, ?::text AS origin)
            UPDATE layover.breakers b
            SET previous_state = b.state,
                state = 'half_open',
                trial_token = p.token,
                trial_claimed_by = p.by,
                trial_claimed_at = p.now,
                trial_expires_at = p.now + make_interval(secs => p.timeout_s),
                reason = CASE WHEN b.state = 'open' THEN 'open period over; trial call claimed by ' || p.by
                              ELSE 'stale trial claim taken over by ' || p.by END,
                changed_at = CASE WHEN b.state = 'open' THEN p.now ELSE b.changed_at END,
                changed_by = p.by,
                change_origin = p.origin
            FROM p
            WHERE b.provider_key = p.key
              AND ((b.state = 'open' AND b.open_until <= p.now)
                   OR (b.state = 'half_open' AND (b.trial_token IS NULL OR b.trial_expires_at <= p.now)))
            RETURNING b.previous_state, b.trial_expires_at""";

    /** The trial succeeded: closes the breaker. Parameters: key, now, token, worker, origin. */
    static final String TRIAL_SUCCEEDED = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::text AS token, ?::text AS by, ?::text AS origin)
            UPDATE layover.breakers b
            SET previous_state = b.state, state = 'closed', closed_at = p.now, open_until = NULL, open_count = 0,
                calls = 0, failures = 0, window_started_at = p.now,
                trial_token = NULL, trial_claimed_by = NULL, trial_claimed_at = NULL, trial_expires_at = NULL,
                reason = 'trial call succeeded', changed_at = p.now, changed_by = p.by, change_origin = p.origin
            FROM p
            WHERE b.provider_key = p.key AND b.state = 'half_open' AND b.trial_token = p.token
            RETURNING b.previous_state""";

    /**
     * The trial failed: opens the breaker again, for twice as long as last time (up to the cap).
     * Parameters: key, now, token, open (s), max open (s), the failure, worker, origin.
     */
    static final String TRIAL_FAILED = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::text AS token, ?::float8 AS open_s,
                              ?::float8 AS max_open_s, ?::text AS failure, ?::text AS by, ?::text AS origin)
            UPDATE layover.breakers b
            SET previous_state = b.state, state = 'open', opened_at = p.now,
                open_until = %s, open_count = b.open_count + 1,
                trial_token = NULL, trial_claimed_by = NULL, trial_claimed_at = NULL, trial_expires_at = NULL,
                reason = 'trial call failed: ' || p.failure, last_failure = p.failure, last_failure_at = p.now,
                changed_at = p.now, changed_by = p.by, change_origin = p.origin
            FROM p
            WHERE b.provider_key = p.key AND b.state = 'half_open' AND b.trial_token = p.token
            RETURNING b.previous_state, b.open_until""".formatted(NEXT_OPEN_UNTIL);

    /**
     * The trial said nothing about the provider's health (a rate limit, a rejected request, the
     * job's own error, no permit): gives the claim back so the next worker takes it at once.
     * Parameters: key, token.
     */
    static final String RELEASE_TRIAL = """
            UPDATE layover.breakers
            SET trial_token = NULL, trial_claimed_by = NULL, trial_claimed_at = NULL, trial_expires_at = NULL
            WHERE provider_key = ? AND state = 'half_open' AND trial_token = ?""";

    /**
     * An operator opens the breaker until {@code open_until} ('infinity' when no end is given).
     * Parameters: key, now, open until, reason, worker, origin.
     */
    static final String FORCE_OPEN = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::timestamptz AS until, ?::text AS reason,
                              ?::text AS by, ?::text AS origin)
            UPDATE layover.breakers b
            SET previous_state = b.state, state = 'open', opened_at = p.now, open_until = coalesce(p.until, 'infinity'),
                trial_token = NULL, trial_claimed_by = NULL, trial_claimed_at = NULL, trial_expires_at = NULL,
                reason = p.reason, changed_at = p.now, changed_by = p.by, change_origin = p.origin
            FROM p
            WHERE b.provider_key = p.key
            RETURNING b.previous_state""";

    /** An operator closes the breaker. Matches only a breaker that is not closed. Parameters: key, now, reason, worker, origin. */
    static final String FORCE_CLOSE = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::text AS reason, ?::text AS by, ?::text AS origin)
            UPDATE layover.breakers b
            SET previous_state = b.state, state = 'closed', closed_at = p.now, open_until = NULL, open_count = 0,
                calls = 0, failures = 0, window_started_at = p.now,
                trial_token = NULL, trial_claimed_by = NULL, trial_claimed_at = NULL, trial_expires_at = NULL,
                reason = p.reason, changed_at = p.now, changed_by = p.by, change_origin = p.origin
            FROM p
            WHERE b.provider_key = p.key AND b.state <> 'closed'
            RETURNING b.previous_state""";

    /** The current breaker state of one key (operators). Parameter: key. */
    static final String BREAKER_STATE = "SELECT state FROM layover.breakers WHERE provider_key = ?";

    /** The current cooldown end of one key (operators). Parameter: key. */
    static final String COOLDOWN_UNTIL = "SELECT until FROM layover.cooldowns WHERE provider_key = ?";

    /**
     * Moves a cooldown forward (never back). Without an absolute end or a wait, the wait
     * escalates with the strikes: a cooldown starting while one is active keeps the strikes (the
     * in-flight calls of one burst count once), one starting within the strike memory after the
     * last ended adds a strike, a later one starts over. Returns the resulting {@code until}.
     *
     * <p>Parameters: key, now, absolute end (or null), wait (s, or null), base (s), cap (s),
     * strike memory (s), reason, detail, worker, origin.
     */
    static final String COOLDOWN = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::timestamptz AS until_abs, ?::float8 AS wait_s,
                              ?::float8 AS base_s, ?::float8 AS cap_s, ?::float8 AS memory_s,
                              ?::text AS reason, ?::text AS detail, ?::text AS by, ?::text AS origin)
            INSERT INTO layover.cooldowns AS c
                (provider_key, until, reason, detail, strikes, started_at, updated_at, updated_by, change_origin)
            SELECT p.key,
                   coalesce(p.until_abs, p.now + make_interval(secs => coalesce(p.wait_s, p.base_s))),
                   p.reason, p.detail, 1, p.now, p.now, p.by, p.origin
            FROM p
            ON CONFLICT (provider_key) DO UPDATE
            SET until = greatest(c.until, (SELECT coalesce(p.until_abs, p.now + make_interval(secs => coalesce(p.wait_s,
                            least(p.cap_s, p.base_s * power(2, least(30, CASE
                                WHEN c.until > p.now THEN c.strikes
                                WHEN c.until >= p.now - make_interval(secs => p.memory_s) THEN c.strikes + 1
                                ELSE 1 END - 1))))))
                        FROM p)),
                strikes = (SELECT CASE WHEN c.until > p.now THEN c.strikes
                                       WHEN c.until >= p.now - make_interval(secs => p.memory_s) THEN c.strikes + 1
                                       ELSE 1 END FROM p),
                started_at = (SELECT CASE WHEN c.until >= p.now - make_interval(secs => p.memory_s) THEN c.started_at
                                          ELSE p.now END FROM p),
                reason = CASE WHEN excluded.until > c.until THEN excluded.reason ELSE c.reason END,
                detail = CASE WHEN excluded.until > c.until THEN excluded.detail ELSE c.detail END,
                updated_at = excluded.updated_at, updated_by = excluded.updated_by, change_origin = excluded.change_origin
            RETURNING c.until""";

    /**
     * A pace learned from a 429 that stated the key's limit: creates or renews the key's learned
     * bucket; a configured bucket ({@code learned_until} NULL) is left alone. The provider has just
     * refused, so its bucket is empty: {@code request_tat} moves to at least {@code empty_at}
     * (the end of the wait it asked for plus one burst), so that no burst is handed out when the
     * cooldown ends, only the pace; a pace that had lapsed starts from {@code empty_at} afresh.
     * The token limits the row learned from headers ({@link #LEARN_TOKEN_PACE}) are kept.
     * Parameters: key, requests per minute, burst ms, worker, learned until, empty_at. Returns the
     * row's four rates and {@code learned_until}; no row: a configured bucket.
     */
    static final String LEARN_PACE = """
            INSERT INTO layover.buckets (provider_key, requests_per_minute, burst_ms, configured_by, learned_until,
                                         request_tat)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (provider_key) DO UPDATE
            SET requests_per_minute = excluded.requests_per_minute,
                burst_ms = excluded.burst_ms, configured_at = now(), configured_by = excluded.configured_by,
                learned_until = CASE WHEN layover.buckets.discovered THEN excluded.learned_until
                                     ELSE greatest(layover.buckets.learned_until, excluded.learned_until) END,
                discovered = false,
                request_tat = CASE WHEN layover.buckets.learned_until <= now() THEN excluded.request_tat
                                   ELSE greatest(layover.buckets.request_tat, excluded.request_tat) END
            WHERE layover.buckets.learned_until IS NOT NULL
            RETURNING requests_per_minute, tokens_per_minute, input_tokens_per_minute, output_tokens_per_minute,
                      learned_until""";

    /**
     * Learns (or renews) a key's token limits stated by a provider's rate-limit headers: each
     * dimension given (tokens, input tokens, output tokens per minute; null: not stated, kept as
     * the row holds it) is written, {@code learned_until} renewed; the row's request pace is
     * kept. A configured bucket ({@code learned_until} NULL) is left alone; a token dimension
     * learned for the first time starts empty of bookings. Parameters: key, tokens/min, input
     * tokens/min, output tokens/min, burst ms (for a new row), token burst ms, worker, until.
     * Returns the row's four rates and {@code learned_until}; no row: a configured bucket.
     */
    static final String LEARN_TOKEN_PACE = """
            INSERT INTO layover.buckets AS b (provider_key, tokens_per_minute, input_tokens_per_minute,
                                              output_tokens_per_minute, burst_ms, token_burst_ms, configured_by,
                                              learned_until)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (provider_key) DO UPDATE
            SET tokens_per_minute = coalesce(excluded.tokens_per_minute, b.tokens_per_minute),
                input_tokens_per_minute = coalesce(excluded.input_tokens_per_minute, b.input_tokens_per_minute),
                output_tokens_per_minute = coalesce(excluded.output_tokens_per_minute, b.output_tokens_per_minute),
                token_burst_ms = coalesce(b.token_burst_ms, excluded.token_burst_ms),
                configured_at = now(), configured_by = excluded.configured_by,
                learned_until = greatest(b.learned_until, excluded.learned_until)
            WHERE b.learned_until IS NOT NULL
            RETURNING b.requests_per_minute, b.tokens_per_minute, b.input_tokens_per_minute, b.output_tokens_per_minute,
                      b.learned_until, b.discovered""";

    // GCRA, per dimension (requests r, tokens t) with rate (units/s), capacity, need, extra: the
    // arithmetic is layover.gcra_* functions. The need fits from gcra_fits_at; taking n units
    // moves tat with gcra_take; what is free beyond the need is gcra_free - need.
    private static final String R_SLOT = "layover.gcra_fits_at(b.request_tat, p.rr, p.rc, p.rn)";
    private static final String T_SLOT = "layover.gcra_fits_at(b.token_tat, p.tr, p.tc, p.tn)";
    private static final String SLOT = "greatest(p.now, " + R_SLOT + ", " + T_SLOT + ")";
    private static final String FITS = "(" + SLOT + " <= p.now)";
    private static final String R_FREE = "(layover.gcra_free(b.request_tat, p.now, p.rr, p.rc) - p.rn)";
    private static final String T_FREE = "(layover.gcra_free(b.token_tat, p.now, p.tr, p.tc) - p.tn)";
    // waiting line reaches past the slot a job told to wait would book (booking it would take a
    // place's permit and shift every job behind it), and a place at the line's end is within the job's reach
    private static final String JOINS_LINE = "(NOT EXISTS (SELECT 1 FROM job j WHERE j.deadline IS NOT NULL)"
            + " AND coalesce((SELECT l.line_end FROM line l) >= " + SLOT
            + " AND (SELECT l.line_end FROM line l) + make_interval(secs => 1 / nullif(p.rr, 0)) <= p.now + make_interval(secs => p.join_s),"
            + " false))";
    // a future slot is reserved when the caller may wait, (a discovered pace) the slot is not past book_by,
    // and the job does not take a place at the end of the key's waiting line instead
    private static final String MAY_BOOK = "(p.may_wait AND (p.book_by IS NULL OR " + SLOT + " <= p.book_by) AND NOT "
            + JOINS_LINE + ")";
    private static final String R_TAKE = "(CASE WHEN " + FITS + " THEN p.rn + CASE WHEN p.rr > 0 THEN greatest(0, least(p.rx, floor("
            + R_FREE + "))) ELSE p.rx END WHEN " + MAY_BOOK + " THEN p.rn ELSE 0 END)";
    private static final String T_TAKE = "(CASE WHEN " + FITS + " THEN p.tn + CASE WHEN p.tr > 0 THEN greatest(0, least(p.tx, "
            + T_FREE + ")) ELSE p.tx END WHEN " + MAY_BOOK + " THEN p.tn ELSE 0 END)";

    /**
     * {@code layover.gcra_take(tat, now, rate, n)} written out: PostgreSQL does not inline a
     * function whose argument used twice in its body is as costly as a take's count ({@code n}), so
     * the call would run, its body planned, at every take.
     */
    private static String gcraTake(String tat, String now, String rate, String n) {
        return "(CASE WHEN " + rate + " > 0 AND " + n + " > 0 THEN greatest(" + tat + ", " + now + ") + make_interval(secs => "
                + n + " / " + rate + ") ELSE " + tat + " END)";
    }

    /**
     * Takes permits from a bucket, in one statement. When the job already holds a permit for
     * about now ({@code permit_at}, kept from the reschedule that gave it), that permit is spent
     * ({@code layover.holds_permit}: the job's row is not written; its
     * run remembers the carry, {@code ProviderRun#heldPermitTask}) and the bucket is left alone.
     * Otherwise: when the need fits now, it is taken plus up to the extra asked for (a lease); when
     * it does not fit and the caller may wait, the next future slot is reserved, unless the key's
     * waiting line (unpicked jobs rescheduled for the bucket without a permit) reaches past
     * that slot and a place one request's time behind the line's end is within the job's reach
     * ({@code join_s}; never for a job with a deadline): then nothing is taken and that place is
     * returned ({@code line_end}), so the line's jobs keep the permits their places stand for; a
     * slot booked where the line's places stand ({@code ahead_of_line}: the line reaches past it)
     * took a place's permit, and the caller realigns the line (JobSql's {@code REALIGN_LINE}); when
     * it may not wait, nothing is taken. A job picked at its place in the line (no permit held,
     * reason {@code bucket}) takes one permit and leases none (each place behind it stands for its own;
     * a job picked past its place's grace that leased took them), and within the grace of its place
     * moves the request tat on from as early as the grace
     * ({@code take_at}; whether it fits is decided as of now): a pick comes up to a poll after the
     * place, and a take from now would forget the bucket's idle while, so the jobs placed behind
     * would find no permit (as a held permit, a place may be spent up to the grace late). Returns
     * carried (0/1), and, when the bucket row exists, the slot (= now when it fits), what was
     * taken, the line's end when the job takes its place there, and whether a slot booked ahead
     * took the permit of a place in the line.
     *
     * <p>Parameters: key, now, request rate (/s, 0 none), request capacity, request need, request
     * extra, token rate, token capacity, token need, token extra, may wait, task name, task id,
     * version (the job; nulls for none), permit grace (s), book by (the latest slot that may be
     * reserved; null: any), join within (s: how far ahead a place at the line's end may be; null:
     * never).
     *
     * <p>The take commits asynchronously ({@code synchronous_commit = off} for its transaction
     * alone): every admission of a key updates the key's one bucket row, whose lock is held until
     * commit, so with a synchronous commit the takes of a busy key queue behind one WAL flush
     * each (8 worker threads waiting on a row lock, one in {@code WALSync}). What a crash or a
     * failover can lose is the last few hundred milliseconds of takes: that many permits are
     * handed out again, a short burst the provider's 429 (rescheduled without an attempt) answers.
     */
    static final String TAKE_PERMITS = """
            WITH p0 AS (SELECT ?::text AS key, ?::timestamptz AS now,
                              ?::float8 AS rr, ?::float8 AS rc, ?::float8 AS rn, ?::float8 AS rx0,
                              ?::float8 AS tr, ?::float8 AS tc, ?::float8 AS tn, ?::float8 AS tx,
                              ?::boolean AS may_wait, ?::text AS task_name, ?::text AS task_id, ?::bigint AS version,
                              ?::float8 AS grace_s, ?::timestamptz AS book_by, ?::float8 AS join_s,
                              set_config('synchronous_commit', 'off', true) AS async_commit),
            job AS (
                -- the picked job's row (a primary-key read), for a job's admission, which may use the key's waiting line
                SELECT t.execution_time, t.deadline, t.permit_at IS NULL AND t.last_reschedule_reason = 'bucket' AS in_line
                FROM layover.scheduled_tasks t, p0
                WHERE p0.join_s IS NOT NULL AND t.task_name = p0.task_name AND t.task_instance = p0.task_id
                  AND t.version = p0.version
            ), placed AS (
                SELECT EXISTS (SELECT 1 FROM job j, p0 WHERE j.in_line AND j.execution_time <= p0.now
                               AND j.execution_time >= p0.now - make_interval(secs => p0.grace_s)) AS late_ok,
                       EXISTS (SELECT 1 FROM job j WHERE j.in_line) AS in_line
            ), p AS (
                -- a job picked at its place in the line takes one permit, no lease: each place behind it stands for its
                -- own, and a lease taken by a job picked past its place's grace took them (the line's next jobs were
                -- told to wait, to its end). Within the grace, it moves the request tat on from as early as the grace:
                -- a pick comes up to a poll after the place, and a take from now would forget the bucket's idle while,
                -- so the jobs placed behind would find no permit (a held permit is spent late the same way). Whether it
                -- fits is decided as of now.
                SELECT p0.*, CASE WHEN placed.in_line THEN 0 ELSE p0.rx0 END AS rx,
                       CASE WHEN placed.late_ok THEN p0.now - make_interval(secs => p0.grace_s) ELSE p0.now END AS take_at
                FROM p0, placed
            ), line AS (
                -- read only when a take does not fit: the line's last place, one probe of scheduled_tasks_line_idx
                SELECT (SELECT t.execution_time FROM layover.scheduled_tasks t
                        WHERE t.provider_key = p.key AND NOT t.picked AND t.permit_at IS NULL
                          AND t.last_reschedule_reason = 'bucket'
                        ORDER BY t.execution_time DESC LIMIT 1) AS line_end
                FROM p
                WHERE p.rr > 0 AND EXISTS (SELECT 1 FROM job)
            ), carried AS (
                SELECT layover.holds_permit(p.task_name, p.task_id, p.version, p.now, p.grace_s) AS spent FROM p
            ), taken AS (
                UPDATE layover.buckets b
                SET request_tat = %4$s,
                    token_tat = %5$s,
                    last_slot = %3$s,
                    last_granted_requests = %1$s,
                    last_granted_tokens = %2$s
                FROM p
                WHERE b.provider_key = p.key AND NOT (SELECT spent FROM carried)
                RETURNING b.last_slot, b.last_granted_requests, b.last_granted_tokens,
                          CASE WHEN b.last_granted_requests = 0 AND b.last_granted_tokens = 0 AND p.may_wait
                               AND p.join_s IS NOT NULL THEN (SELECT l.line_end FROM line l) END AS line_end,
                          CASE WHEN b.last_granted_requests > 0 AND b.last_slot > p.now AND p.join_s IS NOT NULL
                               THEN coalesce((SELECT l.line_end FROM line l) >= b.last_slot, false)
                               ELSE false END AS ahead_of_line
            )
            SELECT CASE WHEN (SELECT spent FROM carried) THEN 1 ELSE 0 END AS carried, taken.last_slot,
                   taken.last_granted_requests, taken.last_granted_tokens, taken.line_end,
                   coalesce(taken.ahead_of_line, false) AS ahead_of_line
            FROM (SELECT 1) one LEFT JOIN taken ON true""".formatted(R_TAKE, T_TAKE, SLOT,
            gcraTake("b.request_tat", "p.take_at", "p.rr", R_TAKE), gcraTake("b.token_tat", "p.now", "p.tr", T_TAKE));

    /**
     * Leases ahead the request permits a pick's jobs will take (ProviderGate#leaseAhead), for
     * many keys in one statement: for each key whose bucket row exists and is not locked by
     * another transaction (rows locked in key order, {@code SKIP LOCKED}: never waits), what is
     * free now ({@code gcra_free}) up to the count asked, only whole permits, is taken (the
     * request tat moves on by that many); a key with less than one free permit is left alone:
     * nothing is booked ahead. Token tats are not touched (the caller leaves out buckets with
     * token dimensions). Commits asynchronously, as {@link #TAKE_PERMITS} does. Parameters: now,
     * keys, request rates (/s), request capacities, counts. Returns each key given permits and
     * how many.
     */
    static final String LEASE_AHEAD = bucketsOfKeys("?::timestamptz AS now", "SKIP LOCKED") + """
            , granted AS (
                SELECT l.provider_key, p.now, p.rr,
                       least(p.n, floor(layover.gcra_free(l.request_tat, p.now, p.rr, p.rc)))::int AS n
                FROM locked l JOIN p ON p.key = l.provider_key
                WHERE p.rr > 0
            )
            UPDATE layover.buckets b
            SET request_tat = %s
            FROM granted g
            WHERE b.provider_key = g.provider_key AND g.n >= 1
            RETURNING b.provider_key, g.n""".formatted(gcraTake("b.request_tat", "g.now", "g.rr", "g.n"));

    /**
     * The opening of a statement over many keys' buckets ({@link #LEASE_AHEAD}, {@link
     * #TAKE_PLACES}): {@code p}, one row per key (key, request rate {@code rr}, capacity {@code
     * rc}, count {@code n}; from the arrays that follow {@code params}), with {@code params}'
     * columns and the statement's asynchronous commit; {@code locked}, the keys' bucket rows
     * locked in key order ({@code lock}: {@code SKIP LOCKED}, those another transaction holds
     * skipped; or {@code ""}, waiting for them: in the order the batch enqueue's bookings lock
     * them, {@code JobSql.INSERT_BATCH}, so neither it nor another such statement closes a cycle).
     */
    private static String bucketsOfKeys(String params, String lock) {
        return """
                WITH p AS (
                    SELECT a.key, a.rr, a.rc, a.n, %s, set_config('synchronous_commit', 'off', true) AS async_commit
                    FROM unnest(?::text[], ?::float8[], ?::float8[], ?::int[]) AS a(key, rr, rc, n)
                ), locked AS MATERIALIZED (
                    SELECT b.provider_key, b.request_tat FROM layover.buckets b
                    WHERE b.provider_key IN (SELECT p.key FROM p)
                    ORDER BY b.provider_key FOR UPDATE %s
                )""".formatted(params, lock);
    }

    /**
     * Takes the permits of a pick's jobs picked at their places in their keys' waiting lines,
     * for many keys in one statement: what {@link #TAKE_PERMITS} does for each such job picked
     * within the grace of its place, done for a key's {@code n} jobs at once. The request tat moves
     * on from as early as the grace ({@code base}: the greater of the tat and now less the grace),
     * one request's time per permit; the k-th permit fits when the tat before it is within the
     * burst of now, so {@code floor((now - base) × rate + capacity)} of them fit, at most {@code n}.
     * Rows another transaction holds are waited for (key order), not skipped: a key skipped sends
     * each of its jobs to a take of its own, whose lock of the row makes the next pick skip the key
     * again (measured, 1,000,000 jobs over 10 keys of 50/s, 600 s: 21% of the jobs at their places
     * took their own permits, 58,823 takes; none with the wait). What holds a bucket row is one
     * statement ({@link #TAKE_PERMITS}, {@link #LEASE_AHEAD}, a backlog's reservation, a batch
     * enqueue's bookings, another worker's places), so the wait is short; the caller bounds it.
     * Buckets with a token dimension are left out by the caller. Commits asynchronously, as {@link
     * #TAKE_PERMITS} does. Parameters: now, grace (s), keys, request rates (/s), request
     * capacities, counts. Returns each key given permits and how many.
     */
    static final String TAKE_PLACES = bucketsOfKeys("?::timestamptz AS now, ?::float8 AS grace_s", "") + """
            , based AS (
                SELECT l.provider_key, p.now, p.rr, p.rc, p.n,
                       greatest(l.request_tat, p.now - make_interval(secs => p.grace_s)) AS base
                FROM locked l JOIN p ON p.key = l.provider_key
                WHERE p.rr > 0
            ), granted AS (
                SELECT d.provider_key, d.rr, d.base,
                       least(d.n, floor(extract(epoch FROM d.now - d.base)::float8 * d.rr + d.rc + 1e-9))::int AS n
                FROM based d
            )
            UPDATE layover.buckets b
            SET request_tat = g.base + make_interval(secs => g.n / g.rr)
            FROM granted g
            WHERE b.provider_key = g.provider_key AND g.n >= 1
            RETURNING b.provider_key, g.n""";

    // ---- discovered paces (Discovery): every change a conditional UPDATE on the database's clock ----

    /**
     * The first 429 that stated no limit for a key without a pace: creates its discovered pace in
     * slow start, or starts one afresh over a pace that has lapsed; a configured bucket and a pace
     * in force (stated or discovered) are left alone (no row back). The provider has just refused:
     * {@code request_tat} is {@code empty_at} (the end of the pause plus one burst), so no burst is
     * handed out when the pause ends. Parameters: key, requests per minute, burst ms, worker, keep
     * for (s), empty_at. Returns the rate and {@code learned_until}.
     */
    static final String DISCOVERY_START = """
            INSERT INTO layover.buckets AS b (provider_key, requests_per_minute, burst_ms, configured_by, learned_until,
                                              request_tat, discovered, discovery_phase, discovery_adjusted_at,
                                              discovery_decreased_at)
            VALUES (?, ?, ?, ?, now() + make_interval(secs => ?), ?, true, 'slow_start', now(), now())
            ON CONFLICT (provider_key) DO UPDATE
            SET requests_per_minute = excluded.requests_per_minute, tokens_per_minute = NULL,
                input_tokens_per_minute = NULL, output_tokens_per_minute = NULL, burst_ms = excluded.burst_ms,
                configured_at = now(), configured_by = excluded.configured_by, learned_until = excluded.learned_until,
                request_tat = excluded.request_tat, discovered = true, discovery_phase = 'slow_start',
                discovery_ceiling = NULL, discovery_adjusted_at = now(), discovery_decreased_at = now(),
                discovery_increases = 0, discovery_decreases = 0, discovery_waitlist = NULL
            WHERE b.learned_until IS NOT NULL AND b.learned_until <= now()
            RETURNING b.requests_per_minute, b.learned_until""";

    /**
     * A 429 burst on a discovered pace in force: the rate times the decrease factor (not below the
     * floor; in slow start, half of that: the rate doubled at least once more before the burst's
     * 429s came back, as in TCP's slow start), once per burst: only when the last decrease is at least one interval old. The rate it
     * came at becomes the ceiling; the pace is steady; {@code request_tat} moves to
     * {@code empty_at}. Parameters: key, decrease factor, floor (rpm), interval (s), keep for (s),
     * empty_at. Returns the new rate, {@code learned_until} and the ceiling.
     */
    static final String DISCOVERY_DECREASE = """
            WITH p AS (SELECT ?::text AS key, ?::float8 AS beta, ?::float8 AS min_rpm, ?::float8 AS every_s,
                              ?::float8 AS keep_s, ?::timestamptz AS empty_at)
            UPDATE layover.buckets b
            SET requests_per_minute = greatest(p.min_rpm, b.requests_per_minute * p.beta
                                               * CASE WHEN b.discovery_phase = 'slow_start' THEN 0.5 ELSE 1 END),
                discovery_ceiling = b.requests_per_minute,
                discovery_phase = 'steady',
                discovery_adjusted_at = now(), discovery_decreased_at = now(),
                discovery_decreases = b.discovery_decreases + 1,
                learned_until = now() + make_interval(secs => p.keep_s),
                request_tat = p.empty_at, discovery_waitlist = NULL
            FROM p
            WHERE b.provider_key = p.key AND b.discovered AND b.learned_until > now()
              AND b.discovery_decreased_at <= now() - make_interval(secs => p.every_s)
            RETURNING b.requests_per_minute, b.learned_until, b.discovery_ceiling""";

    private static final String RPM = "b.requests_per_minute";
    private static final String PROBING = "(" + RPM + " >= b.discovery_ceiling * (1 + p.margin))";

    /**
     * One increase of a discovered pace, at most once per interval fleet-wide (only where the last
     * change is at least one interval old) and only when its permits were all in use: jobs booked
     * them at least half the booking horizon ahead ({@code request_tat}), which a fleet calling
     * below the pace never does. Slow start doubles the rate (up
     * to the ceiling, once there is one; reaching it makes the pace steady); steady adds
     * {@code increase} of the ceiling; past the ceiling by {@code margin}, the rate grows by
     * {@code probe} and the ceiling with it. Parameters: key, now (the caller's, as the bucket's
     * times), interval (s), increase, probe, margin, keep for (s), horizon (s). Returns the new rate,
     * {@code learned_until} and the phase.
     */
    static final String DISCOVERY_INCREASE = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::float8 AS every_s, ?::float8 AS a,
                              ?::float8 AS probe, ?::float8 AS margin, ?::float8 AS keep_s, ?::float8 AS horizon_s)
            UPDATE layover.buckets b
            SET requests_per_minute = CASE
                    WHEN b.discovery_phase = 'slow_start' THEN least(2 * %1$s, coalesce(b.discovery_ceiling, 'infinity'))
                    WHEN %2$s THEN %1$s * (1 + p.probe)
                    ELSE %1$s + p.a * b.discovery_ceiling END,
                discovery_phase = CASE WHEN b.discovery_phase = 'slow_start' AND 2 * %1$s >= b.discovery_ceiling THEN 'steady'
                                       ELSE b.discovery_phase END,
                discovery_ceiling = CASE WHEN b.discovery_phase = 'steady' AND %2$s
                                         THEN %1$s * (1 + p.probe) / (1 + p.margin) ELSE b.discovery_ceiling END,
                discovery_adjusted_at = now(), discovery_increases = b.discovery_increases + 1,
                learned_until = now() + make_interval(secs => p.keep_s), discovery_waitlist = NULL
            FROM p
            WHERE b.provider_key = p.key AND b.discovered AND b.learned_until > now()
              AND b.discovery_adjusted_at <= now() - make_interval(secs => p.every_s)
              AND b.request_tat >= p.now + make_interval(secs => p.horizon_s / 2)
            RETURNING b.requests_per_minute, b.learned_until, b.discovery_phase""".formatted(RPM, PROBING);

    /**
     * A long cooldown on a key with a discovered pace: slow start again, from the initial rate up
     * to the rate before (which becomes the ceiling). Parameters: key, initial rpm, interval (s).
     * Only where the last change is at least one interval old or the pace is steady (the workers
     * meeting one cooldown restart it once). Returns the new rate and {@code learned_until}.
     */
    static final String DISCOVERY_RESTART = """
            WITH p AS (SELECT ?::text AS key, ?::float8 AS init_rpm, ?::float8 AS every_s)
            UPDATE layover.buckets b
            SET requests_per_minute = least(b.requests_per_minute, p.init_rpm),
                discovery_ceiling = b.requests_per_minute,
                discovery_phase = 'slow_start', discovery_adjusted_at = now(), discovery_waitlist = NULL
            FROM p
            WHERE b.provider_key = p.key AND b.discovered AND b.learned_until > now()
              AND b.requests_per_minute > p.init_rpm
              AND (b.discovery_phase = 'steady' OR b.discovery_adjusted_at <= now() - make_interval(secs => p.every_s))
            RETURNING b.requests_per_minute, b.learned_until""";

    /** The pace in force of one key (learned, stated or discovered). Parameter: key. */
    static final String PACE_IN_FORCE = """
            SELECT requests_per_minute, learned_until, discovered FROM layover.buckets
            WHERE provider_key = ? AND learned_until > now() AND requests_per_minute > 0""";

    private static final String WL_FROM = "extract(epoch FROM greatest(b.discovery_waitlist, b.request_tat, "
            + "p.now + make_interval(secs => p.horizon_s)) - p.now)";
    private static final String WL_RATE = "(b.requests_per_minute / 60.0)";

    /**
     * A place in a discovered pace's waiting line for a job whose permit would be beyond the
     * booking horizon: it waits without holding a permit until about its turn and asks again then.
     * Steady: one request's time after the last place (at the current rate). Slow start: the turn
     * at a rate that doubles every interval (permits up to {@code t} from now are
     * {@code r e / ln 2 (2^(t/e) - 1)}; the place is where that reaches one more), since a place at
     * today's rate would be far too late. Parameters: key, now, horizon (s), interval (s). Returns
     * the place.
     */
    static final String DISCOVERY_WAITLIST = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::float8 AS horizon_s, ?::float8 AS e)
            UPDATE layover.buckets b
            SET discovery_waitlist = p.now + make_interval(secs => CASE
                    WHEN b.discovery_phase = 'steady' THEN %1$s + 1 / %2$s
                    ELSE p.e * ln(1 + (%2$s * p.e / ln(2) * (power(2, %1$s / p.e) - 1) + 1) * ln(2) / (%2$s * p.e)) / ln(2)
                    END)
            FROM p
            WHERE b.provider_key = p.key AND b.discovered
            RETURNING b.discovery_waitlist""".formatted(WL_FROM, WL_RATE);

    /** The end of a discovered pace's waiting line after its backlog was placed. Parameters: key, the last place. */
    static final String DISCOVERY_WAITLIST_TO = """
            UPDATE layover.buckets SET discovery_waitlist = greatest(discovery_waitlist, ?::timestamptz)
            WHERE provider_key = ? AND discovered""";
}
