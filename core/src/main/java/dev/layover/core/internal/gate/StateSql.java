package dev.layover.core.internal.gate;

/**
 * Every SQL statement of the provider state, in one place. Each state change is one conditional
 * {@code UPDATE} (or upsert): the condition that allows the change is in its {@code WHERE}, and
 * Postgres re-checks it against the newest row version when two writers meet, so there is no
 * read-then-write race. {@code SET} expressions see the row as it was, which is how a statement
 * reports the state it changed from ({@code previous_state}).
 *
 * <p>Times come from the caller's clock (as for every job run time), passed as {@code p.now}. The
 * rate bucket arithmetic is the schema's {@code layover.gcra_*} functions.
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
     * found through V2's and V24's partial indexes); every other key in use is closed, cooling
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
    private static final String STREAK = "((CASE WHEN p.ok > 0 THEN 0 ELSE b.streak END) + 1)";
    private static final String WINDOW_TRIP = "(" + CALLS + " >= p.min_calls AND " + FAILS + " >= p.min_failures AND "
            + FAILS + " >= p.ratio * " + CALLS + ")";
    private static final String TRIP = "(" + WINDOW_TRIP + " OR " + STREAK + " >= p.min_streak)";
    private static final String NEXT_OPEN_UNTIL =
            "p.now + make_interval(secs => least(p.max_open_s, p.open_s * power(2, least(b.open_count, 30))))";

    /**
     * Successes counted locally since the last flush, for many keys: only a closed breaker counts
     * them (a new window starts when the old one ran out); and a key whose cooldown has ended has
     * its strikes reset to 0, so that its next cooldown is a first strike again (successes in between: the strikes were a burst, not a
     * trend). Parameters: now, keys, counts, windows in seconds.
     */
    static final String ADD_SUCCESSES = """
            WITH p AS (SELECT ?::timestamptz AS now),
            d AS (SELECT * FROM unnest(?::text[], ?::int[], ?::float8[]) AS d(key, ok, win)),
            calm AS (
                UPDATE layover.cooldowns c SET strikes = 0
                FROM p, d
                WHERE c.provider_key = d.key AND d.ok > 0 AND c.until <= p.now AND c.strikes > 0
            )
            UPDATE layover.breakers b
            SET calls = CASE WHEN b.window_started_at <= p.now - make_interval(secs => d.win) THEN d.ok
                             ELSE b.calls + d.ok END,
                failures = CASE WHEN b.window_started_at <= p.now - make_interval(secs => d.win) THEN 0
                                ELSE b.failures END,
                window_started_at = CASE WHEN b.window_started_at <= p.now - make_interval(secs => d.win) THEN p.now
                                         ELSE b.window_started_at END,
                streak = CASE WHEN d.ok > 0 THEN 0 ELSE b.streak END
            FROM p, d
            WHERE b.provider_key = d.key AND b.state = 'closed'""";

    /**
     * One failure (plus the successes not flushed yet) on a closed breaker; opens it when the
     * thresholds are crossed. Returns the row only when it was closed: {@code state = 'open'}
     * then means this statement opened it. Parameters: key, now, successes, window (s),
     * minimum calls, failure threshold, ratio, open (s), max open (s), the failure, worker, origin,
     * consecutive failures. A failure reported with successes since the reporter's last report
     * starts the streak again.
     */
    static final String ADD_FAILURE = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::int AS ok, ?::float8 AS win,
                              ?::int AS min_calls, ?::int AS min_failures, ?::float8 AS ratio,
                              ?::float8 AS open_s, ?::float8 AS max_open_s, ?::text AS failure,
                              ?::text AS by, ?::text AS origin, ?::int AS min_streak)
            UPDATE layover.breakers b
            SET window_started_at = CASE WHEN %1$s THEN p.now ELSE b.window_started_at END,
                calls = %2$s,
                failures = %3$s,
                streak = CASE WHEN %4$s THEN 0 ELSE %6$s END,
                previous_state = CASE WHEN %4$s THEN b.state ELSE b.previous_state END,
                state = CASE WHEN %4$s THEN 'open' ELSE 'closed' END,
                opened_at = CASE WHEN %4$s THEN p.now ELSE b.opened_at END,
                open_until = CASE WHEN %4$s THEN %5$s ELSE b.open_until END,
                open_count = CASE WHEN %4$s THEN b.open_count + 1 ELSE b.open_count END,
                reason = CASE WHEN %7$s
                              THEN format('%%s failures in %%s calls within %%s s; last: %%s', %3$s, %2$s, p.win, p.failure)
                              WHEN %4$s
                              THEN format('%%s failures in a row, no success between them; last: %%s', %6$s, p.failure)
                              ELSE b.reason END,
                changed_at = CASE WHEN %4$s THEN p.now ELSE b.changed_at END,
                changed_by = CASE WHEN %4$s THEN p.by ELSE b.changed_by END,
                change_origin = CASE WHEN %4$s THEN p.origin ELSE b.change_origin END,
                last_failure = p.failure,
                last_failure_at = p.now
            FROM p
            WHERE b.provider_key = p.key AND b.state = 'closed'
            RETURNING b.state, b.open_until, b.reason""".formatted(EXPIRED, CALLS, FAILS, TRIP, NEXT_OPEN_UNTIL, STREAK,
                    WINDOW_TRIP);

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
     * last ended adds a strike, a later one starts over (and a success after a cooldown ended resets
     * the strikes: {@link #ADD_SUCCESSES}). A gated cooldown (an overload that stated no wait) is
     * written only when the key's breaker window shows a rate of failures, this one included: at
     * least {@code gate_min} failures and a share of at least {@code gate_ratio} of the window's
     * calls; one failure among many successes writes nothing. Returns the resulting {@code until},
     * or no row when the gate held.
     *
     * <p>Parameters: key, now, absolute end (or null), wait (s, or null), base (s), cap (s),
     * strike memory (s), reason, detail, worker, origin, gate_min (0: not gated), gate_ratio,
     * the breaker window (s), the successes this instance counted but has not written yet.
     */
    static final String COOLDOWN = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::timestamptz AS until_abs, ?::float8 AS wait_s,
                              ?::float8 AS base_s, ?::float8 AS cap_s, ?::float8 AS memory_s,
                              ?::text AS reason, ?::text AS detail, ?::text AS by, ?::text AS origin,
                              ?::int AS gate_min, ?::float8 AS gate_ratio, ?::float8 AS window_s, ?::int AS ok)
            INSERT INTO layover.cooldowns AS c
                (provider_key, until, reason, detail, strikes, started_at, updated_at, updated_by, change_origin)
            SELECT p.key,
                   coalesce(p.until_abs, p.now + make_interval(secs => coalesce(p.wait_s, p.base_s))),
                   p.reason, p.detail, 1, p.now, p.now, p.by, p.origin
            FROM p
            WHERE p.gate_min = 0
               OR EXISTS (SELECT 1 FROM layover.breakers b
                          WHERE b.provider_key = p.key AND b.window_started_at > p.now - make_interval(secs => p.window_s)
                            AND b.failures + 1 >= p.gate_min AND b.failures + 1 >= p.gate_ratio * (b.calls + p.ok + 1))
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
                discovery_increases = 0, discovery_decreases = 0
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
                request_tat = p.empty_at
            FROM p
            WHERE b.provider_key = p.key AND b.discovered AND b.learned_until > now()
              AND b.discovery_decreased_at <= now() - make_interval(secs => p.every_s)
            RETURNING b.requests_per_minute, b.learned_until, b.discovery_ceiling""";

    /**
     * One increase of a discovered pace, at most once per interval fleet-wide (only where the last
     * change is at least one interval old) and only when the pace binds: its bucket is not full and
     * due jobs of the key wait unpicked (a fleet calling below the pace, for want of demand or of
     * threads, fills the bucket). Slow start doubles the rate (up
     * to the ceiling, once there is one; reaching it makes the pace steady). Steady moves the rate
     * one interval along TCP CUBIC's curve through the ceiling {@code c}: {@code c (1 - (1 - beta)
     * (1 - t / K)^3)}, which is {@code beta c} at {@code t = 0} (just after a decrease), {@code c} at
     * {@code t = K} (the recovery time) and grows past it as fast again. The rate's place {@code t}
     * on the curve is read back from the rate itself, so a pace no job waited for does not jump
     * when demand returns; one step at most doubles it. Parameters: key, now (the caller's, as the
     * bucket's times), interval (s), recovery K (s), beta (the decrease factor), keep for (s).
     * Returns the new rate, {@code learned_until} and the phase.
     */
    static final String DISCOVERY_INCREASE = """
            WITH p AS (SELECT ?::text AS key, ?::timestamptz AS now, ?::float8 AS every_s, ?::float8 AS k_s,
                              ?::float8 AS beta, ?::float8 AS keep_s)
            UPDATE layover.buckets b
            SET requests_per_minute = CASE
                    WHEN b.discovery_phase = 'slow_start' OR b.discovery_ceiling IS NULL
                        THEN least(2 * b.requests_per_minute, coalesce(b.discovery_ceiling, 'infinity'))
                    -- the rate's place t on the curve is K (1 - cbrt((1 - rate / c) / (1 - beta))): one interval on
                    ELSE greatest(b.requests_per_minute, least(2 * b.requests_per_minute, b.discovery_ceiling
                        * (1 - (1 - p.beta) * power(cbrt((1 - b.requests_per_minute / b.discovery_ceiling)
                                                         / (1 - p.beta)) - p.every_s / p.k_s, 3)))) END,
                discovery_phase = CASE WHEN b.discovery_phase = 'slow_start'
                                            AND 2 * b.requests_per_minute >= b.discovery_ceiling THEN 'steady'
                                       ELSE b.discovery_phase END,
                discovery_adjusted_at = now(), discovery_increases = b.discovery_increases + 1,
                learned_until = now() + make_interval(secs => p.keep_s)
            FROM p
            WHERE b.provider_key = p.key AND b.discovered AND b.learned_until > now()
              AND b.discovery_adjusted_at <= now() - make_interval(secs => p.every_s)
              -- the pace binds: its bucket is not full (permits were taken within the last burst) and due jobs
              -- of the key wait (busy threads alone leave the bucket filling up, and must not grow the pace)
              AND b.request_tat > p.now
              AND (EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                           WHERE t.provider_key = p.key AND NOT t.picked AND t.fair_tag IS NULL
                             AND t.execution_time <= p.now)
                   OR EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                              WHERE t.provider_key = p.key AND NOT t.picked AND t.fair_tag IS NOT NULL))
            RETURNING b.requests_per_minute, b.learned_until, b.discovery_phase""";

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
                discovery_phase = 'slow_start', discovery_adjusted_at = now()
            FROM p
            WHERE b.provider_key = p.key AND b.discovered AND b.learned_until > now()
              AND b.requests_per_minute > p.init_rpm
              AND (b.discovery_phase = 'steady' OR b.discovery_adjusted_at <= now() - make_interval(secs => p.every_s))
            RETURNING b.requests_per_minute, b.learned_until""";

    /** The pace in force of one key (learned, stated or discovered). Parameter: key. */
    static final String PACE_IN_FORCE = """
            SELECT requests_per_minute, learned_until, discovered FROM layover.buckets
            WHERE provider_key = ? AND learned_until > now() AND requests_per_minute > 0""";
}
