package dev.layover.dlq;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.postgresql.PGStatement;

/**
 * Every SQL statement of the dead-letter store, in one place. Filters are assembled from the fixed
 * fragments below; every value is a bound parameter, never part of the SQL text.
 */
final class DlqSql {

    private DlqSql() {}

    // ---------------------------------------------------------------- reading

    /**
     * Text search: {@code error_text} is the lower-cased error class and message in collation
     * "C"; the pattern is lower-cased by the same {@code lower()}, so this is ILIKE's meaning at a
     * byte-wise LIKE's cost, and the trigram index (when there is one) serves it.
     */
    static final String TEXT_MATCH = "d.error_text LIKE lower(?) ESCAPE '\\'";

    static final String SUMMARY_COLUMNS = """
            d.id, d.job_type, d.job_id, d.provider_key, d.failure_type, d.error_class,
            left(d.error_message, 1000) AS error_message, d.attempts, d.reschedules, d.park_count, d.state,
            d.parked_at, d.state_changed_at, d.replay_count""";

    private static final String PAGE_ORDER = " ORDER BY d.parked_at DESC, d.id DESC LIMIT ?";

    /** A keyset page: the filter's conditions, then the page size. */
    static String page(Where w) {
        return "SELECT " + SUMMARY_COLUMNS + " FROM layover.dead_letters d" + w.sql() + PAGE_ORDER;
    }

    /** How many rows match the conditions. */
    static String count(Where w) {
        return (w.onCountedColumnsOnly() ? COUNT_FROM_COUNTS : COUNT) + w.sql();
    }

    /**
     * How many rows match the conditions, counted up to a bound: one parameter more, the bound
     * plus one (a result above the bound means "more than the bound"). Conditions on the counted
     * columns only read the maintained counts (exact, whatever the bound).
     */
    static String countBounded(Where w) {
        return w.onCountedColumnsOnly() ? COUNT_FROM_COUNTS + w.sql()
                : "SELECT count(*) FROM (SELECT 1 FROM layover.dead_letters d" + w.sql() + " LIMIT ?) x";
    }

    /** Counts per facet of the rows matching the conditions. */
    static String facets(Where w) {
        return (w.onCountedColumnsOnly() ? FACETS_FROM_COUNTS : FACETS_SELECT) + w.sql() + FACETS_GROUP;
    }

    /** The next batch of a filter selection: the conditions, then the batch size. */
    static String batch(Where w) {
        return BATCH_COLUMNS + w.sql() + BATCH_ORDER;
    }

    static final String ONE = """
            SELECT d.id, d.job_type, d.job_id, d.provider_key, d.failure_type, d.error_class, d.error_message,
                   d.args::text AS args, d.args_raw, d.attempts, d.reschedules, d.priority, d.first_enqueued_at,
                   d.parked_at, d.park_count, d.state, d.state_changed_at, d.replay_count, d.auto_replay_count,
                   d.errors::text AS errors, d.replays::text AS replays
            FROM layover.dead_letters d
            WHERE d.id = ?""";

    private static final String COUNT = "SELECT count(*) FROM layover.dead_letters d";

    /**
     * The maintained counts under the dead-letter columns' names, so that the same conditions
     * apply: a filter on state, failure type, job type and provider key only reads a few hundred
     * rows instead of counting the dead letters.
     */
    private static final String COUNTS_AS_D = """
            (SELECT c.state, c.failure_type, c.job_type, nullif(c.provider_key, '') AS provider_key, c.n
             FROM layover.dead_letter_counts c WHERE c.n <> 0) d""";
    private static final String COUNT_FROM_COUNTS = "SELECT coalesce(sum(d.n), 0)::bigint FROM " + COUNTS_AS_D;

    /**
     * Counts per facet in one scan. {@code GROUPING(..)} tells the grouping set of a row: 7 state,
     * 11 failure type, 13 job type, 14 provider key, 15 the total.
     */
    private static final String FACETS_SELECT = """
            SELECT GROUPING(d.state, d.failure_type, d.job_type, d.provider_key) AS g,
                   d.state, d.failure_type, d.job_type, d.provider_key, count(*) AS n
            FROM layover.dead_letters d""";
    private static final String FACETS_FROM_COUNTS =
            "SELECT GROUPING(d.state, d.failure_type, d.job_type, d.provider_key) AS g,"
            + " d.state, d.failure_type, d.job_type, d.provider_key, sum(d.n)::bigint AS n FROM " + COUNTS_AS_D;
    private static final String FACETS_GROUP =
            " GROUP BY GROUPING SETS ((d.state), (d.failure_type), (d.job_type), (d.provider_key), ()) ORDER BY n DESC";

    // ---------------------------------------------------------------- bulk batches

    static final String MAX_ID = "SELECT coalesce(max(id), 0) FROM layover.dead_letters";

    /** The next batch of a filter selection: filter, then allowed states, then the id window. */
    private static final String BATCH_COLUMNS = "SELECT d.id, d.job_type FROM layover.dead_letters d";
    private static final String BATCH_ORDER = " ORDER BY d.id LIMIT ?";

    /** The rows of an ids selection, to tell "not found" and "wrong state" apart. */
    static final String CLASSIFY = """
            SELECT d.id, d.state, d.job_type FROM layover.dead_letters d WHERE d.id = ANY(?::bigint[])""";

    // ---------------------------------------------------------------- replay

    /**
     * Sweep only: dead letters whose automatic replay budget is spent go to review instead of being
     * replayed. Parameters: ids, budget.
     */
    static final String REVIEW_SPENT = """
            UPDATE layover.dead_letters d
            SET state = layover.dead_letter_next_state(d.state, 'budget_spent'), state_changed_at = now()
            WHERE d.id = ANY(?::bigint[]) AND layover.dead_letter_next_state(d.state, 'budget_spent') IS NOT NULL
              AND d.auto_replay_count >= ?
            RETURNING d.id""";

    /**
     * The replay, exactly once, step one of three in one transaction: lock the dead letters that a
     * replay of this kind may still replay ({@code FOR UPDATE}: a concurrent replay waits, then
     * re-checks the state and finds it {@code replayed}). The allowed states are
     * {@code layover.dead_letter_next_state}. Step two is core's {@code JobWrites.insertReplays}
     * (one fresh job per dead letter, nothing where a live job has its id), step three
     * {@link #MARK_REPLAYED} (exactly those whose job was inserted).
     *
     * <p>Parameters: ids, event ({@code manual_replay} or {@code auto_replay}), registered job types,
     * kind, budget.
     */
    static final String REPLAY_CANDIDATES = """
            SELECT d.id, d.job_type, d.job_id, d.args::text AS old_args
            FROM layover.dead_letters d
            WHERE d.id = ANY(?::bigint[]) AND layover.dead_letter_next_state(d.state, ?) IS NOT NULL
              AND d.job_type = ANY(?::text[])
              AND (?::text <> 'sweep' OR d.auto_replay_count < ?::int)
            ORDER BY d.id
            FOR UPDATE""";

    /**
     * The replay, step three: the dead letters whose job was inserted become {@code replayed}, with
     * the replay in their history. Parameters: event, kind, actor, kind, args edited, edited args
     * text twice, edited args text, then the dead letter ids and their new job ids (arrays).
     */
    static final String MARK_REPLAYED = """
            UPDATE layover.dead_letters d
            SET state = layover.dead_letter_next_state(d.state, ?), state_changed_at = now(),
                replay_count = d.replay_count + 1,
                auto_replay_count = d.auto_replay_count + CASE WHEN ?::text = 'sweep' THEN 1 ELSE 0 END,
                replays = d.replays || jsonb_build_array(jsonb_build_object(
                    'job_id', u.job_id, 'at', now(), 'by', ?::text, 'kind', ?::text, 'args_edited', ?::boolean)),
                args = CASE WHEN ?::text IS NOT NULL THEN ?::text::jsonb ELSE d.args END,
                args_raw = CASE WHEN ?::text IS NOT NULL THEN NULL ELSE d.args_raw END
            FROM unnest(?::bigint[], ?::text[]) AS u(id, job_id)
            WHERE d.id = u.id
            RETURNING d.id""";

    // ---------------------------------------------------------------- other state changes

    static final String DISCARD = """
            WITH discarded AS (
                UPDATE layover.dead_letters d
                SET state = layover.dead_letter_next_state(d.state, 'discard'), state_changed_at = now()
                WHERE d.id = ANY(?::bigint[]) AND layover.dead_letter_next_state(d.state, 'discard') IS NOT NULL
                RETURNING d.id, d.job_type, d.job_id
            ), steps AS (
                -- a discarded job is never replayed: its stored steps go (the step store's function)
                SELECT layover.forget_steps(array_agg(job_type), array_agg(job_id)) AS n FROM discarded
            ), groups AS (
                -- a discarded group member ends its membership; its group may settle (the group store's function)
                SELECT layover.group_members_discarded(array_agg(job_type), array_agg(job_id)) AS n FROM discarded
            ), dependents AS (
                -- the jobs that run after a discarded job are parked dependency_failed (the job store's function)
                SELECT layover.dependencies_failed(array_agg(job_type), array_agg(job_id)) AS n FROM discarded
            )
            SELECT d.id FROM discarded d, steps, groups, dependents""";

    /**
     * Drops the stored steps of replayed jobs (a replay from scratch), through the step store's
     * function. Parameters: job types, job ids (pairwise).
     */
    static final String FORGET_STEPS = "SELECT layover.forget_steps(?::text[], ?::text[])";

    /** Review back to parked, with a fresh automatic replay budget (the history stays in {@code replays}). */
    static final String MOVE_BACK = """
            UPDATE layover.dead_letters d
            SET state = layover.dead_letter_next_state(d.state, 'move_back'), state_changed_at = now(),
                auto_replay_count = 0
            WHERE d.id = ANY(?::bigint[]) AND layover.dead_letter_next_state(d.state, 'move_back') IS NOT NULL
            RETURNING d.id""";

    // ---------------------------------------------------------------- retention

    /** One batch of the purge: parameters cutoff, batch size. */
    static final String PURGE = """
            DELETE FROM layover.dead_letters
            WHERE id IN (SELECT id FROM layover.dead_letters
                         WHERE state IN ('replayed', 'discarded') AND state_changed_at < ?
                         LIMIT ?
                         FOR UPDATE SKIP LOCKED)""";

    // ---------------------------------------------------------------- recovery sweep and trial

    /**
     * The provider keys the sweep looks at, with their breaker, cooldown and sweep state: every key
     * with parked dead letters (a skip scan over the partial index {@code dead_letters_recovery_idx}: one probe per key, whatever
     * the number of entries) and every key whose sweep state is not idle. No parameters.
     */
    static final String RECOVERY_KEYS = """
            WITH RECURSIVE parked_keys AS (
                (SELECT d.provider_key FROM layover.dead_letters d
                 WHERE d.state = 'parked' AND d.provider_key IS NOT NULL
                 ORDER BY d.provider_key LIMIT 1)
                UNION ALL
                SELECT (SELECT d.provider_key FROM layover.dead_letters d
                        WHERE d.state = 'parked' AND d.provider_key > k.provider_key
                        ORDER BY d.provider_key LIMIT 1)
                FROM parked_keys k
                WHERE k.provider_key IS NOT NULL
            ), keys AS (
                SELECT provider_key FROM parked_keys WHERE provider_key IS NOT NULL
                UNION
                SELECT provider_key FROM layover.recovery_state WHERE phase <> 'idle'
            )
            SELECT k.provider_key, now() AS db_now,
                   coalesce(b.state, 'closed') AS breaker_state,
                   b.closed_at,
                   CASE WHEN b.open_until = 'infinity' THEN NULL ELSE b.open_until END AS open_until,
                   coalesce(b.open_until = 'infinity', false) AS held_open,
                   coalesce(b.state = 'half_open' AND b.trial_token IS NOT NULL AND b.trial_expires_at > now(), false)
                       AS trial_in_flight,
                   coalesce(b.closed_at > r.handled_closed_at
                            OR (b.closed_at IS NOT NULL AND r.handled_closed_at IS NULL), false) AS new_close,
                   (r.provider_key IS NOT NULL AND b.closed_at IS DISTINCT FROM r.trials_since) AS new_trial_period,
                   CASE WHEN c.until > now() THEN c.until END AS cooldown_until,
                   r.provider_key IS NOT NULL AS has_state,
                   r.phase, r.handled_closed_at, r.cutoff, r.episode_started_at, r.batch_size, r.batches, r.replayed,
                   r.moved_to_review, r.parked_again, r.last_batch_at, r.last_batch_count, r.last_batch_first_id,
                   r.last_batch_last_id, r.next_batch_at, r.checked_at, r.trials, r.trials_since, r.last_trial_at,
                   r.last_trial_run_at, r.last_trial_dead_letter_id, r.next_trial_at, r.note
            FROM keys k
            LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
            LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
            LEFT JOIN layover.recovery_state r ON r.provider_key = k.provider_key
            ORDER BY k.provider_key""";

    /**
     * The next parked dead letters of one key and one failure type the sweep (or a trial) may
     * replay, oldest id first: an ordered walk of the partial index {@code dead_letters_recovery_idx} that stops after {@code limit}
     * matches. A dead letter qualifies when its job type is one for which the failure type is
     * auto-replayable, no live job has its type and id, and it was parked up to the later of the
     * cutoff (the breaker close being swept, plus its grace) and now minus the type's minimum age
     * (rate-limit and quota entries). One statement per failure type (rather than one over all of
     * them) keeps every condition one the planner can estimate, so it walks the index in id order.
     *
     * <p>Parameters: key; failure type; after id; job types (text[]); cutoff (or null); minimum age
     * in ms (or null); limit.
     */
    static final String RECOVERY_CANDIDATES = """
            SELECT d.id, d.job_type, d.job_id, d.failure_type
            FROM layover.dead_letters d
            WHERE d.provider_key = ? AND d.state = 'parked' AND d.failure_type = ? AND d.id > ?
              AND d.job_type = ANY(?::text[])
              AND d.parked_at <= greatest(?::timestamptz, now() - ?::bigint * interval '1 millisecond')
              AND NOT EXISTS (SELECT 1 FROM layover.jobs j WHERE j.job_type = d.job_type AND j.id = d.job_id)
            ORDER BY d.id
            LIMIT ?""";

    /**
     * How the sweep's replays of one key are doing: live sweep jobs not failed yet (pending) and
     * failing (an attempt spent), and sweep replays that parked again (in review) since a time.
     * Parameters: key, since, key.
     */
    static final String RECOVERY_HEALTH = """
            SELECT count(*) FILTER (WHERE j.attempts = 0) AS pending,
                   count(*) FILTER (WHERE j.attempts > 0) AS retrying,
                   (SELECT count(*) FROM layover.dead_letters d
                    WHERE d.provider_key = ? AND d.state = 'review' AND d.parked_at > ?) AS parked_again
            FROM layover.jobs j
            WHERE j.provider_key = ? AND j.replay_kind = 'sweep' AND j.dead_letter_id IS NOT NULL""";

    /**
     * Whether a key has traffic that will make the breaker's trial call by itself: a live job of
     * the key due by a time (running jobs included). Parameters: key, time.
     */
    static final String RECOVERY_TRAFFIC = """
            SELECT EXISTS (SELECT 1 FROM layover.jobs j WHERE j.provider_key = ? AND j.run_at <= ?)""";

    /** Writes one key's sweep state. Parameters: the columns in order, then the worker. */
    static final String RECOVERY_SAVE = """
            INSERT INTO layover.recovery_state AS r
                (provider_key, phase, handled_closed_at, cutoff, episode_started_at, batch_size, batches, replayed,
                 moved_to_review, parked_again, last_batch_at, last_batch_count, last_batch_first_id,
                 last_batch_last_id, next_batch_at, checked_at, trials, trials_since, last_trial_at,
                 last_trial_run_at, last_trial_dead_letter_id, next_trial_at, note, updated_at, updated_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now(), ?)
            ON CONFLICT (provider_key) DO UPDATE SET
                phase = excluded.phase, handled_closed_at = excluded.handled_closed_at, cutoff = excluded.cutoff,
                episode_started_at = excluded.episode_started_at, batch_size = excluded.batch_size,
                batches = excluded.batches, replayed = excluded.replayed, moved_to_review = excluded.moved_to_review,
                parked_again = excluded.parked_again, last_batch_at = excluded.last_batch_at,
                last_batch_count = excluded.last_batch_count, last_batch_first_id = excluded.last_batch_first_id,
                last_batch_last_id = excluded.last_batch_last_id, next_batch_at = excluded.next_batch_at,
                checked_at = excluded.checked_at, trials = excluded.trials, trials_since = excluded.trials_since,
                last_trial_at = excluded.last_trial_at, last_trial_run_at = excluded.last_trial_run_at,
                last_trial_dead_letter_id = excluded.last_trial_dead_letter_id, next_trial_at = excluded.next_trial_at,
                note = excluded.note, updated_at = now(), updated_by = excluded.updated_by""";


    /** Names the provider key of a sweep's or trial's audit row. Parameters: key, audit id. */
    static final String AUDIT_SUBJECT = """
            UPDATE layover.audit_log SET subject = ? WHERE id = ? AND subject IS NULL""";

    // ---------------------------------------------------------------- audit log

    /** Parameters: actor, action, subject, count, ids, filter, note, details, finished. */
    static final String AUDIT_INSERT = """
            INSERT INTO layover.audit_log (actor, action, subject, count, ids, filter, note, details, finished_at)
            VALUES (?, ?, ?, ?, ?::bigint[], ?::jsonb, ?, coalesce(?::jsonb, '{}'::jsonb),
                    CASE WHEN ?::boolean THEN now() END)
            RETURNING id""";

    /** A bulk action's batch, in the batch's transaction. Parameters: count, ids to append (or null), id. */
    static final String AUDIT_ADD = """
            UPDATE layover.audit_log
            SET count = count + ?, ids = CASE WHEN ?::bigint[] IS NULL THEN ids ELSE coalesce(ids, '{}') || ?::bigint[] END
            WHERE id = ?""";

    /** Parameters: details to merge, id. */
    static final String AUDIT_FINISH = """
            UPDATE layover.audit_log SET finished_at = now(), details = details || ?::jsonb WHERE id = ?""";

    static final String AUDIT_COLUMNS = """
            SELECT a.id, a.at, a.actor, a.action, a.subject, a.count, a.ids, a.filter::text AS filter, a.note,
                   a.details::text AS details, a.finished_at
            FROM layover.audit_log a""";

    /** Newest first; parameters: before id (or null), limit. */
    static final String AUDIT_PAGE = AUDIT_COLUMNS
            + " WHERE (?::bigint IS NULL OR a.id < ?::bigint) ORDER BY a.id DESC LIMIT ?";

    /** Every row naming one dead letter, oldest first. */
    static final String AUDIT_OF = AUDIT_COLUMNS + " WHERE a.ids @> ARRAY[?::bigint] ORDER BY a.id";

    // ---------------------------------------------------------------- filters

    /** A WHERE clause and its parameters, in order. */
    static final class Where {
        private final StringBuilder sql = new StringBuilder();
        private final List<Object> params = new ArrayList<>();
        private boolean uncounted;

        /** A condition on a column the maintained counts do not have (time, text, id). */
        Where andUncounted(String condition, Object... values) {
            uncounted = true;
            return and(condition, values);
        }

        /** @return whether every condition is on state, failure type, job type or provider key */
        boolean onCountedColumnsOnly() {
            return !uncounted;
        }

        Where and(String condition, Object... values) {
            sql.append(sql.length() == 0 ? " WHERE " : " AND ").append(condition);
            for (Object v : values) {
                params.add(v);
            }
            return this;
        }

        String sql() {
            return sql.toString();
        }

        List<Object> params() {
            return params;
        }
    }

    /** A text[] parameter. */
    record TextArray(String[] values) {}

    /** A bigint[] parameter. */
    record LongArray(Long[] values) {}

    /** The conditions of a filter. */
    static Where where(DeadLetterFilter f) {
        Where w = new Where();
        anyOf(w, "d.job_type", f.jobTypes());
        anyOf(w, "d.provider_key", f.providerKeys());
        anyOf(w, "d.failure_type", f.failureTypes());
        anyOf(w, "d.state", f.states().stream().map(DeadLetterState::code).toList());
        if (f.parkedFrom() != null) {
            w.andUncounted("d.parked_at >= ?", f.parkedFrom());
        }
        if (f.parkedUntil() != null) {
            w.andUncounted("d.parked_at < ?", f.parkedUntil());
        }
        if (f.text() != null) {
            w.andUncounted(TEXT_MATCH, "%" + escapeLike(f.text()) + "%");
        }
        return w;
    }

    /** Keyset condition of the page after (parked_at, id). */
    static void after(Where w, Instant parkedAt, long id) {
        w.andUncounted("(d.parked_at, d.id) < (?, ?)", parkedAt, id);
    }

    /** Allowed states and id window of a bulk batch. */
    static void batchWindow(Where w, List<String> states, long afterId, long maxId) {
        anyOf(w, "d.state", states);
        w.andUncounted("d.id > ?", afterId);
        w.andUncounted("d.id <= ?", maxId);
    }

    // One value is written as "=": it lets the planner walk a (column, parked_at, id) index in page
    // order, which "= ANY(array)" does not.
    private static void anyOf(Where w, String column, List<String> values) {
        if (values.size() == 1) {
            w.and(column + " = ?", values.get(0));
        } else if (values.size() > 1) {
            w.and(column + " = ANY(?::text[])", new TextArray(values.toArray(String[]::new)));
        }
    }

    /** LIKE pattern text matching {@code s} literally (escape character: backslash). */
    static String escapeLike(String s) {
        return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
    }

    /**
     * Prepares a statement whose best plan depends on its parameter values (filters, keyset
     * cursors, text patterns). pgjdbc turns a statement into a server-side prepared one after five
     * executions, and Postgres may then reuse a generic plan built without the values: for a text
     * filter that plan intersects the trigram index with the whole park-time range, where the plan
     * for the actual values walks the page order and reads a page's rows only. A
     * prepare threshold of 0 keeps the statement unnamed, planned with its values every time.
     */
    static PreparedStatement prepareCustomPlanned(Connection c, String sql) throws SQLException {
        PreparedStatement ps = c.prepareStatement(sql);
        if (ps.isWrapperFor(PGStatement.class)) {
            ps.unwrap(PGStatement.class).setPrepareThreshold(0);
        }
        return ps;
    }

    /** Binds parameters in order: arrays, instants (as timestamptz) and plain values. */
    static void bind(Connection c, PreparedStatement ps, List<Object> params) throws SQLException {
        for (int i = 0; i < params.size(); i++) {
            bindOne(c, ps, i + 1, params.get(i));
        }
    }

    static void bind(Connection c, PreparedStatement ps, Object... params) throws SQLException {
        for (int i = 0; i < params.length; i++) {
            bindOne(c, ps, i + 1, params[i]);
        }
    }

    private static void bindOne(Connection c, PreparedStatement ps, int i, Object v) throws SQLException {
        if (v instanceof TextArray a) {
            ps.setArray(i, c.createArrayOf("text", a.values()));
        } else if (v instanceof LongArray a) {
            ps.setArray(i, a.values() == null ? null : c.createArrayOf("int8", a.values()));
        } else if (v instanceof Instant t) {
            ps.setObject(i, OffsetDateTime.ofInstant(t, ZoneOffset.UTC));
        } else if (v == null) {
            ps.setNull(i, Types.NULL);
        } else {
            ps.setObject(i, v);
        }
    }
}
