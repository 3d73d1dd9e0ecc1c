package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.spi.Db;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * Every SQL statement of the console, in one place. The dead-letter store's own statements live
 * in {@code layover-dlq}; these read jobs, finished jobs ({@code layover.job_history}) and provider
 * state for the overview, the jobs, history, job, provider key (with its fair share), batches and breakers pages. Filters are assembled from the fixed fragments below; every value is a bound
 * parameter, never part of the SQL text. Every statement is a single autocommitted read.
 */
final class ConsoleSql {

    private final Db db;

    ConsoleSql(DataSource dataSource) {
        this.db = new Db(dataSource);
    }

    // ---------------------------------------------------------------- statements

    /**
     * What a breaker means now: {@code open} whose open period has ended is
     * {@code half_open_due} (the next call is its trial), not "open".
     */
    static final String BREAKER_EFFECTIVE = """
            CASE WHEN b.state = 'open' AND b.open_until <= now() THEN 'half_open_due'
                 ELSE coalesce(b.state, 'closed') END""";

    static final String DB_NOW = "SELECT now()";

    static final String SCHEMA_PRESENT = """
            SELECT to_regclass('layover.dead_letters') IS NOT NULL
               AND to_regclass('layover.audit_log') IS NOT NULL
               AND to_regclass('layover.breakers') IS NOT NULL
               AND to_regclass('layover.jobs') IS NOT NULL
               AND to_regclass('layover.dead_letter_counts') IS NOT NULL""";

    /** Distinct job types of dead letters: a skip scan over {@code dead_letters_job_idx}. */
    static final String DEAD_LETTER_JOB_TYPES = """
            WITH RECURSIVE t(job_type) AS (
                (SELECT d.job_type FROM layover.dead_letters d ORDER BY d.job_type LIMIT 1)
                UNION ALL
                SELECT (SELECT d.job_type FROM layover.dead_letters d WHERE d.job_type > t.job_type
                        ORDER BY d.job_type LIMIT 1)
                FROM t WHERE t.job_type IS NOT NULL)
            SELECT job_type FROM t WHERE job_type IS NOT NULL""";

    static final String JOBS_BY_STATE = """
            SELECT j.state, count(*) AS n, count(*) FILTER (WHERE j.run_at <= now()) AS due
            FROM layover.jobs j GROUP BY j.state""";

    /** Dead letters by state and failure type: the maintained counts, not a count of the dead letters. */
    static final String DEAD_LETTERS_BY_STATE_AND_FAILURE = """
            SELECT d.state, d.failure_type, sum(d.n)::bigint AS n
            FROM layover.dead_letter_counts d WHERE d.n <> 0 GROUP BY d.state, d.failure_type""";

    /**
     * Every provider key with state rows, or with dead letters waiting for a person or the sweep
     * (those and the parked counts from {@code layover.dead_letter_counts}).
     */
    static final String PROVIDER_KEYS = """
            WITH keys AS (
                SELECT provider_key FROM layover.provider_keys
                UNION
                SELECT DISTINCT d.provider_key FROM layover.dead_letter_counts d
                WHERE d.state IN ('parked', 'review') AND d.provider_key <> '' AND d.n <> 0),
            -- one pass over the queue for every key (a count per key scanned it once per key)
            job_counts AS (
                SELECT j.provider_key, count(*) AS n FROM layover.jobs j
                WHERE j.provider_key IS NOT NULL GROUP BY j.provider_key)
            SELECT k.provider_key,
                   coalesce(b.state, 'closed') AS breaker_state,
                   EFFECTIVE AS breaker_effective_state,
                   b.open_until AS breaker_open_until,
                   b.reason AS breaker_reason,
                   CASE WHEN c.until > now() THEN c.until END AS cooldown_until,
                   CASE WHEN c.until > now() THEN c.reason END AS cooldown_reason,
                   CASE WHEN c.until > now() THEN c.detail END AS cooldown_detail,
                   CASE WHEN bk.learned_until IS NULL OR bk.learned_until > now()
                        THEN bk.requests_per_minute END AS requests_per_minute,
                   bk.tokens_per_minute, bk.burst_ms,
                   CASE WHEN bk.learned_until > now() THEN bk.learned_until END AS pace_learned_until,
                   CASE WHEN greatest(bk.request_tat, bk.token_tat) > now()
                        THEN greatest(bk.request_tat, bk.token_tat) END AS bucket_full_at,
                   CASE WHEN greatest(bk.request_tat, bk.token_tat) > now()
                        THEN (extract(epoch FROM greatest(bk.request_tat, bk.token_tat) - now()) * 1000)::bigint
                        ELSE 0 END AS bucket_in_use_ms,
                   coalesce(jc.n, 0) AS jobs,
                   (SELECT coalesce(sum(d.n), 0)::bigint FROM layover.dead_letter_counts d
                    WHERE d.provider_key = k.provider_key AND d.state = 'parked') AS parked
            FROM keys k
            LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
            LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
            LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key
            LEFT JOIN job_counts jc ON jc.provider_key = k.provider_key
            ORDER BY (coalesce(b.state, 'closed') <> 'closed') DESC, k.provider_key
            LIMIT 500""".replace("EFFECTIVE", BREAKER_EFFECTIVE);

    static final String BREAKERS = """
            SELECT b.provider_key, b.state, EFFECTIVE AS effective_state, b.previous_state, b.window_started_at,
                   b.calls, b.failures,
                   b.opened_at, b.open_until, b.open_count, b.closed_at, b.trial_claimed_by, b.trial_expires_at,
                   b.reason, b.last_failure, b.last_failure_at, b.changed_at, b.changed_by,
                   CASE WHEN c.until > now() THEN c.until END AS cooldown_until,
                   CASE WHEN c.until > now() THEN c.reason END AS cooldown_reason
            FROM layover.breakers b
            LEFT JOIN layover.cooldowns c ON c.provider_key = b.provider_key
            ORDER BY (b.state <> 'closed') DESC, b.provider_key
            LIMIT 1000""".replace("EFFECTIVE", BREAKER_EFFECTIVE);

    static final String BREAKER_EXISTS = "SELECT state FROM layover.breakers WHERE provider_key = ?";

    /** The live job a dead letter's replay created (same type and id), if it is still queued. */
    static final String LIVE_JOB = """
            SELECT j.state, j.run_at, j.attempts, j.reschedules, j.reschedule_reason, j.picked_by
            FROM layover.jobs j WHERE j.job_type = ? AND j.id = ?""";

    /**
     * A job's stored steps (docs/steps.md), without their results (which may hold what the console
     * would have to mask): what a replay resumes from.
     */
    static final String JOB_STEPS = """
            SELECT s.step, s.kind, s.provider_key, s.outcome, s.attempt, s.finished_at, s.duration_ms,
                   s.input_tokens, s.output_tokens, s.result_type, s.result_bytes, s.wake_at
            FROM layover.steps s WHERE s.job_type = ? AND s.job_id = ?
            ORDER BY s.finished_at, s.step""";

    /** Jobs with why they wait; filters are appended as {@code AND} fragments on {@code x}. */
    static final String JOBS_SELECT = """
            SELECT x.* FROM (
                SELECT j.id, j.job_type, j.state, j.run_at, j.attempts, j.reschedules, j.provider_key,
                       j.reschedule_reason, j.reschedule_detail, j.rescheduled_at,
                       j.last_error ->> 'message' AS last_error_message,
                       j.last_error ->> 'error_class' AS last_error_class,
                       j.failed_at, j.enqueued_at, j.picked_by, j.dead_letter_id, j.replay_kind,
                       j.batch_id, j.batch_item_state,
                       coalesce(b.state, 'closed') AS breaker_state, b.open_until AS breaker_open_until,
                       CASE WHEN c.until > now() THEN c.until END AS cooldown_until,
                       j.run_at <= now() AS due,
                       CASE WHEN j.state = 'running' THEN 'running'
                            WHEN j.run_at >= '9999-12-31T00:00:00Z' THEN 'paused'
                            -- in a batch: it waits for its line, or its line waits to be applied
                            WHEN j.batch_item_state IN ('gathered', 'result') THEN 'batch'
                            -- a durable sleep (docs/steps.md) until its run time
                            WHEN j.reschedule_reason = 'sleep' AND j.run_at > now() THEN 'sleep'
                            -- due, and its key (or a limit key) does not admit it now: the pick leaves it as it is
                            WHEN j.waiting_for = 'cooldown' THEN 'cooldown'
                            WHEN j.waiting_for LIKE 'breaker%' THEN 'breaker'
                            WHEN j.waiting_for = 'rate_limit' THEN 'bucket'
                            WHEN j.waiting_for = 'concurrency' THEN 'concurrency'
                            WHEN j.state = 'retrying' THEN 'retry'
                            WHEN j.reschedule_reason = 'concurrency' THEN 'concurrency'
                            WHEN j.state = 'rescheduled' THEN
                                CASE WHEN j.reschedule_reason = 'cooldown' THEN 'cooldown'
                                     WHEN j.reschedule_reason = 'bucket' THEN 'bucket'
                                     WHEN j.reschedule_reason LIKE 'breaker%' THEN 'breaker'
                                     WHEN j.reschedule_reason = 'rate_limited' THEN 'rate_limited'
                                     WHEN j.reschedule_reason = 'quota_exhausted' THEN 'quota'
                                     WHEN j.reschedule_reason = 'snooze' THEN 'snooze'
                                     ELSE coalesce(j.reschedule_reason, 'rescheduled') END
                            WHEN j.dead_letter_id IS NOT NULL THEN 'replay'
                            ELSE 'new' END AS why
                FROM layover.jobs j
                LEFT JOIN layover.breakers b ON b.provider_key = j.provider_key
                LEFT JOIN layover.cooldowns c ON c.provider_key = j.provider_key) x
            WHERE true""";
    static final String JOBS_BY_TYPE = " AND x.job_type = ANY(?)";
    static final String JOBS_BY_PROVIDER = " AND x.provider_key = ANY(?)";
    static final String JOBS_BY_STATE_IN = " AND x.state = ANY(?)";
    static final String JOBS_BY_WHY = " AND x.why = ANY(?)";
    static final String JOBS_AFTER = " AND (x.run_at, x.job_type, x.id) > (?, ?, ?)";
    static final String JOBS_ORDER = " ORDER BY x.run_at, x.job_type, x.id LIMIT ?";

    /**
     * The last {@value #TRAIL_SHOWN} lines of a job's fallback trail, read for the rows of a page
     * only (after its LIMIT), so a long queue costs no jsonb work per row. Wraps the page query.
     */
    static final int TRAIL_SHOWN = 10;
    static final String JOBS_WITH_TRAIL = """
            SELECT p.*,
                   (SELECT jsonb_agg(e ORDER BY n)::text
                    FROM layover.scheduled_tasks t,
                         jsonb_array_elements(t.provider_trail) WITH ORDINALITY AS s(e, n)
                    WHERE t.task_name = p.job_type AND t.task_instance = p.id
                      AND n > jsonb_array_length(t.provider_trail) - %d) AS provider_trail
            FROM (%s) p
            ORDER BY p.run_at, p.job_type, p.id""";

    /** A dead letter's fallback trail (jsonb text), for its page. */
    static final String DEAD_LETTER_TRAIL = "SELECT provider_trail::text FROM layover.dead_letters WHERE id = ?";

    /** Distinct job types of finished jobs: a skip scan over {@code job_history_job_idx}. */
    static final String HISTORY_JOB_TYPES = """
            WITH RECURSIVE t(job_type) AS (
                (SELECT h.job_type FROM layover.job_history h ORDER BY h.job_type LIMIT 1)
                UNION ALL
                SELECT (SELECT h.job_type FROM layover.job_history h WHERE h.job_type > t.job_type
                        ORDER BY h.job_type LIMIT 1)
                FROM t WHERE t.job_type IS NOT NULL)
            SELECT job_type FROM t WHERE job_type IS NOT NULL""";

    /** Finished jobs, newest first; filters are appended as {@code AND} fragments on {@code h}. */
    static final String HISTORY_SELECT = """
            SELECT h.job_type, h.job_id, h.outcome, h.failure_type, h.detail, h.attempts, h.reschedules,
                   h.provider_key, h.worker, h.enqueued_at, h.started_at, h.finished_at, h.duration_ms,
                   h.dead_letter_id, h.replay_kind, h.provider_trail
            FROM layover.job_history h
            WHERE true""";
    static final String HISTORY_BY_TYPE = " AND h.job_type = ANY(?)";
    static final String HISTORY_BY_OUTCOME = " AND h.outcome = ANY(?)";
    static final String HISTORY_BY_PROVIDER = " AND h.provider_key = ANY(?)";
    static final String HISTORY_FROM = " AND h.finished_at >= ?";
    static final String HISTORY_UNTIL = " AND h.finished_at < ?";
    /** A job id of any type: one index probe per job type (the index leads with the type). */
    static final String HISTORY_BY_ID_ANY_TYPE = " AND h.job_type = ANY(ARRAY(" + HISTORY_JOB_TYPES
            + ")) AND h.job_id = ?";
    static final String HISTORY_BY_ID = " AND h.job_id = ?";
    static final String HISTORY_BEFORE = " AND h.finished_at <= ? AND (h.finished_at, h.job_type, h.job_id) < (?, ?, ?)";
    static final String HISTORY_ORDER = " ORDER BY h.finished_at DESC, h.job_type DESC, h.job_id DESC LIMIT ?";
    /**
     * Wraps a history page: the endpoint that answered (the last {@code answered} line of the
     * trail) and the trail's length, computed for the page's rows only; the trail itself is dropped.
     */
    static final String HISTORY_PAGE = """
            SELECT p.job_type, p.job_id, p.outcome, p.failure_type, p.detail, p.attempts, p.reschedules,
                   p.provider_key, p.worker, p.enqueued_at, p.started_at, p.finished_at, p.duration_ms,
                   p.dead_letter_id, p.replay_kind,
                   (SELECT e ->> 'key' FROM jsonb_array_elements(p.provider_trail) WITH ORDINALITY AS s(e, n)
                    WHERE e ->> 'result' = 'answered' ORDER BY n DESC LIMIT 1) AS answered_by,
                   coalesce(jsonb_array_length(p.provider_trail), 0) AS trail_length
            FROM (%s) p
            ORDER BY p.finished_at DESC, p.job_type DESC, p.job_id DESC""";

    /** Every recorded run of one job, newest first, with its whole trail. */
    static final String JOB_RUNS = """
            SELECT h.outcome, h.failure_type, h.detail, h.attempts, h.reschedules, h.provider_key, h.worker,
                   h.enqueued_at, h.started_at, h.finished_at, h.duration_ms, h.dead_letter_id, h.replay_kind,
                   h.provider_trail::text AS provider_trail, h.args::text AS args
            FROM layover.job_history h
            WHERE h.job_type = ? AND h.job_id = ?
            ORDER BY h.finished_at DESC
            LIMIT 100""";

    /** The dead letters one job id left (every park of it). */
    static final String JOB_DEAD_LETTERS = """
            SELECT d.id, d.state, d.failure_type, d.error_class, left(d.error_message, 1000) AS error_message,
                   d.parked_at, d.replay_count, d.errors -> -1 ->> 'stack_trace' AS last_stack_trace
            FROM layover.dead_letters d
            WHERE d.job_type = ? AND d.job_id = ?
            ORDER BY d.parked_at DESC, d.id DESC
            LIMIT 20""";

    /** The stack trace of a queued job's last failed attempt (read for one job, not for lists). */
    static final String JOB_LAST_STACK_TRACE = """
            SELECT j.last_error ->> 'stack_trace' AS last_stack_trace FROM layover.jobs j WHERE j.job_type = ? AND j.id = ?""";

    /**
     * One window of {@code layover.time_series}, summed over job types and provider keys (or one
     * of each), already in points of {@code step} buckets: the database's time and current
     * bucket, then a row per point, counter and detail (counts summed; the gauges {@code due} and
     * {@code waiting} summed per bucket, then their largest per point), and whatever key or type
     * is asked, the markers {@code sampled} of the buckets where the depth was sampled. Parameters:
     * bucket seconds (three times), window seconds, bucket seconds, provider key (twice), job type
     * (twice), bucket seconds, point seconds.
     */
    static final String TIME_SERIES = """
            WITH c AS (
                SELECT now() AS at, to_timestamp(floor(extract(epoch FROM now()) / ?) * ?) AS current_bucket
            ), w AS (
                SELECT c.at, c.current_bucket, c.current_bucket + make_interval(secs => ?) - make_interval(secs => ?) AS first_bucket
                FROM c
            ), b AS (
                SELECT t.bucket_start, t.counter, t.detail, sum(t.amount) AS amount
                FROM layover.time_series t, w
                WHERE t.bucket_seconds = ? AND t.bucket_start >= w.first_bucket AND t.counter <> 'sampled'
                  -- token counts are not events: they are not drawn on the same axis (docs/observability.md)
                  AND t.counter NOT IN ('input_tokens', 'output_tokens', 'cached_input_tokens')
                  AND (?::text IS NULL OR t.provider_key = ?) AND (?::text IS NULL OR t.job_type = ?)
                GROUP BY 1, 2, 3
                UNION ALL
                -- the markers apart, so that a key's window still reads the key's index (an OR would scan the window)
                SELECT t.bucket_start, t.counter, t.detail, sum(t.amount)
                FROM layover.time_series t, w
                WHERE t.bucket_seconds = ? AND t.bucket_start >= w.first_bucket
                  AND t.provider_key IS NULL AND t.job_type = '' AND t.counter = 'sampled'
                GROUP BY 1, 2, 3
            ), p AS (
                SELECT floor(extract(epoch FROM b.bucket_start - w.first_bucket) / ?)::int AS point, b.counter, b.detail,
                       CASE WHEN b.counter IN ('due', 'waiting') THEN max(b.amount) ELSE sum(b.amount) END AS amount
                FROM b, w
                GROUP BY 1, 2, 3
            )
            SELECT w.at, w.current_bucket, p.point, p.counter, p.detail, p.amount
            FROM w LEFT JOIN p ON true""";

    /** A key's breaker, whole. */
    static final String BREAKER_ROW = """
            SELECT b.provider_key, b.state, EFFECTIVE AS effective_state, b.previous_state, b.window_started_at,
                   b.calls, b.failures, b.opened_at, b.open_until, b.open_count, b.closed_at, b.trial_claimed_by,
                   b.trial_expires_at, b.reason, b.last_failure, b.last_failure_at, b.changed_at, b.changed_by
            FROM layover.breakers b WHERE b.provider_key = ?""".replace("EFFECTIVE", BREAKER_EFFECTIVE);

    /** A key's cooldown, ended or not ({@code active}: it still holds calls back). */
    static final String COOLDOWN_ROW = """
            SELECT c.until, c.until > now() AS active, c.reason, c.detail, c.strikes, c.started_at, c.updated_at,
                   c.updated_by
            FROM layover.cooldowns c WHERE c.provider_key = ?""";

    /**
     * A key's bucket: configured or learned, in force or lapsed, how much of its burst is in use
     * ({@code in_use_ms}) and when it is full again ({@code full_at}; null: full now).
     */
    static final String BUCKET_ROW = """
            SELECT bk.requests_per_minute, bk.tokens_per_minute, bk.burst_ms, bk.configured_at, bk.configured_by,
                   bk.learned_until, bk.learned_until IS NOT NULL AS learned,
                   (bk.learned_until IS NULL OR bk.learned_until > now()) AS in_force,
                   CASE WHEN greatest(bk.request_tat, bk.token_tat) > now()
                        THEN greatest(bk.request_tat, bk.token_tat) END AS full_at,
                   CASE WHEN greatest(bk.request_tat, bk.token_tat) > now()
                        THEN (extract(epoch FROM greatest(bk.request_tat, bk.token_tat) - now()) * 1000)::bigint
                        ELSE 0 END AS in_use_ms
            FROM layover.buckets bk WHERE bk.provider_key = ?""";

    /** A concurrency limit on the key, with the calls in flight. */
    static final String CONCURRENCY_ROW = """
            SELECT c.max_in_flight, c.in_flight, c.last_heartbeat_at, c.configured_at, c.configured_by
            FROM layover.concurrency c WHERE c.limit_key = ?""";

    /** The key's active pause. */
    static final String KEY_PAUSE = """
            SELECT p.id, p.paused_at, p.paused_by, p.reason, p.held_jobs
            FROM layover.pauses p WHERE p.scope = 'key' AND p.target = ? AND p.resumed_at IS NULL""";

    /**
     * The jobs of a filter grouped by why they wait (the {@code why} of {@link #JOBS_SELECT}, read
     * from {@code layover.jobs}' columns) and provider key: how many, the first and last run time,
     * how many are due, and for a key cooling down or with its breaker not closed, until when.
     * Wraps a filtered {@link #JOBS_SELECT}.
     */
    static final String JOBS_SUMMARY = """
            SELECT s.why, s.provider_key, count(*) AS n, sum(count(*)) OVER ()::bigint AS total,
                   count(*) FILTER (WHERE s.due) AS due,
                   min(s.run_at) AS first_run_at, max(s.run_at) AS last_run_at,
                   max(s.cooldown_until) AS cooldown_until,
                   max(s.breaker_open_until) FILTER (WHERE s.breaker_state <> 'closed') AS breaker_open_until,
                   max(s.breaker_state) FILTER (WHERE s.breaker_state <> 'closed') AS breaker_state,
                   max(s.reschedule_detail) AS some_detail
            FROM (%s) s
            GROUP BY s.why, s.provider_key
            ORDER BY count(*) DESC, s.why, s.provider_key
            LIMIT %d""";

    /**
     * The workers: the rows of {@code layover.workers} and the jobs each runs now
     * ({@code layover.jobs}, state running, by {@code picked_by}); a worker that runs jobs but
     * writes no row (a version from before the table) appears with the jobs only.
     */
    static final String WORKERS = """
            WITH running AS (
                SELECT j.picked_by, count(*) AS n, max(j.heartbeat_at) AS last_job_heartbeat_at
                FROM layover.jobs j WHERE j.state = 'running' AND j.picked_by IS NOT NULL GROUP BY j.picked_by)
            SELECT coalesce(w.worker_name, r.picked_by) AS worker_name, w.host, w.threads, w.version,
                   w.started_at, w.heartbeat_at,
                   (extract(epoch FROM now() - w.heartbeat_at) * 1000)::bigint AS heartbeat_age_ms,
                   (extract(epoch FROM now() - w.started_at) * 1000)::bigint AS up_ms,
                   coalesce(r.n, 0) AS running_jobs, r.last_job_heartbeat_at,
                   w.worker_name IS NOT NULL AS has_row,
                   (SELECT count(*) FROM jsonb_object_keys(w.limits)) AS limits_applied
            FROM layover.workers w
            FULL JOIN running r ON r.picked_by = w.worker_name
            ORDER BY w.heartbeat_at DESC NULLS LAST, coalesce(w.worker_name, r.picked_by)
            LIMIT 500""";

    /**
     * Whether each worker applies each limit override: since when ({@code applied_at} of
     * {@code layover.workers.limits}) and whether what it applies is the override as it stands.
     * Parameters: a key or null (every override), twice.
     */
    static final String LIMIT_APPLIED = """
            SELECT o.limit_key, w.worker_name, (extract(epoch FROM now() - w.heartbeat_at) * 1000)::bigint AS heartbeat_age_ms,
                   (w.limits -> o.limit_key ->> 'applied_at')::timestamptz AS applied_at,
                   coalesce((w.limits -> o.limit_key) - 'applied_at' = jsonb_strip_nulls(jsonb_build_object(
                       'requests_per_minute', o.requests_per_minute, 'tokens_per_minute', o.tokens_per_minute,
                       'input_tokens_per_minute', o.input_tokens_per_minute,
                       'output_tokens_per_minute', o.output_tokens_per_minute, 'max_in_flight', o.max_in_flight)),
                       false) AS applies_it
            FROM layover.limit_overrides o CROSS JOIN layover.workers w
            WHERE (?::text IS NULL OR o.limit_key = ?::text)
            ORDER BY o.limit_key, w.worker_name
            LIMIT 10000""";

    /**
     * The endpoints a key's fallback chains called in the last hour ({@code chain_call} under
     * the key), with how each endpoint's calls ended ({@code endpoint_call} under the endpoint,
     * whoever called it). Parameter: the key.
     */
    static final String KEY_ENDPOINTS = """
            WITH via AS (
                SELECT t.detail AS endpoint, sum(t.amount)::bigint AS calls
                FROM layover.time_series t
                WHERE t.bucket_seconds = 60 AND t.bucket_start >= now() - interval '1 hour'
                  AND t.provider_key = ? AND t.counter = 'chain_call' AND t.detail IS NOT NULL
                GROUP BY t.detail)
            SELECT v.endpoint, v.calls,
                   (SELECT coalesce(jsonb_object_agg(x.detail, x.n), '{}'::jsonb)::text FROM (
                        SELECT e.detail, sum(e.amount)::bigint AS n FROM layover.time_series e
                        WHERE e.bucket_seconds = 60 AND e.bucket_start >= now() - interval '1 hour'
                          AND e.provider_key = v.endpoint AND e.counter = 'endpoint_call'
                        GROUP BY e.detail) x) AS results
            FROM via v
            ORDER BY v.calls DESC, v.endpoint
            LIMIT 50""";

    /**
     * A key's interactive calls (calls made outside jobs, counted under job type
     * {@code (interactive)}) in the last hour: each counter and detail summed. Parameter: the key.
     */
    static final String KEY_INTERACTIVE = """
            SELECT coalesce(jsonb_object_agg(x.counter || '/' || x.detail, x.n), '{}'::jsonb)::text AS counts
            FROM (SELECT t.counter, coalesce(t.detail, '') AS detail, sum(t.amount)::bigint AS n
                  FROM layover.time_series t
                  WHERE t.bucket_seconds = 60 AND t.bucket_start >= now() - interval '1 hour'
                    AND t.provider_key = ? AND t.job_type = '(interactive)'
                  GROUP BY t.counter, coalesce(t.detail, '')) x""";

    /**
     * A key as an endpoint of fallback chains in the last hour: its calls by result, and the keys
     * whose chains called it. Parameters: the key, twice.
     */
    static final String KEY_AS_ENDPOINT = """
            SELECT (SELECT coalesce(jsonb_object_agg(x.detail, x.n), '{}'::jsonb)::text FROM (
                        SELECT e.detail, sum(e.amount)::bigint AS n FROM layover.time_series e
                        WHERE e.bucket_seconds = 60 AND e.bucket_start >= now() - interval '1 hour'
                          AND e.provider_key = ? AND e.counter = 'endpoint_call'
                        GROUP BY e.detail) x) AS results,
                   (SELECT coalesce(jsonb_object_agg(x.provider_key, x.n), '{}'::jsonb)::text FROM (
                        SELECT c.provider_key, sum(c.amount)::bigint AS n FROM layover.time_series c
                        WHERE c.bucket_seconds = 60 AND c.bucket_start >= now() - interval '1 hour'
                          AND c.counter = 'chain_call' AND c.detail = ? AND c.provider_key IS NOT NULL
                        GROUP BY c.provider_key) x) AS used_by""";

    /**
     * Keys whose breaker is not closed, with what the recovery sweep knows of them
     * ({@code layover.recovery_state}), their parked dead letters by failure type, and whether a
     * recovery sweep is scheduled at all. Parameters: a key or null (every key), twice.
     */
    static final String OUTAGES = """
            SELECT b.provider_key, b.state, EFFECTIVE AS effective_state, b.opened_at, b.open_until, b.reason,
                   r.phase AS sweep_phase, r.next_trial_at, r.last_trial_at, r.trials,
                   (SELECT coalesce(jsonb_object_agg(x.failure_type, x.n), '{}'::jsonb)::text FROM (
                        SELECT d.failure_type, sum(d.n)::bigint AS n FROM layover.dead_letter_counts d
                        WHERE d.provider_key = b.provider_key AND d.state = 'parked' AND d.n <> 0
                        GROUP BY d.failure_type) x) AS parked,
                   EXISTS (SELECT 1 FROM layover.scheduled_tasks t WHERE t.task_name = 'layover-recovery-sweep')
                       AS sweep_scheduled
            FROM layover.breakers b
            LEFT JOIN layover.recovery_state r ON r.provider_key = b.provider_key
            WHERE b.state <> 'closed' AND (?::text IS NULL OR b.provider_key = ?::text)
            ORDER BY b.opened_at DESC NULLS LAST, b.provider_key
            LIMIT 20""".replace("EFFECTIVE", BREAKER_EFFECTIVE);

    /** The key's queued jobs by why they wait, with the earliest run time of each. */
    static final String KEY_JOBS_BY_WHY = "SELECT x.why, count(*) AS n, min(x.run_at) AS next_run_at FROM ("
            + "%s) x GROUP BY x.why ORDER BY count(*) DESC";

    /**
     * Jobs of the key that finished in the last hour, by outcome: an index-only scan of the last
     * hour of {@code job_history_finished_at_idx} (it includes outcome, key and duration).
     */
    static final String KEY_FINISHED_LAST_HOUR = """
            SELECT h.outcome, count(*) AS n, avg(h.duration_ms) AS avg_duration_ms, max(h.finished_at) AS last_at
            FROM layover.job_history h
            WHERE h.finished_at > now() - interval '1 hour' AND h.provider_key = ?
            GROUP BY h.outcome""";

    /** Jobs that finished in the last hour, by outcome (the overview): an index-only scan, as above. */
    static final String FINISHED_LAST_HOUR = """
            SELECT h.outcome, count(*) AS n, max(h.finished_at) AS last_at
            FROM layover.job_history h
            WHERE h.finished_at > now() - interval '1 hour'
            GROUP BY h.outcome""";

    /** The members of an API key pool: keys named {@code <pool>#<key>}, with their state. */
    static final String POOL_MEMBERS = """
            SELECT pk.provider_key, pk.breaker_state, %s AS breaker_effective_state, pk.breaker_open_until,
                   pk.cooldown_until, pk.cooldown_reason, pk.requests_per_minute, pk.bucket_full_at
            FROM layover.provider_keys pk
            LEFT JOIN layover.breakers b ON b.provider_key = pk.provider_key
            WHERE pk.provider_key LIKE ? ESCAPE '\\'
            ORDER BY pk.provider_key
            LIMIT 200""".formatted(BREAKER_EFFECTIVE);

    /**
     * A provider key's fairness keys ({@code layover.fairness}), most waiting first, at most
     * {@code ?} rows, each with the key's totals over all of its fairness keys ({@code flows},
     * {@code total_*}: the window runs before the limit). The view's predicate on
     * {@code provider_key} is pushed into its aggregate (it is the window's partition), so one key
     * is read from {@code scheduled_tasks} and only its rows are weighed. Parameters: key, limit.
     */
    static final String FAIRNESS = """
            SELECT f.fairness_key, f.waiting, f.untagged, f.running, f.weight, f.share, f.lag,
                   count(*) OVER () AS flows, (sum(f.waiting) OVER ())::bigint AS total_waiting,
                   (sum(f.untagged) OVER ())::bigint AS total_untagged,
                   (sum(f.running) OVER ())::bigint AS total_running
            FROM layover.fairness f
            WHERE f.provider_key = ?
            ORDER BY f.waiting DESC, f.running DESC, f.fairness_key
            LIMIT ?""";

    /**
     * A provider key's fair queue ({@code layover.fair_lines}): each priority's virtual clock, the
     * low priorities' credit, how many picks admitted from it and the last one.
     */
    static final String FAIR_LINE = """
            SELECT l.class_clocks::text AS class_clocks, l.low_credit, l.picks, l.last_pick_at
            FROM layover.fair_lines l WHERE l.provider_key = ?""";

    /**
     * The weights of fairness keys and patterns ({@code layover.fairness_weights}): operators'
     * first, then by pattern, at most {@code ?} rows. Weights are not per provider key: a pattern
     * applies to every key's fairness keys it matches.
     */
    static final String FAIRNESS_WEIGHTS = """
            SELECT w.pattern, w.weight, w.origin, w.configured_weight, w.configured_by, w.configured_at, w.reason
            FROM layover.fairness_weights w
            ORDER BY (w.origin = 'operator') DESC, w.pattern
            LIMIT ?""";

    /**
     * The weight in force for a fairness key ({@code layover.fairness_weight}: the longest matching
     * pattern's, operators' first; none: 1), or for a pattern with {@code *} its own row's weight
     * (none: 1). Parameters: pattern, pattern, pattern.
     */
    static final String WEIGHT_IN_FORCE = """
            SELECT CASE WHEN strpos(?::text, '*') > 0
                        THEN coalesce((SELECT w.weight FROM layover.fairness_weights w WHERE w.pattern = ?), 1.0)
                        ELSE layover.fairness_weight(?) END AS weight""";

    /**
     * Operators' limits at run time ({@code layover.limit_overrides}), newest first, at most
     * {@code ?} rows, or one key's ({@code ?} not null), each with what the key's bucket and
     * concurrency rows hold now ({@code layover.buckets}, {@code layover.concurrency}: the limits
     * the workers last wrote for the key; null: no row). Parameters: key or null, key or null, limit.
     */
    static final String LIMIT_OVERRIDES = """
            SELECT o.limit_key AS key, o.requests_per_minute, o.tokens_per_minute, o.input_tokens_per_minute,
                   o.output_tokens_per_minute, o.max_in_flight, o.set_by, o.set_at, o.reason,
                   bk.requests_per_minute AS bucket_requests_per_minute, bk.tokens_per_minute AS bucket_tokens_per_minute,
                   bk.input_tokens_per_minute AS bucket_input_tokens_per_minute,
                   bk.output_tokens_per_minute AS bucket_output_tokens_per_minute,
                   c.max_in_flight AS concurrency_max_in_flight, c.in_flight AS concurrency_in_flight
            FROM layover.limit_overrides o
            LEFT JOIN layover.buckets bk ON bk.provider_key = o.limit_key
            LEFT JOIN layover.concurrency c ON c.limit_key = o.limit_key
            WHERE (?::text IS NULL OR o.limit_key = ?::text)
            ORDER BY o.set_at DESC, o.limit_key
            LIMIT ?""";

    /**
     * Batches ({@code layover.batch_status}), newest first (by id: ids are given in creation
     * order); filters are appended as {@code AND} fragments on {@code b}. {@code age_ms}: the view's
     * {@code age} in milliseconds; {@code last_error} cut to 2,000 characters.
     */
    static final String BATCHES_SELECT = """
            SELECT b.id, b.ref, b.provider_key, b.provider, b.provider_batch_id, b.state, b.lines, b.bytes,
                   b.succeeded, b.errored, b.returned, b.pending, b.input_tokens, b.output_tokens, b.discount,
                   b.saved_tokens, b.earliest_deadline, b.created_at, b.sealed_at, b.submitted_at, b.finished_at,
                   (extract(epoch FROM b.age) * 1000)::bigint AS age_ms, b.submit_attempts, b.cancel_asked_at,
                   left(b.last_error, 2000) AS last_error
            FROM layover.batch_status b
            WHERE true""";
    static final String BATCHES_BY_STATE = " AND b.state = ANY(?)";
    static final String BATCHES_BY_PROVIDER = " AND b.provider_key = ANY(?)";
    static final String BATCHES_BEFORE = " AND b.id < ?";
    static final String BATCHES_ORDER = " ORDER BY b.id DESC LIMIT ?";
    static final String BATCH_ROW = BATCHES_SELECT + " AND b.id = ?";

    /** A signal ({@code layover.signal}, core's function). Parameters: job type, id, name, payload (jsonb text). */
    static final String SIGNAL = "SELECT layover.signal(?, ?, ?, ?::jsonb) AS signal";

    /**
     * Groups ({@code layover.job_groups}), newest first (issue 46). Parameters: settled (boolean, or
     * null for both: a group is open while its callback waits), limit.
     */
    static final String GROUPS = """
            SELECT group_id, callback_type, policy, created_at, sealed_at, settled_at, size, pending, parked, done,
                   discarded, callback_state
            FROM layover.job_groups
            WHERE ?::boolean IS NULL OR (callback_state <> 'waiting') = ?::boolean
            ORDER BY created_at DESC, group_id LIMIT ?""";

    /**
     * Groups of groups: the group whose member a group's callback is ({@code parent}), and the groups
     * whose callbacks are members of it ({@code child}). Parameters: id, id.
     */
    static final String GROUP_RELATIVES = """
            SELECT 'parent' AS relation, m.group_id, m.state
            FROM layover.groups g
            JOIN layover.group_members m ON m.job_type = g.callback_type AND m.job_id = g.id
            WHERE g.id = ?
            UNION ALL
            SELECT 'child', c.id, m.state
            FROM layover.group_members m
            JOIN layover.groups c ON c.callback_type = m.job_type AND c.id = m.job_id
            WHERE m.group_id = ?
            ORDER BY 1, 2""";

    /**
     * The groups a job is in ({@code layover.group_members}: {@code member}, its state there) or whose
     * callback it is ({@code callback}, the group's callback state). Parameters: type, id, type, id.
     */
    static final String JOB_GROUPS = """
            SELECT 'member' AS role, m.group_id, m.state
            FROM layover.group_members m WHERE m.job_type = ? AND m.job_id = ?
            UNION ALL
            SELECT 'callback', g.group_id, g.callback_state
            FROM layover.job_groups g WHERE g.callback_type = ? AND g.group_id = ?
            ORDER BY 1, 2""";

    /**
     * The jobs a job runs after ({@code layover.job_dependencies}), each edge's state and, while it
     * waits, where that job is ({@code layover.waiting_dependents.after_state}: live, parked,
     * missing); at most 200. Parameters: type, id.
     */
    static final String JOB_DEPENDENCIES = """
            SELECT e.after_type AS job_type, e.after_id AS job_id, e.state, w.after_state, e.created_at, e.ended_at
            FROM layover.job_dependencies e
            LEFT JOIN layover.waiting_dependents w ON w.job_type = e.job_type AND w.job_id = e.job_id
                 AND w.after_type = e.after_type AND w.after_id = e.after_id
            WHERE e.job_type = ? AND e.job_id = ?
            ORDER BY e.state = 'waiting' DESC, e.created_at, e.after_type, e.after_id LIMIT 200""";

    /**
     * The jobs that run after a job (its dependents), each edge's state and, while it waits, where
     * this job is; at most 200. Parameters: type, id.
     */
    static final String JOB_DEPENDENTS = """
            SELECT e.job_type, e.job_id, e.state, w.after_state, e.created_at, e.ended_at
            FROM layover.job_dependencies e
            LEFT JOIN layover.waiting_dependents w ON w.job_type = e.job_type AND w.job_id = e.job_id
                 AND w.after_type = e.after_type AND w.after_id = e.after_id
            WHERE e.after_type = ? AND e.after_id = ?
            ORDER BY e.state = 'waiting' DESC, e.created_at, e.job_type, e.job_id LIMIT 200""";

    /** One group ({@code layover.job_groups}). Parameter: id. */
    static final String GROUP_ROW = """
            SELECT group_id, callback_type, policy, created_at, sealed_at, settled_at, size, pending, parked, done,
                   discarded, callback_state
            FROM layover.job_groups WHERE group_id = ?""";

    /**
     * A group's members ({@code layover.group_members}), open ones first, a result cut to 1,000
     * characters. Parameters: id, limit.
     */
    static final String GROUP_MEMBERS = """
            SELECT job_type, job_id, state, left(result::text, 1000) AS result, added_at, finished_at
            FROM layover.group_members WHERE group_id = ?
            ORDER BY state IN ('done', 'discarded'), added_at, job_id LIMIT ?""";

    /** What is in flight, per key: docs/batches.md's documented query, as written there. */
    static final String BATCHES_IN_FLIGHT = """
            SELECT provider_key, state, count(*) AS batches, sum(lines) AS lines, sum(pending) AS pending
            FROM layover.batch_status
            WHERE state IN ('open', 'sealed', 'submitting', 'submitted')
            GROUP BY provider_key, state
            ORDER BY provider_key, state""";

    /**
     * A batch's lines ({@code layover.batch_items}) in item order after an item id, at most
     * {@code ?}: the job each belongs to, the item's state, its result, and whether the job is
     * still in the queue ({@code layover.jobs}); an errored line's body cut to 1,000 characters.
     * The request body is not read, only its size. Parameters: batch id, after item id, limit.
     */
    static final String BATCH_ITEMS = """
            SELECT i.id, i.task_name AS job_type, i.task_instance AS job_id, i.state, i.result_kind, i.result_status,
                   i.input_tokens, i.output_tokens, octet_length(i.request) AS request_bytes, i.latest,
                   i.gathered_at, i.answered_at,
                   CASE WHEN i.result_kind = 'errored' THEN left(i.result, 1000) END AS error,
                   EXISTS (SELECT 1 FROM layover.jobs j WHERE j.job_type = i.task_name AND j.id = i.task_instance)
                       AS queued
            FROM layover.batch_items i
            WHERE i.batch_id = ? AND i.id > ?
            ORDER BY i.id
            LIMIT ?""";

    /**
     * The batches one job went by (its items, newest first, at most 20; {@code batch_items_job}),
     * each with its batch's state and provider. Parameters: job type, job id.
     */
    static final String JOB_BATCHES = """
            SELECT i.batch_id, i.id AS item_id, i.state, i.result_kind, i.result_status, i.gathered_at, i.answered_at,
                   b.state AS batch_state, b.provider, b.provider_key
            FROM layover.batch_items i
            JOIN layover.batch_status b ON b.id = i.batch_id
            WHERE i.task_name = ? AND i.task_instance = ?
            ORDER BY i.id DESC
            LIMIT 20""";

    // ---------------------------------------------------------------- reads

    /** @return the database's clock: what every "until" on the pages is compared with */
    String dbNow() {
        return db.autocommit("reading the database time", c -> {
            try (PreparedStatement ps = c.prepareStatement(DB_NOW); ResultSet rs = ps.executeQuery()) {
                rs.next();
                return time(rs.getObject(1, OffsetDateTime.class));
            }
        });
    }

    boolean schemaPresent() {
        return db.autocommit("checking the Layover schema", c -> {
            try (PreparedStatement ps = c.prepareStatement(SCHEMA_PRESENT); ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        });
    }

    List<String> deadLetterJobTypes() {
        return db.autocommit("reading dead-letter job types", c -> {
            List<String> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(DEAD_LETTER_JOB_TYPES); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
            return out;
        });
    }

    ArrayNode jobsByState() {
        return query("counting jobs", JOBS_BY_STATE);
    }

    ArrayNode deadLettersByStateAndFailure() {
        return query("counting dead letters", DEAD_LETTERS_BY_STATE_AND_FAILURE);
    }

    ArrayNode providerKeys() {
        return query("reading provider keys", PROVIDER_KEYS);
    }

    ArrayNode breakers() {
        return query("reading breakers", BREAKERS);
    }

    /** @return the breaker's state, or {@code null} when the key has no breaker row */
    String breakerState(String providerKey) {
        return db.autocommit("reading a breaker", c -> {
            try (PreparedStatement ps = c.prepareStatement(BREAKER_EXISTS)) {
                ps.setString(1, providerKey);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getString(1) : null;
                }
            }
        });
    }

    /** @return the live job, or {@code null} */
    /**
     * @param jobType the job type
     * @param jobId the job id
     * @return its stored steps, oldest first
     */
    ArrayNode jobSteps(String jobType, String jobId) {
        return query("reading the steps of a job", JOB_STEPS, jobType, jobId);
    }

    ObjectNode liveJob(String jobType, String jobId) {
        ArrayNode rows = query("reading a job", LIVE_JOB, jobType, jobId);
        return rows.isEmpty() ? null : (ObjectNode) rows.get(0);
    }

    /** A filter of the jobs page; empty lists mean any. */
    record JobFilter(List<String> jobTypes, List<String> providerKeys, List<String> states, List<String> whys) {}

    /** A position in the jobs page order. */
    record JobCursor(Instant runAt, String jobType, String id) {}

    /**
     * @param f the filter
     * @param after the last row of the previous page, or {@code null}
     * @param limit rows (one more is read to tell whether there is a next page)
     * @return the rows
     */
    ArrayNode jobs(JobFilter f, JobCursor after, int limit) {
        StringBuilder sql = new StringBuilder(JOBS_SELECT);
        List<Object> params = new ArrayList<>();
        appendFilter(f, sql, params);
        if (after != null) {
            sql.append(JOBS_AFTER);
            params.add(after.runAt());
            params.add(after.jobType());
            params.add(after.id());
        }
        sql.append(JOBS_ORDER);
        params.add(limit);
        return query("reading jobs", JOBS_WITH_TRAIL.formatted(TRAIL_SHOWN, sql), params.toArray());
    }

    private static void appendFilter(JobFilter f, StringBuilder sql, List<Object> params) {
        if (!f.jobTypes().isEmpty()) {
            sql.append(JOBS_BY_TYPE);
            params.add(f.jobTypes().toArray(String[]::new));
        }
        if (!f.providerKeys().isEmpty()) {
            sql.append(JOBS_BY_PROVIDER);
            params.add(f.providerKeys().toArray(String[]::new));
        }
        if (!f.states().isEmpty()) {
            sql.append(JOBS_BY_STATE_IN);
            params.add(f.states().toArray(String[]::new));
        }
        if (!f.whys().isEmpty()) {
            sql.append(JOBS_BY_WHY);
            params.add(f.whys().toArray(String[]::new));
        }
    }

    /** A filter of the history page; empty lists and nulls mean any. */
    record HistoryFilter(List<String> jobTypes, List<String> outcomes, List<String> providerKeys, Instant from,
            Instant until, String jobId) {}

    /** A position in the history page order (newest first). */
    record HistoryCursor(Instant finishedAt, String jobType, String jobId) {}

    /**
     * @param f the filter
     * @param before the last row of the previous page, or {@code null}
     * @param limit rows (one more is read to tell whether there is a next page)
     * @return finished jobs, newest first
     */
    ArrayNode history(HistoryFilter f, HistoryCursor before, int limit) {
        StringBuilder sql = new StringBuilder(HISTORY_SELECT);
        List<Object> params = new ArrayList<>();
        if (!f.jobTypes().isEmpty()) {
            sql.append(HISTORY_BY_TYPE);
            params.add(f.jobTypes().toArray(String[]::new));
        }
        if (f.jobId() != null) {
            sql.append(f.jobTypes().isEmpty() ? HISTORY_BY_ID_ANY_TYPE : HISTORY_BY_ID);
            params.add(f.jobId());
        }
        if (!f.outcomes().isEmpty()) {
            sql.append(HISTORY_BY_OUTCOME);
            params.add(f.outcomes().toArray(String[]::new));
        }
        if (!f.providerKeys().isEmpty()) {
            sql.append(HISTORY_BY_PROVIDER);
            params.add(f.providerKeys().toArray(String[]::new));
        }
        if (f.from() != null) {
            sql.append(HISTORY_FROM);
            params.add(f.from());
        }
        if (f.until() != null) {
            sql.append(HISTORY_UNTIL);
            params.add(f.until());
        }
        if (before != null) {
            sql.append(HISTORY_BEFORE);
            params.add(before.finishedAt());
            params.add(before.finishedAt());
            params.add(before.jobType());
            params.add(before.jobId());
        }
        sql.append(HISTORY_ORDER);
        params.add(limit);
        return query("reading finished jobs", HISTORY_PAGE.formatted(sql), params.toArray());
    }

    /**
     * @param bucketSeconds 10, 60 or 3600
     * @param buckets the window in buckets, the current one last
     * @param providerKey only this key, or null for all
     * @param jobType only this job type, or null for all
     * @return the window, dense
     */
    TimeSeriesData timeSeries(int bucketSeconds, int buckets, String providerKey, String jobType) {
        int step = Math.max(1, (buckets + TimeSeriesData.MAX_POINTS - 1) / TimeSeriesData.MAX_POINTS);
        int points = (buckets + step - 1) / step;
        long span = (long) bucketSeconds * step * points;
        ArrayNode rows = query("reading the time series", TIME_SERIES, bucketSeconds, bucketSeconds, bucketSeconds, span,
                bucketSeconds, providerKey, providerKey, jobType, jobType, bucketSeconds, bucketSeconds * step);
        JsonNode first = rows.get(0);
        ArrayNode counted = JsonNodeFactory.instance.arrayNode();
        for (JsonNode r : rows) {
            if (r.hasNonNull("counter")) {
                counted.add(r);
            }
        }
        return TimeSeriesData.of(counted, Instant.parse(first.path("at").asText()),
                Instant.parse(first.path("currentBucket").asText()), bucketSeconds, points * step);
    }

    /** @return every recorded run of a job, newest first (at most 100) */
    ArrayNode jobRuns(String jobType, String jobId) {
        return query("reading a job's runs", JOB_RUNS, jobType, jobId);
    }

    /** @return the dead letters a job id left, newest first */
    ArrayNode jobDeadLetters(String jobType, String jobId) {
        return query("reading a job's dead letters", JOB_DEAD_LETTERS, jobType, jobId);
    }

    /** @return the queued job with this type and id (with why it waits), or {@code null} */
    ObjectNode queuedJob(String jobType, String jobId) {
        ArrayNode rows = query("reading a job", JOBS_SELECT + " AND x.job_type = ? AND x.id = ?", jobType, jobId);
        if (rows.isEmpty()) {
            return null;
        }
        ObjectNode job = (ObjectNode) rows.get(0);
        ArrayNode trace = query("reading a job's stack trace", JOB_LAST_STACK_TRACE, jobType, jobId);
        job.set("lastStackTrace", trace.isEmpty() ? JsonNodeFactory.instance.nullNode() : trace.get(0).get("lastStackTrace"));
        return job;
    }

    /** @return the key's breaker, cooldown, bucket, concurrency limit and pause rows (absent ones missing) */
    ObjectNode providerKeyState(String key) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        out.set("breaker", first(query("reading a breaker", BREAKER_ROW, key)));
        out.set("cooldown", first(query("reading a cooldown", COOLDOWN_ROW, key)));
        out.set("bucket", first(query("reading a bucket", BUCKET_ROW, key)));
        out.set("concurrency", first(query("reading a concurrency limit", CONCURRENCY_ROW, key)));
        out.set("pause", first(query("reading a pause", KEY_PAUSE, key)));
        return out;
    }

    /**
     * @param f the filter (its whys, states, types and keys)
     * @param limit groups
     * @return the filter's jobs grouped by why and provider key, largest first
     */
    ArrayNode jobsSummary(JobFilter f, int limit) {
        StringBuilder sql = new StringBuilder(JOBS_SELECT);
        List<Object> params = new ArrayList<>();
        appendFilter(f, sql, params);
        return query("summarizing jobs", JOBS_SUMMARY.formatted(sql, limit), params.toArray());
    }

    /** @return the workers: rows of {@code layover.workers} and the jobs each runs */
    ArrayNode workers() {
        return query("reading the workers", WORKERS);
    }

    /** @return whether and since when each worker applies each override (only {@code key}'s unless null) */
    ArrayNode limitApplied(String key) {
        return query("reading which workers apply a limit", LIMIT_APPLIED, key, key);
    }

    /** @return the endpoints the key's fallback chains called in the last hour */
    ArrayNode keyEndpoints(String key) {
        return query("reading a key's endpoints", KEY_ENDPOINTS, key);
    }

    /** @return the key's calls as an endpoint in the last hour, and who called it */
    JsonNode keyAsEndpoint(String key) {
        return query("reading a key's calls as an endpoint", KEY_AS_ENDPOINT, key, key).get(0);
    }

    /** @return the key's interactive calls of the last hour: {@code counts}, {"counter/detail": n} as text */
    JsonNode keyInteractive(String key) {
        return query("reading a key's interactive calls", KEY_INTERACTIVE, key).get(0);
    }

    /** @return keys whose breaker is not closed (only {@code key} unless null), with the sweep's state */
    ArrayNode outages(String key) {
        return query("reading open breakers", OUTAGES, key, key);
    }

    /** @return the key's queued jobs by why they wait */
    ArrayNode keyJobsByWhy(String key) {
        return query("counting a key's jobs", KEY_JOBS_BY_WHY.formatted(JOBS_SELECT + JOBS_BY_PROVIDER),
                (Object) new String[] {key});
    }

    /** @return the key's jobs finished in the last hour, by outcome */
    ArrayNode keyFinishedLastHour(String key) {
        return query("counting a key's finished jobs", KEY_FINISHED_LAST_HOUR, key);
    }

    /** @return jobs finished in the last hour, by outcome */
    ArrayNode finishedLastHour() {
        return query("counting finished jobs", FINISHED_LAST_HOUR);
    }

    /** @return the keys {@code <pool>#...} with their state */
    ArrayNode poolMembers(String pool) {
        String like = pool.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "#%";
        return query("reading an API key pool", POOL_MEMBERS, like);
    }

    /** @return the key's fairness keys, most waiting first, at most {@code limit} */
    ArrayNode fairness(String key, int limit) {
        return query("reading a key's fairness keys", FAIRNESS, key, limit);
    }

    /** @return the key's fair queue line, or a null node when it never had a fair queue */
    JsonNode fairLine(String key) {
        return first(query("reading a key's fair queue", FAIR_LINE, key));
    }

    /** @return the weights of fairness keys and patterns, operators' first, at most {@code limit} */
    ArrayNode fairnessWeights(int limit) {
        return query("reading fairness weights", FAIRNESS_WEIGHTS, limit);
    }

    /** @return the weight in force for a fairness key or pattern (see {@link #WEIGHT_IN_FORCE}) */
    double weightInForce(String pattern) {
        return query("reading a fairness weight", WEIGHT_IN_FORCE, pattern, pattern, pattern).get(0).get("weight")
                .asDouble();
    }

    /** @return operators' limit overrides, newest first, at most {@code limit}; only {@code key}'s unless null */
    ArrayNode limitOverrides(String key, int limit) {
        return query("reading limit overrides", LIMIT_OVERRIDES, key, key, limit);
    }

    /**
     * @param states only these states (empty: any)
     * @param providerKeys only these provider keys (empty: any)
     * @param before only batches with a smaller id (the last of the previous page), or {@code null}
     * @param limit rows (one more is read to tell whether there is a next page)
     * @return batches, newest first
     */
    ArrayNode batches(List<String> states, List<String> providerKeys, Long before, int limit) {
        StringBuilder sql = new StringBuilder(BATCHES_SELECT);
        List<Object> params = new ArrayList<>();
        if (!states.isEmpty()) {
            sql.append(BATCHES_BY_STATE);
            params.add(states.toArray(String[]::new));
        }
        if (!providerKeys.isEmpty()) {
            sql.append(BATCHES_BY_PROVIDER);
            params.add(providerKeys.toArray(String[]::new));
        }
        if (before != null) {
            sql.append(BATCHES_BEFORE);
            params.add(before);
        }
        sql.append(BATCHES_ORDER);
        params.add(limit);
        return query("reading batches", sql.toString(), params.toArray());
    }

    /** @return the batch, or {@code null} when there is none with this id */
    ObjectNode batch(long id) {
        ArrayNode rows = query("reading batch " + id, BATCH_ROW, id);
        return rows.isEmpty() ? null : (ObjectNode) rows.get(0);
    }

    /**
     * A signal to a job waiting for it, through core's SQL function {@code layover.signal}.
     *
     * @return whether a wait took it
     */
    boolean signal(String jobType, String id, String name, String payload) {
        ArrayNode rows = query("signalling job " + jobType + "/" + id, SIGNAL, jobType, id, name, payload);
        return rows.get(0).path("signal").asBoolean();
    }

    /**
     * @param settled true: settled groups only; false: open ones only; null: both
     * @return groups, newest first, at most {@code limit}
     */
    ArrayNode groups(Boolean settled, int limit) {
        return query("reading groups", GROUPS, settled, settled, limit);
    }

    /** @return a group's parent group and child groups ({@link #GROUP_RELATIVES}) */
    ArrayNode groupRelatives(String id) {
        return query("reading the groups related to group " + id, GROUP_RELATIVES, id, id);
    }

    /** @return the groups a job is a member or the callback of ({@link #JOB_GROUPS}) */
    ArrayNode jobGroups(String jobType, String id) {
        return query("reading the groups of job " + jobType + "/" + id, JOB_GROUPS, jobType, id, jobType, id);
    }

    /** @return the jobs a job runs after ({@link #JOB_DEPENDENCIES}) */
    ArrayNode jobDependencies(String jobType, String id) {
        return query("reading the dependencies of job " + jobType + "/" + id, JOB_DEPENDENCIES, jobType, id);
    }

    /** @return the jobs that run after a job ({@link #JOB_DEPENDENTS}) */
    ArrayNode jobDependents(String jobType, String id) {
        return query("reading the dependents of job " + jobType + "/" + id, JOB_DEPENDENTS, jobType, id);
    }

    /** @return one group, or null */
    ObjectNode group(String id) {
        ArrayNode rows = query("reading group " + id, GROUP_ROW, id);
        return rows.isEmpty() ? null : (ObjectNode) rows.get(0);
    }

    /** @return a group's members, open ones first, at most {@code limit} */
    ArrayNode groupMembers(String id, int limit) {
        return query("reading the members of group " + id, GROUP_MEMBERS, id, limit);
    }

    /** @return live batches per provider key and state, with their lines and pending lines */
    ArrayNode batchesInFlight() {
        return query("reading batches in flight", BATCHES_IN_FLIGHT);
    }

    /** @return the batch's lines after item {@code afterItem} (0: from the first), at most {@code limit} */
    ArrayNode batchItems(long batchId, long afterItem, int limit) {
        return query("reading the lines of batch " + batchId, BATCH_ITEMS, batchId, afterItem, limit);
    }

    /** @return the items of one job in batches, newest first (at most 20) */
    ArrayNode jobBatches(String jobType, String jobId) {
        return query("reading a job's batches", JOB_BATCHES, jobType, jobId);
    }

    private static com.fasterxml.jackson.databind.JsonNode first(ArrayNode rows) {
        return rows.isEmpty() ? com.fasterxml.jackson.databind.node.NullNode.getInstance() : rows.get(0);
    }

    /**
     * @param id a dead letter id
     * @return its fallback trail as jsonb text ({@code []} when none), or null when it does not exist
     */
    String deadLetterTrail(long id) {
        return db.autocommit("reading the trail of dead letter " + id, c -> {
            try (PreparedStatement ps = c.prepareStatement(DEAD_LETTER_TRAIL)) {
                ps.setLong(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getString(1) : null;
                }
            }
        });
    }

    // ---------------------------------------------------------------- mapping

    private ArrayNode query(String what, String sql, Object... params) {
        return db.autocommit(what, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                bind(c, ps, params);
                try (ResultSet rs = ps.executeQuery()) {
                    return rows(rs);
                }
            }
        });
    }

    private static void bind(Connection c, PreparedStatement ps, Object... params) throws SQLException {
        for (int i = 0; i < params.length; i++) {
            Object p = params[i];
            int n = i + 1;
            if (p == null) {
                ps.setNull(n, Types.VARCHAR);
            } else if (p instanceof String[] a) {
                Array arr = c.createArrayOf("text", a);
                ps.setArray(n, arr);
            } else if (p instanceof Instant t) {
                ps.setObject(n, OffsetDateTime.ofInstant(t, ZoneOffset.UTC));
            } else if (p instanceof Integer v) {
                ps.setInt(n, v);
            } else if (p instanceof Long v) {
                ps.setLong(n, v);
            } else {
                ps.setString(n, p.toString());
            }
        }
    }

    /** Rows as JSON objects: snake_case columns become camelCase names, times ISO-8601 strings. */
    private static ArrayNode rows(ResultSet rs) throws SQLException {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        ResultSetMetaData md = rs.getMetaData();
        int n = md.getColumnCount();
        String[] names = new String[n];
        for (int i = 0; i < n; i++) {
            names[i] = camel(md.getColumnLabel(i + 1));
        }
        while (rs.next()) {
            ObjectNode row = out.addObject();
            for (int i = 0; i < n; i++) {
                int col = i + 1;
                int type = md.getColumnType(col);
                String name = names[i];
                switch (type) {
                    case Types.TIMESTAMP_WITH_TIMEZONE, Types.TIMESTAMP -> {
                        OffsetDateTime t = rs.getObject(col, OffsetDateTime.class);
                        if (t == null) {
                            row.putNull(name);
                        } else {
                            row.put(name, time(t));
                        }
                    }
                    case Types.INTEGER, Types.SMALLINT, Types.BIGINT -> {
                        long v = rs.getLong(col);
                        if (rs.wasNull()) {
                            row.putNull(name);
                        } else {
                            row.put(name, v);
                        }
                    }
                    case Types.DOUBLE, Types.REAL, Types.FLOAT, Types.NUMERIC -> {
                        double v = rs.getDouble(col);
                        if (rs.wasNull()) {
                            row.putNull(name);
                        } else {
                            row.put(name, v);
                        }
                    }
                    case Types.BOOLEAN, Types.BIT -> {
                        boolean v = rs.getBoolean(col);
                        if (rs.wasNull()) {
                            row.putNull(name);
                        } else {
                            row.put(name, v);
                        }
                    }
                    default -> row.put(name, rs.getString(col));
                }
            }
        }
        return out;
    }

    /** ISO-8601 in UTC; Postgres' {@code infinity} and {@code -infinity} by name. */
    static String time(OffsetDateTime t) {
        if (t.getYear() > 100_000) {
            return "infinity";
        }
        if (t.getYear() < -100_000) {
            return "-infinity";
        }
        return t.toInstant().toString();
    }

    static String camel(String column) {
        StringBuilder b = new StringBuilder();
        boolean up = false;
        for (char ch : column.toLowerCase(Locale.ROOT).toCharArray()) {
            if (ch == '_') {
                up = true;
            } else {
                b.append(up ? Character.toUpperCase(ch) : ch);
                up = false;
            }
        }
        return b.toString();
    }
}
