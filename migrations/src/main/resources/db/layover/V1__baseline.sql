-- Layover's schema: every table, view and function of schema `layover`, in one file.
--
-- Until the first release (0.1.0) this is the only migration: a change of the schema is an edit
-- of this file, not a new version. From the first release on, migrations are forward-only: a
-- released file is never edited; a change is a new file with the next version. Flyway runs them
-- with schema `layover` as default (dev.layover.migrations.LayoverMigrations).
--
-- Sections, in order: extensions; jobs (the job table, heartbeats after an outage, pauses);
-- dead letters (and the recovery sweep); provider state (breakers, cooldowns, buckets, concurrency,
-- operators' limits, permits at enqueue); fairness; batches (and the `jobs` view, which shows a
-- job's batch); history; time series; console counts; audit; helpers.
--
-- Owners: docs/architecture.md names the owner of each table: the Java files, core's SQL files
-- and the functions defined here whose statements may write it (TableOwnersTest reads them all);
-- a write one owner's statement needs of another owner's table goes through a function of that
-- owner, defined here.


-- ===========================================================================
-- Extensions
-- ===========================================================================

-- pg_trgm indexes the text search over dead letters' errors (see dead_letters.error_text). It is a
-- trusted contrib extension (PostgreSQL 13+), but a server may lack contrib or refuse it: then
-- nothing is created, and a text filter reads the rows the other filters leave (correct, slower).
-- An existing pg_trgm, in any schema, is used as is; else it is created in schema layover.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')
       AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA layover;
        EXCEPTION WHEN others THEN
            RAISE NOTICE 'layover: pg_trgm could not be created (%); text search over dead letters will not be indexed', SQLERRM;
        END;
    END IF;
END
$$;


-- ===========================================================================
-- Jobs
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- scheduled_tasks: db-scheduler's table. Its column names are fixed by db-scheduler; Layover adds
-- its own columns at the end (db-scheduler's inserts name their columns, and its reads ignore
-- columns it does not know). This table is private: read jobs through the `layover.jobs` view.
--
-- Deadlines, limit keys, pauses and cancellation (docs/admission-and-control.md):
--   deadline            past it the job is parked `deadline_exceeded` instead of run, rescheduled
--                       or retried (EnqueueOptions.withDeadline)
--   limit_keys          keys whose limits (concurrency, bucket) and pauses the job is subject to
--                       besides provider_key, e.g. {tenant:42}; derived from its args at enqueue
--   paused_run_at       set while a pause holds the job: its run time before the pause. The job's
--                       execution_time is then 9999-12-31 (no worker picks it); resume puts this back
--   holds               times the job was held back by a concurrency limit or a pause; such holds
--                       never count as reschedules (no maxReschedules, no attempt)
--   cancel_requested_*  an operator asked a running job to stop (JobContext.isCancelled())
--
-- The fallback trail (provider_trail): a jsonb array, oldest first, one object per endpoint a
-- FallbackChain considered: {"at", "attempt", "key", "result", "detail", "wait_ms"}.
-- result: answered, rate_limited, overloaded, transient, quota_exhausted, auth_refused,
-- rejected, error, skipped_cooldown, skipped_breaker_open, skipped_half_open, skipped_bucket.
--
-- args_shape: the fingerprint of the shape of the args type that wrote the job (its properties
-- and their types, hashed: ArgsShape). A worker that cannot read a job's args tells from it
-- whether another version of the job type wrote them: then the job waits for a worker that can
-- (rescheduled, reason args_newer_version, no attempt spent, up to the job type's newerArgsWait),
-- instead of being parked bad_args at once.
--
-- Vacuum: every job leaves two dead row versions (its pick's update and its delete; a reschedule
-- leaves one more). Autovacuum's stock trigger, 50 dead rows plus 20% of the table, lets a
-- million-job backlog pile up 200,000 dead rows before a vacuum, and the table and its indexes
-- bloat in between; this table's trigger is 1,000 dead rows plus 2% of it (21,000 behind a million
-- jobs, 1,200 behind 10,000). ANALYZE follows the same rule, so the planner's row estimate (which
-- also spaces the depth samples of the time series) stays near the backlog's size. The server's
-- own settings are not touched, and a DBA's ALTER TABLE .. SET (..) overrides these.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.scheduled_tasks (
    task_name              text        NOT NULL,
    task_instance          text        NOT NULL,
    task_data              bytea,                  -- the job's args, UTF-8 JSON
    execution_time         timestamptz NOT NULL,   -- when the job may run next
    picked                 boolean     NOT NULL,
    picked_by              text,
    last_success           timestamptz,
    last_failure           timestamptz,
    consecutive_failures   int,                    -- attempts spent; a reschedule never touches it
    last_heartbeat         timestamptz,
    version                bigint      NOT NULL,
    priority               smallint,

    -- Layover's own columns
    provider_key           text,                   -- e.g. 'openai:gpt-4o-mini'; breakers and cooldowns belong to it
    reschedules            int         NOT NULL DEFAULT 0,  -- run time pushed forward without spending an attempt
    last_reschedule_reason text,                   -- rate_limited, quota_exhausted, snooze, cooldown, ...
    last_reschedule_detail text,                   -- the provider's words, or the reason in a sentence
    last_rescheduled_at    timestamptz,
    first_enqueued_at      timestamptz NOT NULL DEFAULT now(),
    errors                 jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- one object per failed attempt
    dead_letter_id         bigint,                 -- set on a job created by replaying that dead letter
    replay_kind            text,                   -- manual, sweep or trial: how that replay was made
    provider_trail         jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- the fallback trail (above)
    deadline               timestamptz,
    limit_keys             text[],
    paused_run_at          timestamptz,
    holds                  int         NOT NULL DEFAULT 0,
    cancel_requested_at    timestamptz,
    cancel_requested_by    text,
    cancel_reason          text,
    args_shape             text,
    fairness_key           text,                   -- its flow in its provider key's fair queue (see Fairness)
    fair_tag               float8,                 -- its tag there, given at enqueue when it is due then
    batch_item             bigint,                 -- its live batch item (see Batches); NULL: never gathered
    token_estimate         float8[],               -- {combined, input, output}: what its admission reserves
    trace_context          jsonb,                  -- the enqueue's W3C trace context (see Observability)
    group_id               text,                   -- the group it is a member of (see Groups); NULL: none
    has_dependents         boolean     NOT NULL DEFAULT false,  -- a job runs after it (see Dependencies)

    PRIMARY KEY (task_name, task_instance)
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_analyze_threshold = 1000
);

-- db-scheduler's own indexes
CREATE INDEX execution_time_idx ON layover.scheduled_tasks (execution_time);
CREATE INDEX last_heartbeat_idx ON layover.scheduled_tasks (last_heartbeat);
CREATE INDEX priority_execution_time_idx ON layover.scheduled_tasks (priority DESC, execution_time ASC);
-- The pick (layover.pick) reads a queue through each of these, only the entries it takes:
--   jobs without a provider key, oldest first;
CREATE INDEX jobs_free_due ON layover.scheduled_tasks (execution_time, task_instance)
    WHERE NOT picked AND provider_key IS NULL;
--   a key's jobs without a fair-queue tag, highest priority then oldest first (and, one probe per key,
--   the keys that have jobs);
CREATE INDEX jobs_keyed_due ON layover.scheduled_tasks (provider_key, priority DESC NULLS LAST, execution_time,
                                                        task_instance)
    WHERE NOT picked AND provider_key IS NOT NULL AND fair_tag IS NULL;
--   a key's fair queue, highest priority then lowest tag first (a tagged job is due: a write that moves
--   a job's run time later clears its tag);
CREATE INDEX jobs_fair_queue ON layover.scheduled_tasks (provider_key, priority DESC NULLS LAST, fair_tag)
    WHERE NOT picked AND provider_key IS NOT NULL AND fair_tag IS NOT NULL;
--   a flow's last tag, where an enqueue's tags start (layover.fair_tags);
CREATE INDEX jobs_fair_flow ON layover.scheduled_tasks (provider_key, fairness_key, priority, fair_tag DESC)
    WHERE NOT picked AND provider_key IS NOT NULL AND fair_tag IS NOT NULL;
--   a key's slots in use: its jobs picked (with a live heartbeat), against its concurrency limit.
CREATE INDEX jobs_running_key ON layover.scheduled_tasks (provider_key) WHERE picked AND provider_key IS NOT NULL;
-- "what is waiting on this provider"
CREATE INDEX scheduled_tasks_provider_key_idx ON layover.scheduled_tasks (provider_key, execution_time)
    WHERE provider_key IS NOT NULL;
-- How the recovery sweep's replays of a key are doing (live sweep jobs, pending or failing) is read
-- before every batch; this keeps that read to the replayed jobs of the key, however many other jobs
-- of the key are queued. Partial: only jobs made by a replay.
CREATE INDEX scheduled_tasks_replays_idx
    ON layover.scheduled_tasks (provider_key, replay_kind)
    WHERE dead_letter_id IS NOT NULL;
-- The bulk heartbeat ("every job picked by worker W is alive") finds a worker's rows by this index.
CREATE INDEX scheduled_tasks_picked_by_idx ON layover.scheduled_tasks (picked_by) WHERE picked;
-- Each worker looks once a second for waiting jobs whose deadline passed (or whose next run is
-- after it) and for cancel requests; these partial indexes keep that to the few rows concerned.
CREATE INDEX scheduled_tasks_deadline_idx ON layover.scheduled_tasks (deadline)
    WHERE deadline IS NOT NULL;
CREATE INDEX scheduled_tasks_after_deadline_idx ON layover.scheduled_tasks (task_name)
    WHERE deadline < execution_time AND paused_run_at IS NULL;
CREATE INDEX scheduled_tasks_cancel_idx ON layover.scheduled_tasks (task_name)
    WHERE cancel_requested_at IS NOT NULL;
-- A resume gives back the run time of the jobs its pause held.
CREATE INDEX scheduled_tasks_paused_idx ON layover.scheduled_tasks (task_name)
    WHERE paused_run_at IS NOT NULL;
-- Pausing a limit key finds its waiting jobs: limit_keys @> ARRAY[key].
CREATE INDEX scheduled_tasks_limit_keys_idx ON layover.scheduled_tasks USING gin (limit_keys)
    WHERE limit_keys IS NOT NULL;
-- A limit key's slots in use: its jobs picked, against its concurrency limit.
CREATE INDEX jobs_running_limit_keys ON layover.scheduled_tasks USING gin (limit_keys)
    WHERE picked AND limit_keys IS NOT NULL;
-- The jobs of a batch item.
CREATE INDEX scheduled_tasks_batch_item ON layover.scheduled_tasks (batch_item) WHERE batch_item IS NOT NULL;

COMMENT ON TABLE layover.scheduled_tasks IS
    'db-scheduler''s job table plus Layover columns. Private: query layover.jobs instead.';
COMMENT ON COLUMN layover.scheduled_tasks.args_shape IS
    'Fingerprint of the args type''s JSON shape that wrote the job (a rolling deploy''s versions differ); NULL: unknown.';
COMMENT ON COLUMN layover.scheduled_tasks.fairness_key IS
    'The job''s fairness key (JobType.Builder#fairnessKey, e.g. tenant:42): its flow within its provider key''s limit; NULL: none.';
COMMENT ON COLUMN layover.scheduled_tasks.fair_tag IS
    'Its tag in its provider key''s fair queue (layover.fair_tags, at enqueue when due then); NULL: not in the queue '
    '(no fairness key, or moved to a later run time since: then among the key''s due jobs by run time).';
COMMENT ON COLUMN layover.scheduled_tasks.token_estimate IS
    'The job''s token estimate {combined, input, output} (JobType.Builder#tokenEstimate or tokenCost), written at '
    'enqueue: what its pick reserves from its key''s token limits, and its cost in a fair queue. NULL: none.';

-- ---------------------------------------------------------------------------
-- Arguments are stored as UTF-8 JSON in a bytea (db-scheduler's column). This turns them into
-- jsonb, or NULL when the bytes are not JSON (only possible for rows written by something other
-- than Layover), so one odd row cannot break a query over the view or a park.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.args_jsonb(data bytea) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS
$$
BEGIN
    IF data IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN convert_from(data, 'UTF8')::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

-- Appends entries to a fallback trail and keeps the newest 50, so a job rescheduled all day stays small.
CREATE FUNCTION layover.trail_append(trail jsonb, more jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN more IS NULL OR jsonb_array_length(more) = 0 THEN coalesce(trail, '[]'::jsonb)
           WHEN jsonb_array_length(coalesce(trail, '[]'::jsonb) || more) <= 50 THEN coalesce(trail, '[]'::jsonb) || more
           ELSE (SELECT jsonb_agg(e ORDER BY n)
                 FROM jsonb_array_elements(coalesce(trail, '[]'::jsonb) || more) WITH ORDINALITY AS x(e, n)
                 WHERE n > jsonb_array_length(coalesce(trail, '[]'::jsonb) || more) - 50)
       END
$$;

-- ---------------------------------------------------------------------------
-- A job inserted by anyone (an enqueue in another JVM, a replay, the caller's transaction once it
-- commits) wakes every listening worker at once instead of at its next poll. One notification per
-- statement; Postgres folds identical notifications of one transaction into one, and delivers
-- them only at commit, so a rolled-back enqueue wakes nobody.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.notify_jobs_inserted() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_jobs', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER scheduled_tasks_notify_insert
    AFTER INSERT ON layover.scheduled_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION layover.notify_jobs_inserted();

-- ---------------------------------------------------------------------------
-- job_controls: the admission and control columns of live jobs (join layover.jobs on job_type and
-- id). The public view layover.jobs itself is at the end of the Batches section: it shows a job's
-- batch, so it comes after layover.batch_items.
-- ---------------------------------------------------------------------------
CREATE VIEW layover.job_controls AS
SELECT t.task_instance                    AS id,
       t.task_name                        AS job_type,
       t.deadline                         AS deadline,
       t.limit_keys                       AS limit_keys,
       t.paused_run_at IS NOT NULL        AS paused,
       t.paused_run_at                    AS paused_run_at,
       t.holds                            AS holds,
       t.cancel_requested_at              AS cancel_requested_at,
       t.cancel_requested_by              AS cancel_requested_by,
       t.cancel_reason                    AS cancel_reason
FROM layover.scheduled_tasks t
WHERE t.task_name NOT LIKE 'layover-%';

COMMENT ON VIEW layover.job_controls IS
    'Per live job: deadline, limit keys, whether a pause holds it, holds, and a pending cancel request.';

-- ---------------------------------------------------------------------------
-- Heartbeats after an outage. During a database outage no worker can write a heartbeat, so when
-- it is back every job that was running looks dead by its heartbeat, and the first worker whose
-- pool reconnects would revive (and run a second time) the jobs of a worker whose pool takes a few
-- seconds longer. Heartbeats are therefore counted from no earlier than the database's return (the
-- server's start, or the time the first worker saw it answer again, whichever is later) plus a
-- reconnect allowance of 10 s. db-scheduler's dead-execution query (picked = ? AND last_heartbeat
-- <= ?) is rewritten by the engine to last_heartbeat <= layover.dead_heartbeat_cutoff(?), which
-- keeps its index.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.database_returns (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    returned_at timestamptz NOT NULL
);

COMMENT ON TABLE layover.database_returns IS
    'One row: when a worker last saw the database answer again after an outage (database time). Written by layover.database_returned().';

-- A worker saw the database answer again after an outage (called before it lets its threads on).
CREATE FUNCTION layover.database_returned() RETURNS void
LANGUAGE sql AS $$
    INSERT INTO layover.database_returns (one, returned_at) VALUES (true, now())
    ON CONFLICT (one) DO UPDATE SET returned_at = greatest(layover.database_returns.returned_at, excluded.returned_at);
$$;

COMMENT ON FUNCTION layover.database_returned() IS
    'Records that the database answers again after an outage: heartbeats older than that (plus 10 s) are not taken for dead.';

-- The heartbeat cutoff db-scheduler asks with (now minus its dead-execution limit), or -infinity
-- (nothing is dead yet) while the cutoff is earlier than the database's return plus 10 s.
CREATE FUNCTION layover.dead_heartbeat_cutoff(cutoff timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN cutoff >= greatest(pg_postmaster_start_time(),
                                coalesce((SELECT returned_at FROM layover.database_returns), '-infinity'))
                       + interval '10 seconds'
        THEN cutoff
        ELSE '-infinity'::timestamptz
    END;
$$;

COMMENT ON FUNCTION layover.dead_heartbeat_cutoff(timestamptz) IS
    'The dead-execution cutoff, or -infinity until 10 s after the database returned from an outage (server start or a worker''s report).';

-- ---------------------------------------------------------------------------
-- pauses: an operator paused a job type (scope 'job_type') or a key (scope 'key': a provider key
-- or a limit key such as tenant:42). While a pause is active (resumed_at IS NULL) nothing it
-- covers starts: its waiting jobs are moved out of the pickers' way (execution_time 9999-12-31,
-- the run time kept in paused_run_at), and a job picked anyway (enqueued after the pause, or
-- picked just before it) is held the same way without running. Nothing is lost or parked.
-- A resume gives every held job no other active pause covers its run time back.
-- Rows stay after the resume: the table is the record of who paused what, when and why.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.pauses (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope          text        NOT NULL,
    target         text        NOT NULL,   -- the job type name, or the key
    paused_at      timestamptz NOT NULL DEFAULT now(),
    paused_by      text        NOT NULL,
    reason         text,
    held_jobs      bigint      NOT NULL DEFAULT 0,  -- waiting jobs moved aside when the pause began
    resumed_at     timestamptz,
    resumed_by     text,
    released_jobs  bigint,                          -- held jobs given back their run time by the resume
    CONSTRAINT pauses_scope_check CHECK (scope IN ('job_type', 'key'))
);

CREATE UNIQUE INDEX pauses_active_idx ON layover.pauses (scope, target) WHERE resumed_at IS NULL;

COMMENT ON TABLE layover.pauses IS
    'Pauses of job types and keys; active while resumed_at IS NULL. Held jobs: scheduled_tasks.paused_run_at IS NOT NULL.';

-- Workers cache the active pauses; a change reaches them at once on the provider state channel.
CREATE FUNCTION layover.notify_pause_change() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'pauses', 'scope', NEW.scope, 'key', NEW.target,
            'paused', NEW.resumed_at IS NULL)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER pauses_notify AFTER INSERT OR UPDATE ON layover.pauses
    FOR EACH ROW EXECUTE FUNCTION layover.notify_pause_change();


-- ===========================================================================
-- Dead letters
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- dead_letters: parked jobs, with everything needed to replay them. A job is moved here in one
-- transaction with the delete of its job row. A dead letter keeps its job's limit keys and
-- fairness key, which a replay writes back as a fresh enqueue would, and the tokens of the run
-- that parked it (written by the park, core JobSql.PARK; replaced when a replay parks again).
--
-- Text search: "text in the error" is a case-insensitive substring of the error class and
-- message. error_text holds them lower-cased (lower() of the database's collation), compared in
-- collation "C": the store matches error_text LIKE lower(pattern), a byte-wise match several times
-- cheaper per row than ILIKE over the expression, which matters when a page has to read past many
-- rows to find its matches. With pg_trgm a trigram GIN index on error_text serves rare texts.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.dead_letters (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_type            text        NOT NULL,
    job_id              text        NOT NULL,       -- the parked job's id (its idempotency key, if it had one)
    args                jsonb,                      -- exactly what a replay enqueues
    args_raw            bytea,                      -- only when the stored args were not JSON
    provider_key        text,
    failure_type        text        NOT NULL,       -- provider_unavailable, rate_limit_exhausted, bad_args, ...
    error_class         text,
    error_message       text,
    errors              jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- the error of every attempt, oldest first
    attempts            int         NOT NULL DEFAULT 0,
    reschedules         int         NOT NULL DEFAULT 0,
    priority            smallint,
    first_enqueued_at   timestamptz NOT NULL,
    parked_at           timestamptz NOT NULL DEFAULT now(),
    park_count          int         NOT NULL DEFAULT 1,   -- > 1 when a replay parked again
    state               text        NOT NULL DEFAULT 'parked',
    state_changed_at    timestamptz NOT NULL DEFAULT now(),
    replay_count        int         NOT NULL DEFAULT 0,   -- every replay, manual or automatic
    auto_replay_count   int         NOT NULL DEFAULT 0,   -- replays by the recovery sweep (spends the replay budget)
    replays             jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- [{job_id, at, by, automatic}], one per replay
    provider_trail      jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- the job's fallback trail
    error_text          text COLLATE "C"
        GENERATED ALWAYS AS (lower(coalesce(error_class, '') || ' ' || coalesce(error_message, ''))) STORED,
    limit_keys          text[],
    input_tokens        bigint,
    output_tokens       bigint,
    cached_input_tokens bigint,
    estimated_tokens    bigint,
    fairness_key        text,
    trace_context       jsonb,                      -- its job's enqueue trace context, which a replay keeps
    CONSTRAINT dead_letters_state_check CHECK (state IN ('parked', 'replayed', 'review', 'discarded'))
);

-- A larger sample makes the planner's estimate of how often a text occurs stable, so that it
-- walks the page order for common texts and uses the trigram index for rare ones.
ALTER TABLE layover.dead_letters ALTER COLUMN error_text SET STATISTICS 1000;

-- Keyset pages are ordered by (parked_at DESC, id DESC): that index alone, with state first, and
-- with each other filter of the console first (and a state): the index walk returns rows already
-- in page order, so a page reads about `limit` rows whatever the table size.
CREATE INDEX dead_letters_parked_at_idx ON layover.dead_letters (parked_at DESC, id DESC);
CREATE INDEX dead_letters_state_idx ON layover.dead_letters (state, parked_at DESC, id DESC);
CREATE INDEX dead_letters_job_type_page_idx
    ON layover.dead_letters (job_type, state, parked_at DESC, id DESC);
CREATE INDEX dead_letters_provider_page_idx
    ON layover.dead_letters (provider_key, state, parked_at DESC, id DESC);
CREATE INDEX dead_letters_failure_page_idx
    ON layover.dead_letters (failure_type, state, parked_at DESC, id DESC);
CREATE INDEX dead_letters_provider_idx ON layover.dead_letters (provider_key, failure_type, state);
CREATE INDEX dead_letters_job_idx ON layover.dead_letters (job_type, job_id);
-- Retention deletes replayed and discarded entries by the time they reached that state.
CREATE INDEX dead_letters_retention_idx
    ON layover.dead_letters (state_changed_at)
    WHERE state IN ('replayed', 'discarded');
-- The recovery sweep's reads of parked dead letters: the distinct keys with parked entries (a skip
-- scan, one probe per key), and per key and failure type the oldest parked entries in id order.
-- Partial: parked entries only, so it stays small when the table holds millions of replayed ones.
CREATE INDEX dead_letters_recovery_idx
    ON layover.dead_letters (provider_key, failure_type, id)
    WHERE state = 'parked';

-- The trigram index on error_text, with pg_trgm where it is (see Extensions); none without it.
DO $$
DECLARE
    trgm_schema text;
BEGIN
    SELECT n.nspname INTO trgm_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pg_trgm';

    IF trgm_schema IS NOT NULL THEN
        EXECUTE format('CREATE INDEX dead_letters_error_text_idx ON layover.dead_letters '
                       'USING gin (error_text %I.gin_trgm_ops)', trgm_schema);
    END IF;
END
$$;

COMMENT ON TABLE layover.dead_letters IS
    'Parked jobs. state: parked -> replayed | review | discarded. args is exactly what a replay enqueues.';
COMMENT ON COLUMN layover.dead_letters.limit_keys IS
    'The limit keys of the job it came from (JobType.Builder#limitKeys); written back to the job a replay creates.';
COMMENT ON COLUMN layover.dead_letters.input_tokens IS
    'Input tokens the run that parked it reported (cache included); NULL when no usage was reported.';
COMMENT ON COLUMN layover.dead_letters.output_tokens IS 'Output tokens the run that parked it reported.';
COMMENT ON COLUMN layover.dead_letters.cached_input_tokens IS 'Of input_tokens, those read from a prompt cache.';
COMMENT ON COLUMN layover.dead_letters.estimated_tokens IS 'The parking run''s token reservation (input estimate + output ceiling).';
COMMENT ON COLUMN layover.dead_letters.fairness_key IS 'The parked job''s fairness key (V20); its replay gets it back.';

-- ---------------------------------------------------------------------------
-- The dead-letter state machine. Every change of layover.dead_letters.state asks this function
-- for the state an event leads to; NULL means the event is not allowed in that state (the
-- statement then changes nothing).
--
--   event                 from              to
--   manual_replay         parked, review    replayed     a person's replay (console, API)
--   auto_replay           parked            replayed     the recovery sweep's or trial's replay
--   budget_spent          parked            review       the sweep's replay budget is spent
--   discard               parked, review    discarded    a person's decision
--   move_back             review            parked       a person's decision
--   parked_again          any               parked       a replay's job parked again
--   sweep_replay_failed   any               review       a sweep replay's job parked again
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.dead_letter_next_state(from_state text, event text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT CASE
       WHEN event = 'manual_replay' AND from_state IN ('parked', 'review') THEN 'replayed'
       WHEN event = 'auto_replay' AND from_state = 'parked' THEN 'replayed'
       WHEN event = 'budget_spent' AND from_state = 'parked' THEN 'review'
       WHEN event = 'discard' AND from_state IN ('parked', 'review') THEN 'discarded'
       WHEN event = 'move_back' AND from_state = 'review' THEN 'parked'
       WHEN event = 'parked_again' THEN 'parked'
       WHEN event = 'sweep_replay_failed' THEN 'review'
   END $$;

COMMENT ON FUNCTION layover.dead_letter_next_state(text, text) IS
    'The dead-letter state machine: the state an event leads to from a state, NULL when not allowed.';

-- ---------------------------------------------------------------------------
-- recovery_state: the recovery sweep and the recovery trial (module layover-dlq), one row per
-- provider key the sweep has worked on. The sweep is a db-scheduler recurring task that runs on
-- one worker of the cluster at a time. It learns of breaker transitions from layover.breakers
-- (closed_at newer than the close it last handled), never only from one JVM's listeners, so a
-- close made by another JVM or by an operator's console starts it too.
--   phase: idle         - nothing to replay now
--          sweeping     - replaying in growing batches (next_batch_at: the next one)
--          waiting      - a batch is due but waits: the key cools down, or the last batch's
--                         jobs have not run yet (see note)
--          slowed       - replays of the last batch failed again: batch_size was cut and the
--                         next batch waits one spread window
--          breaker_open - the key's breaker is open or half-open: no batches; recovery trials
--                         (one parked job replayed as the trial call) while no traffic comes
-- Written only by the sweep (single runner); an operator may read it freely.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.recovery_state (
    provider_key              text        PRIMARY KEY,
    phase                     text        NOT NULL DEFAULT 'idle',
    handled_closed_at         timestamptz,            -- the breakers.closed_at whose sweep was started
    cutoff                    timestamptz,            -- that sweep replays dead letters parked up to here (closed_at + grace)
    episode_started_at        timestamptz,            -- when the sweep of that close started
    batch_size                int         NOT NULL,   -- size of the last batch (the next one grows or shrinks from it)
    batches                   int         NOT NULL DEFAULT 0,  -- batches since the sweep started
    replayed                  bigint      NOT NULL DEFAULT 0,  -- dead letters replayed since the sweep started
    moved_to_review           bigint      NOT NULL DEFAULT 0,  -- replay budget spent: moved to review instead
    parked_again              bigint      NOT NULL DEFAULT 0,  -- sweep replays whose job parked again (now in review)
    last_batch_at             timestamptz,
    last_batch_count          int,                    -- dead letters the last batch replayed
    last_batch_first_id       bigint,                 -- its dead letter ids, lowest and highest
    last_batch_last_id        bigint,
    next_batch_at             timestamptz,            -- no batch before this
    checked_at                timestamptz,            -- failures of replays are counted from here on
    trials                    int         NOT NULL DEFAULT 0,  -- recovery trials since the breaker last closed
    trials_since              timestamptz,            -- the breakers.closed_at that count belongs to
    last_trial_at             timestamptz,            -- when the last trial job was made
    last_trial_run_at         timestamptz,            -- when it was due (at or after open_until)
    last_trial_dead_letter_id bigint,                 -- trials take the parked dead letters in turn
    next_trial_at             timestamptz,            -- no trial before this (the back-off)
    note                      text,                   -- the last decision, in words
    updated_at                timestamptz NOT NULL DEFAULT now(),
    updated_by                text,                   -- the worker that ran the sweep
    CONSTRAINT recovery_state_phase_check
        CHECK (phase IN ('idle', 'sweeping', 'waiting', 'slowed', 'breaker_open'))
);

COMMENT ON TABLE layover.recovery_state IS
    'Recovery sweep and trial, per provider key: the breaker close last handled, batch sizes, trials and their back-off.';


-- ===========================================================================
-- Provider state: breakers, cooldowns, buckets, concurrency
-- ===========================================================================
--
-- Every worker in every JVM reads and writes the same rows, so a limit learned by one worker
-- spares all the others. One row per provider key (e.g. 'openai:gpt-4o-mini') in each of:
--   breakers  - circuit breaker: closed -> open -> half_open -> closed (or open again)
--   cooldowns - "do not call before `until`"; `until` only ever moves forward
--   buckets   - admission limits (requests and/or tokens per minute) as GCRA arrival times
-- Layover changes each row with one conditional UPDATE (the check is inside the write). A change
-- of breaker state, of a cooldown, of a discovered pace, of a pause or of an operator's limit
-- sends NOTIFY layover_provider_state (triggers below), so that other JVMs refresh their cached
-- copy at once. Each worker also re-reads the state of the keys it uses once a second: only the
-- keys that are not plain (a breaker not closed, a cooldown or a learned pace in force, a breaker
-- row missing); every other key in use is taken as closed and paced by its configured bucket.

-- ---------------------------------------------------------------------------
-- breakers
--   closed:    calls pass; calls and failures are counted in a tumbling window
--              (window_started_at), failures with no success between them in streak; enough
--              failures in the window, or a long enough streak, open it.
--   open:      no call before open_until; a job picked meanwhile is parked `breaker_open`.
--              open_until = 'infinity' when an operator forced it open without an end.
--   half_open: open_until has passed and one worker holds the trial (trial_token) until
--              trial_expires_at; a stale claim (its worker died) can be taken over.
--              'open' with open_until in the past also means "waiting for its trial":
--              the first worker to claim it moves it to half_open.
-- A row is created (closed) the first time a worker sees the key. Inserting a row does not
-- notify (a new row is closed); updates of state, open_until or the trial claim do.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.breakers (
    provider_key       text        PRIMARY KEY,
    state              text        NOT NULL DEFAULT 'closed',
    previous_state     text,                                -- the state before the last change
    window_started_at  timestamptz NOT NULL DEFAULT now(),  -- start of the counting window (closed state)
    calls              int         NOT NULL DEFAULT 0,      -- successes + failures in the window
    failures           int         NOT NULL DEFAULT 0,      -- failures in the window
    opened_at          timestamptz,                         -- the last transition to open
    open_until         timestamptz,                         -- open: no call before this
    open_count         int         NOT NULL DEFAULT 0,      -- openings since the last close (the cool-off doubles with each)
    closed_at          timestamptz,                         -- the last transition to closed (NULL: never opened)
    trial_token        text,                                -- half_open: the claim of the one trial call
    trial_claimed_by   text,                                -- worker holding the trial
    trial_claimed_at   timestamptz,
    trial_expires_at   timestamptz,                         -- after this the claim is stale and can be taken over
    reason             text,                                -- why the last transition happened
    last_failure       text,                                -- the last failure counted, in the provider's words
    last_failure_at    timestamptz,
    changed_at         timestamptz NOT NULL DEFAULT now(),  -- the last state change
    changed_by         text,                                -- worker (or operator) that made it
    change_origin      text,                                -- Layover instance id that made it (tells NOTIFY receivers which changes are their own)
    streak             int         NOT NULL DEFAULT 0,      -- failures reported since the last success reported (closed state)
    CONSTRAINT breakers_state_check CHECK (state IN ('closed', 'open', 'half_open'))
);

-- the breakers not closed: the one-second refresh reads them
CREATE INDEX breakers_state_idx ON layover.breakers (state) WHERE state <> 'closed';

COMMENT ON TABLE layover.breakers IS
    'Circuit breaker per provider key. state: closed -> open -> half_open -> closed | open. '
    'open: no call before open_until. closed_at: the last close (the recovery sweep reads it).';

-- ---------------------------------------------------------------------------
-- cooldowns: a provider key asked everyone to wait (429, a spent quota with a known reset,
-- overload). `until` only moves forward: GREATEST(until, new) in every write.
-- strikes counts back-to-back cooldowns (0 once a call succeeded after the last one ended); waits
-- without a retry-after escalate with it.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.cooldowns (
    provider_key   text        PRIMARY KEY,
    until          timestamptz NOT NULL,   -- no call before this
    reason         text        NOT NULL,   -- rate_limited, quota_exhausted, overloaded
    detail         text,                   -- the provider's words
    strikes        int         NOT NULL DEFAULT 1,
    started_at     timestamptz NOT NULL,   -- first cooldown of the current run of strikes
    updated_at     timestamptz NOT NULL,
    updated_by     text,
    change_origin  text
);

COMMENT ON TABLE layover.cooldowns IS
    'Per provider key: no call before until (only moves forward). Jobs picked earlier are rescheduled to until + jitter.';

-- ---------------------------------------------------------------------------
-- NOTIFY on change, so that every JVM's cache follows within milliseconds. Counter updates
-- (calls, failures) do not notify; only state, open_until, the trial claim, and cooldowns.
-- Payload: {"table", "key", "from", "to", "by", "origin", "reason"} (reason cut to 300 chars).
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.notify_breaker_change() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'breakers',
            'key', NEW.provider_key,
            'from', CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END,
            'to', NEW.state,
            'by', NEW.changed_by,
            'origin', NEW.change_origin,
            'reason', left(NEW.reason, 300))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER breakers_notify_update AFTER UPDATE ON layover.breakers
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state
          OR OLD.open_until IS DISTINCT FROM NEW.open_until
          OR OLD.trial_token IS DISTINCT FROM NEW.trial_token)
    EXECUTE FUNCTION layover.notify_breaker_change();

CREATE FUNCTION layover.notify_cooldown_change() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'cooldowns',
            'key', NEW.provider_key,
            'until', NEW.until,
            'by', NEW.updated_by,
            'origin', NEW.change_origin,
            'reason', NEW.reason)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER cooldowns_notify_insert AFTER INSERT ON layover.cooldowns
    FOR EACH ROW EXECUTE FUNCTION layover.notify_cooldown_change();
CREATE TRIGGER cooldowns_notify_update AFTER UPDATE ON layover.cooldowns
    FOR EACH ROW
    WHEN (OLD.until IS DISTINCT FROM NEW.until)
    EXECUTE FUNCTION layover.notify_cooldown_change();

-- ---------------------------------------------------------------------------
-- buckets: admission limits shared by the fleet, as GCRA "theoretical arrival times". For each
-- limited dimension (requests, combined tokens, input tokens, output tokens), *_tat is the time at
-- which everything handed out so far will have drained; a reservation moves it forward by
-- cost / rate in one UPDATE and gets the moment its permit exists. The configured limits are
-- written by the workers from their configuration when they start (the last one started wins).
--
-- Token dimensions: tokens_per_minute / token_tat are the combined dimension (input and output
-- together: OpenAI's and Bedrock's TPM); input_* is Anthropic's ITPM and Gemini's TPM, output_*
-- Anthropic's OTPM. token_burst_ms: how much of each token rate may be spent at once (NULL:
-- burst_ms). A call's reservation (input estimate + output ceiling) is replaced after the call by
-- the usage its provider reported (layover.gcra_settle()).
--
-- Token shares: token_share / input_share / output_share are, per token dimension, an
-- exponentially weighted mean (weight 0.05 per call) of counted / reserved over the calls that
-- reported usage, written by the settle after each call (core TokenSql.SETTLE). A booking takes
-- need x the share clamped to [0.05, 1] instead of the whole reservation, so that a backlog's
-- slots are spaced by what its calls use and the provider's window sees about its limit.
--
-- Learned paces: a 429 that states the key's request limit (OpenAI's message or
-- x-ratelimit-*-requests headers, Anthropic's anthropic-ratelimit-requests-*) teaches the fleet a
-- pace for a key without a configured bucket: a row whose learned_until is set, used exactly as a
-- configured bucket until learned_until passes; each further 429 that states a limit renews it. A
-- configured bucket (learned_until NULL) is never overwritten by learning.
--
-- Discovered paces (DiscoverySettings, docs/provider-state.md "Discovered pace"): for a key whose
-- 429s state no limit (Gemini, Bedrock, Azure without limit headers, OpenAI-compatible servers),
-- with no configured bucket and no stated pace in force, the fleet discovers the rate itself: a
-- row with learned_until set and discovered = true, whose requests_per_minute the workers move
-- along TCP CUBIC's curve, with multiplicative decrease:
--   * the first 429 that states nothing creates it in slow start at the initial rate;
--   * slow start doubles the rate every interval until the first 429 (or, after a restart, until
--     the rate before it), then the pace is steady;
--   * steady: every interval in which the pace binds (its bucket not full, due jobs of the key
--     waiting), the rate moves one interval along a cubic curve through the ceiling (the rate of
--     the last 429 burst): back to it in the recovery time after a decrease, then past it;
--   * a 429 burst multiplies the rate by the decrease factor once for the fleet: a 429 within one
--     interval of the last decrease belongs to the same burst;
--   * a long cooldown (a stated wait, a quota reset, an overload) restarts slow start.
-- Each change is one conditional UPDATE whose WHERE holds the condition, with the database's clock
-- (now()): an increase only where discovery_adjusted_at is at least one interval old, so however
-- many workers succeed, the fleet writes at most one increase per key and interval. Precedence: a
-- configured bucket (learned_until NULL) is never touched; a pace learned from a stated limit
-- (discovered = false, learned_until in force) is never replaced by a discovered one, and replaces
-- a discovered one. Operators reset a discovered pace by deleting its row:
--   DELETE FROM layover.buckets WHERE provider_key = '...' AND discovered;
-- ---------------------------------------------------------------------------
CREATE TABLE layover.buckets (
    provider_key             text        PRIMARY KEY,
    requests_per_minute      float8,                  -- NULL: no request limit
    tokens_per_minute        float8,                  -- NULL: no token limit
    burst_ms                 int         NOT NULL,    -- how much of the rate may be used at once
    request_tat              timestamptz NOT NULL DEFAULT '-infinity',  -- -infinity: nothing handed out yet
    token_tat                timestamptz NOT NULL DEFAULT '-infinity',
    configured_at            timestamptz NOT NULL DEFAULT now(),
    configured_by            text,
    learned_until            timestamptz,             -- NULL: configured by a worker; else learned, in force until then
    discovered               boolean     NOT NULL DEFAULT false,  -- learned_until set: a discovered, not a stated, pace
    discovery_phase          text,                    -- slow_start | steady (discovered rows only)
    discovery_ceiling        float8,                  -- requests/min of the last 429 burst; NULL before the first
    discovery_adjusted_at    timestamptz,             -- the last increase, decrease or restart (database time)
    discovery_decreased_at   timestamptz,             -- the last decrease (or the start): later 429s within one interval are its burst
    discovery_increases      int         NOT NULL DEFAULT 0,
    discovery_decreases      int         NOT NULL DEFAULT 0,
    input_tokens_per_minute  float8,
    output_tokens_per_minute float8,
    input_tat                timestamptz NOT NULL DEFAULT '-infinity',
    output_tat               timestamptz NOT NULL DEFAULT '-infinity',
    token_burst_ms           int,
    token_share              float8,
    input_share              float8,
    output_share             float8,
    pattern                  text,                    -- the prefix* pattern this key's row was copied from (its
                                                      -- configuration follows the pattern's); NULL: its own
    interactive_at           timestamptz,             -- the last interactive call's take (database time); NULL: none
    CONSTRAINT buckets_limit_check
        CHECK (requests_per_minute > 0 OR tokens_per_minute > 0 OR input_tokens_per_minute > 0
               OR output_tokens_per_minute > 0),
    CONSTRAINT buckets_discovery_phase_check CHECK (discovery_phase IN ('slow_start', 'steady'))
);

-- Keys with a learned pace (a 429's stated limit, a discovered pace): the refresh reads those in force.
CREATE INDEX buckets_learned_idx ON layover.buckets (learned_until) WHERE learned_until IS NOT NULL;
-- The prefix* patterns, a few rows among their keys' thousands: layover.limit_rows matches a new key to them.
CREATE INDEX buckets_patterns_idx ON layover.buckets (provider_key) WHERE provider_key LIKE '%*';

COMMENT ON TABLE layover.buckets IS
    'Admission limits per provider key (GCRA). request_tat/token_tat: when the permits handed out so far drain.';
COMMENT ON COLUMN layover.buckets.learned_until IS
    'NULL: a configured bucket. Set: a pace learned from a 429 that stated the limit, in force until then.';
COMMENT ON COLUMN layover.buckets.discovered IS
    'With learned_until set: true for a pace discovered from 429s that stated no limit, false for a pace a 429 stated.';
COMMENT ON COLUMN layover.buckets.discovery_ceiling IS
    'A discovered pace: the requests per minute at which its last 429 burst came (NULL before the first).';
COMMENT ON COLUMN layover.buckets.input_tokens_per_minute IS 'Input token limit (NULL: none); input_tat its GCRA time.';
COMMENT ON COLUMN layover.buckets.output_tokens_per_minute IS 'Output token limit (NULL: none); output_tat its GCRA time.';
COMMENT ON COLUMN layover.buckets.token_burst_ms IS
    'How much of each token rate may be spent at once (capacity = rate x this); NULL: burst_ms.';
COMMENT ON COLUMN layover.buckets.token_share IS
    'Mean share of their combined token reservation the key''s calls reported using (EWMA, weight 0.05); NULL: no report yet.';
COMMENT ON COLUMN layover.buckets.input_share IS 'The same for the input token dimension.';
COMMENT ON COLUMN layover.buckets.output_share IS 'The same for the output token dimension (the answers'' share of their ceiling).';
COMMENT ON COLUMN layover.buckets.interactive_at IS
    'When an interactive call last asked for a permit (layover.take, p_interactive): background admissions leave a share free while it is recent.';

-- A discovered pace's new rate reaches every worker at once (they also re-read it each second):
-- the provider state channel; workers re-read the key's state.
CREATE FUNCTION layover.notify_discovered_pace() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
        'table', 'buckets', 'key', NEW.provider_key, 'requests_per_minute', NEW.requests_per_minute)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER buckets_notify_discovered_insert AFTER INSERT ON layover.buckets
    FOR EACH ROW WHEN (NEW.discovered)
    EXECUTE FUNCTION layover.notify_discovered_pace();
CREATE TRIGGER buckets_notify_discovered_update AFTER UPDATE OF requests_per_minute, discovered ON layover.buckets
    FOR EACH ROW WHEN (NEW.discovered AND (OLD.requests_per_minute IS DISTINCT FROM NEW.requests_per_minute
                                           OR NOT OLD.discovered))
    EXECUTE FUNCTION layover.notify_discovered_pace();

-- ---------------------------------------------------------------------------
-- The rate bucket arithmetic (GCRA), as functions every statement that takes, books or reads
-- permits calls. A bucket dimension (requests, tokens) has a rate (units per second, > 0 when
-- limited), a capacity (units that may be spent at once: the rate times the burst, at least 1) and
-- a theoretical arrival time tat: the moment every unit handed out so far has drained. Its level at
-- time t is (tat - t) * rate when tat > t, else 0. A need of n units fits from the moment
-- tat - (capacity - n) / rate; taking n units moves tat to greatest(tat, now) + n / rate. A need
-- larger than the capacity waits for an empty bucket.
--
-- These are single-expression SQL functions, which PostgreSQL inlines into the calling statement
-- only when their declared volatility is no stricter than their body's: the ones that add an
-- interval to a timestamptz (STABLE: it reads the TimeZone setting) are declared STABLE, so they
-- cost what the expressions they replace cost instead of a function call planned at every execution.
-- ---------------------------------------------------------------------------

-- The earliest time `need` units fit; NULL when the dimension is not limited (rate <= 0) or nothing
-- is needed, so that greatest(now, ...) over the dimensions ignores it.
CREATE FUNCTION layover.gcra_fits_at(tat timestamptz, rate float8, capacity float8, need float8)
    RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN rate > 0 AND need > 0
               THEN tat - make_interval(secs => (capacity - least(need, capacity)) / rate) END $$;

-- The tat after taking `n` units at `now`; unchanged when the dimension is not limited or n <= 0.
CREATE FUNCTION layover.gcra_take(tat timestamptz, now timestamptz, rate float8, n float8)
    RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN rate > 0 AND n > 0 THEN greatest(tat, now) + make_interval(secs => n / rate) ELSE tat END $$;

-- The units free at `now` (capacity minus what is booked past now; negative when booked ahead).
CREATE FUNCTION layover.gcra_free(tat timestamptz, now timestamptz, rate float8, capacity float8)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT capacity - extract(epoch FROM greatest(tat, now) - now)::float8 * rate $$;

-- The capacity of a bucket dimension stored as units per minute and a burst in milliseconds.
CREATE FUNCTION layover.bucket_capacity(per_minute float8, burst_ms int)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT greatest(1, per_minute / 60.0 * burst_ms / 1000.0) $$;

-- Settling one token dimension after a call: `delta` = what the call counts (reported usage) minus
-- what it reserved. A negative delta gives the unused tokens back: tat moves back by -delta / rate
-- (a tat in the past means a full bucket, so a give-back never banks more than the capacity). A
-- positive delta charges the under-estimate as a take does, from greatest(tat, now), but at most
-- `max_charge` tokens (the debt rule: one minute of the dimension's limit per call), so that a
-- report far above any real call cannot hold the key back for longer than a minute.
CREATE FUNCTION layover.gcra_settle(tat timestamptz, now timestamptz, rate float8, delta float8, max_charge float8)
    RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN rate <= 0 OR delta = 0 OR delta IS NULL THEN tat
               WHEN delta < 0 THEN tat + make_interval(secs => delta / rate)
               ELSE greatest(tat, now) + make_interval(secs => least(delta, max_charge) / rate) END $$;

COMMENT ON FUNCTION layover.gcra_settle(timestamptz, timestamptz, float8, float8, float8) IS
    'A token dimension after a call: the unused reservation given back (delta < 0), an under-estimate charged up to max_charge.';

-- The share of a key's capacity (each dimension) that background admissions (the pick, a job's take)
-- leave free for interactive calls: `share` while an interactive call asked for a permit of the key
-- within the last `window_s` seconds (interactive_at, database time), else 0: when interactive calls
-- stop, background takes the whole bucket back (work-conserving). Interactive takes are not limited by it.
CREATE FUNCTION layover.interactive_reserve(interactive_at timestamptz, now timestamptz, share float8, window_s float8)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN share > 0 AND extract(epoch FROM now - interactive_at) < window_s
               THEN least(share, 1.0) ELSE 0 END $$;

COMMENT ON FUNCTION layover.interactive_reserve(timestamptz, timestamptz, float8, float8) IS
    'The share of a bucket background admissions leave free while interactive calls are arriving (0 when none came within window_s).';

-- ---------------------------------------------------------------------------
-- provider_keys: one row per known provider key with its breaker, cooldown and bucket state,
-- interpreted, so that readers (the metrics sampler, the console, the recovery sweep) do not each
-- interpret the breakers' and buckets' columns:
--   breaker_trial_due   open, and its open period is over: the next call is the half-open trial
--   trial_in_flight     half-open, and a worker holds a live claim of its one trial call
--   request_permits     request permits free now (NULL: no request limit); negative: owed (a 429 emptied it)
--   token_permits       the same for tokens
--   pace_source         configured | stated | discovered (NULL: no bucket, or a lapsed pace)
--   discovery_phase     slow_start | steady
--   discovery_ceiling_per_minute, discovery_adjusted_at, discovery_decreased_at,
--   discovery_increases, discovery_decreases
-- ---------------------------------------------------------------------------
CREATE VIEW layover.provider_keys AS
SELECT k.provider_key,
       coalesce(b.state, 'closed')                         AS breaker_state,
       b.open_until                                        AS breaker_open_until,
       b.opened_at                                         AS breaker_opened_at,
       b.closed_at                                         AS breaker_closed_at,
       b.trial_claimed_by                                  AS trial_claimed_by,
       b.reason                                            AS breaker_reason,
       CASE WHEN c.until > now() THEN c.until END          AS cooldown_until,
       CASE WHEN c.until > now() THEN c.reason END         AS cooldown_reason,
       c.detail                                            AS cooldown_detail,
       CASE WHEN bk.learned_until IS NULL OR bk.learned_until > now()
            THEN bk.requests_per_minute END                AS requests_per_minute,
       bk.tokens_per_minute                                AS tokens_per_minute,
       CASE WHEN greatest(bk.request_tat, bk.token_tat) > now()
            THEN greatest(bk.request_tat, bk.token_tat) END AS bucket_full_at,
       CASE WHEN bk.learned_until > now() THEN bk.learned_until END AS pace_learned_until,
       coalesce(b.state = 'open' AND b.open_until <= now(), false) AS breaker_trial_due,
       coalesce(b.state = 'half_open' AND b.trial_token IS NOT NULL AND b.trial_expires_at > now(), false)
                                                           AS trial_in_flight,
       CASE WHEN bk.requests_per_minute > 0 AND (bk.learned_until IS NULL OR bk.learned_until > now())
            THEN layover.gcra_free(bk.request_tat, now(), bk.requests_per_minute / 60.0,
                                   layover.bucket_capacity(bk.requests_per_minute, bk.burst_ms)) END
                                                           AS request_permits,
       CASE WHEN bk.tokens_per_minute > 0
            THEN layover.gcra_free(bk.token_tat, now(), bk.tokens_per_minute / 60.0,
                                   layover.bucket_capacity(bk.tokens_per_minute, bk.burst_ms)) END
                                                           AS token_permits,
       CASE WHEN bk.provider_key IS NULL THEN NULL
            WHEN bk.learned_until IS NULL THEN 'configured'
            WHEN bk.learned_until <= now() THEN NULL
            WHEN bk.discovered THEN 'discovered'
            ELSE 'stated' END                              AS pace_source,
       CASE WHEN bk.discovered AND bk.learned_until > now() THEN bk.discovery_phase END AS discovery_phase,
       CASE WHEN bk.discovered AND bk.learned_until > now() THEN bk.discovery_ceiling END
                                                           AS discovery_ceiling_per_minute,
       CASE WHEN bk.discovered THEN bk.discovery_adjusted_at END AS discovery_adjusted_at,
       CASE WHEN bk.discovered THEN bk.discovery_decreased_at END AS discovery_decreased_at,
       CASE WHEN bk.discovered THEN bk.discovery_increases END AS discovery_increases,
       CASE WHEN bk.discovered THEN bk.discovery_decreases END AS discovery_decreases
FROM (SELECT provider_key FROM layover.breakers
      UNION SELECT provider_key FROM layover.cooldowns
      UNION SELECT provider_key FROM layover.buckets) k
LEFT JOIN layover.breakers b ON b.provider_key = k.provider_key
LEFT JOIN layover.cooldowns c ON c.provider_key = k.provider_key
LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key
WHERE k.provider_key NOT LIKE '%*';

COMMENT ON VIEW layover.provider_keys IS
    'Per provider key: breaker state (and whether its trial is due or in flight), active cooldown, bucket limits '
    '(configured, stated by a 429 or discovered: pace_source, pace_learned_until, discovery_*), permits free now and '
    'when the bucket is full again (bucket_full_at). Pattern rows (keys ending in *) are not keys.';

-- ---------------------------------------------------------------------------
-- token_buckets: one row per bucket and limited token dimension.
--   dimension        tokens (input + output) | input_tokens | output_tokens
--   per_minute       the limit
--   capacity         tokens that may be spent at once
--   free_now         tokens free now (negative: owed, after a charge for tokens a call used beyond its reservation)
--   full_at          when the dimension is full again (NULL: full now)
--   used_share       the dimension's share of their reservations the key's calls use (NULL: no report yet)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.token_buckets AS
SELECT bk.provider_key, d.dimension, d.per_minute,
       layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms)) AS capacity,
       layover.gcra_free(d.tat, now(), d.per_minute / 60.0,
                         layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms))) AS free_now,
       CASE WHEN d.tat > now() THEN d.tat END AS full_at,
       d.share AS used_share
FROM layover.buckets bk
CROSS JOIN LATERAL (VALUES ('tokens', bk.tokens_per_minute, bk.token_tat, bk.token_share),
                           ('input_tokens', bk.input_tokens_per_minute, bk.input_tat, bk.input_share),
                           ('output_tokens', bk.output_tokens_per_minute, bk.output_tat, bk.output_share))
    AS d(dimension, per_minute, tat, share)
WHERE d.per_minute > 0 AND bk.provider_key NOT LIKE '%*';

COMMENT ON VIEW layover.token_buckets IS
    'The token dimensions of each bucket: limit per minute, capacity, tokens free now, when full again, share of reservations used.';

-- ---------------------------------------------------------------------------
-- concurrency_limits: at most max_in_flight calls of a key in flight across every JVM (a provider
-- key or a limit key, exact or a prefix* pattern: a key matching a pattern gets a row of its own,
-- copied when a pick first meets it, whose limit follows the pattern's). The slots in use are the
-- key's jobs picked with a heartbeat fresher than the dead-worker limit (the pick counts them, one
-- probe of jobs_running_key, or of jobs_running_limit_keys for a limit key): a finished run frees its
-- slot with the write that ends it, a killed worker's slot comes back when its heartbeat goes stale,
-- and a job picked ahead of a free thread holds its slot from its pick.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.concurrency_limits (
    limit_key      text        PRIMARY KEY,
    max_in_flight  int         NOT NULL,
    configured_at  timestamptz NOT NULL DEFAULT now(),
    configured_by  text,
    pattern        text,                   -- the prefix* pattern this row was copied from; NULL: its own
    CONSTRAINT concurrency_limits_max_check CHECK (max_in_flight >= 1)
);

-- The prefix* patterns (layover.limit_rows matches a new key to them).
CREATE INDEX concurrency_limits_patterns_idx ON layover.concurrency_limits (limit_key) WHERE limit_key LIKE '%*';

-- Writes a worker's concurrency limit for a key or pattern (and the pattern's copies).
CREATE FUNCTION layover.configure_concurrency(p_key text, p_max int, p_by text) RETURNS void
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    INSERT INTO layover.concurrency_limits (limit_key, max_in_flight, configured_by)
    VALUES (p_key, p_max, p_by)
    ON CONFLICT (limit_key) DO UPDATE
    SET max_in_flight = excluded.max_in_flight, configured_at = now(), configured_by = excluded.configured_by,
        pattern = NULL
    WHERE layover.concurrency_limits.max_in_flight <> excluded.max_in_flight
       OR layover.concurrency_limits.pattern IS NOT NULL;
    UPDATE layover.concurrency_limits
    SET max_in_flight = p_max, configured_at = now(), configured_by = p_by
    WHERE pattern = p_key AND max_in_flight <> p_max;
END
$$;

-- ---------------------------------------------------------------------------
-- concurrency: per limit key, the limit and the calls in flight now (its jobs picked with a live
-- heartbeat, as the pick counts them; a killed worker's job counts until its heartbeat is stale).
-- ---------------------------------------------------------------------------
CREATE VIEW layover.concurrency AS
SELECT l.limit_key,
       l.max_in_flight,
       (SELECT count(*) FROM layover.scheduled_tasks t
        WHERE t.picked AND (t.provider_key = l.limit_key OR t.limit_keys @> ARRAY[l.limit_key]))  AS in_flight,
       (SELECT max(t.last_heartbeat) FROM layover.scheduled_tasks t
        WHERE t.picked AND (t.provider_key = l.limit_key OR t.limit_keys @> ARRAY[l.limit_key]))  AS last_heartbeat_at,
       l.configured_at,
       l.configured_by
FROM layover.concurrency_limits l
WHERE l.limit_key NOT LIKE '%*';

COMMENT ON VIEW layover.concurrency IS 'Per concurrency limit key: max_in_flight and the calls in flight now.';

-- ---------------------------------------------------------------------------
-- limit_overrides: an operator's limits for a key at run time (ProviderStates#setLimit, the
-- console's key page: "change a weight or a limit at run time, audited, reverted on request").
-- Every worker uses a row's dimensions for its key in place of the ones it configured
-- (Layover.Builder#bucket, #concurrencyLimit), within about a second: a change NOTIFYs
-- layover_provider_state, and the one-second provider-state refresh reads the table too. A NULL
-- dimension keeps the configured one. Deleting the row (ProviderStates#revertLimit) gives the
-- configured limits back. The console records both in layover.audit_log.
--   limit_key           a provider key or a limit key (exact; no patterns)
--   requests_per_minute, tokens_per_minute, input_tokens_per_minute, output_tokens_per_minute
--                       the key's bucket dimensions (NULL: as configured)
--   max_in_flight       the key's concurrency limit (NULL: as configured)
--   set_by, set_at, reason   who set it, when, why
-- Written by core's internal.gate.Overrides only.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.limit_overrides (
    limit_key                text        PRIMARY KEY,
    requests_per_minute      float8,
    tokens_per_minute        float8,
    input_tokens_per_minute  float8,
    output_tokens_per_minute float8,
    max_in_flight            int,
    set_by                   text        NOT NULL,
    set_at                   timestamptz NOT NULL DEFAULT now(),
    reason                   text,
    CONSTRAINT limit_overrides_key_check CHECK (length(limit_key) BETWEEN 1 AND 200),
    CONSTRAINT limit_overrides_some_check CHECK (coalesce(requests_per_minute, tokens_per_minute, input_tokens_per_minute,
        output_tokens_per_minute, max_in_flight) IS NOT NULL),
    CONSTRAINT limit_overrides_rates_check CHECK (coalesce(requests_per_minute, 1) > 0 AND coalesce(tokens_per_minute, 1) > 0
        AND coalesce(input_tokens_per_minute, 1) > 0 AND coalesce(output_tokens_per_minute, 1) > 0),
    CONSTRAINT limit_overrides_in_flight_check CHECK (coalesce(max_in_flight, 1) BETWEEN 1 AND 100000)
);

COMMENT ON TABLE layover.limit_overrides IS
    'Operators'' limits for a key at run time (V25): in place of the configured ones in every worker until deleted.';

CREATE FUNCTION layover.notify_limit_override() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('layover_provider_state', json_build_object(
            'table', 'limit_overrides',
            'key', coalesce(NEW.limit_key, OLD.limit_key),
            'by', coalesce(NEW.set_by, OLD.set_by))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER limit_overrides_notify AFTER INSERT OR UPDATE OR DELETE ON layover.limit_overrides
    FOR EACH ROW EXECUTE FUNCTION layover.notify_limit_override();

-- ===========================================================================
-- Fairness: fair share within a provider key's limit (docs/fairness.md)
-- ===========================================================================
--
-- Many tenants share one provider key. Without fairness the key's admissions go to its jobs in run
-- time order, so one tenant's 50,000-job backlog holds every other tenant back for its whole length.
-- With a fairness key on its jobs (JobType.Builder#fairnessKey, stored in
-- scheduled_tasks.fairness_key), a key's admissions go to its active fairness keys (the flows) in
-- proportion to their weights, work-conserving.
--
-- The discipline is start-time fair queueing (SFQ, Goyal et al. 1996), kept in the job table:
--   * a job enqueued due gets its tag at enqueue (layover.fair_tags, which reads and writes nothing
--     else): the later of its priority's virtual clock and its flow's last tag among its waiting
--     jobs, plus its cost / the flow's weight. A flow's jobs are cost / weight apart in virtual
--     time, and a flow that was idle starts at the clock: no credit is banked while idle, and a new
--     tenant is served from its first job on;
--   * the pick admits a key's tagged jobs in tag order, highest priority first, and moves each
--     priority's clock to the highest tag it admitted (fair_lines.class_clocks);
--   * a job moved to a later run time (a rate-limit reschedule, a retry, a pause) leaves the queue:
--     its tag is cleared, and when it is due again it goes with the key's untagged due jobs, which
--     the pick admits first, oldest first (they have waited).
-- Priorities within a key: the pick admits the highest priority first; a share of each key's
-- admissions (FairnessSettings#lowPriorityShare, default 0.1, a credit carried from pick to pick in
-- fair_lines.low_credit) goes to the jobs below the highest priority waiting, so batch work is slowed
-- by interactive work but never starved.
--
-- A job's cost: 1 on a key without token limits; with token limits, what it takes of the key's
-- bottleneck, the largest, over the limited dimensions, of its token estimate x the key's share /
-- the dimension's rate, in request permits when the key also limits requests (x the request rate),
-- so each tenant receives tokens, not calls, in proportion to its weight (Sheng et al. 2024's
-- virtual token counter).
--
-- Why SFQ and not deficit round robin: its state is the tags in the job rows and one clock per
-- priority and key, the pick reads only the index entries it takes (the cost does not grow with the
-- number of flows), weights are exact, and a flow arriving late interleaves at once.

-- ---------------------------------------------------------------------------
-- One row per provider key whose pick admitted tagged jobs. Written by the pick only.
--   class_clocks   per job priority ({"0": 12.5, "5": 40}): the highest tag of that priority admitted;
--                  a flow waking up starts at its priority's clock
--   low_credit     admissions owed to jobs below the highest priority waiting (the reserved share of
--                  every pick's admissions, added up; a pick takes the whole ones; reset when none wait)
--   picks, last_pick_at   what the picks did
-- ---------------------------------------------------------------------------
CREATE TABLE layover.fair_lines (
    provider_key     text        PRIMARY KEY,
    class_clocks     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    low_credit       float8      NOT NULL DEFAULT 0,
    picks            bigint      NOT NULL DEFAULT 0,
    last_pick_at     timestamptz
);

-- ---------------------------------------------------------------------------
-- Weights of fairness keys: a key, or a pattern with '*' for any text ('tenant:premium-*'); the
-- longest matching pattern wins; none: 1. origin 'config' rows are written by workers at start
-- (Layover.Builder#fairnessWeight; a start replaces config rows, never operator rows); origin
-- 'operator' rows by an operator at run time (ProviderStates#setFairnessWeight; the console
-- audits it in layover.audit_log with the weight before). configured_weight keeps what the
-- configuration says under an operator's weight, so that reverting (ProviderStates
-- #revertFairnessWeight) restores it (no configured weight: the row goes, the weight is 1 again).
-- A change applies to jobs tagged from then on.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.fairness_weights (
    pattern           text        PRIMARY KEY,
    weight            float8      NOT NULL,
    origin            text        NOT NULL DEFAULT 'config',
    configured_weight float8,
    configured_by     text,
    configured_at     timestamptz NOT NULL DEFAULT now(),
    reason            text,
    CONSTRAINT fairness_weights_weight_check CHECK (weight > 0 AND weight <= 1000000),
    CONSTRAINT fairness_weights_origin_check CHECK (origin IN ('config', 'operator')),
    CONSTRAINT fairness_weights_pattern_check CHECK (length(pattern) BETWEEN 1 AND 200)
);

-- The weight of a fairness key: the longest matching pattern's, operator rows before config rows.
CREATE FUNCTION layover.fairness_weight(p_fairness_key text)
    RETURNS float8 LANGUAGE sql STABLE AS
$$ SELECT coalesce((SELECT w.weight FROM layover.fairness_weights w
                    WHERE p_fairness_key LIKE replace(replace(replace(w.pattern, '\', '\\'), '%', '\%'), '*', '%')
                    ORDER BY (w.origin = 'operator') DESC, length(w.pattern) DESC, w.pattern
                    LIMIT 1), 1.0) $$;

-- The higher of two maps of priority -> virtual clock, priority by priority.
CREATE FUNCTION layover.clocks_merge(a jsonb, b jsonb)
    RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
    SELECT coalesce(jsonb_object_agg(k, greatest((a ->> k)::float8, (b ->> k)::float8)), '{}'::jsonb)
    FROM (SELECT jsonb_object_keys(coalesce(a, '{}'::jsonb)) UNION SELECT jsonb_object_keys(coalesce(b, '{}'::jsonb))) s(k)
$$;

-- ---------------------------------------------------------------------------
-- fairness: each provider key's flows with jobs, their weight and share.
-- One row per (provider_key, fairness_key) of a job with a fairness key that has not run.
--   waiting     jobs in the key's fair queue (tagged)      untagged  due jobs out of it (replayed,
--               rescheduled: the pick admits them first)  running   picked
--   weight      the weight a job tagged now gets (layover.fairness_weight)
--   share       weight / the sum of the weights of the key's flows with waiting jobs: the share of
--               the key's admissions the flow gets while all of them wait
--   lag         how far the flow's last tag is ahead of its priority's clock (virtual time)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.fairness AS
WITH jobs AS (
    SELECT t.provider_key, t.fairness_key,
           count(*) FILTER (WHERE t.fair_tag IS NOT NULL AND NOT t.picked) AS waiting,
           count(*) FILTER (WHERE t.fair_tag IS NULL AND NOT t.picked AND t.execution_time <= now()) AS untagged,
           count(*) FILTER (WHERE t.picked) AS running,
           max(t.fair_tag - coalesce((fl.class_clocks ->> coalesce(t.priority, 0)::text)::float8, 0))
               FILTER (WHERE t.fair_tag IS NOT NULL AND NOT t.picked) AS lag
    FROM layover.scheduled_tasks t
    LEFT JOIN layover.fair_lines fl ON fl.provider_key = t.provider_key
    WHERE t.fairness_key IS NOT NULL AND t.provider_key IS NOT NULL
    GROUP BY t.provider_key, t.fairness_key
), weighted AS (
    SELECT j.*, layover.fairness_weight(j.fairness_key) AS weight FROM jobs j
)
SELECT w.provider_key, w.fairness_key, w.waiting, w.untagged, w.running, w.weight,
       CASE WHEN w.waiting > 0
            THEN w.weight / sum(w.weight) FILTER (WHERE w.waiting > 0) OVER (PARTITION BY w.provider_key) END AS share,
       w.lag
FROM weighted w;

COMMENT ON VIEW layover.fairness IS
    'Each provider key''s fairness keys with jobs: waiting (in the fair queue), untagged, running, weight, share.';


-- ===========================================================================
-- Admission: the pick (docs/decisions/0001-the-pick-is-the-admission.md)
-- ===========================================================================
--
-- The statement that picks due jobs is the admission. For each provider key with due jobs it takes
-- only as many of the key's jobs as the key admits now (free permits and tokens of its bucket, free
-- concurrency slots; none while it cools down; its one trial while its breaker is half-open), in
-- its order (untagged due jobs oldest first, then the fair queue by priority and tag, a share kept
-- for lower priorities), and moves the key's state in the same call, on the database's clock. A job
-- its key does not admit is not touched: no reschedule, nothing stored on its row. Waiting behind a
-- limit costs no write; a success costs two job-row writes (the pick and the delete).
--
-- Where the state lives: a key's limits and bucket (tat per dimension) in layover.buckets (an
-- operator's limit in layover.limit_overrides over it), its concurrency limit in
-- layover.concurrency_limits (the slots in use are its jobs picked with a live heartbeat), its
-- cooldown and breaker in layover.cooldowns and layover.breakers, its fair queue's clocks in
-- layover.fair_lines, and each waiting job's place in its own row (run time, priority, tag). One
-- pick at a time admits for a key (a transaction-scoped advisory lock, taken without waiting:
-- a key another pick holds is left to it), so what a pick counts is what it takes.

-- ---------------------------------------------------------------------------
-- A key's limits in force, per second, and its bucket's state: an operator's limit over the row's
-- own (configured, stated by a provider, discovered); a stated or discovered pace whose time ran out
-- is no limit. One row, nulls where the key has no such limit. Shares (what the key's calls use of
-- their token reservation) clamped to [0.05, 1].
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.limits_in_force(p_key text, p_now timestamptz)
    RETURNS TABLE (rr float8, tr float8, ir float8, orr float8, rc float8, tc float8, ic float8, oc float8,
                   request_tat timestamptz, token_tat timestamptz, input_tat timestamptz, output_tat timestamptz,
                   token_share float8, input_share float8, output_share float8, max_in_flight int)
    LANGUAGE sql STABLE AS
$$
    SELECT r.rr, r.tr, r.ir, r.orr,
           CASE WHEN r.rr > 0 THEN layover.bucket_capacity(r.rr * 60, r.burst_ms) END,
           CASE WHEN r.tr > 0 THEN layover.bucket_capacity(r.tr * 60, r.tburst_ms) END,
           CASE WHEN r.ir > 0 THEN layover.bucket_capacity(r.ir * 60, r.tburst_ms) END,
           CASE WHEN r.orr > 0 THEN layover.bucket_capacity(r.orr * 60, r.tburst_ms) END,
           r.request_tat, r.token_tat, r.input_tat, r.output_tat,
           r.token_share, r.input_share, r.output_share, r.max_in_flight
    FROM (SELECT coalesce(o.requests_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                      THEN bk.requests_per_minute END) / 60.0 AS rr,
                 coalesce(o.tokens_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                    THEN bk.tokens_per_minute END) / 60.0 AS tr,
                 coalesce(o.input_tokens_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                          THEN bk.input_tokens_per_minute END) / 60.0 AS ir,
                 coalesce(o.output_tokens_per_minute, CASE WHEN bk.learned_until IS NULL OR bk.learned_until > p_now
                                                           THEN bk.output_tokens_per_minute END) / 60.0 AS orr,
                 coalesce(bk.burst_ms, 1000) AS burst_ms, coalesce(bk.token_burst_ms, bk.burst_ms, 1000) AS tburst_ms,
                 bk.request_tat, bk.token_tat, bk.input_tat, bk.output_tat,
                 least(1, greatest(0.05, coalesce(bk.token_share, 1))) AS token_share,
                 least(1, greatest(0.05, coalesce(bk.input_share, 1))) AS input_share,
                 least(1, greatest(0.05, coalesce(bk.output_share, 1))) AS output_share,
                 coalesce(o.max_in_flight, cl.max_in_flight) AS max_in_flight
          FROM (SELECT 1) one
          LEFT JOIN layover.buckets bk ON bk.provider_key = p_key
          LEFT JOIN layover.limit_overrides o ON o.limit_key = p_key
          LEFT JOIN layover.concurrency_limits cl ON cl.limit_key = p_key) r
$$;

-- ---------------------------------------------------------------------------
-- The tags of jobs enqueued due, in the order given (one call per provider key of an enqueue; the
-- owner's enqueue statements call it, core's job_insert*.sql). Each job's flow (fairness key) at its
-- priority starts at the later of that priority's clock and the flow's last tag among its waiting
-- jobs (one probe of jobs_fair_flow), and each job adds its cost / the flow's weight. Reads only:
-- concurrent enqueues of one flow may give equal tags, which the pick takes in run time order.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.fair_tags(p_key text, p_now timestamptz, p_flows text[], p_priorities int[],
                                  p_tokens float8[], p_input float8[], p_output float8[])
    RETURNS float8[] LANGUAGE sql STABLE AS
$$
    WITH j AS (
        SELECT * FROM unnest(p_flows, p_priorities, p_tokens, p_input, p_output) WITH ORDINALITY
                 AS u(flow, pr, t, i, o, ord)
    ), k AS (
        SELECT l.*, fl.class_clocks FROM layover.limits_in_force(p_key, p_now) l
        LEFT JOIN layover.fair_lines fl ON fl.provider_key = p_key
    ), f AS (
        SELECT d.flow, d.pr, layover.fairness_weight(d.flow) AS w,
               greatest(coalesce((k.class_clocks ->> d.pr::text)::float8, 0),
                        coalesce((SELECT t.fair_tag FROM layover.scheduled_tasks t
                                  WHERE t.provider_key = p_key AND t.fairness_key = d.flow AND t.priority = d.pr
                                    AND NOT t.picked AND t.fair_tag IS NOT NULL
                                  ORDER BY t.fair_tag DESC LIMIT 1), 0)) AS start
        FROM (SELECT DISTINCT flow, pr FROM j) d, k
    )
    SELECT array_agg(x.tag ORDER BY x.ord) FROM (
        SELECT j.ord, f.start + sum(
                   CASE WHEN coalesce(k.tr, 0) + coalesce(k.ir, 0) + coalesce(k.orr, 0) > 0
                        THEN greatest(CASE WHEN k.rr > 0 THEN 1 END,
                                      coalesce(j.t, 0) * k.token_share / nullif(k.tr, 0) * coalesce(k.rr, 1),
                                      coalesce(j.i, 0) * k.input_share / nullif(k.ir, 0) * coalesce(k.rr, 1),
                                      coalesce(j.o, 0) * k.output_share / nullif(k.orr, 0) * coalesce(k.rr, 1),
                                      1e-6)
                        ELSE 1 END / f.w) OVER (PARTITION BY j.flow, j.pr ORDER BY j.ord) AS tag
        FROM j JOIN f ON f.flow = j.flow AND f.pr = j.pr, k
    ) x
$$;

-- ---------------------------------------------------------------------------
-- A key matching a prefix* pattern's limits gets rows of its own (its own tat, its own count), and a
-- key with an operator's rates but no bucket a row for its tat (whose own rates never apply:
-- learned_until is in the past). Called by the pick and the take for the keys they meet: a key that
-- has its rows costs one index probe per table; only a key without one is matched to the patterns
-- (through their partial indexes: a pattern's keys may have thousands of rows).
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.limit_rows(p_keys text[]) RETURNS void
    LANGUAGE plpgsql AS
$$
BEGIN
    IF EXISTS (SELECT 1 FROM layover.buckets b WHERE b.provider_key LIKE '%*') THEN
        INSERT INTO layover.buckets (provider_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute,
                                     output_tokens_per_minute, burst_ms, token_burst_ms, configured_by, pattern)
        SELECT u.k, p.requests_per_minute, p.tokens_per_minute, p.input_tokens_per_minute,
               p.output_tokens_per_minute, p.burst_ms, p.token_burst_ms, p.configured_by, p.provider_key
        FROM unnest(p_keys) u(k)
        CROSS JOIN LATERAL (SELECT * FROM layover.buckets b
                            WHERE b.provider_key LIKE '%*' AND starts_with(u.k, left(b.provider_key, -1))
                            ORDER BY length(b.provider_key) DESC LIMIT 1) p
        WHERE NOT u.k LIKE '%*' AND NOT EXISTS (SELECT 1 FROM layover.buckets x WHERE x.provider_key = u.k)
        ON CONFLICT ON CONSTRAINT buckets_pkey DO NOTHING;
    END IF;
    IF EXISTS (SELECT 1 FROM layover.concurrency_limits c WHERE c.limit_key LIKE '%*') THEN
        INSERT INTO layover.concurrency_limits (limit_key, max_in_flight, configured_by, pattern)
        SELECT u.k, p.max_in_flight, p.configured_by, p.limit_key
        FROM unnest(p_keys) u(k)
        CROSS JOIN LATERAL (SELECT * FROM layover.concurrency_limits c
                            WHERE c.limit_key LIKE '%*' AND starts_with(u.k, left(c.limit_key, -1))
                            ORDER BY length(c.limit_key) DESC LIMIT 1) p
        WHERE NOT u.k LIKE '%*' AND NOT EXISTS (SELECT 1 FROM layover.concurrency_limits x WHERE x.limit_key = u.k)
        ON CONFLICT ON CONSTRAINT concurrency_limits_pkey DO NOTHING;
    END IF;
    INSERT INTO layover.buckets (provider_key, requests_per_minute, tokens_per_minute, input_tokens_per_minute,
                                 output_tokens_per_minute, burst_ms, learned_until, configured_by)
    SELECT o.limit_key, o.requests_per_minute, o.tokens_per_minute, o.input_tokens_per_minute,
           o.output_tokens_per_minute, 1000, '-infinity', 'operator'
    FROM layover.limit_overrides o
    WHERE o.limit_key = ANY(p_keys)
      AND coalesce(o.requests_per_minute, o.tokens_per_minute, o.input_tokens_per_minute, o.output_tokens_per_minute) > 0
      AND NOT EXISTS (SELECT 1 FROM layover.buckets x WHERE x.provider_key = o.limit_key)
    ON CONFLICT ON CONSTRAINT buckets_pkey DO NOTHING;
END
$$;

-- ---------------------------------------------------------------------------
-- One call's request permit and token need ({combined, input, output}) from a key's bucket, taken
-- whole or not at all: for a call its job's pick did not admit (a fallback chain's endpoint, a key
-- pool's key: background, p_interactive false) or an interactive call (InteractiveCalls, p_interactive
-- true). Background leaves layover.interactive_reserve(p_reserve, p_window_s) of each dimension free;
-- an interactive take is not limited by it, and stamps the key's interactive_at whether it takes or
-- not (interactive demand is arriving). Returns whether it was taken, when it would fit otherwise, and
-- what it reserved at which token rates (for the settle after the call). p_now: NULL for the
-- database's clock.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.take(p_key text, p_now timestamptz, p_need float8[], p_interactive boolean, p_reserve float8,
                             p_window_s float8)
    RETURNS TABLE (taken boolean, fits_at timestamptz, reserved float8[], rates float8[])
    LANGUAGE plpgsql AS
$$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := coalesce(p_now, clock_timestamp());
    l      record;
    v_need float8[];
    v_fits timestamptz;
    v_iat  timestamptz;
    v_keep float8 := 1;
BEGIN
    PERFORM set_config('lock_timeout', '2s', true);
    PERFORM layover.limit_rows(ARRAY[p_key]);
    SELECT b.interactive_at INTO v_iat FROM layover.buckets b WHERE b.provider_key = p_key FOR UPDATE;
    SELECT * INTO l FROM layover.limits_in_force(p_key, v_now);
    IF p_interactive THEN
        UPDATE layover.buckets b SET interactive_at = greatest(b.interactive_at, v_now) WHERE b.provider_key = p_key;
    ELSE
        v_keep := 1 - layover.interactive_reserve(v_iat, v_now, p_reserve, p_window_s);
    END IF;
    -- what the key's calls use of such a need (its share of each dimension), as the pick reserves
    v_need := ARRAY[CASE WHEN l.tr > 0 THEN coalesce(p_need[1], 0) * l.token_share ELSE 0 END,
                    CASE WHEN l.ir > 0 THEN coalesce(p_need[2], 0) * l.input_share ELSE 0 END,
                    CASE WHEN l.orr > 0 THEN coalesce(p_need[3], 0) * l.output_share ELSE 0 END];
    v_fits := greatest(v_now,
                       layover.gcra_fits_at(l.request_tat, l.rr, l.rc * v_keep, 1),
                       layover.gcra_fits_at(l.token_tat, l.tr, l.tc * v_keep, v_need[1]),
                       layover.gcra_fits_at(l.input_tat, l.ir, l.ic * v_keep, v_need[2]),
                       layover.gcra_fits_at(l.output_tat, l.orr, l.oc * v_keep, v_need[3]));
    IF v_fits > v_now THEN
        RETURN QUERY SELECT false, v_fits, NULL::float8[], NULL::float8[];
        RETURN;
    END IF;
    UPDATE layover.buckets b
    SET request_tat = layover.gcra_take(b.request_tat, v_now, l.rr, 1),
        token_tat = layover.gcra_take(b.token_tat, v_now, l.tr, v_need[1]),
        input_tat = layover.gcra_take(b.input_tat, v_now, l.ir, v_need[2]),
        output_tat = layover.gcra_take(b.output_tat, v_now, l.orr, v_need[3])
    WHERE b.provider_key = p_key;
    RETURN QUERY SELECT true, v_now, v_need, ARRAY[coalesce(l.tr, 0), coalesce(l.ir, 0), coalesce(l.orr, 0)];
END
$$;

-- ---------------------------------------------------------------------------
-- The breaker trial calls the pick admits: of each key of p_keys (the keys the pick holds) whose
-- breaker's open period is over, or whose trial claim is missing or stale, and that has no cooldown
-- and a due job of the types p_types, claims the one trial call. Writes layover.breakers: half_open,
-- a new trial_token, claimed by p_worker at p_now, expiring after p_timeout. The gate's write, as
-- core's StateSql.CLAIM_TRIAL for one call. Returns each key claimed with its token.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.claim_trials(p_keys text[], p_types text[], p_worker text, p_now timestamptz,
                                     p_timeout interval)
    RETURNS TABLE (provider_key text, trial_token text)
    LANGUAGE plpgsql AS
$$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE layover.breakers b
    SET previous_state = b.state, state = 'half_open', trial_token = md5(random()::text || clock_timestamp()::text),
        trial_claimed_by = p_worker, trial_claimed_at = p_now, trial_expires_at = p_now + p_timeout,
        reason = CASE WHEN b.state = 'open' THEN 'open period over; trial call claimed by ' || p_worker
                      ELSE 'stale trial claim taken over by ' || p_worker END,
        changed_at = CASE WHEN b.state = 'open' THEN p_now ELSE b.changed_at END,
        changed_by = p_worker, change_origin = 'pick'
    WHERE b.provider_key = ANY(p_keys) AND b.state <> 'closed'
      AND ((b.state = 'open' AND b.open_until <= p_now)
           OR (b.state = 'half_open' AND (b.trial_token IS NULL OR b.trial_expires_at <= p_now)))
      AND NOT EXISTS (SELECT 1 FROM layover.cooldowns cd WHERE cd.provider_key = b.provider_key AND cd.until > p_now)
      AND EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                  WHERE t.provider_key = b.provider_key AND NOT t.picked AND t.execution_time <= p_now
                    AND t.task_name = ANY(p_types))
    RETURNING b.provider_key, b.trial_token;
END
$$;

COMMENT ON FUNCTION layover.claim_trials(text[], text[], text, timestamptz, interval) IS
    'The pick''s claims of breaker trial calls (half_open, a new trial_token) for the keys it holds; the gate''s write of layover.breakers.';

-- ---------------------------------------------------------------------------
-- How many more jobs a limit key (a tenant's, or a provider key named as one) admits now: the
-- requests its bucket has free, and the slots its concurrency limit has free (its jobs picked with
-- a live heartbeat, p_dead being how old a heartbeat may be); 1,000,000 when it limits neither.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.limit_free(p_key text, p_now timestamptz, p_dead interval)
    RETURNS float8 LANGUAGE sql STABLE AS
$$
    SELECT coalesce(least(
               CASE WHEN l.rr > 0 THEN floor(layover.gcra_free(l.request_tat, p_now, l.rr, l.rc)) END,
               l.max_in_flight - (SELECT count(*) FROM layover.scheduled_tasks x
                                  WHERE (x.provider_key = p_key OR x.limit_keys @> ARRAY[p_key])
                                    AND x.picked AND x.last_heartbeat > p_now - p_dead)),
           1000000)
    FROM layover.limits_in_force(p_key, p_now) l
$$;

-- ---------------------------------------------------------------------------
-- The provider keys with jobs not picked, in turn: from p_after's successor on, then from the first
-- key round to p_after; each with whether it has a job of the types p_types due at p_now. A loose
-- index scan of the two queues' indexes (one probe per queue and key) and one probe for due-ness per
-- key. The walk stops at p_max keys with a due job, or at p_walk keys in all: its last key is where
-- the next pick's turn starts when this one is not full, so keys with nothing due or nothing admitted
-- never hide the keys behind them.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.pick_keys(p_after text, p_max int, p_walk int, p_now timestamptz, p_types text[])
    RETURNS TABLE (k text, due boolean) LANGUAGE plpgsql STABLE AS
$$
#variable_conflict use_column
BEGIN
    -- plpgsql, not sql: its plan is kept for the session, where a sql function's is made at every call
    RETURN QUERY
    WITH RECURSIVE walk(k, wrapped, n, due, n_due) AS (
        SELECT p_after, false, 0, false, 0
        UNION ALL
        SELECT y.k, y.wrapped, w.n + 1, y.due, w.n_due + y.due::int
        FROM walk w
        CROSS JOIN LATERAL (
            -- the next key after w's (the first one, once past the last)
            SELECT least((SELECT t.provider_key FROM layover.scheduled_tasks t
                          WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL
                            AND t.provider_key > w.k
                          ORDER BY t.provider_key LIMIT 1),
                         (SELECT t.provider_key FROM layover.scheduled_tasks t
                          WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL
                            AND t.provider_key > w.k
                          ORDER BY t.provider_key LIMIT 1)) AS k
        ) a
        CROSS JOIN LATERAL (
            SELECT CASE WHEN a.k IS NULL AND NOT w.wrapped
                        THEN least((SELECT t.provider_key FROM layover.scheduled_tasks t
                                    WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NULL
                                    ORDER BY t.provider_key LIMIT 1),
                                   (SELECT t.provider_key FROM layover.scheduled_tasks t
                                    WHERE NOT t.picked AND t.provider_key IS NOT NULL AND t.fair_tag IS NOT NULL
                                    ORDER BY t.provider_key LIMIT 1)) END AS k
        ) b
        CROSS JOIN LATERAL (
            -- whether it has a due job: its oldest job not picked, through (provider_key, execution_time), past
            -- only its running jobs (ordered, so that no plan scans the table from its start instead)
            SELECT coalesce(a.k, b.k) AS k, w.wrapped OR a.k IS NULL AS wrapped,
                   (SELECT t.execution_time FROM layover.scheduled_tasks t
                    WHERE t.provider_key = coalesce(a.k, b.k) AND t.execution_time <= p_now AND NOT t.picked
                      AND t.task_name = ANY(p_types)
                    ORDER BY t.execution_time LIMIT 1) IS NOT NULL AS due
        ) y
        WHERE y.k IS NOT NULL AND (NOT y.wrapped OR y.k <= p_after) AND w.n_due < p_max AND w.n < p_walk
    )
    SELECT w.k, w.due FROM walk w WHERE w.n > 0 ORDER BY w.n;
END
$$;

-- ---------------------------------------------------------------------------
-- layover.pick: up to p_limit due jobs of the job types p_types, picked by p_worker (core's Picker,
-- through db-scheduler's lock-and-fetch; core owns it as it owns every write of the job table). Each
-- row is the job's row after the pick with the verdict the job runs by:
--   run          admitted (reserved: the tokens its admission took per dimension, at rates per second)
--   trial        admitted as its key's one breaker trial (trial_token: the claim)
--   breaker_open taken to be parked: its key's breaker is open (the rule table: never called)
--   deferral     taken to be parked rate_limit_exhausted: due, not admitted for longer than its type's
--                maxDeferral (p_options.deferral_s; the head of its key's untagged queue is checked)
--   too_large    taken to be parked rejected: its token estimate is more than its key can ever admit
--   deadline     taken because its deadline passed while it waited (its run parks it)
--   turn         no job: when the keys' section is not full, the key the next pick's turn starts after
--                (the last key it walked; else the caller passes the last key served, the highest turn)
-- In order: jobs past their deadline; then each key with a due job in turn from p_after's successor (turn: its
-- place), as many of its jobs as it admits, until
-- three quarters of the pick are taken when jobs without a key are due too; then jobs without a key,
-- oldest (or, with p_options.priority, highest priority) first. p_now: NULL for the database's clock.
-- Options: dead_after_s (a picked job's heartbeat older than this holds no concurrency slot; 40),
-- trial_timeout_s (60), low_priority_share (0.1), limit_keys (whether jobs have limit keys), priority,
-- deferral_s ({job type: seconds}, 3600 when missing), interactive_share (0.25) and interactive_window_s (1):
-- of a key whose interactive_at is recent, the pick leaves that share of each dimension free
-- (layover.interactive_reserve).
-- Writes: the job rows it takes (picked); the buckets' permits and tokens its admissions spend, and
-- the fair queues' lines (fair_lines), in the statement that takes the jobs; the breaker trials it
-- admits through the gate's layover.claim_trials, and a key's limit rows through layover.limit_rows.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.pick(p_worker text, p_now timestamptz, p_limit int, p_types text[], p_after text,
                             p_options jsonb)
    RETURNS TABLE (task_name text, task_instance text, task_data bytea, execution_time timestamptz,
                   picked boolean, picked_by text, last_success timestamptz, last_failure timestamptz,
                   consecutive_failures int, last_heartbeat timestamptz, version bigint, priority smallint,
                   provider_key text, verdict text, trial_token text, reserved float8[], rates float8[], detail text,
                   turn bigint)
    LANGUAGE plpgsql AS
$$
#variable_conflict use_column
DECLARE
    v_now          timestamptz := coalesce(p_now, clock_timestamp());
    v_dead         interval := make_interval(secs => coalesce((p_options ->> 'dead_after_s')::float8, 40));
    v_trial        interval := make_interval(secs => coalesce((p_options ->> 'trial_timeout_s')::float8, 60));
    v_low          float8 := coalesce((p_options ->> 'low_priority_share')::float8, 0.1);
    v_ishare       float8 := coalesce((p_options ->> 'interactive_share')::float8, 0.25);
    v_iwindow      float8 := coalesce((p_options ->> 'interactive_window_s')::float8, 1);
    v_keyed        int;
    v_keys         text[] := '{}';
    v_last         text;
    v_lkeys        text[] := '{}';
    v_held         text[];
    v_free         text[];
    v_more         text[];
    v_blocked      text[] := '{}';
    v_lk_names     text[] := '{}';
    v_lk_free      float8[] := '{}';
    v_round        int;
    v_trial_keys   text[];
    v_trial_tokens text[];
    v_taken        int := 0;
    v_n            int;
BEGIN
    -- nothing here waits long for a lock another transaction holds (a bucket row a settle writes)
    PERFORM set_config('lock_timeout', '2s', true);
    -- and no JIT: its queries' estimates pass jit_above_cost on a deep queue, and compiling them cost
    -- each pick tens of milliseconds, far more than running them
    PERFORM set_config('jit', 'off', true);
    -- 1. jobs whose deadline passed while they waited, whatever their key admits: their runs park them
    RETURN QUERY
    WITH chosen AS (
        SELECT t.task_name, t.task_instance FROM layover.scheduled_tasks t
        WHERE t.deadline < v_now AND NOT t.picked AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
        ORDER BY t.deadline LIMIT least(p_limit, 100)
        FOR UPDATE SKIP LOCKED
    )
    UPDATE layover.scheduled_tasks t
    SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
    FROM chosen c WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
    RETURNING t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
              t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
              'deadline'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint;
    GET DIAGNOSTICS v_taken = ROW_COUNT;

    -- 2. jobs with a provider key, as many of each key's as it admits
    v_keyed := CASE WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                                 WHERE NOT t.picked AND t.provider_key IS NULL AND t.execution_time <= v_now
                                   AND t.task_name = ANY(p_types))
                    THEN ceil((p_limit - v_taken) * 0.75)::int
                    ELSE p_limit - v_taken END;
    IF v_keyed > 0 THEN
        SELECT coalesce(array_agg(w.k ORDER BY w.ord) FILTER (WHERE w.due), '{}'), (array_agg(w.k ORDER BY w.ord DESC))[1]
        INTO v_keys, v_last
        FROM layover.pick_keys(coalesce(p_after, ''), greatest(p_limit, 64), 512, v_now, p_types)
             WITH ORDINALITY w(k, due, ord);
    END IF;
    IF v_keyed > 0 AND cardinality(v_keys) > 0 THEN
        IF coalesce((p_options ->> 'limit_keys')::boolean, false) THEN
            -- the limit keys (tenants) of the jobs each key would admit first, in the orders of its queues below
            -- (a job whose limit keys are not held by this pick is not admitted by it). A limit key with nothing
            -- free now, or held by another pick, blocks: its jobs are passed over below, and the limit keys of
            -- the jobs behind them are gathered too (at most three rounds)
            FOR v_round IN 1..3 LOOP
                v_more := ARRAY(
                    SELECT DISTINCT lk FROM unnest(v_keys) u(k)
                    CROSS JOIN LATERAL (
                        (SELECT t.limit_keys FROM layover.scheduled_tasks t
                         WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NULL AND t.execution_time <= v_now
                           AND t.task_name = ANY(p_types) AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                         ORDER BY t.priority DESC NULLS LAST, t.execution_time, t.task_instance LIMIT v_keyed)
                        UNION ALL
                        (SELECT t.limit_keys FROM layover.scheduled_tasks t
                         WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                           AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                           AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                         ORDER BY t.priority DESC NULLS LAST, t.fair_tag LIMIT v_keyed)
                        UNION ALL
                        (SELECT t.limit_keys FROM layover.scheduled_tasks t
                         WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                           AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                           AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                           AND t.priority < (SELECT h.priority FROM layover.scheduled_tasks h
                                             WHERE h.provider_key = u.k AND NOT h.picked AND h.fair_tag IS NOT NULL
                                               AND h.task_name = ANY(p_types)
                                             ORDER BY h.priority DESC NULLS LAST, h.fair_tag LIMIT 1)
                         ORDER BY t.priority DESC NULLS LAST, t.fair_tag LIMIT v_keyed)) j
                    CROSS JOIN LATERAL unnest(j.limit_keys) lk
                    WHERE lk <> ALL(v_lkeys));
                EXIT WHEN cardinality(v_more) = 0;
                v_lkeys := v_lkeys || v_more;
                PERFORM layover.limit_rows(ARRAY(SELECT k FROM unnest(v_more) k
                                                 WHERE pg_try_advisory_xact_lock(1282371, hashtext(k))));
                -- what each admits now: requests free, slots free (its jobs picked with a live heartbeat)
                SELECT v_blocked || coalesce(array_agg(f.k) FILTER (WHERE f.free < 1), '{}'),
                       v_lk_names || coalesce(array_agg(f.k) FILTER (WHERE f.free >= 1), '{}'),
                       v_lk_free || coalesce(array_agg(f.free) FILTER (WHERE f.free >= 1), '{}')
                INTO v_blocked, v_lk_names, v_lk_free
                FROM (SELECT m.k, CASE WHEN NOT pg_try_advisory_xact_lock(1282371, hashtext(m.k)) THEN 0
                                       ELSE layover.limit_free(m.k, v_now, v_dead) END AS free
                      FROM unnest(v_more) m(k)) f;
                EXIT WHEN NOT (v_blocked && v_more);
            END LOOP;
        END IF;
        -- one pick at a time admits for a key: a key another pick holds is left to it
        v_held := ARRAY(SELECT k FROM unnest(v_keys || v_lkeys) k WHERE pg_try_advisory_xact_lock(1282371, hashtext(k)));
        PERFORM layover.limit_rows(v_held);
        -- the one trial call of each held key whose breaker's open period is over, for a key with a due job
        SELECT coalesce(array_agg(c.provider_key), '{}'), coalesce(array_agg(c.trial_token), '{}')
        INTO v_trial_keys, v_trial_tokens
        FROM layover.claim_trials(v_held, p_types, p_worker, v_now, v_trial) c;

        -- a new statement, whose snapshot sees every pick that held these keys before this one: each key in
        -- turn, as many of its jobs as it admits, until the pick is full (the keys' reads stop there)
        RETURN QUERY
        WITH cand AS (
            SELECT u.ord, s.*, j.*
            FROM unnest(v_keys) WITH ORDINALITY AS u(k, ord)
            CROSS JOIN LATERAL (
                -- the key: its mode, what its limits admit now (n jobs, free tokens), its fair queue's credit
                SELECT m.*,
                       CASE m.mode
                           WHEN 'run' THEN greatest(0, least(floor(coalesce(m.req_free, v_keyed)),
                                                             coalesce(m.slots_free, v_keyed), v_keyed))::int
                           WHEN 'trial' THEN 1
                           WHEN 'open' THEN least(v_keyed, 100)
                           ELSE 0 END AS n,
                       m.mode = 'run' AND EXISTS (
                           SELECT 1 FROM layover.scheduled_tasks t
                           WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                             AND t.task_name = ANY(p_types)
                             AND t.priority < (SELECT h.priority FROM layover.scheduled_tasks h
                                               WHERE h.provider_key = u.k AND NOT h.picked AND h.fair_tag IS NOT NULL
                                                 AND h.task_name = ANY(p_types)
                                               ORDER BY h.priority DESC NULLS LAST, h.fair_tag LIMIT 1)) AS has_low
                FROM (SELECT l.*,
                             CASE WHEN NOT (u.k = ANY(v_held)) THEN 'elsewhere'
                                  WHEN cd.until IS NOT NULL THEN 'cooling'
                                  WHEN br.state = 'open' AND br.open_until > v_now THEN 'open'
                                  WHEN u.k = ANY(v_trial_keys) THEN 'trial'
                                  WHEN coalesce(br.state, 'closed') <> 'closed' THEN 'trial_out'
                                  ELSE 'run' END AS mode,
                             v_trial_tokens[array_position(v_trial_keys, u.k)] AS token,
                             br.open_until, br.reason AS b_reason, coalesce(fl.low_credit, 0) AS low_credit,
                             -- less the share left for interactive calls while they are arriving
                             CASE WHEN l.rr > 0 THEN layover.gcra_free(l.request_tat, v_now, l.rr, l.rc)
                                                     - ir.share * l.rc END AS req_free,
                             CASE WHEN l.tr > 0 THEN layover.gcra_free(l.token_tat, v_now, l.tr, l.tc)
                                                     - ir.share * l.tc END AS tok_free,
                             CASE WHEN l.ir > 0 THEN layover.gcra_free(l.input_tat, v_now, l.ir, l.ic)
                                                     - ir.share * l.ic END AS in_free,
                             CASE WHEN l.orr > 0 THEN layover.gcra_free(l.output_tat, v_now, l.orr, l.oc)
                                                     - ir.share * l.oc END AS out_free,
                             CASE WHEN l.max_in_flight IS NOT NULL THEN l.max_in_flight - (
                                  SELECT count(*) FROM layover.scheduled_tasks x
                                  WHERE x.provider_key = u.k AND x.picked AND x.last_heartbeat > v_now - v_dead) END AS slots_free
                      FROM layover.limits_in_force(u.k, v_now) l
                      CROSS JOIN LATERAL (SELECT coalesce(max(layover.interactive_reserve(bk.interactive_at, v_now,
                                                                                          v_ishare, v_iwindow)), 0)
                                          FROM layover.buckets bk WHERE bk.provider_key = u.k) ir(share)
                      LEFT JOIN layover.breakers br ON br.provider_key = u.k
                      LEFT JOIN layover.cooldowns cd ON cd.provider_key = u.k AND cd.until > v_now
                      LEFT JOIN layover.fair_lines fl ON fl.provider_key = u.k) m
            ) s
            CROSS JOIN LATERAL (
                -- its jobs in its order, each with its verdict: untagged due jobs, highest priority then oldest first
                -- (and a few past its admission, read to see whether a rate limit kept them waiting longer than
                -- their type's maxDeferral: a wait for a concurrency slot or a worker never parks), then the low
                -- share of its fair queue, then the fair queue in tag order; a job of a blocked limit key is passed over
                WITH d AS (
                    SELECT x.*, row_number() OVER (ORDER BY x.queue, x.pr DESC, x.ordkey, x.execution_time,
                                                            x.task_instance) AS rn0
                    FROM (
                        SELECT DISTINCT ON (a.task_instance, a.task_name) a.*
                        FROM (
                            (SELECT t.task_name, t.task_instance, t.execution_time, t.priority, t.fair_tag,
                                    t.token_estimate, t.limit_keys, 1 AS queue, coalesce(t.priority, -32768) AS pr,
                                    extract(epoch FROM t.execution_time)::float8 AS ordkey
                             FROM layover.scheduled_tasks t
                             WHERE t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NULL
                               AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                               AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                             ORDER BY t.priority DESC NULLS LAST, t.execution_time, t.task_instance
                             LIMIT s.n + 8)
                            UNION ALL
                            (SELECT t.task_name, t.task_instance, t.execution_time, t.priority, t.fair_tag,
                                    t.token_estimate, t.limit_keys, 2, coalesce(t.priority, -32768), t.fair_tag
                             FROM layover.scheduled_tasks t
                             WHERE s.has_low AND t.provider_key = u.k AND NOT t.picked
                               AND t.fair_tag IS NOT NULL AND t.execution_time <= v_now
                               AND t.task_name = ANY(p_types) AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                               AND t.priority < (SELECT h.priority FROM layover.scheduled_tasks h
                                                 WHERE h.provider_key = u.k AND NOT h.picked AND h.fair_tag IS NOT NULL
                                                   AND h.task_name = ANY(p_types)
                                                 ORDER BY h.priority DESC NULLS LAST, h.fair_tag LIMIT 1)
                             ORDER BY t.priority DESC NULLS LAST, t.fair_tag
                             LIMIT least(s.n, floor(s.low_credit + v_low * s.n))::int)
                            UNION ALL
                            (SELECT t.task_name, t.task_instance, t.execution_time, t.priority, t.fair_tag,
                                    t.token_estimate, t.limit_keys, 3, coalesce(t.priority, -32768), t.fair_tag
                             FROM layover.scheduled_tasks t
                             WHERE s.n > 0 AND t.provider_key = u.k AND NOT t.picked AND t.fair_tag IS NOT NULL
                               AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                               AND NOT (coalesce(t.limit_keys, '{}') && v_blocked)
                             ORDER BY t.priority DESC NULLS LAST, t.fair_tag
                             LIMIT s.n)
                        ) a
                        ORDER BY a.task_instance, a.task_name, a.queue
                    ) x
                ), tk AS (
                    -- whether each of its limit keys has a place left for it, in the key's order
                    SELECT y.task_name, y.task_instance, bool_and(y.ok) AS ok
                    FROM (SELECT d.task_name, d.task_instance,
                                 lk.key = u.k OR row_number() OVER (PARTITION BY lk.key ORDER BY d.rn0)
                                     <= coalesce(v_lk_free[array_position(v_lk_names, lk.key)], 0) AS ok
                          FROM d CROSS JOIN LATERAL unnest(d.limit_keys) lk(key)) y
                    GROUP BY y.task_name, y.task_instance
                )
                SELECT f.*,
                       CASE WHEN f.too_large AND s.mode IN ('run', 'trial') THEN 'too_large'
                            WHEN f.fits AND s.mode = 'open' THEN 'breaker_open'
                            WHEN f.fits AND s.mode = 'trial' THEN 'trial'
                            WHEN f.fits THEN 'run'
                            WHEN f.queue = 1 AND f.tenant_ok
                                 AND (s.mode IN ('cooling', 'trial_out')
                                      OR (s.mode = 'run' AND coalesce(s.slots_free, 1) > 0
                                          AND (f.rn <= s.n OR (s.rr > 0 AND f.rn > floor(greatest(s.req_free, 0))))))
                                 AND f.execution_time < v_now - make_interval(
                                     secs => coalesce((p_options -> 'deferral_s' ->> f.task_name)::float8, 3600))
                            THEN 'deferral' END AS verdict
                FROM (
                    SELECT r.*,
                           CASE s.mode
                               WHEN 'trial' THEN r.rn = 1 AND NOT r.too_large AND r.tenant_ok
                               WHEN 'open' THEN r.rn <= s.n
                               WHEN 'run' THEN r.rn <= s.n AND NOT r.too_large AND r.tenant_ok
                                   AND (coalesce(s.tr, 0) <= 0 OR sum(r.fit_t) OVER w <= greatest(s.tok_free, 0))
                                   AND (coalesce(s.ir, 0) <= 0 OR sum(r.fit_i) OVER w <= greatest(s.in_free, 0))
                                   AND (coalesce(s.orr, 0) <= 0 OR sum(r.fit_o) OVER w <= greatest(s.out_free, 0))
                               ELSE false END AS fits
                    FROM (
                        SELECT q.*,
                               q.need_t > coalesce(s.tc, 'infinity') OR q.need_i > coalesce(s.ic, 'infinity')
                                   OR q.need_o > coalesce(s.oc, 'infinity') AS too_large,
                               CASE WHEN q.need_t > coalesce(s.tc, 'infinity') THEN 0 ELSE q.need_t END AS fit_t,
                               CASE WHEN q.need_i > coalesce(s.ic, 'infinity') THEN 0 ELSE q.need_i END AS fit_i,
                               CASE WHEN q.need_o > coalesce(s.oc, 'infinity') THEN 0 ELSE q.need_o END AS fit_o
                        FROM (
                            -- a job its limit keys refuse (no place left in one of them) takes none of the key's
                            SELECT b.*, row_number() OVER (ORDER BY NOT b.tenant_ok, b.rn0) AS rn,
                                   CASE WHEN s.tr > 0 THEN coalesce(b.token_estimate[1], 0) * s.token_share ELSE 0 END AS need_t,
                                   CASE WHEN s.ir > 0 THEN coalesce(b.token_estimate[2], 0) * s.input_share ELSE 0 END AS need_i,
                                   CASE WHEN s.orr > 0 THEN coalesce(b.token_estimate[3], 0) * s.output_share ELSE 0 END AS need_o
                            FROM (
                                SELECT d.*, coalesce(tk.ok, true) AS tenant_ok
                                FROM d LEFT JOIN tk ON tk.task_name = d.task_name AND tk.task_instance = d.task_instance
                            ) b
                        ) q
                    ) r
                    WINDOW w AS (ORDER BY r.rn)
                ) f
            ) j
            WHERE s.mode NOT IN ('elsewhere') AND (s.mode <> 'trial' OR s.token IS NOT NULL) AND j.verdict IS NOT NULL
            ORDER BY u.ord, j.rn
            LIMIT v_keyed
        ), tenants AS (
            -- a job with limit keys: each of them admits it too (its place among the jobs they admit this pick)
            SELECT lk.task_name, lk.task_instance,
                   bool_and(lk.key = ANY(v_held) AND lk.place <= layover.limit_free(lk.key, v_now, v_dead)) AS ok
            FROM (SELECT c.task_name, c.task_instance, x.key,
                         row_number() OVER (PARTITION BY x.key ORDER BY c.ord, c.rn) AS place
                  FROM cand c CROSS JOIN LATERAL unnest(c.limit_keys) x(key)
                  WHERE c.verdict IN ('run', 'trial')) lk
            GROUP BY lk.task_name, lk.task_instance
        ), locked AS (
            -- the chosen rows, locked now; one another transaction holds (an operator's pause, a worker's
            -- write) is left for a later pick rather than waited for, and one changed since this statement's
            -- snapshot is rechecked
            SELECT c.*
            FROM cand c
            JOIN layover.scheduled_tasks x ON x.task_name = c.task_name AND x.task_instance = c.task_instance
            LEFT JOIN tenants tn ON tn.task_name = c.task_name AND tn.task_instance = c.task_instance
            WHERE NOT x.picked AND x.execution_time <= v_now
              AND (coalesce(tn.ok, true) OR c.verdict NOT IN ('run', 'trial'))
            FOR UPDATE OF x SKIP LOCKED
        ), taken AS (
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM locked c
            WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.*, c.ord, c.verdict, c.token, c.fair_tag AS tag, c.queue, c.has_low, c.low_credit,
                      c.need_t, c.need_i, c.need_o, c.rr, c.tr, c.ir, c.orr, c.b_reason, c.open_until
        ), spent AS (
            -- the permits and tokens the admitted jobs took from their keys' buckets (a limit key's: its requests),
            -- written by the statement that takes the jobs: an admission and what it spends are one write
            UPDATE layover.buckets b
            SET request_tat = layover.gcra_take(b.request_tat, v_now, l.rr, s.n),
                token_tat = layover.gcra_take(b.token_tat, v_now, l.tr, s.t),
                input_tat = layover.gcra_take(b.input_tat, v_now, l.ir, s.i),
                output_tat = layover.gcra_take(b.output_tat, v_now, l.orr, s.o)
            FROM (SELECT k.key, count(*)::float8 AS n, sum(t.need_t) FILTER (WHERE k.own) AS t,
                         sum(t.need_i) FILTER (WHERE k.own) AS i, sum(t.need_o) FILTER (WHERE k.own) AS o
                  FROM taken t
                  CROSS JOIN LATERAL (SELECT t.provider_key, true
                                      UNION ALL SELECT x, false FROM unnest(t.limit_keys) x WHERE x <> t.provider_key)
                      k(key, own)
                  WHERE t.verdict IN ('run', 'trial')
                  GROUP BY k.key) s
            CROSS JOIN LATERAL layover.limits_in_force(s.key, v_now) l
            WHERE b.provider_key = s.key
        ), lines AS (
            -- each priority's clock moves to the highest tag it admitted; the low share's credit carries
            INSERT INTO layover.fair_lines AS fl (provider_key, class_clocks, low_credit, picks, last_pick_at)
            SELECT g.key, g.clocks, CASE WHEN g.has_low THEN greatest(0, g.credit + v_low * g.fair - g.low) ELSE 0 END,
                   1, v_now
            FROM (SELECT c.key, jsonb_object_agg(c.pr::text, c.tag) AS clocks, sum(c.n) AS fair, sum(c.low) AS low,
                         bool_or(c.has_low) AS has_low, max(c.credit) AS credit
                  FROM (SELECT t.provider_key AS key, coalesce(t.priority, 0) AS pr, max(t.tag) AS tag, count(*) AS n,
                               count(*) FILTER (WHERE t.queue = 2) AS low, bool_or(t.has_low) AS has_low,
                               max(t.low_credit) AS credit
                        FROM taken t
                        WHERE t.verdict IN ('run', 'trial') AND t.tag IS NOT NULL
                        GROUP BY t.provider_key, coalesce(t.priority, 0)) c
                  GROUP BY c.key) g
            ON CONFLICT (provider_key) DO UPDATE
            SET class_clocks = layover.clocks_merge(fl.class_clocks, excluded.class_clocks),
                low_credit = excluded.low_credit, picks = fl.picks + 1, last_pick_at = v_now
        )
        SELECT t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
               t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
               t.verdict, t.token,
               CASE WHEN t.verdict IN ('run', 'trial') AND (t.need_t > 0 OR t.need_i > 0 OR t.need_o > 0)
                    THEN ARRAY[t.need_t, t.need_i, t.need_o] END,
               CASE WHEN t.verdict IN ('run', 'trial') AND (t.need_t > 0 OR t.need_i > 0 OR t.need_o > 0)
                    THEN ARRAY[coalesce(t.tr, 0), coalesce(t.ir, 0), coalesce(t.orr, 0)] END,
               CASE t.verdict
                   WHEN 'breaker_open' THEN 'the breaker of ' || t.provider_key || ' is open until ' || t.open_until
                                            || coalesce(': ' || t.b_reason, '')
                   WHEN 'deferral' THEN 'due since ' || t.execution_time || ', not admitted by ' || t.provider_key
                   WHEN 'too_large' THEN 'its token estimate (' || array_to_string(t.token_estimate, '/')
                                         || ') is more than ' || t.provider_key || ' can ever admit (its token capacity)'
               END,
               t.ord
        FROM taken t;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_taken := v_taken + v_n;
        v_keyed := v_keyed - v_n;
    END IF;
    -- not full: every key walked had its turn, and the next pick starts after the last of them (a row
    -- of its own: verdict 'turn', no job)
    IF v_keyed > 0 AND v_last IS NOT NULL THEN
        RETURN QUERY SELECT NULL::text, NULL::text, NULL::bytea, NULL::timestamptz, NULL::boolean, NULL::text,
                            NULL::timestamptz, NULL::timestamptz, NULL::int, NULL::timestamptz, NULL::bigint,
                            NULL::smallint, v_last, 'turn'::text, NULL::text, NULL::float8[], NULL::float8[],
                            NULL::text, 9223372036854775807::bigint;
    END IF;

    -- 3. jobs without a provider key but with limit keys: each of their limit keys admits them, oldest first
    IF p_limit - v_taken > 0 AND coalesce((p_options ->> 'limit_keys')::boolean, false) THEN
        v_free := ARRAY(
            SELECT DISTINCT lk
            FROM (SELECT t.limit_keys FROM layover.scheduled_tasks t
                  WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NOT NULL
                    AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                  ORDER BY t.execution_time LIMIT p_limit - v_taken) j
            CROSS JOIN LATERAL unnest(j.limit_keys) lk
            WHERE pg_try_advisory_xact_lock(1282371, hashtext(lk)));
        PERFORM layover.limit_rows(v_free);
        RETURN QUERY
        WITH cand AS (
            SELECT t.task_name, t.task_instance, t.limit_keys, row_number() OVER (ORDER BY t.execution_time) AS rn
            FROM (SELECT t.task_name, t.task_instance, t.limit_keys, t.execution_time FROM layover.scheduled_tasks t
                  WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NOT NULL
                    AND t.execution_time <= v_now AND t.task_name = ANY(p_types)
                  ORDER BY t.execution_time LIMIT p_limit - v_taken) t
        ), admitted AS (
            SELECT lk.task_name, lk.task_instance,
                   bool_and(lk.key = ANY(v_free) AND lk.place <= layover.limit_free(lk.key, v_now, v_dead)) AS ok
            FROM (SELECT c.task_name, c.task_instance, x.key,
                         row_number() OVER (PARTITION BY x.key ORDER BY c.rn) AS place
                  FROM cand c CROSS JOIN LATERAL unnest(c.limit_keys) x(key)) lk
            GROUP BY lk.task_name, lk.task_instance
        ), locked AS (
            SELECT c.task_name, c.task_instance
            FROM cand c
            JOIN admitted a ON a.task_name = c.task_name AND a.task_instance = c.task_instance AND a.ok
            JOIN layover.scheduled_tasks x ON x.task_name = c.task_name AND x.task_instance = c.task_instance
            WHERE NOT x.picked AND x.execution_time <= v_now
            FOR UPDATE OF x SKIP LOCKED
        ), taken AS (
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM locked c
            WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.*
        ), spent AS (
            UPDATE layover.buckets b
            SET request_tat = layover.gcra_take(b.request_tat, v_now, l.rr, s.n)
            FROM (SELECT x AS key, count(*)::float8 AS n FROM taken t CROSS JOIN LATERAL unnest(t.limit_keys) x
                  GROUP BY x) s
            CROSS JOIN LATERAL layover.limits_in_force(s.key, v_now) l
            WHERE b.provider_key = s.key
        )
        SELECT t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
               t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
               'run'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint
        FROM taken t;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_taken := v_taken + v_n;
    END IF;

    -- 4. jobs without a provider key or limit keys: nothing to admit, oldest (or highest priority) first
    IF p_limit - v_taken > 0 THEN
        IF coalesce((p_options ->> 'priority')::boolean, false) THEN
            RETURN QUERY
            WITH chosen AS (
                SELECT t.task_name, t.task_instance FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NULL AND t.execution_time <= v_now
                  AND t.task_name = ANY(p_types)
                ORDER BY t.priority DESC NULLS LAST, t.execution_time, t.task_instance
                LIMIT p_limit - v_taken
                FOR UPDATE SKIP LOCKED
            )
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM chosen c WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
                      t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
                      'run'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint;
        ELSE
            RETURN QUERY
            WITH chosen AS (
                SELECT t.task_name, t.task_instance FROM layover.scheduled_tasks t
                WHERE NOT t.picked AND t.provider_key IS NULL AND t.limit_keys IS NULL AND t.execution_time <= v_now
                  AND t.task_name = ANY(p_types)
                ORDER BY t.execution_time, t.task_instance
                LIMIT p_limit - v_taken
                FOR UPDATE SKIP LOCKED
            )
            UPDATE layover.scheduled_tasks t
            SET picked = true, picked_by = p_worker, last_heartbeat = v_now, version = t.version + 1
            FROM chosen c WHERE t.task_name = c.task_name AND t.task_instance = c.task_instance
            RETURNING t.task_name, t.task_instance, t.task_data, t.execution_time, t.picked, t.picked_by, t.last_success,
                      t.last_failure, t.consecutive_failures, t.last_heartbeat, t.version, t.priority, t.provider_key,
                      'run'::text, NULL::text, NULL::float8[], NULL::float8[], NULL::text, NULL::bigint;
        END IF;
    END IF;
END
$$;


-- ===========================================================================
-- Batches: deadline-aware batch routing (docs/batches.md)
-- ===========================================================================
--
-- A job of a batchable job type whose deadline (or enqueue plus its type's tolerance) leaves room
-- for a provider's batch completion is gathered into a batch of its provider key instead of being
-- called: one row per batch in layover.batches, one row per gathered job in layover.batch_items,
-- and the job row names its item (scheduled_tasks.batch_item; cleared by the reschedule or retry
-- that applies its line, core JobSql, so the next run routes anew). The batch loop (core's
-- internal.batch, on its own thread in every instance) seals, submits, polls and collects batches;
-- a collected line is stored on its item and the job is made due: its next pick turns the line
-- into its outcome, through the engine's one outcome writer, exactly as a direct call's answer.
--
-- Owners: layover.batches and layover.batch_items are written by core's BatchStore / BatchSql and
-- by the batch_* functions below. Their job rows are the job store's: the batch_* functions write
-- them through layover.jobs_batched (a gathered job's item and wait, version-checked by
-- batch_gather, as a reschedule of the picked job would) and layover.jobs_wake_batched (made due:
-- the run time only), which never change a row's version or picked state otherwise.
-- Nothing here spends an attempt or counts a reschedule.

CREATE TABLE layover.batches (
    id                bigserial PRIMARY KEY,
    provider_key      text NOT NULL,                 -- the provider key whose jobs it holds
    provider          text NOT NULL,                 -- the transport's name (openai, anthropic, ...)
    state             text NOT NULL DEFAULT 'open',
    ref               text GENERATED ALWAYS AS ('lo-batch-' || id) STORED,  -- Layover's stable reference, sent with the batch
    provider_batch_id text,                          -- the provider's id, once submitted
    lines             int NOT NULL DEFAULT 0,        -- items gathered
    bytes             bigint NOT NULL DEFAULT 0,     -- bytes of their request bodies
    succeeded         int NOT NULL DEFAULT 0,        -- lines collected as succeeded
    errored           int NOT NULL DEFAULT 0,        -- lines collected as errored
    returned          int NOT NULL DEFAULT 0,        -- items returned to the queue (expired, cancelled, no line, given up)
    input_tokens      bigint NOT NULL DEFAULT 0,     -- reported by its lines
    output_tokens     bigint NOT NULL DEFAULT 0,
    discount          float8 NOT NULL,               -- the provider's batch discount (0.5: half price), for saved_tokens
    earliest_deadline timestamptz,                   -- the earliest latest-useful-finish of its jobs
    created_at        timestamptz NOT NULL DEFAULT now(),
    sealed_at         timestamptz,
    submit_started_at timestamptz,                   -- the first submit attempt began (a rejoin looks from here)
    submit_attempts   int NOT NULL DEFAULT 0,
    submitted_at      timestamptz,
    cancel_asked_at   timestamptz,                   -- the rescue asked the provider to cancel
    finished_at       timestamptz,
    next_poll_at      timestamptz,
    lease_owner       text,                          -- the instance submitting or polling it
    lease_until       timestamptz,
    last_error        text,                          -- the last transport error, cut
    CONSTRAINT batches_state_check CHECK (state IN ('open', 'sealed', 'submitting', 'submitted', 'ended',
                                                    'expired', 'cancelled', 'failed'))
);

COMMENT ON TABLE layover.batches IS
    'One row per batch (V22): open (gathering) -> sealed -> submitting -> submitted -> ended | expired | cancelled | failed. Written by core BatchSql and the batch_* functions only.';

-- one open batch per provider key: concurrent gathers meet on it
CREATE UNIQUE INDEX batches_one_open ON layover.batches (provider_key) WHERE state = 'open';
CREATE INDEX batches_live ON layover.batches (state, next_poll_at) WHERE state IN ('open', 'sealed', 'submitting', 'submitted');
CREATE UNIQUE INDEX batches_provider_id ON layover.batches (provider, provider_batch_id) WHERE provider_batch_id IS NOT NULL;

CREATE TABLE layover.batch_items (
    id            bigserial PRIMARY KEY,
    batch_id      bigint NOT NULL REFERENCES layover.batches (id) ON DELETE CASCADE,
    task_name     text NOT NULL,                     -- the job (it may be gone: done, parked, cancelled)
    task_instance text NOT NULL,
    custom_id     text GENERATED ALWAYS AS ('lo-' || id) STORED,  -- the line's custom id, the same on every submit attempt
    request       text NOT NULL,                     -- the request body (JSON text) the job type made from its args
    latest        timestamptz,                       -- the job's latest useful finish (deadline, or enqueue + tolerance)
    state         text NOT NULL DEFAULT 'gathered',  -- gathered | result (a line is stored) | returned (back to the queue: expired, cancelled, no line, left)
    result_kind   text,                              -- succeeded | errored | expired | cancelled
    result_status int,                               -- the line's HTTP status (0 for expired, cancelled)
    result        text,                              -- the response or error body, JSON text
    input_tokens  bigint,
    output_tokens bigint,
    gathered_at   timestamptz NOT NULL DEFAULT now(),
    answered_at   timestamptz,
    CONSTRAINT batch_items_state_check CHECK (state IN ('gathered', 'result', 'returned')),
    CONSTRAINT batch_items_kind_check CHECK (result_kind IS NULL OR result_kind IN ('succeeded', 'errored', 'expired', 'cancelled'))
);

COMMENT ON TABLE layover.batch_items IS
    'One row per job gathered into a batch (V22); the job row names it in scheduled_tasks.batch_item. Written by core BatchSql and the batch_* functions only.';

CREATE INDEX batch_items_batch ON layover.batch_items (batch_id, id);
CREATE INDEX batch_items_job ON layover.batch_items (task_name, task_instance);

-- The job store's writes of the job rows of batches (the job table's owner, with core's JobSql;
-- called by the batch_* functions below, which write the batch tables).
--
-- A gathered job waits for its batch: writes its job row's batch_item (p_item) and run time
-- (p_wait_until), not picked (picked_by and last_heartbeat cleared), version + 1, fair_tag cleared
-- (its run time moved), and a reschedule that counts nothing: reason 'batched', detail p_detail.
CREATE FUNCTION layover.jobs_batched(p_task_name text, p_task_instance text, p_item bigint,
                                     p_wait_until timestamptz, p_detail text)
    RETURNS void
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.scheduled_tasks t
    SET batch_item = p_item, execution_time = p_wait_until, picked = false, picked_by = NULL,
        last_heartbeat = NULL, version = t.version + 1, fair_tag = NULL,
        last_reschedule_reason = 'batched', last_reschedule_detail = p_detail,
        last_rescheduled_at = now()
    WHERE t.task_name = p_task_name AND t.task_instance = p_task_instance;
END
$$;

COMMENT ON FUNCTION layover.jobs_batched(text, text, bigint, timestamptz, text) IS
    'The job store''s write of a gathered job: its batch item and wait (reason batched); called by layover.batch_gather.';

-- Makes due at once the jobs not picked whose batch item is one of p_items: writes their run time
-- (execution_time = now()), nothing else. Returns how many jobs were made due.
CREATE FUNCTION layover.jobs_wake_batched(p_items bigint[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    UPDATE layover.scheduled_tasks t SET execution_time = now()
    WHERE t.batch_item = ANY(p_items) AND NOT t.picked;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.jobs_wake_batched(bigint[]) IS
    'The job store''s write of the jobs waiting for batch items: made due; called by layover.batch_collect, batch_finish, batch_wake.';

-- Gathers jobs into their key's open batch, in one transaction: the picked job (version-checked)
-- and, along with it, others of the key's due backlog the caller locked (FOR UPDATE SKIP LOCKED,
-- not picked, version-checked). Each gets an item, the open batch its line and bytes (sealed, and a
-- new one opened, when the next line would pass p_max_lines or p_max_bytes), and its job row the
-- item and a run time of p_wait_until[i] (a reschedule that counts nothing: reason 'batched'),
-- written by the job store's layover.jobs_batched.
-- Returns each gathered job's id and item; a job whose version changed is skipped.
CREATE FUNCTION layover.batch_gather(
        p_task_name text, p_ids text[], p_versions bigint[], p_requests text[], p_latest timestamptz[],
        p_wait_until timestamptz[], p_key text, p_provider text, p_max_lines int, p_max_bytes bigint,
        p_discount float8)
    RETURNS TABLE (task_instance text, item bigint)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    b       layover.batches%ROWTYPE;
    v_len   bigint;
    v_item  bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        PERFORM 1 FROM layover.scheduled_tasks t
        WHERE t.task_name = p_task_name AND t.task_instance = p_ids[i] AND t.version = p_versions[i]
          AND (t.batch_item IS NULL
               OR EXISTS (SELECT 1 FROM layover.batch_items r WHERE r.id = t.batch_item AND r.state = 'returned'))
        FOR UPDATE OF t;
        CONTINUE WHEN NOT FOUND;
        v_len := octet_length(p_requests[i]);
        WHILE b.id IS NULL LOOP
            -- another gather may seal the open batch while this one waits for it: look again
            INSERT INTO layover.batches (provider_key, provider, discount)
            VALUES (p_key, p_provider, p_discount)
            ON CONFLICT (provider_key) WHERE state = 'open' DO NOTHING;
            SELECT * INTO b FROM layover.batches x WHERE x.provider_key = p_key AND x.state = 'open' FOR UPDATE;
        END LOOP;
        IF b.lines > 0 AND (b.lines + 1 > p_max_lines OR b.bytes + v_len > p_max_bytes) THEN
            UPDATE layover.batches SET state = 'sealed', sealed_at = now() WHERE id = b.id;
            INSERT INTO layover.batches (provider_key, provider, discount) VALUES (p_key, p_provider, p_discount)
            RETURNING * INTO b;
        END IF;
        INSERT INTO layover.batch_items (batch_id, task_name, task_instance, request, latest)
        VALUES (b.id, p_task_name, p_ids[i], p_requests[i], p_latest[i])
        RETURNING id INTO v_item;
        UPDATE layover.batches
        SET lines = lines + 1, bytes = bytes + v_len,
            earliest_deadline = CASE WHEN p_latest[i] IS NULL THEN earliest_deadline
                                     ELSE least(earliest_deadline, p_latest[i]) END
        WHERE id = b.id
        RETURNING * INTO b;
        PERFORM layover.jobs_batched(p_task_name, p_ids[i], v_item, p_wait_until[i], 'in batch ' || b.id);
        task_instance := p_ids[i];
        item := v_item;
        RETURN NEXT;
    END LOOP;
    IF b.id IS NOT NULL AND (b.lines >= p_max_lines OR b.bytes >= p_max_bytes) THEN
        UPDATE layover.batches SET state = 'sealed', sealed_at = now() WHERE id = b.id AND state = 'open';
    END IF;
END
$$;

COMMENT ON FUNCTION layover.batch_gather(text, text[], bigint[], text[], timestamptz[], timestamptz[], text, text,
        int, bigint, float8) IS
    'Gathers version-checked jobs into their key''s open batch (V22); no attempt, no reschedule counted.';

-- Stores a finished batch's result lines (a chunk of them; calling twice stores nothing twice:
-- only items still 'gathered' take a line; an expired or cancelled line returns its item), adds
-- their counts and tokens to the batch, and makes their waiting jobs due at once (the job store's
-- layover.jobs_wake_batched). Returns how many lines were stored.
CREATE FUNCTION layover.batch_collect(
        p_batch bigint, p_custom_ids text[], p_kinds text[], p_statuses int[], p_results text[],
        p_input bigint[], p_output bigint[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_items bigint[];
    v_n     int;
BEGIN
    WITH lines AS (
        SELECT * FROM unnest(p_custom_ids, p_kinds, p_statuses, p_results, p_input, p_output)
                 AS l(custom_id, kind, status, result, input_tokens, output_tokens)
    ), stored AS (
        UPDATE layover.batch_items i
        SET state = CASE WHEN l.kind IN ('expired', 'cancelled') THEN 'returned' ELSE 'result' END, result_kind = l.kind, result_status = l.status, result = l.result,
            input_tokens = l.input_tokens, output_tokens = l.output_tokens, answered_at = now()
        FROM lines l
        WHERE i.batch_id = p_batch AND i.custom_id = l.custom_id AND i.state = 'gathered'
        RETURNING i.id, i.result_kind, i.input_tokens, i.output_tokens
    ), counted AS (
        UPDATE layover.batches b
        SET succeeded = b.succeeded + (SELECT count(*) FROM stored WHERE result_kind = 'succeeded'),
            errored = b.errored + (SELECT count(*) FROM stored WHERE result_kind = 'errored'),
            returned = b.returned + (SELECT count(*) FROM stored WHERE result_kind IN ('expired', 'cancelled')),
            input_tokens = b.input_tokens + (SELECT coalesce(sum(input_tokens), 0) FROM stored),
            output_tokens = b.output_tokens + (SELECT coalesce(sum(output_tokens), 0) FROM stored)
        WHERE b.id = p_batch
        RETURNING 1
    )
    -- counted runs whether read or not (a data-modifying WITH runs to completion)
    SELECT coalesce(array_agg(s.id), '{}') INTO v_items FROM stored s;
    v_n := cardinality(v_items);
    PERFORM layover.jobs_wake_batched(v_items);
    IF v_n > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.batch_collect(bigint, text[], text[], int[], text[], bigint[], bigint[]) IS
    'Stores result lines on their items, once each (V22), and makes their jobs due.';

-- Ends a batch in state p_state (ended, expired, cancelled, failed): items still without a line
-- are returned (their jobs route anew at their next pick, made due at once by the job store's
-- layover.jobs_wake_batched). Returns how many items were returned. A batch already finished is
-- left as it is (0).
CREATE FUNCTION layover.batch_finish(p_batch bigint, p_state text, p_error text)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_items bigint[];
    v_n     int;
BEGIN
    UPDATE layover.batches
    SET state = p_state, finished_at = now(), lease_owner = NULL, lease_until = NULL, next_poll_at = NULL,
        last_error = coalesce(p_error, last_error)
    WHERE id = p_batch AND state NOT IN ('ended', 'expired', 'cancelled', 'failed');
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    WITH back AS (
        UPDATE layover.batch_items SET state = 'returned', answered_at = now()
        WHERE batch_id = p_batch AND state = 'gathered'
        RETURNING id
    )
    SELECT coalesce(array_agg(back.id), '{}') INTO v_items FROM back;
    v_n := cardinality(v_items);
    PERFORM layover.jobs_wake_batched(v_items);
    UPDATE layover.batches SET returned = returned + v_n WHERE id = p_batch;
    PERFORM pg_notify('layover_jobs', '');
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.batch_finish(bigint, text, text) IS
    'Ends a batch (V22); items without a line go back to the queue.';

-- A picked job whose batch was never submitted leaves it (its deadline came too close): its item
-- is returned, if the batch is still open or sealed (locked, so a submit cannot take it at the
-- same time). Returns whether it left; false: the batch is being submitted or was, and the job
-- must wait for its line.
CREATE FUNCTION layover.batch_leave(p_item bigint)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_batch bigint;
BEGIN
    SELECT b.id INTO v_batch
    FROM layover.batch_items i JOIN layover.batches b ON b.id = i.batch_id
    WHERE i.id = p_item AND i.state = 'gathered' AND b.state IN ('open', 'sealed')
    FOR UPDATE OF b;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE layover.batch_items SET state = 'returned', answered_at = now() WHERE id = p_item;
    UPDATE layover.batches SET returned = returned + 1 WHERE id = v_batch;
    RETURN true;
END
$$;

COMMENT ON FUNCTION layover.batch_leave(bigint) IS
    'Takes a job out of a batch not yet submitted (V22).';

-- Makes due the waiting jobs whose item has a line or was returned, in batches finished since
-- p_since: a job picked while its line was being stored was rescheduled to wait, and this catches
-- it. Writes nothing itself: the job store's layover.jobs_wake_batched makes them due. Returns how
-- many jobs were made due.
CREATE FUNCTION layover.batch_wake(p_since timestamptz)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    v_n := layover.jobs_wake_batched(ARRAY(
        SELECT i.id
        FROM layover.scheduled_tasks t
        JOIN layover.batch_items i ON i.id = t.batch_item
        JOIN layover.batches b ON b.id = i.batch_id
        WHERE i.state <> 'gathered' AND NOT t.picked AND t.execution_time > now() AND b.finished_at >= p_since));
    IF v_n > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.batch_wake(timestamptz) IS
    'Makes due the jobs of recently finished batches that still wait (V22).';

-- The documented view of batches: what an operator asks of them.
--   state:        open | sealed | submitting | submitted | ended | expired | cancelled | failed
--   lines:        jobs gathered; succeeded, errored: lines collected; returned: back to the queue
--   pending:      lines not answered yet
--   age:          since it was opened (database time)
--   saved_tokens: tokens its lines reported times the discount: what calling them one by one would
--                 have cost on top (an estimate; the provider's price list decides)
CREATE VIEW layover.batch_status AS
SELECT b.id,
       b.ref,
       b.provider_key,
       b.provider,
       b.provider_batch_id,
       b.state,
       b.lines,
       b.bytes,
       b.succeeded,
       b.errored,
       b.returned,
       greatest(b.lines - b.succeeded - b.errored - b.returned, 0)       AS pending,
       b.input_tokens,
       b.output_tokens,
       b.discount,
       round((b.input_tokens + b.output_tokens) * b.discount)::bigint    AS saved_tokens,
       b.earliest_deadline,
       b.created_at,
       b.sealed_at,
       b.submitted_at,
       b.finished_at,
       coalesce(b.finished_at, now()) - b.created_at                   AS age,
       b.submit_attempts,
       b.cancel_asked_at,
       b.last_error
FROM layover.batches b;

COMMENT ON VIEW layover.batch_status IS 'Batches with their counts, age and estimated saving (V22, docs/batches.md).';

-- ---------------------------------------------------------------------------
-- jobs: the public view over live jobs, with friendly names.
--   state: running     - picked by a worker (picked_by, heartbeat_at say which and when)
--          retrying    - the last run failed and spent an attempt
--          rescheduled - pushed forward without spending an attempt (rate limit, snooze, ...)
--          scheduled   - waiting for its first run
--   attempts: attempts spent so far (failed runs); a rate-limit reschedule never adds one.
--   waiting_for, waiting_detail: why a due job of a provider key is not running, from its key's state
--          now (nothing is written on a waiting job): cooldown, breaker_open, breaker_trial (the
--          key's one trial is out), rate_limit (its bucket has no permit or tokens free now, or only
--          the share kept for interactive calls while they arrive: read with the default share and
--          window, 0.25 and 1 s), concurrency (its slots are all in use); NULL when its key admits
--          now (it waits for a worker) or it is not due.
--   ahead: for a job waiting for its key, how many of the key's due jobs the pick takes before it
--          (counted up to 10,000: select it for a few jobs, not a whole backlog).
--   provider_trail: the job's fallback trail.
--   batch_id, batch_item_state: the job's batch and its item's state (gathered | result |
--          returned), NULL for a job that never went by batch.
-- Rows of Layover's own recurring tasks (recovery sweep, retention) are not jobs.
-- ---------------------------------------------------------------------------
CREATE VIEW layover.jobs AS
SELECT t.task_instance                              AS id,
       t.task_name                                  AS job_type,
       CASE
           WHEN t.picked THEN 'running'
           WHEN t.last_failure IS NOT NULL
                AND (t.last_rescheduled_at IS NULL OR t.last_failure >= t.last_rescheduled_at) THEN 'retrying'
           WHEN t.reschedules > 0 THEN 'rescheduled'
           ELSE 'scheduled'
       END                                          AS state,
       t.execution_time                             AS run_at,
       coalesce(t.consecutive_failures, 0)          AS attempts,
       t.reschedules                                AS reschedules,
       t.provider_key                               AS provider_key,
       w.waiting_for                                AS waiting_for,
       w.waiting_detail                             AS waiting_detail,
       CASE WHEN w.waiting_for IS NOT NULL THEN (
           SELECT count(*) FROM (
               SELECT 1 FROM layover.scheduled_tasks x
               WHERE x.provider_key = t.provider_key AND NOT x.picked AND x.execution_time <= now()
                 AND (x.task_name, x.task_instance) <> (t.task_name, t.task_instance)
                 AND CASE WHEN t.fair_tag IS NULL
                          THEN x.fair_tag IS NULL
                               AND (coalesce(x.priority, -32768), -extract(epoch FROM x.execution_time))
                                   > (coalesce(t.priority, -32768), -extract(epoch FROM t.execution_time))
                          ELSE x.fair_tag IS NULL
                               OR (coalesce(x.priority, -32768), -x.fair_tag) > (coalesce(t.priority, -32768), -t.fair_tag)
                      END
               LIMIT 10000) a)
       END                                          AS ahead,
       t.last_reschedule_reason                     AS reschedule_reason,
       t.last_reschedule_detail                     AS reschedule_detail,
       t.last_rescheduled_at                        AS rescheduled_at,
       layover.args_jsonb(t.task_data)              AS args,
       t.errors -> -1                               AS last_error,
       t.errors                                     AS errors,
       t.last_failure                               AS failed_at,
       t.picked_by                                  AS picked_by,
       t.last_heartbeat                             AS heartbeat_at,
       t.first_enqueued_at                          AS enqueued_at,
       t.priority                                   AS priority,
       t.dead_letter_id                             AS dead_letter_id,
       t.replay_kind                                AS replay_kind,
       t.provider_trail                             AS provider_trail,
       bi.batch_id                                  AS batch_id,
       bi.state                                     AS batch_item_state
FROM layover.scheduled_tasks t
LEFT JOIN layover.batch_items bi ON bi.id = t.batch_item
LEFT JOIN LATERAL (
    -- a slot is in use while its job's heartbeat is live (the pick's default: 40 s, 8 missed beats of 5 s)
    SELECT CASE WHEN cd.until IS NOT NULL THEN 'cooldown'
                WHEN br.state = 'open' THEN 'breaker_open'
                WHEN br.state = 'half_open' THEN 'breaker_trial'
                WHEN l.rr > 0 AND layover.gcra_free(l.request_tat, now(), l.rr, l.rc) < 1 + ik.share * l.rc THEN 'rate_limit'
                WHEN (l.tr > 0 AND layover.gcra_free(l.token_tat, now(), l.tr, l.tc) <= ik.share * l.tc)
                     OR (l.ir > 0 AND layover.gcra_free(l.input_tat, now(), l.ir, l.ic) <= ik.share * l.ic)
                     OR (l.orr > 0 AND layover.gcra_free(l.output_tat, now(), l.orr, l.oc) <= ik.share * l.oc)
                    THEN 'rate_limit'
                WHEN l.max_in_flight <= slots.n THEN 'concurrency'
                WHEN lk.key IS NOT NULL THEN lk.why
           END AS waiting_for,
           CASE WHEN cd.until IS NOT NULL
                    THEN 'key ' || t.provider_key || ': cooling down until ' || cd.until || ' (' || cd.reason || ')'
                WHEN br.state = 'open'
                    THEN 'key ' || t.provider_key || ': breaker open until ' || coalesce(br.open_until::text, 'closed by hand')
                WHEN br.state = 'half_open' THEN 'key ' || t.provider_key || ': its one trial call is out'
                WHEN l.rr > 0 AND layover.gcra_free(l.request_tat, now(), l.rr, l.rc) < 1
                    THEN 'key ' || t.provider_key || ': no permit before ' || layover.gcra_fits_at(l.request_tat, l.rr, l.rc, 1)
                WHEN (l.tr > 0 AND layover.gcra_free(l.token_tat, now(), l.tr, l.tc) <= 0)
                     OR (l.ir > 0 AND layover.gcra_free(l.input_tat, now(), l.ir, l.ic) <= 0)
                     OR (l.orr > 0 AND layover.gcra_free(l.output_tat, now(), l.orr, l.oc) <= 0)
                    THEN 'key ' || t.provider_key || ': no tokens free now'
                WHEN ik.share > 0 AND ((l.rr > 0 AND layover.gcra_free(l.request_tat, now(), l.rr, l.rc) < 1 + ik.share * l.rc)
                     OR (l.tr > 0 AND layover.gcra_free(l.token_tat, now(), l.tr, l.tc) <= ik.share * l.tc)
                     OR (l.ir > 0 AND layover.gcra_free(l.input_tat, now(), l.ir, l.ic) <= ik.share * l.ic)
                     OR (l.orr > 0 AND layover.gcra_free(l.output_tat, now(), l.orr, l.oc) <= ik.share * l.oc))
                    THEN 'key ' || t.provider_key || ': what is free is kept for interactive calls (the last at '
                         || ik.interactive_at || ')'
                WHEN l.max_in_flight <= slots.n
                    THEN 'key ' || t.provider_key || ': all ' || l.max_in_flight || ' concurrency slots in use'
                WHEN lk.key IS NOT NULL THEN 'limit key ' || lk.key || ': ' || lk.detail
           END AS waiting_detail
    FROM layover.limits_in_force(t.provider_key, now()) l
    -- the share background leaves for interactive calls while they arrive (the default settings)
    CROSS JOIN LATERAL (SELECT max(bk.interactive_at) AS interactive_at,
                               coalesce(max(layover.interactive_reserve(bk.interactive_at, now(), 0.25, 1)), 0) AS share
                        FROM layover.buckets bk WHERE bk.provider_key = t.provider_key) ik
    LEFT JOIN layover.cooldowns cd ON cd.provider_key = t.provider_key AND cd.until > now()
    LEFT JOIN layover.breakers br ON br.provider_key = t.provider_key AND br.state <> 'closed'
    LEFT JOIN LATERAL (SELECT count(*) AS n FROM layover.scheduled_tasks x
                       WHERE x.provider_key = t.provider_key AND x.picked
                         AND x.last_heartbeat > now() - interval '40 seconds') slots ON l.max_in_flight IS NOT NULL
    LEFT JOIN LATERAL (
        -- the first of its limit keys (tenants) that has no permit or slot for it now
        SELECT k.key,
               CASE WHEN kl.rr > 0 AND layover.gcra_free(kl.request_tat, now(), kl.rr, kl.rc) < 1 THEN 'rate_limit'
                    ELSE 'concurrency' END AS why,
               CASE WHEN kl.rr > 0 AND layover.gcra_free(kl.request_tat, now(), kl.rr, kl.rc) < 1
                    THEN 'no permit before ' || layover.gcra_fits_at(kl.request_tat, kl.rr, kl.rc, 1)
                    ELSE 'all ' || kl.max_in_flight || ' concurrency slots in use' END AS detail
        FROM unnest(t.limit_keys) WITH ORDINALITY k(key, ord)
        CROSS JOIN LATERAL layover.limits_in_force(k.key, now()) kl
        WHERE (kl.rr > 0 AND layover.gcra_free(kl.request_tat, now(), kl.rr, kl.rc) < 1)
           OR kl.max_in_flight <= (SELECT count(*) FROM layover.scheduled_tasks x
                                   WHERE x.limit_keys @> ARRAY[k.key] AND x.picked
                                     AND x.last_heartbeat > now() - interval '40 seconds')
        ORDER BY k.ord LIMIT 1) lk ON true
    WHERE (t.provider_key IS NOT NULL OR t.limit_keys IS NOT NULL) AND NOT t.picked AND t.execution_time <= now()
) w ON true
-- rows of Layover's own recurring tasks (recovery sweep, retention) are not jobs
WHERE t.task_name NOT LIKE 'layover-%';

COMMENT ON VIEW layover.jobs IS
    'Live jobs. state in (scheduled, running, rescheduled, retrying); attempts = attempts spent; waiting_for and '
    'waiting_detail: why a due job''s key does not admit it now; args as jsonb.';


-- ===========================================================================
-- History: the record of finished jobs
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- db-scheduler deletes a finished job; without a record "did job X run, and how?" has no answer
-- in SQL. layover.job_history keeps one row per job that left the queue: completed, parked or
-- cancelled. The row is written by the same statement that removes the job (a data-modifying
-- CTE in the batched delete of finished jobs, and in the park), so the hot path pays no extra
-- round trip. Layover deletes rows older than its retention period (default 7 days, a background
-- thread of each running instance, JobHistoryRetention); `Layover.Builder.history(false)` writes none.
--   outcome:       completed | parked | cancelled
--   failure_type:  parked: the dead letter's failure type (provider_unavailable, ...)
--   detail:        parked: the error message; cancelled: who cancelled it and why
--   attempts:      attempts spent (failed runs), as in layover.jobs; a job that succeeded the
--                  first time has 0; for a parked job, as on its dead letter
--   reschedules:   times it was rescheduled without spending an attempt
--   worker:        the worker that ran its last run (picked_by)
--   enqueued_at:   when it was first enqueued
--   started_at:    when its last run started (NULL when no run of it was in progress: a
--                  cancel, a job revived after its worker died)
--   finished_at:   when it left the queue (the time of the statement that removed it)
--   duration_ms:   how long its last run's handler took (NULL when no handler ran, e.g. parked
--                  because its breaker was open or its args were unreadable)
--   dead_letter_id: parked: its dead letter; a job made by a replay: the dead letter it came from
--   replay_kind:   manual | sweep | trial when the job was made by a replay
--   provider_trail: its fallback trail (see layover.jobs.provider_trail), the last run
--                  included; NULL when no fallback chain was used
--   args:          its arguments, only when Layover.Builder.historyArgs(true) (NULL otherwise)
--   result:        what its handler returned with done (Outcome.done(result)), as JSON: a caller
--                  looking its idempotency key up (Layover.lookup) reads it
--   input_tokens, output_tokens, cached_input_tokens, estimated_tokens: the last run's reported
--                  token usage and its reservation; limit_keys: the job's limit keys (the
--                  tenant), so "tokens used by tenant X today" is a query
-- No primary key: nothing refers to a row, and each index costs every finished job an insert.
-- Publishing this table with logical replication needs REPLICA IDENTITY FULL (or an added key).
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_history (
    job_type            text             NOT NULL,
    job_id              text             NOT NULL,
    outcome             text             NOT NULL,
    failure_type        text,
    detail              text,
    attempts            int              NOT NULL DEFAULT 0,
    reschedules         int              NOT NULL DEFAULT 0,
    provider_key        text,
    worker              text,
    enqueued_at         timestamptz      NOT NULL,
    started_at          timestamptz,
    finished_at         timestamptz      NOT NULL DEFAULT now(),
    duration_ms         double precision,
    dead_letter_id      bigint,
    replay_kind         text,
    provider_trail      jsonb,
    args                jsonb,
    result              jsonb,
    input_tokens        bigint,
    output_tokens       bigint,
    cached_input_tokens bigint,
    estimated_tokens    bigint,
    limit_keys          text[],
    CONSTRAINT job_history_outcome_check CHECK (outcome IN ('completed', 'parked', 'cancelled'))
);

-- "did job X run?": WHERE job_type = ? AND job_id = ?
CREATE INDEX job_history_job_idx ON layover.job_history (job_type, job_id);
-- Time ranges ("parked in the last hour"), the newest rows, and retention's deletes of the oldest.
-- It also holds what the console's counts of finished jobs by outcome (and key) read, so those are
-- index-only scans (job_history is append-only, so its pages are all-visible once vacuumed).
CREATE INDEX job_history_finished_at_idx ON layover.job_history (finished_at)
    INCLUDE (outcome, provider_key, duration_ms);
-- "tokens by tenant": WHERE limit_keys @> ARRAY['tenant:42'] AND finished_at >= ...
CREATE INDEX job_history_limit_keys_idx ON layover.job_history USING gin (limit_keys) WHERE limit_keys IS NOT NULL;

COMMENT ON TABLE layover.job_history IS
    'Finished jobs (completed, parked, cancelled), written with their removal from the queue; kept 7 days by default.';
COMMENT ON COLUMN layover.job_history.result IS
    'What the handler returned with done (Outcome.done(result)) as JSON, at most 64 KiB; NULL when none.';
COMMENT ON COLUMN layover.job_history.input_tokens IS
    'Input tokens the last run reported (cache included); NULL when no usage was reported.';
COMMENT ON COLUMN layover.job_history.output_tokens IS 'Output tokens the last run reported.';
COMMENT ON COLUMN layover.job_history.cached_input_tokens IS 'Of input_tokens, those read from a prompt cache.';
COMMENT ON COLUMN layover.job_history.estimated_tokens IS 'The last run''s token reservation (input estimate + output ceiling).';
COMMENT ON COLUMN layover.job_history.limit_keys IS 'The job''s limit keys (a tenant key, ...), as on the job.';


-- ===========================================================================
-- Time series: what got through, over time
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- Each running instance counts in memory, per job type and provider key, what its jobs did
-- (completed, 429s, reschedules by reason, retries by kind, parks by failure type) and writes the
-- counts every 10 s (Layover.Builder.timeSeriesFlushInterval) with one call of
-- layover.time_series_add(): one INSERT ... ON CONFLICT DO UPDATE into the current 10-second,
-- one-minute and one-hour buckets of the database's clock. No job writes a row. Replays are
-- counted by the statement that makes them. Each flush also deletes rows past their retention
-- (default: 10-second rows 1 hour, minute and hour rows 7 days). A flush writes at most the 100
-- busiest provider keys of a job type and sums the rest under provider_key '*'.
--
-- The queue's depth (due and waiting jobs) is sampled by the flush: a grouped count of the whole
-- job table, taken by the cluster once per 10 s up to 100,000 jobs, 10 s more per 100,000 (the
-- planner's estimate of layover.scheduled_tasks' rows, pg_class.reltuples), at most 60 s. Each
-- sample writes a marker beside its gauges: counter 'sampled', job_type '' and provider_key '',
-- amount 1. A bucket without a marker was not sampled: its due and waiting are unknown, not 0. A
-- marked bucket without a due or waiting row had none of those jobs.
--
-- time_series_counts: one row per bucket, job type, provider key, counter and detail.
--   bucket_seconds: 10, 60 or 3600
--   bucket:         the bucket's start (database time, a multiple of bucket_seconds since the epoch)
--   job_type:       the job type
--   provider_key:   '' for a job type without a provider key (or when the write did not know it)
--   counter:        completed | rate_limited | rescheduled | retried | parked | replayed | due | waiting | sampled
--   detail:         rescheduled: the reason (rate_limited, bucket, cooldown, ...); retried: the
--                   kind (transient, overloaded, error, worker_lost); parked: the failure type;
--                   replayed: manual | sweep | trial; '' otherwise
--   amount:         a count over the bucket; for due and waiting the largest sample in it
-- Rows per bucket are bounded by job types x keys x counters in use; retention bounds the buckets.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.time_series_counts (
    bucket_seconds int         NOT NULL CHECK (bucket_seconds IN (10, 60, 3600)),
    bucket         timestamptz NOT NULL,
    job_type       text        NOT NULL,
    provider_key   text        NOT NULL DEFAULT '',
    counter        text        NOT NULL,
    detail         text        NOT NULL DEFAULT '',
    amount         bigint      NOT NULL,
    -- (resolution, time) first: reads of a time range and retention's deletes walk it in order
    PRIMARY KEY (bucket_seconds, bucket, job_type, provider_key, counter, detail)
);

-- one key's window (a provider key's page), through the view's nullif(provider_key, '')
CREATE INDEX time_series_counts_key_idx
    ON layover.time_series_counts ((nullif(provider_key, '')), bucket_seconds, bucket);

COMMENT ON TABLE layover.time_series_counts IS
    'Counts per 10 s, per minute and per hour, per job type and provider key, flushed by the engine; read layover.time_series.';

-- Adds counts (or, for the gauges due and waiting, samples) to the current 10-second, minute and
-- hour buckets of now(). The arrays are parallel; one (job type, key, counter, detail) at most once.
-- Returns the rows written.
CREATE FUNCTION layover.time_series_add(job_types text[], provider_keys text[], counters text[],
                                        details text[], amounts bigint[]) RETURNS bigint
LANGUAGE sql AS $$
    WITH written AS (
        INSERT INTO layover.time_series_counts AS t
            (bucket_seconds, bucket, job_type, provider_key, counter, detail, amount)
        SELECT s.seconds, to_timestamp(floor(extract(epoch FROM now()) / s.seconds) * s.seconds),
               i.job_type, coalesce(i.provider_key, ''), i.counter, coalesce(i.detail, ''), i.amount
        FROM unnest(job_types, provider_keys, counters, details, amounts)
                 AS i(job_type, provider_key, counter, detail, amount),
             (VALUES (10), (60), (3600)) AS s(seconds)
        WHERE i.amount IS NOT NULL AND i.job_type IS NOT NULL AND i.counter IS NOT NULL
        -- one order for every writer: two flushes at once lock their rows in the same order (no deadlock)
        ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (bucket_seconds, bucket, job_type, provider_key, counter, detail) DO UPDATE
        SET amount = CASE WHEN excluded.counter IN ('due', 'waiting') THEN greatest(t.amount, excluded.amount)
                          ELSE t.amount + excluded.amount END
        RETURNING 1
    )
    SELECT count(*) FROM written;
$$;

COMMENT ON FUNCTION layover.time_series_add(text[], text[], text[], text[], bigint[]) IS
    'Adds counts (due/waiting: keeps the largest sample) to the current 10 s, minute and hour buckets of layover.time_series_counts.';

-- The documented view. One row per bucket, job type, provider key, counter and detail; a bucket
-- without a row counted nothing. For the depth at a time, take the latest marked bucket at or
-- before it. Example, 429s per minute on a key in the last hour:
--     SELECT bucket_start, sum(amount) FROM layover.time_series
--     WHERE bucket_seconds = 60 AND counter = 'rate_limited' AND provider_key = 'openai:gpt-4o-mini'
--       AND bucket_start > now() - interval '1 hour' GROUP BY 1 ORDER BY 1;
CREATE VIEW layover.time_series AS
SELECT c.bucket_seconds,
       c.bucket                                                  AS bucket_start,
       c.bucket + make_interval(secs => c.bucket_seconds)        AS bucket_end,
       c.job_type,
       nullif(c.provider_key, '')                                AS provider_key,
       c.counter,
       nullif(c.detail, '')                                      AS detail,
       c.amount
FROM layover.time_series_counts c;

COMMENT ON VIEW layover.time_series IS
    'What got through over time: per 10 s (last hour), per minute and per hour (7 days), per job type and provider key: completed, rate_limited (429s), rescheduled (detail: reason), retried (detail: kind), parked (detail: failure type), replayed (detail: kind), due and waiting (largest queue depth sampled in the bucket; the depth is sampled every 10 to 60 s, less often as the job table grows), and sampled (job type and provider key empty: the bucket holds a sample of the depth; a bucket without it was not sampled). Past the 100 busiest provider keys of a job type in a flush, the rest are summed under provider_key ''*''.';


-- ===========================================================================
-- Observability and enqueue from SQL (docs/observability.md, docs/enqueue-from-sql.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- Trace context. scheduled_tasks.trace_context holds the W3C trace context current when the job
-- was enqueued, {"traceparent": "00-<trace id>-<span id>-<flags>", "tracestate": "..."} (tracestate
-- only when there is one): the context of the enqueue's span. Each run of the job is a span linked
-- to it (a link, not a parent). Written once, at enqueue (core's job_insert*.sql, layover.enqueue);
-- a reschedule or a retry updates the row and keeps it; a park moves it to the dead letter
-- (dead_letters.trace_context), and a replay writes it back into the job it makes. NULL: nothing
-- was traced at enqueue. A value a worker cannot read is ignored (the run's span has no link).
-- ---------------------------------------------------------------------------
COMMENT ON COLUMN layover.scheduled_tasks.trace_context IS
    'The W3C trace context of the job''s enqueue, {"traceparent", "tracestate"}: each run''s span links to it. '
    'Kept through reschedules and retries, moved to the dead letter by a park and back by a replay. NULL: none.';
COMMENT ON COLUMN layover.dead_letters.trace_context IS
    'The W3C trace context of the parked job''s enqueue ({"traceparent", "tracestate"}); a replay keeps it. NULL: none.';

-- ---------------------------------------------------------------------------
-- job_types: the job types workers run, as the last worker to start registered them (written by the
-- job store, core JobSql.REGISTER_TYPES, when a Layover instance starts its workers; in a rolling
-- deploy the newest start's row stands). layover.enqueue reads it: a type no worker registered is
-- refused, and a key the type derives in Java from its args must be passed by the SQL caller.
--   args_shape              the fingerprint of the args type's shape, written with each job
--   args_properties         the properties the args type declares: an SQL enqueue may name only these
--                           (NULL: any, for an args type that is a Map or a JsonNode)
--   max_args_bytes          the worker's size cap of args (Layover.Builder#maxArgsBytes)
--   provider_key            the type's fixed provider key (JobType.Builder#providerKey(String)); NULL
--                           when it has none or derives it from args
--   provider_key_from_args  the provider key is a function of the args (JobType.Builder#providerKey(Function))
--   fairness_key_from_args  the type has a fairness key function (JobType.Builder#fairnessKey)
--   limit_keys_from_args    the type has a limit keys function (JobType.Builder#limitKeys)
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_types (
    job_type               text        PRIMARY KEY,
    args_shape             text        NOT NULL,
    args_properties        text[],
    max_args_bytes         int         NOT NULL,
    provider_key           text,
    provider_key_from_args boolean     NOT NULL,
    fairness_key_from_args boolean     NOT NULL,
    limit_keys_from_args   boolean     NOT NULL,
    registered_by          text        NOT NULL,
    registered_at          timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE layover.job_types IS
    'The job types workers run, as the last worker to start registered them; read by layover.enqueue.';

-- ---------------------------------------------------------------------------
-- layover.enqueue: a job from SQL, written as Layover's Java enqueue writes it (job_insert.sql): the
-- same columns, the args as UTF-8 JSON (the text of the jsonb), the args shape of the type's
-- registration, the fair-queue tag of a job due now with a fairness key (layover.fair_tags), the
-- token estimate {combined, input, output}, nothing written for an idempotency key that names a
-- live job, a dead letter still parked or in review, or a job completed within the history's
-- retention. The job store's (it writes the job table). Refuses, with an error naming the problem
-- (SQLSTATE 22023) and writing nothing: a job type no worker registered (layover.job_types); args
-- that are not a JSON object, name a property the args type does not declare, or are larger than
-- the cap; a key of 0 or more than 200 characters; a provider key the type derives from args and
-- the call does not pass (pass '' for none, as the type's function returning null); likewise a
-- fairness key ('' for none) and limit keys ('{}' for none); a provider key that differs from the
-- type's fixed one, or a key the type does not have; a priority outside smallint; a token estimate
-- without a provider key, negative or above 10^9; a malformed traceparent. A job id is the key, else
-- a new time-ordered UUID (version 7: the database's millisecond, then random bits). Returns the id
-- and whether the job was created.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.enqueue(job_type text, args jsonb, run_at timestamptz DEFAULT NULL, key text DEFAULT NULL,
                                priority int DEFAULT 0, deadline timestamptz DEFAULT NULL,
                                provider_key text DEFAULT NULL, fairness_key text DEFAULT NULL,
                                limit_keys text[] DEFAULT NULL, input_tokens bigint DEFAULT NULL,
                                output_tokens bigint DEFAULT NULL, tokens bigint DEFAULT NULL,
                                traceparent text DEFAULT NULL, tracestate text DEFAULT NULL)
    RETURNS TABLE (job_id text, created boolean)
    LANGUAGE plpgsql AS
$$
#variable_conflict use_variable
DECLARE
    v_type   layover.job_types%ROWTYPE;
    v_now    timestamptz := clock_timestamp();
    v_run_at timestamptz;
    v_id     text;
    v_data   bytea;
    v_pkey   text;
    v_fkey   text;
    v_lkeys  text[];
    v_est    float8[];
    v_trace  jsonb;
    v_odd    text[];
    v_hex    text;
    v_rows   int;
BEGIN
    SELECT * INTO v_type FROM layover.job_types jt WHERE jt.job_type = enqueue.job_type;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: unknown job type %L: no worker '
            'registered it (layover.job_types lists the types workers run; a worker registers its types when it starts)',
            job_type);
    END IF;
    IF args IS NULL OR jsonb_typeof(args) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: the args of job type %L must be a '
            'JSON object, got %s', job_type, coalesce(jsonb_typeof(args), 'NULL'));
    END IF;
    v_odd := ARRAY(SELECT p FROM jsonb_object_keys(args) p
                   WHERE v_type.args_properties IS NOT NULL AND p <> ALL (v_type.args_properties) ORDER BY p);
    IF cardinality(v_odd) > 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: the args of job type %L name '
            'properties its args type does not declare: %s (it declares: %s)', job_type, array_to_string(v_odd, ', '),
            array_to_string(v_type.args_properties, ', '));
    END IF;
    v_data := convert_to(args::text, 'UTF8');
    IF octet_length(v_data) > v_type.max_args_bytes THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: the args of job type %L are %s '
            'bytes as JSON, over the cap of %s bytes; store large payloads elsewhere and pass a reference', job_type,
            octet_length(v_data), v_type.max_args_bytes);
    END IF;
    IF key IS NOT NULL AND length(key) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: an idempotency key must be 1-200 '
            'characters, was %s', length(key));
    END IF;
    IF priority IS NULL OR priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: priority must fit a smallint, '
            'was %s', coalesce(priority::text, 'NULL'));
    END IF;

    -- the provider key: the type's fixed one, or the one the caller computed as the type's function would
    IF v_type.provider_key_from_args THEN
        IF provider_key IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L computes its '
                'provider key in Java from its args; pass provider_key => the key its function gives for these args '
                '('''' when it gives none)', job_type);
        END IF;
        v_pkey := nullif(provider_key, '');
    ELSIF v_type.provider_key IS NOT NULL THEN
        IF provider_key IS NOT NULL AND provider_key <> v_type.provider_key THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has the fixed '
                'provider key %L; got %L', job_type, v_type.provider_key, provider_key);
        END IF;
        v_pkey := v_type.provider_key;
    ELSIF nullif(provider_key, '') IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has no provider key; '
            'got %L', job_type, provider_key);
    END IF;
    IF length(v_pkey) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: a provider key must be 1-200 '
            'characters, was %s', length(v_pkey));
    END IF;

    IF v_type.fairness_key_from_args THEN
        IF fairness_key IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L computes its '
                'fairness key in Java from its args; pass fairness_key => the key its function gives for these args '
                '('''' when it gives none)', job_type);
        END IF;
        v_fkey := nullif(fairness_key, '');
    ELSIF nullif(fairness_key, '') IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has no fairness key; '
            'got %L', job_type, fairness_key);
    END IF;
    IF length(v_fkey) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: a fairness key must be 1-200 '
            'characters, was %s', length(v_fkey));
    END IF;

    IF v_type.limit_keys_from_args THEN
        IF limit_keys IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L computes its limit '
                'keys in Java from its args; pass limit_keys => the keys its function gives for these args (''{}'' '
                'when it gives none)', job_type);
        END IF;
        -- as JobType#limitKeysOf: distinct, in order, without nulls and without the provider key
        v_lkeys := ARRAY(SELECT u.k FROM unnest(limit_keys) WITH ORDINALITY AS u(k, n)
                         WHERE u.k IS NOT NULL AND u.k IS DISTINCT FROM v_pkey
                         GROUP BY u.k ORDER BY min(u.n));
        IF EXISTS (SELECT 1 FROM unnest(v_lkeys) k WHERE length(k) NOT BETWEEN 1 AND 200) THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: limit keys must be 1-200 characters';
        END IF;
        v_lkeys := nullif(v_lkeys, '{}'::text[]);
    ELSIF cardinality(limit_keys) > 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: job type %L has no limit keys; '
            'got %s', job_type, limit_keys);
    END IF;

    -- the token estimate {combined, input, output}: input + output ceiling (JobType.Builder#tokenEstimate),
    -- or one number counted in every dimension (Layover.Builder#tokenCost)
    IF input_tokens IS NOT NULL OR output_tokens IS NOT NULL OR tokens IS NOT NULL THEN
        IF v_pkey IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: a token estimate reserves '
                'tokens of a provider key''s limits, and this job of type %L has no provider key', job_type);
        END IF;
        IF tokens IS NOT NULL AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL) THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: give tokens, or input_tokens and '
                'output_tokens, not both';
        END IF;
        IF least(input_tokens, output_tokens, tokens) < 0 OR greatest(input_tokens, output_tokens, tokens) > 1000000000 THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: token counts must be 0 to 10^9';
        END IF;
        v_est := CASE WHEN tokens IS NOT NULL THEN ARRAY[tokens, tokens, tokens]::float8[]
                      ELSE ARRAY[coalesce(input_tokens, 0) + coalesce(output_tokens, 0), coalesce(input_tokens, 0),
                                 coalesce(output_tokens, 0)]::float8[] END;
    END IF;

    IF traceparent IS NOT NULL THEN
        IF traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' OR left(traceparent, 2) = 'ff'
           OR substr(traceparent, 4, 32) = repeat('0', 32) OR substr(traceparent, 37, 16) = repeat('0', 16) THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('layover.enqueue: malformed traceparent %L '
                '(W3C: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lower case, ids not all zero)',
                traceparent);
        END IF;
        IF length(tracestate) > 512 THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: a tracestate is at most 512 characters';
        END IF;
        v_trace := jsonb_strip_nulls(jsonb_build_object('traceparent', traceparent, 'tracestate', tracestate));
    ELSIF tracestate IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'layover.enqueue: a tracestate needs its traceparent';
    END IF;

    v_run_at := coalesce(run_at, v_now);
    v_id := key;
    IF v_id IS NULL THEN
        v_hex := replace(gen_random_uuid()::text, '-', '');
        v_hex := lpad(to_hex(floor(extract(epoch FROM v_now) * 1000)::bigint), 12, '0') || '7'
                 || substr(v_hex, 14, 3) || substr(v_hex, 17, 16);
        v_id := substr(v_hex, 1, 8) || '-' || substr(v_hex, 9, 4) || '-' || substr(v_hex, 13, 4) || '-'
                || substr(v_hex, 17, 4) || '-' || substr(v_hex, 21, 12);
    END IF;

    INSERT INTO layover.scheduled_tasks
        (task_name, task_instance, task_data, execution_time, picked, version, priority, consecutive_failures,
         provider_key, deadline, limit_keys, args_shape, fairness_key, token_estimate, fair_tag, trace_context)
    SELECT v_type.job_type, v_id, v_data, v_run_at, false, 1, priority::smallint, 0, v_pkey, deadline, v_lkeys,
           v_type.args_shape, v_fkey, v_est,
           CASE WHEN v_fkey IS NOT NULL AND v_pkey IS NOT NULL AND v_run_at <= v_now
                THEN (layover.fair_tags(v_pkey, v_run_at, ARRAY[v_fkey], ARRAY[priority], ARRAY[v_est[1]],
                                        ARRAY[v_est[2]], ARRAY[v_est[3]]))[1] END,
           v_trace
    WHERE key IS NULL
       OR (NOT EXISTS (SELECT 1 FROM layover.dead_letters d
                       WHERE d.job_type = v_type.job_type AND d.job_id = v_id AND d.state IN ('parked', 'review'))
           AND NOT EXISTS (SELECT 1 FROM layover.job_history h
                           WHERE h.job_type = v_type.job_type AND h.job_id = v_id AND h.outcome = 'completed'))
    ON CONFLICT (task_name, task_instance) DO NOTHING;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    job_id := v_id;
    created := v_rows = 1;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION layover.enqueue(text, jsonb, timestamptz, text, int, timestamptz, text, text, text[], bigint, bigint,
                                    bigint, text, text) IS
    'Enqueues a job from SQL as Layover''s Java enqueue does; returns its id and whether it was created (docs/enqueue-from-sql.md).';

-- ---------------------------------------------------------------------------
-- model_prices: what tokens cost, per model, as the application configured it (Layover.Builder#prices,
-- the Spring Boot starter's layover.prices.*; written by core's internal.observe.PriceSql when an
-- instance with a price table starts: its models are upserted, others are left). No price ships
-- with Layover. Prices per million tokens in `currency`; cached input tokens at
-- cached_input_per_million (NULL: the input price). provider_keys: the provider keys, or prefix*
-- patterns, priced as this model; a key no row names is priced as the model its text after the
-- first ':' names ('openai:gpt-4o-mini' -> 'gpt-4o-mini'), see layover.model_of.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.model_prices (
    model                    text        PRIMARY KEY,
    currency                 text        NOT NULL,
    input_per_million        numeric     NOT NULL CHECK (input_per_million >= 0),
    cached_input_per_million numeric     CHECK (cached_input_per_million >= 0),
    output_per_million       numeric     NOT NULL CHECK (output_per_million >= 0),
    provider_keys            text[]      NOT NULL DEFAULT '{}',
    configured_by            text        NOT NULL,
    configured_at            timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE layover.model_prices IS
    'Token prices per model (per million tokens), as the application configured them; read by layover.token_costs.';

-- The model a provider key is priced as: the row naming the key, else the row with the longest prefix*
-- pattern matching it, else the key's text after its first ':' (the key itself without one); NULL for
-- no key.
CREATE FUNCTION layover.model_of(p_provider_key text) RETURNS text
    LANGUAGE sql STABLE AS
$$
    SELECT coalesce(
        (SELECT m.model FROM layover.model_prices m, unnest(m.provider_keys) k
         WHERE k = p_provider_key OR (right(k, 1) = '*' AND starts_with(p_provider_key, left(k, -1)))
         ORDER BY k = p_provider_key DESC, length(k) DESC, m.model
         LIMIT 1),
        CASE WHEN strpos(p_provider_key, ':') > 0 THEN substr(p_provider_key, strpos(p_provider_key, ':') + 1)
             ELSE nullif(p_provider_key, '') END)
$$;

-- ---------------------------------------------------------------------------
-- The documented view of token use and its cost: per day (UTC), job type, provider key and fairness
-- key (the tenant), the tokens the runs reported, from the time series' hour rows (kept 7 days by
-- default; counters input_tokens, output_tokens, cached_input_tokens, detail the fairness key), priced
-- by layover.model_prices. cost is NULL when the key's model has no price (priced false); a provider
-- key '*' (the keys past the 100 busiest of a flush) or a fairness key '*' (past the busiest) sums the
-- rest. Input tokens include the cached ones, which are priced at the cached price.
-- ---------------------------------------------------------------------------
CREATE VIEW layover.token_costs AS
SELECT u.day, u.job_type, u.provider_key, u.fairness_key, m.model, p.model IS NOT NULL AS priced, p.currency,
       u.input_tokens, u.output_tokens, u.cached_input_tokens,
       round((greatest(u.input_tokens - u.cached_input_tokens, 0) * p.input_per_million
              + u.cached_input_tokens * coalesce(p.cached_input_per_million, p.input_per_million)
              + u.output_tokens * p.output_per_million) / 1000000, 6) AS cost
FROM (SELECT (c.bucket AT TIME ZONE 'UTC')::date AS day, c.job_type, nullif(c.provider_key, '') AS provider_key,
             nullif(c.detail, '') AS fairness_key,
             coalesce(sum(c.amount) FILTER (WHERE c.counter = 'input_tokens'), 0) AS input_tokens,
             coalesce(sum(c.amount) FILTER (WHERE c.counter = 'output_tokens'), 0) AS output_tokens,
             coalesce(sum(c.amount) FILTER (WHERE c.counter = 'cached_input_tokens'), 0) AS cached_input_tokens
      FROM layover.time_series_counts c
      WHERE c.bucket_seconds = 3600 AND c.counter IN ('input_tokens', 'output_tokens', 'cached_input_tokens')
      GROUP BY 1, 2, 3, 4) u
     CROSS JOIN LATERAL (SELECT layover.model_of(u.provider_key) AS model) m
     LEFT JOIN layover.model_prices p ON p.model = m.model;

COMMENT ON VIEW layover.token_costs IS
    'Tokens reported per day (UTC), job type, provider key and fairness key, and their cost by layover.model_prices '
    '(NULL when the model has no price); from the time series'' hour rows.';


-- ===========================================================================
-- Console counts: dead letters counted as they change
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- dead_letter_counts: how many dead letters there are per state, failure type, job type and
-- provider key, kept by statement triggers on layover.dead_letters, so the console's overview,
-- facets, bulk preview and provider key page read a few hundred rows instead of counting up to
-- millions. provider_key is '' for dead letters without one (a primary key column cannot be NULL);
-- readers turn it back with nullif(provider_key, ''). Rows whose n reached 0 stay (there are as
-- many rows as combinations ever seen, a few hundred); readers skip n = 0.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.dead_letter_counts (
    state        text   NOT NULL,
    failure_type text   NOT NULL,
    job_type     text   NOT NULL,
    provider_key text   NOT NULL,
    n            bigint NOT NULL,
    PRIMARY KEY (state, failure_type, job_type, provider_key)
);

COMMENT ON TABLE layover.dead_letter_counts IS
    'Dead letters per (state, failure_type, job_type, provider_key; '''' = none), kept by the triggers '
    'on layover.dead_letters (V18). Read by the console; never written by Java.';

-- Adds the net change of one statement: +1 per new row, -1 per old row, grouped by key, so an
-- UPDATE that moves a row from one key to another (a replay: parked -> replayed) is -1 there and
-- +1 here, and an UPDATE that changes no counted column nets 0 and writes nothing. Rows are
-- applied in key order so that two statements touching the same keys lock them in the same order
-- (no deadlock between them). One row per key per statement: a bulk replay of 10,000 dead
-- letters of one key writes two rows of this table, not 20,000. The cost: two transactions that
-- park (or replay) dead letters of the same key, type and failure type at once wait for each
-- other's commit at that row; parks are rare (a job that exhausted its attempts) and short.
CREATE FUNCTION layover.dead_letter_counts_apply() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO layover.dead_letter_counts AS c (state, failure_type, job_type, provider_key, n)
        SELECT r.state, r.failure_type, r.job_type, coalesce(r.provider_key, ''), count(*)
        FROM new_rows r
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (state, failure_type, job_type, provider_key) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO layover.dead_letter_counts AS c (state, failure_type, job_type, provider_key, n)
        SELECT r.state, r.failure_type, r.job_type, coalesce(r.provider_key, ''), -count(*)
        FROM old_rows r
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (state, failure_type, job_type, provider_key) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO layover.dead_letter_counts AS c (state, failure_type, job_type, provider_key, n)
        SELECT d.state, d.failure_type, d.job_type, d.provider_key, sum(d.delta)
        FROM (SELECT r.state, r.failure_type, r.job_type, coalesce(r.provider_key, '') AS provider_key, 1 AS delta
              FROM new_rows r
              UNION ALL
              SELECT r.state, r.failure_type, r.job_type, coalesce(r.provider_key, ''), -1
              FROM old_rows r) d
        GROUP BY 1, 2, 3, 4
        HAVING sum(d.delta) <> 0
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (state, failure_type, job_type, provider_key) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

-- TRUNCATE fires no row or statement DELETE trigger: empty the counts with it.
CREATE FUNCTION layover.dead_letter_counts_reset() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM layover.dead_letter_counts;
    RETURN NULL;
END $$;

-- Transition tables rule out an UPDATE OF column list: the UPDATE trigger fires for every
-- UPDATE of dead letters (all rare: a park, replay, discard, review, move back) and writes only
-- when a counted column changed.
CREATE TRIGGER dead_letter_counts_insert AFTER INSERT ON layover.dead_letters
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION layover.dead_letter_counts_apply();
CREATE TRIGGER dead_letter_counts_update AFTER UPDATE ON layover.dead_letters
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION layover.dead_letter_counts_apply();
CREATE TRIGGER dead_letter_counts_delete AFTER DELETE ON layover.dead_letters
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION layover.dead_letter_counts_apply();
CREATE TRIGGER dead_letter_counts_truncate AFTER TRUNCATE ON layover.dead_letters
    FOR EACH STATEMENT EXECUTE FUNCTION layover.dead_letter_counts_reset();


-- ===========================================================================
-- Steps: the finished steps of live and parked jobs (issue 45, docs/steps.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- job_steps: one row per finished step of a job (JobContext#step) and per durable sleep it began
-- (JobContext#sleep), keyed by the job's type and id, which a replay of its dead letter keeps: a
-- later run of the job (after a reschedule, a retry, a crash, a replay) reads the job's rows once
-- and returns each stored result without calling again. Written only by core's step store
-- (StepSql: one INSERT .. ON CONFLICT per finished step, one SELECT per run that uses steps); the
-- done delete of the job store removes a finished job's rows in its statement; a park keeps them
-- (with the dead letter, which a replay resumes from); layover.forget_steps() drops them (a
-- discard, a replay from scratch).
--   kind          call (a step's result) or sleep (a durable sleep: wake_at)
--   result_type   the Java class the result was stored as (a step asked as another type is an error)
--   result        the result as JSON, Jackson, as args are; result_bytes its size in UTF-8
--   provider_key  the key the step was admitted by (StepOptions#providerKey), NULL: the job's own call
--   attempt       the job's attempt that finished the step (rate-limit reschedules do not count)
--   started_at    finished_at minus the step's duration (database time)
--   expires_at    the result is not reused from then on (StepOptions#validFor); NULL: never expires
--   wake_at       a sleep's end (database time): the run that passes it after then goes on
--   *_tokens      the usage the step's calls reported (JobContext#reportUsage inside the step)
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_steps (
    job_type            text        NOT NULL,
    job_id              text        NOT NULL,
    name                text        NOT NULL,
    kind                text        NOT NULL DEFAULT 'call',
    result_type         text,
    result              jsonb,
    result_bytes        int,
    provider_key        text,
    attempt             int         NOT NULL DEFAULT 1,
    started_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz NOT NULL DEFAULT now(),
    duration_ms         float8,
    expires_at          timestamptz,
    wake_at             timestamptz,
    input_tokens        bigint,
    output_tokens       bigint,
    cached_input_tokens bigint,
    worker              text,
    PRIMARY KEY (job_type, job_id, name),
    CONSTRAINT job_steps_kind_check CHECK (kind IN ('call', 'sleep', 'signal'))
);

COMMENT ON TABLE layover.job_steps IS
    'Finished steps (and durable sleeps) of live and parked jobs; a later run returns a stored result without calling. '
    'Read layover.steps.';

-- Drops the steps of some jobs (a dead letter discarded, or replayed from scratch): the step store's
-- function for the dead-letter store's statements. Returns the rows deleted.
CREATE FUNCTION layover.forget_steps(p_job_types text[], p_job_ids text[]) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH gone AS (
        DELETE FROM layover.job_steps s
        USING unnest(p_job_types, p_job_ids) AS u(job_type, job_id)
        WHERE s.job_type = u.job_type AND s.job_id = u.job_id
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

COMMENT ON FUNCTION layover.forget_steps(text[], text[]) IS
    'Drops the stored steps of the given jobs (job types and ids, pairwise): a discard, a replay from scratch.';

-- ---------------------------------------------------------------------------
-- steps: the public view of stored steps, one row per step.
--   outcome    finished (its result is reused), expired (validFor passed: it runs again),
--              sleeping (a sleep whose wake_at is ahead), slept (a sleep passed); a signal wait
--              (kind signal, JobContext#awaitSignal): waiting, signalled (result: its payload), timed_out
--   job_state  live (the job is queued or running), parked (its dead letter is parked or in
--              review: a replay resumes from these steps), none (neither)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.steps AS
SELECT s.job_type,
       s.job_id,
       s.name                                   AS step,
       s.kind,
       s.provider_key,
       s.attempt,
       s.started_at,
       s.finished_at,
       s.duration_ms,
       s.input_tokens,
       s.output_tokens,
       s.cached_input_tokens,
       s.result_type,
       s.result_bytes,
       s.result,
       s.expires_at,
       s.wake_at,
       CASE WHEN s.kind = 'sleep' THEN CASE WHEN s.wake_at > now() THEN 'sleeping' ELSE 'slept' END
            WHEN s.kind = 'signal' THEN CASE WHEN s.result IS NOT NULL THEN 'signalled'
                                             WHEN s.wake_at > now() THEN 'waiting' ELSE 'timed_out' END
            WHEN s.expires_at <= now() THEN 'expired'
            ELSE 'finished' END                 AS outcome,
       CASE WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                         WHERE t.task_name = s.job_type AND t.task_instance = s.job_id) THEN 'live'
            WHEN EXISTS (SELECT 1 FROM layover.dead_letters d
                         WHERE d.job_type = s.job_type AND d.job_id = s.job_id
                           AND d.state IN ('parked', 'review')) THEN 'parked'
            ELSE 'none' END                     AS job_state
FROM layover.job_steps s;

COMMENT ON VIEW layover.steps IS
    'Stored steps of live and parked jobs: step, kind, provider key, started/finished, duration, tokens, outcome, job state.';


-- ===========================================================================
-- Workers: the running instances (docs/observability.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- layover.workers: one row per running Layover instance (a worker JVM, named like the jobs'
-- picked_by), written by core's WorkerRegistry through layover.worker_heartbeat(): when the
-- instance starts, every 5 seconds after that, and at once when the operators' limits it applies
-- change; deleted when it stops. A worker that died without stopping keeps its row, its heartbeat
-- ageing; any worker's heartbeat deletes rows whose heartbeat is an hour old. Nothing decides on
-- this table: the console's Workers page and SQL read it.
--   worker_name   the instance's worker name (Layover.Builder#workerName; default host#pid)
--   host          the machine's name
--   threads       its worker threads (Layover.Builder#threads)
--   version       its Layover version
--   started_at    when it started, database time
--   heartbeat_at  its last heartbeat, database time
--   limits        the operators' limits (layover.limit_overrides) it applies, by key: the values
--                 it applies and applied_at, when it first reported them (within a second of
--                 applying them); {} when it applies none
-- ---------------------------------------------------------------------------
CREATE TABLE layover.workers (
    worker_name  text        PRIMARY KEY,
    host         text        NOT NULL,
    threads      int         NOT NULL,
    version      text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    limits       jsonb       NOT NULL DEFAULT '{}'::jsonb
);

COMMENT ON TABLE layover.workers IS
    'Running Layover instances: threads, version, heartbeat and the operators'' limits each applies, since when.';

-- The limits a worker reports, each with the applied_at it had in the row before when the values
-- are the same, else now().
CREATE FUNCTION layover.worker_limits(reported jsonb, before jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_object_agg(n.key,
               CASE WHEN o.value IS NOT NULL AND (o.value - 'applied_at') = n.value THEN o.value
                    ELSE n.value || jsonb_build_object('applied_at', now()) END), '{}'::jsonb)
    FROM jsonb_each(reported) n
    LEFT JOIN jsonb_each(coalesce(before, '{}'::jsonb)) o ON o.key = n.key
$$;

-- A worker's heartbeat (started: its first, at start), and the cleanup of rows an hour stale.
CREATE FUNCTION layover.worker_heartbeat(p_name text, p_host text, p_threads int, p_version text,
                                         p_limits jsonb, p_started boolean) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO layover.workers AS w (worker_name, host, threads, version, limits)
    VALUES (p_name, p_host, p_threads, p_version, layover.worker_limits(p_limits, NULL))
    ON CONFLICT (worker_name) DO UPDATE
    SET host = excluded.host, threads = excluded.threads, version = excluded.version, heartbeat_at = now(),
        started_at = CASE WHEN p_started THEN now() ELSE w.started_at END,
        limits = layover.worker_limits(p_limits, w.limits);
    DELETE FROM layover.workers WHERE heartbeat_at < now() - interval '1 hour';
$$;


-- ===========================================================================
-- Audit
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- audit_log: one row per action a person (or a Layover plugin) took.
--   action: replay, edit (args edited for a replay), discard, move_back
--           (review -> parked), purge (retention), and breaker actions
--           (force_open, force_close) written by the console.
--   A bulk action writes its row when it starts and adds to `count` in the same
--   transaction as each batch, so `count` is always what really changed;
--   `finished_at` is set when it ends (NULL: still running, or it died).
-- ---------------------------------------------------------------------------
CREATE TABLE layover.audit_log (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text        NOT NULL,                -- who: the name the caller passed
    action      text        NOT NULL,
    subject     text,                                -- what, when not dead letters: e.g. a provider key
    count       bigint      NOT NULL DEFAULT 0,      -- how many dead letters (or things) changed
    ids         bigint[],                            -- the dead letters changed, when chosen by id
    filter      jsonb,                               -- the filter, when chosen by filter
    note        text,                                -- the caller's reason
    details     jsonb       NOT NULL DEFAULT '{}'::jsonb,  -- replay kind, args before/after an edit, skips
    finished_at timestamptz,
    CONSTRAINT audit_log_action_check CHECK (action ~ '^[a-z][a-z0-9_]{0,39}$'),
    CONSTRAINT audit_log_actor_check CHECK (length(actor) BETWEEN 1 AND 200)
);

CREATE INDEX audit_log_action_idx ON layover.audit_log (action, id DESC);
-- "everything that happened to dead letter 42": ids @> ARRAY[42::bigint]
CREATE INDEX audit_log_ids_idx ON layover.audit_log USING gin (ids);

COMMENT ON TABLE layover.audit_log IS
    'Actions on dead letters and breakers: who (actor), when (at), what (action), how many (count), ids or filter, note.';


-- ===========================================================================
-- Helpers
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- Forgetting, for demos and tests that reuse a database: everything of one job type (its live
-- jobs and dead letters), and the provider state of some keys (breakers, cooldowns, buckets and
-- the recovery sweep's state). Not for production use: a live job of the type that runs meanwhile
-- finishes, but its outcome finds no row to write. Each returns the rows deleted.
-- forget_job_type deletes from scheduled_tasks, dead_letters and job_steps: the job store's (which
-- moves a job into its dead letter too, and removes a finished job's steps). forget_provider_keys
-- deletes from breakers, cooldowns, buckets (the gate's) and recovery_state: the gate's,
-- forgetting a key's state whole.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.forget_job_type(p_job_type text) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH jobs AS (DELETE FROM layover.scheduled_tasks WHERE task_name = p_job_type RETURNING 1),
         letters AS (DELETE FROM layover.dead_letters WHERE job_type = p_job_type RETURNING 1),
         steps AS (DELETE FROM layover.job_steps WHERE job_type = p_job_type RETURNING 1)
    SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM letters) + (SELECT count(*) FROM steps)
$$;

CREATE FUNCTION layover.forget_provider_keys(p_keys text[]) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH b AS (DELETE FROM layover.breakers WHERE provider_key = ANY (p_keys) RETURNING 1),
         c AS (DELETE FROM layover.cooldowns WHERE provider_key = ANY (p_keys) RETURNING 1),
         k AS (DELETE FROM layover.buckets WHERE provider_key = ANY (p_keys) RETURNING 1),
         r AS (DELETE FROM layover.recovery_state WHERE provider_key = ANY (p_keys) RETURNING 1)
    SELECT (SELECT count(*) FROM b) + (SELECT count(*) FROM c) + (SELECT count(*) FROM k) + (SELECT count(*) FROM r)
$$;

-- ===========================================================================
-- Recurring jobs (issue 47): layover.schedules and the view layover.schedules_view
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- One row per schedule: a job type with a cron expression and zone, or a fixed interval, whose
-- occurrences are ordinary jobs. Written only by core's schedule statements (schedule_*.sql). A
-- schedule is named per tenant ('' for the schedules defined in code). source 'code': reconciled at
-- each start from the application's code (definition_hash, generation: a JVM writes a code schedule
-- only when its generation is at least the row's; removed_at marks one no longer in the code).
-- source 'api': created, changed and deleted at run time. next_at is the next occurrence's instant
-- (nominal, before jitter); due_at is when a scheduler loop looks at the row next (next_at, or the
-- recheck of an occurrence held back by the overlap policy QUEUE; null while paused or removed).
-- The loops claim due rows with FOR UPDATE SKIP LOCKED on schedules_due_idx, so an idle poll is one
-- index probe however many schedules exist. Each occurrence's job id is
-- 'sched:<tenant>/<name>@<instant>': enqueued once across the fleet.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.schedules (
    tenant          text        NOT NULL DEFAULT '',
    name            text        NOT NULL,
    job_type        text        NOT NULL,
    cron            text,
    zone            text,
    every_ms        bigint,
    args            jsonb,
    args_from_code  boolean     NOT NULL DEFAULT false,
    missed          text        NOT NULL DEFAULT 'skip',
    missed_window_ms bigint,
    overlap         text        NOT NULL DEFAULT 'skip',
    jitter_ms       bigint      NOT NULL DEFAULT 0,
    priority        smallint    NOT NULL DEFAULT 0,
    next_at         timestamptz NOT NULL,
    due_at          timestamptz,
    held            boolean     NOT NULL DEFAULT false,
    last_at         timestamptz,
    last_job_id     text,
    last_enqueued_at timestamptz,
    last_outcome    text,
    paused          boolean     NOT NULL DEFAULT false,
    source          text        NOT NULL,
    definition_hash text,
    generation      bigint      NOT NULL DEFAULT 0,
    removed_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, name),
    CONSTRAINT schedules_timing_check CHECK ((cron IS NOT NULL AND zone IS NOT NULL AND every_ms IS NULL)
                                             OR (cron IS NULL AND zone IS NULL AND every_ms > 0)),
    CONSTRAINT schedules_source_check CHECK (source IN ('code', 'api')),
    CONSTRAINT schedules_missed_check CHECK (missed IN ('skip', 'run_last', 'catch_up')),
    CONSTRAINT schedules_overlap_check CHECK (overlap IN ('skip', 'queue', 'allow'))
);

-- the scheduler loops' claim: WHERE due_at <= now() ORDER BY due_at (paused and removed rows have none)
CREATE INDEX schedules_due_idx ON layover.schedules (due_at) WHERE due_at IS NOT NULL;

COMMENT ON TABLE layover.schedules IS
    'Recurring jobs: one row per schedule (tenant, name); each occurrence is an ordinary job with id sched:<tenant>/<name>@<instant>. Read layover.schedules_view.';

-- ---------------------------------------------------------------------------
-- The documented view of schedules: what runs when, what ran last and how it ended.
-- last_job_state: the last occurrence's job as it is now: 'waiting' or 'running' (in the queue),
-- 'completed', 'parked', 'cancelled' (from the history, or a parked dead letter), or null when
-- unknown (never run, or its history row was deleted by retention).
-- ---------------------------------------------------------------------------
CREATE VIEW layover.schedules_view AS
SELECT s.tenant,
       s.name,
       s.job_type,
       s.source,
       CASE WHEN s.cron IS NOT NULL THEN s.cron || ' (' || s.zone || ')'
            ELSE 'every ' || (s.every_ms * interval '1 millisecond')::text END AS timing,
       s.cron,
       s.zone,
       s.every_ms * interval '1 millisecond'                             AS every,
       s.paused,
       s.removed_at IS NOT NULL                                          AS removed,
       CASE WHEN s.paused OR s.removed_at IS NOT NULL THEN NULL ELSE s.next_at END AS next_at,
       s.held                                                            AS held_by_overlap,
       s.last_at,
       s.last_job_id,
       s.last_enqueued_at,
       s.last_outcome,
       CASE WHEN s.last_job_id IS NULL THEN NULL
            WHEN t.picked THEN 'running'
            WHEN t.task_instance IS NOT NULL THEN 'waiting'
            WHEN h.outcome IS NOT NULL THEN h.outcome
            WHEN d.state IS NOT NULL THEN 'parked'
       END                                                               AS last_job_state,
       s.missed,
       s.missed_window_ms * interval '1 millisecond'                     AS missed_window,
       s.overlap,
       s.jitter_ms * interval '1 millisecond'                            AS jitter,
       s.args,
       s.updated_at
FROM layover.schedules s
LEFT JOIN layover.scheduled_tasks t ON t.task_name = s.job_type AND t.task_instance = s.last_job_id
LEFT JOIN LATERAL (SELECT x.outcome FROM layover.job_history x
                   WHERE x.job_type = s.job_type AND x.job_id = s.last_job_id
                   ORDER BY x.finished_at DESC LIMIT 1) h ON true
LEFT JOIN LATERAL (SELECT y.state FROM layover.dead_letters y
                   WHERE y.job_type = s.job_type AND y.job_id = s.last_job_id
                   ORDER BY y.id DESC LIMIT 1) d ON true;

COMMENT ON VIEW layover.schedules_view IS
    'Recurring jobs: each schedule with its timing, next occurrence, last occurrence and its job''s state now, paused.';

-- ===========================================================================
-- Groups: fan-out and fan-in (issue 46, docs/composition.md, docs/decisions/0005-groups.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- groups: one row per group of jobs whose callback job runs once every member has finished.
-- Written by core's group store (GroupSql: the row at creation, sealed_at at the seal) and by
-- layover.group_settle() (callback_state and settled_at, once). The callback is an ordinary job of
-- a registered job type, inserted with the group and waiting (run time 9999-12-31, reason 'group')
-- until the group settles: then layover.group_settle() makes it due, in the transaction that wrote
-- the last member's end, or deletes it (policy on_success with a discarded member).
--   id              the group's id (GroupOptions#key, else a time-ordered UUID); also the callback job's id
--   callback_type   the callback's job type
--   policy          on_complete: the callback runs once every member is done or discarded;
--                   on_success: only when every member is done (a discarded member skips it)
--   sealed_at       members may be added until then (GroupOptions#open); a group created sealed has it at creation
--   callback_state  waiting (members open, or not sealed), released (the callback was made due),
--                   skipped (on_success and a member was discarded: the callback job was deleted)
--   settled_at      when callback_state left waiting
--   callback_lead   how far back the release may date the callback's run time: the callback is made
--                   due as of its group's creation (ahead of work enqueued after the group), but at
--                   most this long before the release, half its job type's maxDeferral (the pick
--                   parks a keyed job its limits have kept waiting longer than maxDeferral)
-- ---------------------------------------------------------------------------
CREATE TABLE layover.groups (
    id             text        PRIMARY KEY,
    callback_type  text        NOT NULL,
    policy         text        NOT NULL DEFAULT 'on_complete',
    created_at     timestamptz NOT NULL DEFAULT now(),
    sealed_at      timestamptz,
    callback_state text        NOT NULL DEFAULT 'waiting',
    settled_at     timestamptz,
    callback_lead  interval    NOT NULL DEFAULT interval '30 minutes',
    CONSTRAINT groups_policy_check CHECK (policy IN ('on_complete', 'on_success')),
    CONSTRAINT groups_callback_state_check CHECK (callback_state IN ('waiting', 'released', 'skipped'))
);

COMMENT ON TABLE layover.groups IS
    'Groups of jobs (fan-out, fan-in): the callback job, its policy, sealed, the callback''s state. Read layover.job_groups.';

-- ---------------------------------------------------------------------------
-- group_members: one row per member job of a group, written in the statement that inserts the job
-- (job_insert_batch.sql), its end written in the statement that ends the job: the done delete
-- (state done, the handler's result), the park (parked), a replay (pending again), a discard
-- (layover.group_members_discarded(): discarded). No statement writes the group's row per member:
-- "is any member open" is one probe of group_members_open under the group's advisory lock
-- (layover.group_settle(), decision 0005).
--   state   pending (a live job), parked (its dead letter waits for a replay or a discard),
--           done (completed; result: Outcome.done(result) as JSON), discarded
-- ---------------------------------------------------------------------------
CREATE TABLE layover.group_members (
    group_id    text        NOT NULL REFERENCES layover.groups (id) ON DELETE CASCADE,
    job_type    text        NOT NULL,
    job_id      text        NOT NULL,
    state       text        NOT NULL DEFAULT 'pending',
    result      jsonb,
    added_at    timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (group_id, job_type, job_id),
    CONSTRAINT group_members_state_check CHECK (state IN ('pending', 'parked', 'done', 'discarded'))
);

-- the members still open, per group: the settle's probe
CREATE INDEX group_members_open ON layover.group_members (group_id) WHERE state IN ('pending', 'parked');
-- a job is an open member of one group at most; a replay finds its member row by the job's type and id
CREATE UNIQUE INDEX group_members_job ON layover.group_members (job_type, job_id) WHERE state IN ('pending', 'parked');

COMMENT ON TABLE layover.group_members IS
    'Members of groups: state (pending, parked, done, discarded) and a done member''s result.';

-- Makes a waiting job due (a group's callback, a dependent, a job waiting for a signal): its run
-- time p_at (now, or for a group's callback its group's creation), or, while a pause holds it, its
-- paused run time p_at (the pause's reason kept). Only a job not picked whose run time (or paused run
-- time) is at or after p_waiting_after. Returns whether it did.
CREATE FUNCTION layover.job_make_due(p_type text, p_id text, p_reason text, p_detail text,
                                     p_waiting_after timestamptz, p_at timestamptz) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.scheduled_tasks t
    SET execution_time = CASE WHEN t.paused_run_at IS NULL THEN p_at ELSE t.execution_time END,
        paused_run_at = CASE WHEN t.paused_run_at IS NULL THEN NULL ELSE least(t.paused_run_at, p_at) END,
        version = t.version + 1,
        last_reschedule_reason = CASE WHEN t.paused_run_at IS NULL THEN p_reason ELSE t.last_reschedule_reason END,
        last_reschedule_detail = CASE WHEN t.paused_run_at IS NULL THEN p_detail ELSE t.last_reschedule_detail END
    WHERE t.task_name = p_type AND t.task_instance = p_id AND NOT t.picked
      AND coalesce(t.paused_run_at, t.execution_time) >= p_waiting_after;
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION layover.job_make_due(text, text, text, text, timestamptz, timestamptz) IS
    'Makes a waiting job due at the given time (or its paused run time), when it is not picked and waits past the given time.';

-- Settles groups whose members may all have ended: for each (in id order), under the group's
-- transaction-scoped advisory lock, a group that is sealed, still waiting and has no open member
-- gets its callback made due (released; a paused callback gets its paused run time), or deleted
-- (skipped: policy on_success with a discarded member; when that callback is a member of a parent
-- group, it ends there discarded and the parent is settled). A VOLATILE function's statements each take a
-- fresh snapshot: a caller that wrote its members' ends before calling sees every end committed
-- before it got the lock, so of two transactions ending a group's last two members the later one
-- settles it; callback_state = 'waiting' makes a second settle a no-op. A released callback's run
-- time is its group's creation (so among due jobs of its priority it runs ahead of work enqueued after
-- its group, not behind the backlog that built up while its members ran), at most callback_lead before
-- p_now. p_now: NULL for the database's clock, else a test clock's time. Returns the groups released.
CREATE FUNCTION layover.group_settle(p_groups text[], p_now timestamptz DEFAULT NULL) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    g        text;
    r        record;
    parents  text[];
    released int := 0;
    v_now    timestamptz := coalesce(p_now, now());
BEGIN
    FOR g IN SELECT DISTINCT x FROM unnest(p_groups) AS x WHERE x IS NOT NULL ORDER BY x LOOP
        PERFORM pg_advisory_xact_lock(1735357040, hashtext(g));
        SELECT * INTO r FROM layover.groups WHERE id = g;
        CONTINUE WHEN NOT FOUND OR r.sealed_at IS NULL OR r.callback_state <> 'waiting';
        CONTINUE WHEN EXISTS (SELECT 1 FROM layover.group_members m
                              WHERE m.group_id = g AND m.state IN ('pending', 'parked'));
        IF r.policy = 'on_success'
           AND EXISTS (SELECT 1 FROM layover.group_members m WHERE m.group_id = g AND m.state = 'discarded') THEN
            UPDATE layover.groups SET callback_state = 'skipped', settled_at = now() WHERE id = g;
            -- a callback that is a member of a parent group (groups of groups) ends there discarded
            WITH gone AS (
                DELETE FROM layover.scheduled_tasks t
                WHERE t.task_name = r.callback_type AND t.task_instance = g AND NOT t.picked
                RETURNING t.group_id
            ), ended AS (
                UPDATE layover.group_members m SET state = 'discarded', finished_at = now()
                FROM gone
                WHERE gone.group_id IS NOT NULL AND m.group_id = gone.group_id AND m.job_type = r.callback_type
                  AND m.job_id = g AND m.state = 'pending'
                RETURNING m.group_id
            )
            SELECT array_agg(ended.group_id) INTO parents FROM ended;
            IF parents IS NOT NULL THEN
                PERFORM layover.group_settle(parents, p_now);
            END IF;
        ELSE
            UPDATE layover.groups SET callback_state = 'released', settled_at = now() WHERE id = g;
            PERFORM layover.job_make_due(r.callback_type, g, 'group_complete',
                                         'every member of group ' || g || ' has finished', '9999-12-31T00:00:00Z',
                                         greatest(least(r.created_at, v_now), v_now - r.callback_lead));
            released := released + 1;
        END IF;
    END LOOP;
    IF released > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN released;
END
$$;

COMMENT ON FUNCTION layover.group_settle(text[], timestamptz) IS
    'Releases (or skips) the callback of each given group that is sealed and has no open member, once, under the group''s advisory lock; '
    'a released callback is due as of its group''s creation.';

-- Members whose dead letters were discarded (job types and ids, pairwise): their member rows end
-- discarded and their groups are settled. The group store's function for the dead-letter store's
-- discard. Returns the groups released.
CREATE FUNCTION layover.group_members_discarded(p_job_types text[], p_job_ids text[]) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    gs text[];
BEGIN
    WITH m AS (
        UPDATE layover.group_members gm SET state = 'discarded', finished_at = now()
        FROM unnest(p_job_types, p_job_ids) AS u(job_type, job_id)
        WHERE gm.job_type = u.job_type AND gm.job_id = u.job_id AND gm.state = 'parked'
        RETURNING gm.group_id)
    SELECT array_agg(DISTINCT m.group_id) INTO gs FROM m;
    IF gs IS NULL THEN
        RETURN 0;
    END IF;
    RETURN layover.group_settle(gs);
END
$$;

COMMENT ON FUNCTION layover.group_members_discarded(text[], text[]) IS
    'A discard of dead letters: their group members end discarded and their groups are settled.';

-- ---------------------------------------------------------------------------
-- job_groups: the public view of groups, one row per group.
--   size, pending, parked, done, discarded   its members by state
--   callback_state  waiting, skipped, or once released: queued (its job is live), parked (its
--                   dead letter is parked or in review), finished (neither)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.job_groups AS
SELECT g.id                                                     AS group_id,
       g.callback_type,
       g.policy,
       g.created_at,
       g.sealed_at,
       g.settled_at,
       coalesce(c.size, 0)                                      AS size,
       coalesce(c.pending, 0)                                   AS pending,
       coalesce(c.parked, 0)                                    AS parked,
       coalesce(c.done, 0)                                      AS done,
       coalesce(c.discarded, 0)                                 AS discarded,
       CASE WHEN g.callback_state <> 'released' THEN g.callback_state
            WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                         WHERE t.task_name = g.callback_type AND t.task_instance = g.id) THEN 'queued'
            WHEN EXISTS (SELECT 1 FROM layover.dead_letters d
                         WHERE d.job_type = g.callback_type AND d.job_id = g.id
                           AND d.state IN ('parked', 'review')) THEN 'parked'
            ELSE 'finished' END                                 AS callback_state
FROM layover.groups g
LEFT JOIN LATERAL (
    SELECT count(*)                                    AS size,
           count(*) FILTER (WHERE m.state = 'pending')   AS pending,
           count(*) FILTER (WHERE m.state = 'parked')    AS parked,
           count(*) FILTER (WHERE m.state = 'done')      AS done,
           count(*) FILTER (WHERE m.state = 'discarded') AS discarded
    FROM layover.group_members m WHERE m.group_id = g.id) c ON true;

COMMENT ON VIEW layover.job_groups IS
    'Groups: callback type, policy, sealed, members by state (size, pending, parked, done, discarded), callback state.';

-- ===========================================================================
-- Dependencies: jobs that run after other jobs (issue 46, docs/composition.md)
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- job_dependencies: one row per edge "job (job_type, job_id) runs after (after_type, after_id)",
-- written with the dependent's insert (Enqueuer, in the enqueue's transaction), which also marks
-- the prerequisite's row has_dependents (without moving its version: its run's writes still match,
-- and its done delete, waiting for that row lock, returns the flag). A dependent waits (run time
-- 9999-12-31, reason 'dependencies') until every edge is completed: the transaction that deletes a
-- done prerequisite with has_dependents calls layover.dependencies_completed(), which ends its
-- edges and makes due each dependent left with none open (under the dependent's advisory lock).
-- A prerequisite that parks holds its dependents (the view layover.waiting_dependents says so); a
-- replay's job keeps them; a discard (layover.dependencies_failed(), the dead-letter store's
-- function) ends its edges failed and parks each waiting dependent 'dependency_failed'.
-- Dependencies name jobs that exist when the dependent is enqueued, so no cycle can be built.
--   state   waiting, completed, failed
-- ---------------------------------------------------------------------------
CREATE TABLE layover.job_dependencies (
    job_type   text        NOT NULL,
    job_id     text        NOT NULL,
    after_type text        NOT NULL,
    after_id   text        NOT NULL,
    state      text        NOT NULL DEFAULT 'waiting',
    created_at timestamptz NOT NULL DEFAULT now(),
    ended_at   timestamptz,
    PRIMARY KEY (job_type, job_id, after_type, after_id),
    CONSTRAINT job_dependencies_state_check CHECK (state IN ('waiting', 'completed', 'failed'))
);

-- the open edges of a prerequisite: what its end looks up
CREATE INDEX job_dependencies_after ON layover.job_dependencies (after_type, after_id) WHERE state = 'waiting';

COMMENT ON TABLE layover.job_dependencies IS
    'Edges: a job (job_type, job_id) runs after (after_type, after_id); state waiting, completed, failed. '
    'Read layover.waiting_dependents.';

-- Prerequisites that completed (job types and ids, pairwise, in the transaction that deleted them):
-- their waiting edges end completed; each dependent with no edge left waiting is made due (under its
-- transaction-scoped advisory lock, a fresh snapshot per statement: of two transactions completing a
-- dependent's last two prerequisites the later one releases it). Returns the dependents made due.
CREATE FUNCTION layover.dependencies_completed(p_types text[], p_ids text[]) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    d        record;
    released int := 0;
BEGIN
    FOR d IN
        WITH ended AS (
            UPDATE layover.job_dependencies e SET state = 'completed', ended_at = now()
            FROM unnest(p_types, p_ids) AS u(t, i)
            WHERE e.after_type = u.t AND e.after_id = u.i AND e.state = 'waiting'
            RETURNING e.job_type, e.job_id)
        SELECT DISTINCT job_type, job_id FROM ended ORDER BY job_type, job_id
    LOOP
        PERFORM pg_advisory_xact_lock(1735357041, hashtext(d.job_type || '/' || d.job_id));
        CONTINUE WHEN EXISTS (SELECT 1 FROM layover.job_dependencies e
                              WHERE e.job_type = d.job_type AND e.job_id = d.job_id AND e.state <> 'completed');
        IF layover.job_make_due(d.job_type, d.job_id, 'dependencies_done', 'every job it runs after has completed',
                                '9999-12-31T00:00:00Z', now()) THEN
            released := released + 1;
        END IF;
    END LOOP;
    IF released > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN released;
END
$$;

COMMENT ON FUNCTION layover.dependencies_completed(text[], text[]) IS
    'Prerequisites completed: their edges end completed and each dependent with none open is made due.';

-- Prerequisites whose dead letters were discarded (job types and ids, pairwise): their waiting edges
-- end failed, and each dependent still waiting is parked as a dead letter, failure type
-- dependency_failed (its own dependents then wait for it, as for any parked job). The job store's
-- function for the dead-letter store's discard. Returns the dependents parked.
CREATE FUNCTION layover.dependencies_failed(p_types text[], p_ids text[]) RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    parked int;
BEGIN
    WITH ended AS (
        UPDATE layover.job_dependencies e SET state = 'failed', ended_at = now()
        FROM unnest(p_types, p_ids) AS u(t, i)
        WHERE e.after_type = u.t AND e.after_id = u.i AND e.state = 'waiting'
        RETURNING e.job_type, e.job_id, e.after_type, e.after_id
    ), moved AS (
        DELETE FROM layover.scheduled_tasks t
        USING (SELECT job_type, job_id, min(after_type || '/' || after_id) AS why FROM ended
               GROUP BY job_type, job_id) x
        WHERE t.task_name = x.job_type AND t.task_instance = x.job_id AND NOT t.picked
          AND coalesce(t.paused_run_at, t.execution_time) >= '9999-12-31T00:00:00Z'::timestamptz
        RETURNING t.*, x.why
    ), grouped AS (
        UPDATE layover.group_members g SET state = 'parked'
        FROM moved m
        WHERE m.group_id IS NOT NULL AND g.group_id = m.group_id AND g.job_type = m.task_name
          AND g.job_id = m.task_instance AND g.state = 'pending'
    ), letters AS (
        INSERT INTO layover.dead_letters
            (job_type, job_id, args, args_raw, provider_key, failure_type, error_class, error_message, errors,
             attempts, provider_trail, reschedules, priority, first_enqueued_at, limit_keys, fairness_key,
             trace_context)
        SELECT m.task_name, m.task_instance, layover.args_jsonb(m.task_data),
               CASE WHEN layover.args_jsonb(m.task_data) IS NULL THEN m.task_data END,
               m.provider_key, 'dependency_failed', NULL,
               'a job it runs after (' || m.why || ') was discarded', m.errors, coalesce(m.consecutive_failures, 0),
               m.provider_trail, m.reschedules, m.priority, m.first_enqueued_at, m.limit_keys, m.fairness_key,
               m.trace_context
        FROM moved m
        RETURNING 1
    )
    SELECT count(*) INTO parked FROM letters;
    RETURN parked;
END
$$;

COMMENT ON FUNCTION layover.dependencies_failed(text[], text[]) IS
    'Prerequisites discarded: their edges end failed and each waiting dependent is parked dependency_failed.';

-- ---------------------------------------------------------------------------
-- waiting_dependents: the public view of jobs waiting for other jobs, one row per open edge.
--   after_state  live (the prerequisite is queued or running), parked (its dead letter is parked or
--                in review: the dependent waits for its replay or discard), missing (neither)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.waiting_dependents AS
SELECT e.job_type,
       e.job_id,
       e.after_type,
       e.after_id,
       e.created_at,
       CASE WHEN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                         WHERE t.task_name = e.after_type AND t.task_instance = e.after_id) THEN 'live'
            WHEN EXISTS (SELECT 1 FROM layover.dead_letters d
                         WHERE d.job_type = e.after_type AND d.job_id = e.after_id
                           AND d.state IN ('parked', 'review')) THEN 'parked'
            ELSE 'missing' END AS after_state
FROM layover.job_dependencies e
WHERE e.state = 'waiting';

COMMENT ON VIEW layover.waiting_dependents IS
    'Jobs waiting for other jobs: one row per open edge, with the prerequisite''s state (live, parked, missing).';

-- ===========================================================================
-- Signals: a job that waits for a named signal (issue 46, docs/composition.md)
-- ===========================================================================

-- A signal to a job waiting for it (JobContext#awaitSignal stored a step of kind 'signal' whose
-- wake_at is its timeout): the step keeps the payload (result, jsonb; SQL NULL is stored as JSON
-- null) and wake_at = now(), and the job is made due (a paused one gets its paused run time now).
-- A job whose run is writing its wait at the same moment reads the step's wake_at in that write, so
-- the signal is never lost to the race. Returns false, writing nothing, when the job has no such
-- step still waiting (no job of that type and id waits for that name, it timed out, or it was
-- signalled already). Callable from any language: SELECT layover.signal('approve', 'doc-1',
-- 'approved', '{"by": "alice"}').
CREATE FUNCTION layover.signal(p_job_type text, p_job_id text, p_name text, p_payload jsonb) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.job_steps s
    SET result = coalesce(p_payload, 'null'::jsonb), result_type = 'signal', wake_at = now(),
        result_bytes = octet_length(coalesce(p_payload, 'null'::jsonb)::text)
    WHERE s.job_type = p_job_type AND s.job_id = p_job_id AND s.name = p_name AND s.kind = 'signal'
      AND s.result IS NULL AND s.wake_at > now();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- the job waits until its timeout, after now (its wait's write reads the step's wake_at if it runs now)
    IF layover.job_make_due(p_job_type, p_job_id, 'signalled', 'signal ''' || p_name || ''' arrived', now(), now()) THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION layover.signal(text, text, text, jsonb) IS
    'Delivers a named signal (a jsonb payload) to a job waiting for it (JobContext#awaitSignal) and makes it due; '
    'false when no such wait is open.';
