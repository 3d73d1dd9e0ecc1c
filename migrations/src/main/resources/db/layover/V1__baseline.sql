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
-- Owners: docs/architecture.md names the Java file that owns each table (the only one whose SQL
-- writes it); a write one owner's statement needs of another owner's table goes through a
-- function of that owner, defined here.


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
    permit_at              timestamptz,            -- a bucket permit the job holds, for the run time it was rescheduled to
    deadline               timestamptz,
    limit_keys             text[],
    paused_run_at          timestamptz,
    holds                  int         NOT NULL DEFAULT 0,
    cancel_requested_at    timestamptz,
    cancel_requested_by    text,
    cancel_reason          text,
    args_shape             text,
    fairness_key           text,                   -- its flow in its provider key's fair queue (see Fairness)
    fair_tag               float8,                 -- its virtual start tag there
    batch_item             bigint,                 -- its live batch item (see Batches); NULL: never gathered
    token_estimate         float8[],               -- {combined, input, output}: its cost in a fair queue of tokens

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
-- The fair queue's booking reads the waiting jobs of one key in priority and tag order (jobs with a
-- fairness key always have a priority: EnqueueOptions' default is 0).
CREATE INDEX scheduled_tasks_fair_queue_idx ON layover.scheduled_tasks (provider_key, priority DESC, fair_tag)
    WHERE fair_tag IS NOT NULL AND permit_at IS NULL AND NOT picked;
-- A fair round reads the booked, not yet picked jobs of one key (the service frontier).
CREATE INDEX scheduled_tasks_fair_booked_idx ON layover.scheduled_tasks (provider_key, fair_tag)
    WHERE fair_tag IS NOT NULL AND permit_at IS NOT NULL AND NOT picked;
-- The fair queue's tagging reads the due, untagged jobs of one key.
CREATE INDEX scheduled_tasks_fair_new_idx ON layover.scheduled_tasks (provider_key, execution_time)
    WHERE fairness_key IS NOT NULL AND fair_tag IS NULL AND permit_at IS NULL;
-- The jobs of a batch item.
CREATE INDEX scheduled_tasks_batch_item ON layover.scheduled_tasks (batch_item) WHERE batch_item IS NOT NULL;
-- The jobs waiting for the permit they booked: a pick takes the due ones first through it (a deep
-- backlog behind a bucket does not starve the jobs holding its permits).
CREATE INDEX scheduled_tasks_permit_due_idx ON layover.scheduled_tasks (execution_time)
    WHERE permit_at IS NOT NULL AND NOT picked;
-- A key's waiting line in place order (jobs placed for its bucket, holding no permit): its last
-- place is one index probe for layover.enqueue_places(), whatever the line's length.
CREATE INDEX scheduled_tasks_line_idx ON layover.scheduled_tasks (provider_key, execution_time)
    WHERE permit_at IS NULL AND last_reschedule_reason = 'bucket' AND NOT picked;

COMMENT ON TABLE layover.scheduled_tasks IS
    'db-scheduler''s job table plus Layover columns. Private: query layover.jobs instead.';
COMMENT ON COLUMN layover.scheduled_tasks.args_shape IS
    'Fingerprint of the args type''s JSON shape that wrote the job (a rolling deploy''s versions differ); NULL: unknown.';
COMMENT ON COLUMN layover.scheduled_tasks.fairness_key IS
    'The job''s fairness key (JobType.Builder#fairnessKey, e.g. tenant:42): its flow within its provider key''s limit; NULL: none.';
COMMENT ON COLUMN layover.scheduled_tasks.fair_tag IS
    'Its virtual start tag in its provider key''s fair queue (V20, layover.fair_round); NULL: not waiting in it yet.';
COMMENT ON COLUMN layover.scheduled_tasks.token_estimate IS
    'The job''s token estimate {combined, input, output} (JobType.Builder#tokenEstimate), written at enqueue for jobs '
    'with a fairness key (V25): its cost in a fair queue whose bucket limits tokens. NULL: none (the line''s mean cost).';

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
--              (window_started_at); enough failures open it.
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
-- strikes counts back-to-back cooldowns; waits without a retry-after escalate with it.
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
-- with additive increase / multiplicative decrease:
--   * the first 429 that states nothing creates it in slow start at the initial rate;
--   * slow start doubles the rate every interval until the first 429 (or, after a restart, until
--     the rate before it), then the pace is steady;
--   * steady: every interval in which the pace's permits were all in use (request_tat ahead of
--     now), the rate grows by a share of the ceiling (the rate of the last 429 burst); past the
--     ceiling by 10 % it grows by 10 % per interval and the ceiling moves up with it (probing);
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
    last_slot                timestamptz,             -- the last reservation: when its permit exists
    last_granted_requests    float8,                  -- and how much it took (a lease takes several)
    last_granted_tokens      float8,
    learned_until            timestamptz,             -- NULL: configured by a worker; else learned, in force until then
    discovered               boolean     NOT NULL DEFAULT false,  -- learned_until set: a discovered, not a stated, pace
    discovery_phase          text,                    -- slow_start | steady (discovered rows only)
    discovery_ceiling        float8,                  -- requests/min of the last 429 burst; NULL before the first
    discovery_adjusted_at    timestamptz,             -- the last increase, decrease or restart (database time)
    discovery_decreased_at   timestamptz,             -- the last decrease (or the start): later 429s within one interval are its burst
    discovery_increases      int         NOT NULL DEFAULT 0,
    discovery_decreases      int         NOT NULL DEFAULT 0,
    discovery_waitlist       timestamptz,             -- where the next job beyond the booking horizon waits (no permit held)
    input_tokens_per_minute  float8,
    output_tokens_per_minute float8,
    input_tat                timestamptz NOT NULL DEFAULT '-infinity',
    output_tat               timestamptz NOT NULL DEFAULT '-infinity',
    token_burst_ms           int,
    token_share              float8,
    input_share              float8,
    output_share             float8,
    CONSTRAINT buckets_limit_check
        CHECK (requests_per_minute > 0 OR tokens_per_minute > 0 OR input_tokens_per_minute > 0
               OR output_tokens_per_minute > 0),
    CONSTRAINT buckets_discovery_phase_check CHECK (discovery_phase IN ('slow_start', 'steady'))
);

-- Keys with a learned pace (a 429's stated limit, a discovered pace): the refresh reads those in force.
CREATE INDEX buckets_learned_idx ON layover.buckets (learned_until) WHERE learned_until IS NOT NULL;

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

-- ---------------------------------------------------------------------------
-- provider_keys: one row per known provider key with its breaker, cooldown and bucket state,
-- interpreted, so that readers (the metrics sampler, the console, the recovery sweep) do not each
-- interpret the breakers' and buckets' columns:
--   breaker_trial_due   open, and its open period is over: the next call is the half-open trial
--   trial_in_flight     half-open, and a worker holds a live claim of its one trial call
--   request_permits     request permits free now (NULL: no request limit); negative: booked ahead
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
            THEN greatest(bk.request_tat, bk.token_tat) END AS bucket_booked_until,
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
LEFT JOIN layover.buckets bk ON bk.provider_key = k.provider_key;

COMMENT ON VIEW layover.provider_keys IS
    'Per provider key: breaker state (and whether its trial is due or in flight), active cooldown, bucket limits '
    '(configured, stated by a 429 or discovered: pace_source, pace_learned_until, discovery_*), permits free now and '
    'how far ahead they are booked.';

-- ---------------------------------------------------------------------------
-- token_buckets: one row per bucket and limited token dimension.
--   dimension        tokens (input + output) | input_tokens | output_tokens
--   per_minute       the limit
--   capacity         tokens that may be spent at once
--   free_now         tokens free now (negative: booked ahead by reservations or charges)
--   booked_until     when everything handed out so far has drained (NULL: drained)
--   used_share       the dimension's share of their reservations the key's calls use (NULL: no report yet)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.token_buckets AS
SELECT bk.provider_key, d.dimension, d.per_minute,
       layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms)) AS capacity,
       layover.gcra_free(d.tat, now(), d.per_minute / 60.0,
                         layover.bucket_capacity(d.per_minute, coalesce(bk.token_burst_ms, bk.burst_ms))) AS free_now,
       CASE WHEN d.tat > now() THEN d.tat END AS booked_until,
       d.share AS used_share
FROM layover.buckets bk
CROSS JOIN LATERAL (VALUES ('tokens', bk.tokens_per_minute, bk.token_tat, bk.token_share),
                           ('input_tokens', bk.input_tokens_per_minute, bk.input_tat, bk.input_share),
                           ('output_tokens', bk.output_tokens_per_minute, bk.output_tat, bk.output_share))
    AS d(dimension, per_minute, tat, share)
WHERE d.per_minute > 0;

COMMENT ON VIEW layover.token_buckets IS
    'The token dimensions of each bucket: limit per minute, capacity, tokens free now, booked until, share of reservations used.';

-- ---------------------------------------------------------------------------
-- concurrency_limits / concurrency_slots: at most max_in_flight calls of a limit key in flight
-- across every JVM. A worker writes its configured limit when it first meets the key, and makes
-- sure slots 0 .. max_in_flight - 1 exist (it never deletes slots: during a rolling change of the
-- limit each worker uses the slots below its own limit).
--
-- A slot is free when nobody holds it, or when its holder is no longer running: the job row
-- (holder_type, holder_id) is gone, has another version (rescheduled, retried, parked and
-- replayed), is not picked, or its heartbeat is older than the dead-worker limit. So a finished
-- job gives its slot back with the write that ends its run, and a killed worker's slot comes back
-- when its heartbeat goes stale: no release statement, no separate leak path.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.concurrency_limits (
    limit_key      text        PRIMARY KEY,
    max_in_flight  int         NOT NULL,
    configured_at  timestamptz NOT NULL DEFAULT now(),
    configured_by  text,
    CONSTRAINT concurrency_limits_max_check CHECK (max_in_flight >= 1)
);

CREATE TABLE layover.concurrency_slots (
    limit_key       text        NOT NULL REFERENCES layover.concurrency_limits ON DELETE CASCADE,
    slot            int         NOT NULL,
    holder_type     text,                  -- the job holding the slot: task_name,
    holder_id       text,                  -- task_instance
    holder_version  bigint,                -- and the version it was picked at
    claimed_at      timestamptz,           -- database time of the claim
    claimed_by      text,                  -- the worker
    PRIMARY KEY (limit_key, slot)
);

COMMENT ON TABLE layover.concurrency_slots IS
    'Fleet-wide concurrency limits: a slot counts only while its holder job row is picked at holder_version '
    'with a fresh heartbeat. Read layover.concurrency for what is in flight.';

-- Writes a worker's concurrency limit for a key and creates the slots it needs.
CREATE FUNCTION layover.configure_concurrency(p_key text, p_max int, p_by text) RETURNS void
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    INSERT INTO layover.concurrency_limits (limit_key, max_in_flight, configured_by)
    VALUES (p_key, p_max, p_by)
    ON CONFLICT (limit_key) DO UPDATE
    SET max_in_flight = excluded.max_in_flight, configured_at = now(), configured_by = excluded.configured_by
    WHERE layover.concurrency_limits.max_in_flight <> excluded.max_in_flight;
    INSERT INTO layover.concurrency_slots (limit_key, slot)
    SELECT p_key, g FROM generate_series(0, p_max - 1) AS g
    ON CONFLICT (limit_key, slot) DO NOTHING;
END
$$;

-- ---------------------------------------------------------------------------
-- concurrency: per limit key, the limit and the calls in flight now (slots whose holder job is
-- picked at the version it claimed with; a killed worker's slot counts until its job is revived).
-- ---------------------------------------------------------------------------
CREATE VIEW layover.concurrency AS
SELECT l.limit_key,
       l.max_in_flight,
       count(t.task_instance)                 AS in_flight,
       max(s.claimed_at) FILTER (WHERE t.task_instance IS NOT NULL) AS last_claimed_at,
       l.configured_at,
       l.configured_by
FROM layover.concurrency_limits l
LEFT JOIN layover.concurrency_slots s ON s.limit_key = l.limit_key
LEFT JOIN layover.scheduled_tasks t
       ON t.task_name = s.holder_type AND t.task_instance = s.holder_id AND t.version = s.holder_version AND t.picked
GROUP BY l.limit_key, l.max_in_flight, l.configured_at, l.configured_by;

COMMENT ON VIEW layover.concurrency IS 'Per concurrency limit key: max_in_flight and the calls in flight now.';

-- ---------------------------------------------------------------------------
-- layover.admit_tokens: claims every limit of one job at once, or nothing (for jobs with limit
-- keys of their own). Arguments, one array element per limit key, keys sorted (so that two callers
-- lock bucket rows in the same order):
--   p_rr, p_rc  request rate (/s) and capacity of the key's bucket (0: no request limit)
--   p_tr, p_tc  combined token rate (/s) and capacity (0: no token limit)
--   p_ir, p_ic  input token rate and capacity;  p_or, p_oc  output token rate and capacity
--   p_max       concurrency limit (0: none)
-- and the job (p_task_name, p_task_id, p_version as picked), its needs of each token dimension
-- (p_tokens: input estimate + output ceiling, p_input, p_output), the caller's clock (p_now) and
-- the dead-worker limit in seconds.
--
-- In order: each bucket row is locked (FOR UPDATE) and the moment the job's need fits is computed
-- (GCRA, as above); if it does not fit now for any bucket, nothing is taken and the latest of those
-- moments is returned (reason 'bucket'). Then one free slot per limited key is locked (FOR UPDATE
-- SKIP LOCKED); if a key has none, nothing is taken (reason 'concurrency'). Only then are the
-- permits taken and the slots claimed. A missing row gives 'missing_bucket' or 'missing_slots'
-- (the caller configures it and asks again).
--
-- Why the holder check is safe: a slot claimed in a transaction that started before this one
-- belongs to a job whose pick committed before that, so this transaction's snapshots see the pick;
-- a slot claimed later than this transaction's start counts as held.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.admit_tokens(
        p_now timestamptz, p_task_name text, p_task_id text, p_version bigint, p_worker text,
        p_keys text[], p_rr float8[], p_rc float8[], p_tr float8[], p_tc float8[],
        p_ir float8[], p_ic float8[], p_or float8[], p_oc float8[], p_max int[],
        p_tokens float8, p_input float8, p_output float8, p_dead_after_s float8)
    RETURNS TABLE (admitted boolean, reason text, limit_key text, retry_at timestamptz)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    n          int := coalesce(array_length(p_keys, 1), 0);
    i          int;
    b          record;
    fits_at    timestamptz;
    worst      timestamptz := p_now;
    worst_key  text;
    found_slot int;
    slots      int[] := '{}';
    limited    boolean;
BEGIN
    FOR i IN 1 .. n LOOP
        limited := p_rr[i] > 0 OR (p_tr[i] > 0 AND p_tokens > 0) OR (p_ir[i] > 0 AND p_input > 0)
                   OR (p_or[i] > 0 AND p_output > 0);
        IF limited THEN
            SELECT bk.request_tat, bk.token_tat, bk.input_tat, bk.output_tat INTO b
            FROM layover.buckets bk WHERE bk.provider_key = p_keys[i]
            FOR UPDATE;
            IF NOT FOUND THEN
                RETURN QUERY SELECT false, 'missing_bucket'::text, p_keys[i], NULL::timestamptz;
                RETURN;
            END IF;
            fits_at := greatest(p_now,
                layover.gcra_fits_at(b.request_tat, p_rr[i], p_rc[i], 1),
                layover.gcra_fits_at(b.token_tat, p_tr[i], p_tc[i], p_tokens),
                layover.gcra_fits_at(b.input_tat, p_ir[i], p_ic[i], p_input),
                layover.gcra_fits_at(b.output_tat, p_or[i], p_oc[i], p_output));
            IF fits_at > worst THEN
                worst := fits_at;
                worst_key := p_keys[i];
            END IF;
        END IF;
    END LOOP;
    IF worst > p_now THEN
        RETURN QUERY SELECT false, 'bucket'::text, worst_key, worst;
        RETURN;
    END IF;

    FOR i IN 1 .. n LOOP
        found_slot := NULL;
        IF p_max[i] > 0 THEN
            SELECT s.slot INTO found_slot
            FROM layover.concurrency_slots s
            WHERE s.limit_key = p_keys[i] AND s.slot < p_max[i]
              AND (s.holder_id IS NULL
                   OR (s.claimed_at < now()
                       AND NOT EXISTS (
                           SELECT 1 FROM layover.scheduled_tasks t
                           WHERE t.task_name = s.holder_type AND t.task_instance = s.holder_id
                             AND t.version = s.holder_version AND t.picked
                             AND t.last_heartbeat > p_now - make_interval(secs => p_dead_after_s))))
            ORDER BY s.slot
            LIMIT 1
            FOR UPDATE SKIP LOCKED;
            IF found_slot IS NULL THEN
                IF NOT EXISTS (SELECT 1 FROM layover.concurrency_slots s
                               WHERE s.limit_key = p_keys[i] AND s.slot = p_max[i] - 1) THEN
                    RETURN QUERY SELECT false, 'missing_slots'::text, p_keys[i], NULL::timestamptz;
                ELSE
                    RETURN QUERY SELECT false, 'concurrency'::text, p_keys[i], NULL::timestamptz;
                END IF;
                RETURN;
            END IF;
        END IF;
        slots := slots || found_slot;
    END LOOP;

    FOR i IN 1 .. n LOOP
        IF p_rr[i] > 0 OR (p_tr[i] > 0 AND p_tokens > 0) OR (p_ir[i] > 0 AND p_input > 0)
           OR (p_or[i] > 0 AND p_output > 0) THEN
            UPDATE layover.buckets bk
            SET request_tat = layover.gcra_take(bk.request_tat, p_now, p_rr[i], 1),
                token_tat = layover.gcra_take(bk.token_tat, p_now, p_tr[i], p_tokens),
                input_tat = layover.gcra_take(bk.input_tat, p_now, p_ir[i], p_input),
                output_tat = layover.gcra_take(bk.output_tat, p_now, p_or[i], p_output),
                last_slot = p_now,
                last_granted_requests = CASE WHEN p_rr[i] > 0 THEN 1 ELSE 0 END,
                last_granted_tokens = CASE WHEN p_tr[i] > 0 THEN p_tokens ELSE 0 END
            WHERE bk.provider_key = p_keys[i];
        END IF;
        IF slots[i] IS NOT NULL THEN
            UPDATE layover.concurrency_slots s
            SET holder_type = p_task_name, holder_id = p_task_id, holder_version = p_version,
                claimed_at = now(), claimed_by = p_worker
            WHERE s.limit_key = p_keys[i] AND s.slot = slots[i];
        END IF;
    END LOOP;
    RETURN QUERY SELECT true, NULL::text, NULL::text, NULL::timestamptz;
END
$$;

COMMENT ON FUNCTION layover.admit_tokens(timestamptz, text, text, bigint, text, text[], float8[], float8[], float8[],
        float8[], float8[], float8[], float8[], float8[], int[], float8, float8, float8, float8) IS
    'layover.admit with input and output token dimensions: every limit of a job''s keys, or nothing.';

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

-- ---------------------------------------------------------------------------
-- Permits held by jobs. A job rescheduled to the permit a booking gave it holds that permit
-- (scheduled_tasks.permit_at) for its run time. Writes of one table that a statement of another
-- table's owner needs are functions of the table's owner (docs/architecture.md lists the owners):
--   book_requests (layover.buckets; core's provider gate): a backlog of n due jobs took n request
--     permits from `start` (already greatest(tat, now)): request_tat moves past them.
--   spend_held_permit (the job table; core's job store): a job that holds a permit for about now
--     spends it: the column is cleared, version-checked. The fair rounds call it. PL/pgSQL, so
--     that its UPDATE keeps its plan for the session (a data-modifying SQL function is planned
--     again at every call).
--   holds_permit: whether a run holds its permit, without a write (the takes of core's StateSql
--     and TokenSql). The permit is the job's while its row stays at the permit's run time
--     (execution_time = permit_at) and the row is this run's (version): every write that moves
--     the row's run time ends the hold, and a run remembers in memory that it has carried its
--     permit. PL/pgSQL, so that its query keeps its plan for the session.
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.book_requests(p_key text, p_start timestamptz, p_n bigint, p_rate float8)
    RETURNS void LANGUAGE sql VOLATILE AS
$$
    UPDATE layover.buckets SET request_tat = layover.gcra_take(p_start, p_start, p_rate, p_n)
    WHERE provider_key = p_key AND p_n > 0
$$;

CREATE FUNCTION layover.spend_held_permit(p_task_name text, p_task_id text, p_version bigint,
        p_now timestamptz, p_grace_s float8)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    UPDATE layover.scheduled_tasks t SET permit_at = NULL
    WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.version = p_version
      AND t.permit_at IS NOT NULL AND t.permit_at >= p_now - make_interval(secs => p_grace_s);
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION layover.spend_held_permit(text, text, bigint, timestamptz, float8) IS
    'A job that holds a bucket permit for about now (scheduled_tasks.permit_at, within the grace) spends it: '
    'permit_at cleared, version-checked; true when it did. PL/pgSQL since V26 (its UPDATE keeps its plan).';

CREATE FUNCTION layover.holds_permit(p_task_name text, p_task_id text, p_version bigint,
        p_now timestamptz, p_grace_s float8)
    RETURNS boolean LANGUAGE plpgsql STABLE AS
$$
BEGIN
    RETURN EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                   WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.version = p_version
                     AND t.permit_at IS NOT NULL AND t.execution_time = t.permit_at
                     AND t.permit_at >= p_now - make_interval(secs => p_grace_s));
END
$$;

COMMENT ON FUNCTION layover.holds_permit(text, text, bigint, timestamptz, float8) IS
    'Whether a job''s run holds a bucket permit for about now (V27): its row at the permit''s run time '
    '(execution_time = permit_at), version-checked, within the grace. Reads only: the run remembers its carry. '
    'PL/pgSQL since V29 (its query keeps its plan for the session).';

-- ---------------------------------------------------------------------------
-- Permits and places at enqueue. Core's enqueue statements (JobSql.INSERT, INSERT_KEYED,
-- INSERT_BATCH), on Layover's own connection, ask layover.enqueue_places() for the run times of
-- the jobs they insert behind a key's bucket: the permits the bucket has within the booking horizon
-- (the job type's maxDeferral, at most 60 s) are booked, and each such job is inserted at its
-- permit, holding it (permit_at, reason 'bucket', no reschedule counted); the jobs beyond the
-- horizon are inserted at their place in the key's waiting line, holding no permit, one request's
-- time apart from the line's end. The insert is then the job's only write until its place comes
-- near: the backlog reservation (JobSql's RESERVE_BACKLOG, run when a job of the key is told to
-- wait) books the line's front, oldest place first, within the horizon, and a line job that finds
-- its permit free when it comes due takes it at its pick. An enqueue in the caller's transaction
-- books nothing (the bucket row would stay locked, and every take of the key wait, until the
-- caller commits).
-- ---------------------------------------------------------------------------

-- The request rate (/s) at which the bucket of a key books permits at enqueue, or NULL when it
-- books nothing there: no bucket row, a learned or discovered pace (it changes under the
-- bookings), a token limit (a job's cost is not one request), no request limit. An operators'
-- limit with token limits books nothing; one of requests only replaces the configured rate. Reads only.
CREATE FUNCTION layover.enqueue_rate(p_key text) RETURNS float8 LANGUAGE sql STABLE AS
$$
    SELECT coalesce(lo.requests_per_minute, b.requests_per_minute) / 60.0
    FROM layover.buckets b LEFT JOIN layover.limit_overrides lo ON lo.limit_key = b.provider_key
    WHERE b.provider_key = p_key AND b.learned_until IS NULL AND coalesce(b.requests_per_minute, 0) > 0
      AND b.tokens_per_minute IS NULL AND b.input_tokens_per_minute IS NULL AND b.output_tokens_per_minute IS NULL
      AND (lo.limit_key IS NULL OR (lo.tokens_per_minute IS NULL AND lo.input_tokens_per_minute IS NULL
                                    AND lo.output_tokens_per_minute IS NULL))
$$;

COMMENT ON FUNCTION layover.enqueue_rate(text) IS
    'The request rate (/s) at which a key''s bucket books permits and places at enqueue; NULL when it books nothing there (V28).';

-- Books the permits the bucket of a key has for `p_count` jobs enqueued now, in order, within
-- `p_horizon_s` seconds: one request's time apart from the bucket's tat (when its bookings drain,
-- or now), less what half its burst allows, never before now; the bucket's tat moves past them
-- (book_requests). Half the burst is left free (GCRA: each slot is at most burst - 1 - half ahead
-- of the tat before it): a batch no larger than that runs at once, a larger one is paced with the
-- margin kept for the calls' jitter at the provider, whose own bucket a paced line at the full
-- burst leaves empty, and for the jobs that do not book (a raised priority, a deadline). Returns
-- those slots (fewer than p_count when the horizon ends first; empty when none is within it), or
-- NULL when the bucket books nothing at enqueue (enqueue_rate). Holds the bucket row to the end of
-- the caller's statement's transaction.
CREATE FUNCTION layover.enqueue_permits(p_key text, p_count int, p_horizon_s float8)
    RETURNS timestamptz[] LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_now   timestamptz := now();
    v_rate  float8;
    v_cap   float8;
    v_start timestamptz;
    v_slots timestamptz[];
    b       record;
BEGIN
    IF p_key IS NULL OR coalesce(p_count, 0) < 1 OR coalesce(p_horizon_s, 0) <= 0 THEN
        RETURN NULL;
    END IF;
    SELECT * INTO b FROM layover.buckets bk WHERE bk.provider_key = p_key FOR UPDATE;
    v_rate := layover.enqueue_rate(p_key);
    IF v_rate IS NULL THEN
        RETURN NULL;
    END IF;
    v_cap := greatest(1, v_rate * b.burst_ms / 1000.0);
    v_start := greatest(b.request_tat, v_now);
    v_slots := ARRAY(
        SELECT x.slot FROM (
            SELECT i, greatest(v_now, v_start + make_interval(secs => (i - (v_cap - 1 - floor(v_cap / 2))) / v_rate)) AS slot
            FROM generate_series(0, p_count - 1) i) x
        WHERE x.slot <= v_now + make_interval(secs => p_horizon_s)
        ORDER BY x.i);
    PERFORM layover.book_requests(p_key, v_start, cardinality(v_slots), v_rate);
    RETURN v_slots;
END
$$;

COMMENT ON FUNCTION layover.enqueue_permits(text, int, float8) IS
    'Books the permits a key''s bucket has for jobs enqueued now within a horizon and returns their slots, in order '
    '(V27; the tat moves past them); NULL when the bucket books nothing at enqueue (no configured request-only bucket). '
    'Called by core''s enqueue statements, which insert each job at its slot holding it.';

-- The run times for `p_count` jobs enqueued now behind the bucket of a key, in order: the first
-- `permits` hold permits booked within `p_horizon_s` seconds (enqueue_permits, which books them),
-- the rest are places in the key's waiting line, holding nothing, one request's time apart from
-- the line's end (the latest of the bucket's tat, now, and the line's last place). While the key
-- has a line, nothing is booked: new jobs go behind it (a permit booked ahead of the line would
-- shift every place in it, and run the job before jobs enqueued earlier). NULL slots (and 0
-- permits) when the bucket books nothing at enqueue (enqueue_rate). Holds the bucket row to the
-- end of the caller's transaction, so that two enqueues into one key take places one after the
-- other; the line's last place is read after the row is locked. The last place is read with ORDER
-- BY ... DESC LIMIT 1, not max(): with statistics taken before a deep backlog came in, max() was
-- planned as a read of the whole line.
CREATE FUNCTION layover.enqueue_places(p_key text, p_count int, p_horizon_s float8,
        OUT slots timestamptz[], OUT permits int)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_now   timestamptz := now();
    v_rate  float8;
    v_start timestamptz;
    v_last  timestamptz;
BEGIN
    permits := 0;
    IF p_key IS NULL OR coalesce(p_count, 0) < 1 OR coalesce(p_horizon_s, 0) <= 0 THEN
        RETURN;
    END IF;
    SELECT greatest(bk.request_tat, v_now) INTO v_start FROM layover.buckets bk WHERE bk.provider_key = p_key FOR UPDATE;
    v_rate := layover.enqueue_rate(p_key);
    IF v_rate IS NULL THEN
        RETURN;
    END IF;
    SELECT t.execution_time + make_interval(secs => 1 / v_rate) INTO v_last
      FROM layover.scheduled_tasks t
     WHERE t.provider_key = p_key AND NOT t.picked AND t.permit_at IS NULL
       AND t.last_reschedule_reason = 'bucket' AND t.execution_time > v_now
     ORDER BY t.execution_time DESC LIMIT 1;
    IF v_last IS NULL THEN
        slots := layover.enqueue_permits(p_key, p_count, p_horizon_s);
        permits := cardinality(slots);
        IF permits >= p_count THEN
            RETURN;
        END IF;
        SELECT greatest(bk.request_tat, v_now) INTO v_start FROM layover.buckets bk WHERE bk.provider_key = p_key;
    ELSE
        slots := '{}';
        v_start := greatest(v_start, v_last);
    END IF;
    slots := slots || ARRAY(SELECT v_start + make_interval(secs => i / v_rate)
                            FROM generate_series(0, p_count - permits - 1) i ORDER BY i);
END
$$;

COMMENT ON FUNCTION layover.enqueue_places(text, int, float8) IS
    'Run times for jobs enqueued now behind a key''s bucket, in order (V28): the first `permits` hold permits booked '
    'within the horizon (enqueue_permits; none while the key has a waiting line), the rest are places in the key''s '
    'waiting line holding nothing. NULL slots when the bucket books nothing at enqueue. Called by core''s enqueue statements.';


-- ===========================================================================
-- Fairness: fair share within a provider key's limit (docs/fairness.md)
-- ===========================================================================
--
-- Many tenants share one provider key. Without fairness the key's permits go to whichever due job
-- is picked first, so one tenant's 50,000-job backlog holds every other tenant back for its whole
-- length. With a fairness key on its jobs (JobType.Builder#fairnessKey, stored in
-- scheduled_tasks.fairness_key), a key's permits go to its active fairness keys (the flows) in
-- proportion to their weights, work-conserving.
--
-- The discipline is start-time fair queueing (SFQ, Goyal et al. 1996), kept in Postgres:
--   * every waiting job of a flow gets a virtual start tag when it first waits:
--       tag = greatest(flow's last tag, the key's virtual clock) + the flow's costs so far / weight
--     so a flow's jobs are cost / weight apart in virtual time and a flow that was idle starts at
--     the clock, not in the past: no credit is banked while idle, and a new tenant is served from
--     its first job on;
--   * permits are handed out in tag order; the key's virtual clock is the tag of the last job
--     given a permit;
--   * a round (layover.fair_round_limit) books the permits of the next moments of the key's limit
--     (a short horizon, by default 100 ms) for the waiting jobs with the lowest tags, as
--     execution_time and permit_at (a held permit), and moves jobs tagged for the first time past
--     an estimate of their turn, so that a backlog is not picked job by job; a flow waking up
--     starts at the service frontier (the lowest tag booked, not started) and takes the permits of
--     booked jobs of its priority with higher tags. Rounds run when a job with a fairness key is
--     picked without a permit, and every half horizon in each worker that knows the key has
--     waiting jobs (the engine's fair pump).
-- Why SFQ and not deficit round robin: its state is one number per flow and one per key, a pick
-- touches only the jobs it books (the cost does not grow with the number of flows: the booking
-- reads the tag index in order), weights are exact, and a flow arriving late interleaves at once
-- instead of waiting for the round robin's next turn.
--
-- Priorities within a key: a round books the highest job priority first (scheduled_tasks.priority,
-- EnqueueOptions#priority), tags within a priority; a reserved share of each round's permits
-- (FairnessSettings#lowPriorityShare, default 0.1) goes to the jobs below the highest priority
-- waiting, so batch work is slowed by interactive work but never starved.
--
-- A job's cost: on a request-only bucket, and for a concurrency limit, every job costs 1. On a
-- bucket that limits tokens, one permit is not one unit of the scarce thing: a job's cost is what
-- it takes of the key's bottleneck, the largest, over the bucket's limited dimensions, of the time
-- the dimension needs to admit it (1 / request rate for the request, need x share / rate for each
-- token dimension), in units of one request permit when the bucket limits requests, else in
-- seconds, so each tenant receives tokens (not calls) in proportion to its weight (what "Fairness
-- in Serving Large Language Models", Sheng et al. 2024, calls a virtual token counter). The cost
-- needs each job's token estimate before it is picked (scheduled_tasks.token_estimate, written at
-- enqueue); a job without one costs the line's mean cost (fair_lines.mean_cost).
--
-- A concurrency limit's permit is a slot: a round counts the key's free slots (neither held by a
-- live run nor promised to a job called by an earlier round and not picked yet) and calls that
-- many waiting jobs in tag order: their run time becomes now and they hold the call (permit_at)
-- until picked; then they claim the slot as every job does (layover.admit_tokens).
--
-- Jobs without a fairness key take the key's permits first come, first served.

-- ---------------------------------------------------------------------------
-- One row per provider key with a fair queue: its virtual clock. Written by the fair rounds only.
--   vclock         the highest tag given a permit
--   class_clocks   per job priority ({"0": 12.5, "5": 40}): the highest tag of that priority given
--                  a permit; a flow waking up starts at its priority's clock, so that serving one
--                  priority does not put the flows of another behind (each priority is its own
--                  fair queue; the booking takes the highest priority first)
--   active_weight  the weights of the flows with waiting jobs (vfinish past the clock), recomputed
--                  at most once a second (active_weight_at): the clock moves 1 / it per permit, so
--                  a job tagged t waits about (t - clock) x active_weight permits
--   low_credit     the permits owed to lower-priority jobs (the reserved share of every round's
--                  permits, added up; a round books the whole ones; at most 1 carried when none wait)
--   rounds, last_round_at, booked   what the rounds did
--   mean_cost      the mean cost of the jobs tagged with a token estimate (EWMA)
-- ---------------------------------------------------------------------------
CREATE TABLE layover.fair_lines (
    provider_key     text        PRIMARY KEY,
    vclock           float8      NOT NULL DEFAULT 0,
    class_clocks     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    active_weight    float8,
    active_weight_at timestamptz,
    low_credit       float8      NOT NULL DEFAULT 0,
    rounds           bigint      NOT NULL DEFAULT 0,
    booked           bigint      NOT NULL DEFAULT 0,
    last_round_at    timestamptz,
    mean_cost        float8
);

COMMENT ON COLUMN layover.fair_lines.mean_cost IS
    'The mean cost of the jobs tagged with a token estimate (an exponentially weighted mean, V25): what a job without '
    'one costs. NULL: none seen yet (such a job costs 1).';

-- ---------------------------------------------------------------------------
-- One row per flow (provider key, fairness key, job priority) that has waited. Written by the
-- fair rounds only.
--   vfinish        the tag of its last job tagged (its jobs wait up to there)
--   weight         the weight its jobs were tagged with last
--   tagged, booked how many of its jobs were tagged and given a permit by rounds
-- ---------------------------------------------------------------------------
CREATE TABLE layover.fair_flows (
    provider_key   text        NOT NULL,
    fairness_key   text        NOT NULL,
    priority       smallint    NOT NULL DEFAULT 0,
    vfinish        float8      NOT NULL,
    weight         float8      NOT NULL,
    tagged         bigint      NOT NULL DEFAULT 0,
    booked         bigint      NOT NULL DEFAULT 0,
    last_booked_at timestamptz,
    PRIMARY KEY (provider_key, fairness_key, priority)
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

-- A priority's clock in a line's class_clocks (0 before any of its jobs was given a permit).
CREATE FUNCTION layover.fair_class_clock(p_clocks jsonb, p_priority smallint)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT coalesce((p_clocks ->> coalesce(p_priority, 0)::text)::float8, 0) $$;

-- The weight of a fairness key: the longest matching pattern's, operator rows before config rows.
CREATE FUNCTION layover.fairness_weight(p_fairness_key text)
    RETURNS float8 LANGUAGE sql STABLE AS
$$ SELECT coalesce((SELECT w.weight FROM layover.fairness_weights w
                    WHERE p_fairness_key LIKE replace(replace(replace(w.pattern, '\', '\\'), '%', '\%'), '*', '%')
                    ORDER BY (w.origin = 'operator') DESC, length(w.pattern) DESC, w.pattern
                    LIMIT 1), 1.0) $$;

-- A job's cost in a fair queue: 1 for a request-only bucket (and for a concurrency limit: p_rr 1,
-- no token rates); with token dimensions, the largest time a limited dimension needs to admit it
-- (its need x the key's share / the dimension's rate), in request permits when the bucket limits
-- requests (x p_rr), else in seconds. p_est: {combined, input, output} or NULL (then p_mean, or
-- 1). Shares are clamped to [0.05, 1] as the bookings clamp them.
CREATE FUNCTION layover.fair_cost(p_est float8[], p_rr float8, p_tr float8, p_ir float8, p_or float8,
        p_ts float8, p_is float8, p_os float8, p_mean float8)
    RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
    SELECT CASE
        WHEN coalesce(p_tr, 0) <= 0 AND coalesce(p_ir, 0) <= 0 AND coalesce(p_or, 0) <= 0 THEN 1.0
        WHEN p_est IS NULL THEN coalesce(p_mean, 1.0)
        ELSE greatest(
            CASE WHEN p_rr > 0 THEN 1.0 ELSE 0 END,
            CASE WHEN p_tr > 0 THEN p_est[1] * least(1, greatest(0.05, coalesce(p_ts, 1))) / p_tr END
                * CASE WHEN p_rr > 0 THEN p_rr ELSE 1 END,
            CASE WHEN p_ir > 0 THEN p_est[2] * least(1, greatest(0.05, coalesce(p_is, 1))) / p_ir END
                * CASE WHEN p_rr > 0 THEN p_rr ELSE 1 END,
            CASE WHEN p_or > 0 THEN p_est[3] * least(1, greatest(0.05, coalesce(p_os, 1))) / p_or END
                * CASE WHEN p_rr > 0 THEN p_rr ELSE 1 END,
            1e-6)
    END
$$;

-- The slot of the k-th job a round books, GCRA in every limited dimension: the request
-- dimension's k-th permit from p_start (k - capacity) / rate later; with token dimensions
-- (p_tok: rate and capacity of combined, input, output tokens; NULL: none), each dimension's
-- cumulated need p_cum from its start p_tstarts; the latest of them, never before p_now. STABLE,
-- so that it is inlined (see the GCRA functions).
CREATE FUNCTION layover.fair_slot(p_now timestamptz, p_rr float8, p_rc float8, p_start timestamptz, p_k bigint,
        p_tok float8[], p_tstarts timestamptz[], p_cum float8[])
    RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
$$
    SELECT greatest(p_now,
        CASE WHEN p_rr > 0 THEN p_start + make_interval(secs => (p_k - p_rc) / p_rr) END,
        CASE WHEN p_tok[1] > 0 THEN p_tstarts[1] + make_interval(secs => (p_cum[1] - p_tok[2]) / p_tok[1]) END,
        CASE WHEN p_tok[3] > 0 THEN p_tstarts[2] + make_interval(secs => (p_cum[2] - p_tok[4]) / p_tok[3]) END,
        CASE WHEN p_tok[5] > 0 THEN p_tstarts[3] + make_interval(secs => (p_cum[3] - p_tok[6]) / p_tok[5]) END)
$$;

-- ---------------------------------------------------------------------------
-- layover.fair_round_limit: one round of a key's fair queue, in one call (the key's line and limit
-- rows locked for its length: rounds of one key are serial, fleet-wide).
--   1. A caller that holds a permit (permit_at, from an earlier round) spends it: carried.
--  1b. Bookings that lapsed unpicked go back to the line, keeping their tags.
--   2. Tags the key's due, untagged jobs with a fairness key (at most p_max_jobs, oldest first,
--      skipping rows other transactions hold), the caller among them; each moved (but the caller,
--      whose row its worker writes) past the estimate of its turn: horizon end + max(2 s, twice
--      ((tag - clock) x the active flows' weight + the waiting jobs of higher priority) / rate).
--      Deliberately late: the rounds book in tag order whatever the run times, and a job due
--      before its turn would only be picked to be told to wait again; the run time is the
--      fallback that restarts the rounds when no worker pumps the key (after a restart).
--  2b. Newly tagged jobs with lower tags than booked, unpicked jobs of their priority take those
--      jobs' permits (a tenant arriving behind the booked horizon).
--   3. Books the limit up to now + p_horizon_s for the waiting tagged jobs (unpicked, holding no
--      permit; the caller too), highest priority first, then by tag; of them, p_low_share of the
--      slots (added up over rounds in low_credit) first to the jobs below the highest priority
--      waiting. Each booked job (but the caller) gets execution_time = permit_at = its slot; the
--      bucket's tats move past them; the clock moves to the highest tag booked.
--   p_mode 'bucket': the key's bucket row (any limited dimension) is the limit; p_rr/p_rc the
--          request rate and capacity, p_tr/p_tc, p_ir/p_ic, p_or/p_oc the combined, input and
--          output token rates (/s) and capacities (0: not limited); bookings take every dimension.
--   p_mode 'slots': the key's concurrency limit of p_slots slots is the limit (its row locked for
--          the round); a round calls as many waiting jobs as slots are free, run time now.
--   p_rate: cost units a second the limit serves, for the estimates of waiting jobs (bucket: the
--          request rate, or 1 when only tokens are limited; slots: the caller's guess).
-- Returns: carried; the caller's slot when booked (= now: go), else NULL; the caller's estimate
-- when tagged but not booked; jobs booked and tagged; whether jobs are still waiting (the pump
-- goes on); for a token bucket, the key's shares (what a booking took of a need). No limit row:
-- every column NULL (the caller writes it and asks again).
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.fair_round_limit(
        p_key text, p_now timestamptz, p_mode text, p_rr float8, p_rc float8, p_tr float8, p_tc float8,
        p_ir float8, p_ic float8, p_or float8, p_oc float8, p_slots int, p_dead_after_s float8, p_rate float8,
        p_horizon_s float8, p_low_share float8, p_max_jobs int,
        p_task_name text, p_task_id text, p_version bigint, p_grace_s float8)
    RETURNS TABLE (carried boolean, slot timestamptz, estimate timestamptz, booked int, tagged int, waiting boolean,
                   token_share float8, input_share float8, output_share float8)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_clock     float8;
    v_weight    float8;
    v_weight_at timestamptz;
    v_start     timestamptz;           -- request dimension: greatest(request_tat, now)
    v_tstart    timestamptz;           -- token dimensions
    v_istart    timestamptz;
    v_ostart    timestamptz;
    v_ts        float8;
    v_is        float8;
    v_os        float8;
    v_mean      float8;
    v_tokens    boolean := coalesce(p_tr, 0) > 0 OR coalesce(p_ir, 0) > 0 OR coalesce(p_or, 0) > 0;
    v_hend      timestamptz := p_now + make_interval(secs => p_horizon_s);
    v_slots     int;
    v_reserve   int;
    v_top       smallint;
    v_booked    int := 0;
    v_tagged    int := 0;
    v_max_tag   float8;
    v_my_slot   timestamptz;
    v_my_est    timestamptz;
    v_my_tag    float8;
    v_credit    float8;
    v_low       int := 0;
    v_clocks    jsonb;
    v_my_prio   smallint;
    v_due       int := 0;
    v_sums      float8[];
    v_avg       float8;
    v_unit      float8;                -- a job without an estimate: the line's mean cost, in seconds of each dimension
    v_rate      float8 := greatest(coalesce(p_rate, 1), 1e-9);
BEGIN
    IF p_mode = 'bucket' THEN
        SELECT bk.token_share, bk.input_share, bk.output_share INTO v_ts, v_is, v_os
        FROM layover.buckets bk WHERE bk.provider_key = p_key;
    END IF;
    IF p_task_id IS NOT NULL
       AND layover.spend_held_permit(p_task_name, p_task_id, p_version, p_now, p_grace_s) THEN
        RETURN QUERY SELECT true, p_now, NULL::timestamptz, 0, 0, true, v_ts, v_is, v_os;
        RETURN;
    END IF;

    IF p_mode = 'bucket' THEN
        SELECT greatest(bk.request_tat, p_now), greatest(bk.token_tat, p_now), greatest(bk.input_tat, p_now),
               greatest(bk.output_tat, p_now)
        INTO v_start, v_tstart, v_istart, v_ostart
        FROM layover.buckets bk
        WHERE bk.provider_key = p_key
          AND (bk.requests_per_minute > 0 OR bk.tokens_per_minute > 0 OR bk.input_tokens_per_minute > 0
               OR bk.output_tokens_per_minute > 0)
        FOR UPDATE;
    ELSE
        PERFORM 1 FROM layover.concurrency_limits cl WHERE cl.limit_key = p_key FOR UPDATE;
    END IF;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::boolean, NULL::timestamptz, NULL::timestamptz, NULL::int, NULL::int, NULL::boolean,
            NULL::float8, NULL::float8, NULL::float8;
        RETURN;
    END IF;
    INSERT INTO layover.fair_lines AS l (provider_key) VALUES (p_key) ON CONFLICT (provider_key) DO NOTHING;
    SELECT l.vclock, l.class_clocks, l.active_weight, l.active_weight_at, l.low_credit, l.mean_cost
    INTO v_clock, v_clocks, v_weight, v_weight_at, v_credit, v_mean
    FROM layover.fair_lines l WHERE l.provider_key = p_key FOR UPDATE;
    IF v_weight_at IS NULL OR v_weight_at < p_now - interval '1 second' THEN
        SELECT coalesce(sum(f.weight), 0) INTO v_weight
        FROM layover.fair_flows f
        WHERE f.provider_key = p_key AND f.vfinish > layover.fair_class_clock(v_clocks, f.priority);
        UPDATE layover.fair_lines l SET active_weight = v_weight, active_weight_at = p_now WHERE l.provider_key = p_key;
    END IF;

    -- 1b. bookings that lapsed unpicked (their permit is past the grace: the workers were busy, or
    -- gone) go back to the line, keeping their tags, so the next bookings are theirs again; left
    -- booked, a pick would take them first (due permit holders first) only to book them anew, one
    -- locked round each, while the fresh bookings behind them lapse in turn
    WITH lapsed AS (
        SELECT t.task_name, t.task_instance
        FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL AND NOT t.picked
          AND t.permit_at < p_now - make_interval(secs => p_grace_s)
        ORDER BY t.fair_tag
        LIMIT 1000
        FOR UPDATE OF t SKIP LOCKED
    )
    UPDATE layover.scheduled_tasks t
    SET permit_at = NULL, execution_time = v_hend + interval '2 seconds', version = t.version + 1,
        last_reschedule_reason = 'fair',
        last_reschedule_detail = 'fair share of ' || p_key || ': its booked turn lapsed unpicked; it waits for the next',
        last_rescheduled_at = p_now
    FROM lapsed l
    WHERE t.task_name = l.task_name AND t.task_instance = l.task_instance;

    -- 2. tags (start + the flow's costs so far / its weight), and the new jobs moved to the
    -- estimate of their turn (the caller's row its worker writes)
    WITH locked AS (
        SELECT t.task_name, t.task_instance, t.fairness_key, t.execution_time, t.picked, t.priority,
               CASE WHEN p_mode = 'bucket'
                    THEN layover.fair_cost(t.token_estimate, p_rr, p_tr, p_ir, p_or, v_ts, v_is, v_os, v_mean)
                    ELSE 1.0 END AS cost,
               t.token_estimate IS NOT NULL AS estimated
        FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fairness_key IS NOT NULL AND t.fair_tag IS NULL AND t.permit_at IS NULL
          AND t.execution_time <= p_now
          AND (NOT t.picked OR (t.task_name = p_task_name AND t.task_instance = p_task_id))
        ORDER BY t.execution_time, t.task_instance
        LIMIT p_max_jobs
        FOR UPDATE OF t SKIP LOCKED
    ), frontier AS MATERIALIZED ( -- per priority: the lowest tag booked and not started yet (the next to start)
        SELECT t.priority, min(t.fair_tag) AS tag
        FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL AND NOT t.picked
        GROUP BY t.priority
    ), flows AS (
        -- a flow waking up starts where service is (the frontier, else its priority's clock), so
        -- its first jobs come before permits booked but not started yet (2b swaps them)
        SELECT k.fairness_key, k.priority, greatest(coalesce(f.vfinish, k.cc), k.cc) AS start_v,
               layover.fairness_weight(k.fairness_key) AS w, coalesce(f.vfinish, k.cc) <= k.cc AS idle
        FROM (SELECT DISTINCT l.fairness_key, l.priority,
                     least(layover.fair_class_clock(v_clocks, l.priority),
                           coalesce((SELECT fr.tag FROM frontier fr WHERE fr.priority = l.priority), 'infinity')) AS cc
              FROM locked l) k
        LEFT JOIN layover.fair_flows f
               ON f.provider_key = p_key AND f.fairness_key = k.fairness_key AND f.priority = k.priority
    ), tags AS (
        SELECT l.task_name, l.task_instance, l.fairness_key, l.picked, l.priority, l.cost, l.estimated,
               fl.start_v + sum(l.cost) OVER (PARTITION BY l.fairness_key, l.priority
                                               ORDER BY l.execution_time, l.task_instance) / fl.w AS tag
        FROM locked l JOIN flows fl ON fl.fairness_key = l.fairness_key AND fl.priority = l.priority
    ), per AS MATERIALIZED ( -- cost units per unit of the clock: the active flows' weight, the flows waking up now with it
        SELECT greatest(1e-9, coalesce(v_weight, 0)
                   + coalesce((SELECT sum(fl.w) FROM flows fl WHERE fl.idle), 0)) AS w
    ), ahead AS MATERIALIZED ( -- per priority of the new jobs: the waiting jobs of a higher one, booked before them
        SELECT pr.priority,
               (SELECT count(*) FROM (SELECT 1 FROM layover.scheduled_tasks t
                                      WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL
                                        AND NOT t.picked AND t.priority > pr.priority LIMIT 100000) x)
                   * coalesce(v_mean, 1)
               + (SELECT coalesce(sum(l.cost), 0) FROM locked l WHERE l.priority > pr.priority) AS n
        FROM (SELECT DISTINCT priority FROM locked) pr
    ), flow_rows AS (
        INSERT INTO layover.fair_flows AS f (provider_key, fairness_key, priority, vfinish, weight, tagged)
        SELECT p_key, g.fairness_key, g.priority, g.vfinish, fl.w, g.n
        FROM (SELECT fairness_key, priority, max(tag) AS vfinish, count(*) AS n FROM tags GROUP BY fairness_key, priority) g
        JOIN flows fl ON fl.fairness_key = g.fairness_key AND fl.priority = g.priority
        ON CONFLICT (provider_key, fairness_key, priority) DO UPDATE
        SET vfinish = greatest(f.vfinish, excluded.vfinish), weight = excluded.weight, tagged = f.tagged + excluded.tagged
        RETURNING 1
    ), job_rows AS (
        UPDATE layover.scheduled_tasks t
        SET fair_tag = g.tag,
            execution_time = CASE WHEN g.picked THEN t.execution_time
                ELSE v_hend + make_interval(secs => least(86400, greatest(2, 2 * ((g.tag
                        - layover.fair_class_clock(v_clocks, g.priority)) * (SELECT w FROM per)
                    + coalesce((SELECT a.n FROM ahead a WHERE a.priority = g.priority), 0)) / v_rate))) END,
            version = CASE WHEN g.picked THEN t.version ELSE t.version + 1 END,
            last_reschedule_reason = CASE WHEN g.picked THEN t.last_reschedule_reason ELSE 'fair' END,
            last_reschedule_detail = CASE WHEN g.picked THEN t.last_reschedule_detail
                ELSE 'fair share of ' || p_key || ': waits its turn among the key''s fairness keys' END,
            last_rescheduled_at = CASE WHEN g.picked THEN t.last_rescheduled_at ELSE p_now END
        FROM tags g
        WHERE t.task_name = g.task_name AND t.task_instance = g.task_instance
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM job_rows), (SELECT w FROM per),
           (SELECT avg(g.cost) FILTER (WHERE g.estimated) FROM tags g)
    INTO v_tagged, v_weight, v_avg
    FROM (SELECT count(*) FROM flow_rows) written;
    IF v_tagged > 0 THEN
        UPDATE layover.fair_lines l
        SET active_weight = v_weight,
            mean_cost = CASE WHEN v_avg IS NULL THEN l.mean_cost ELSE coalesce(0.8 * l.mean_cost + 0.2 * v_avg, v_avg) END
        WHERE l.provider_key = p_key
        RETURNING l.mean_cost INTO v_mean;
    END IF;

    -- 2b. newly tagged jobs may have lower tags than jobs of their priority already booked and not
    -- picked yet (a tenant arriving behind the booked horizon): those give their permits to them,
    -- so that the newcomer is served from the permits already booked, not after them. The losers
    -- wait again holding no permit (their tags keep their place); the winners take the losers'
    -- slots in order. Within one priority only: the reserved share of a lower priority stays.
    -- (With token costs a winner may need more or less than the loser it replaces; the difference
    -- is the settle's to correct, as for any estimate.)
    IF v_tagged > 0 THEN
        WITH booked AS (
            SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, t.permit_at
            FROM layover.scheduled_tasks t
            WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL AND NOT t.picked
              AND t.permit_at >= p_now - make_interval(secs => p_grace_s)
            ORDER BY t.fair_tag
            LIMIT 1000
            FOR UPDATE OF t SKIP LOCKED
        ), per_priority AS (SELECT b.priority, count(*) AS n FROM booked b GROUP BY b.priority
        ), challengers AS ( -- within each priority only: a reserved lower-priority permit is not taken
            SELECT c.* FROM per_priority pp
            CROSS JOIN LATERAL (
                SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, NULL::timestamptz AS permit_at
                FROM layover.scheduled_tasks t
                WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
                  AND t.priority = pp.priority
                ORDER BY t.fair_tag
                LIMIT pp.n
                FOR UPDATE OF t SKIP LOCKED) c
        ), caller AS ( -- the caller competes too (its worker writes its row)
            SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, NULL::timestamptz AS permit_at
            FROM layover.scheduled_tasks t
            WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.fair_tag IS NOT NULL
              AND t.priority IN (SELECT priority FROM per_priority)
        ), ranked AS (
            SELECT x.*, row_number() OVER (PARTITION BY x.priority ORDER BY x.fair_tag) AS k, pp.n AS booked_n
            FROM (SELECT * FROM booked UNION ALL SELECT * FROM challengers UNION ALL SELECT * FROM caller) x
            JOIN per_priority pp ON pp.priority = x.priority
        ), losers AS (
            SELECT r.*, row_number() OVER (PARTITION BY r.priority ORDER BY r.permit_at) AS n
            FROM ranked r WHERE r.permit_at IS NOT NULL AND r.k > r.booked_n
        ), winners AS (
            SELECT r.*, row_number() OVER (PARTITION BY r.priority ORDER BY r.k) AS n
            FROM ranked r WHERE r.permit_at IS NULL AND r.k <= r.booked_n
        ), moved AS ( -- each pair: the loser unbooked, the winner booked at the loser's slot
            UPDATE layover.scheduled_tasks t
            SET permit_at = CASE WHEN t.task_instance = w.task_instance AND t.task_name = w.task_name THEN l.permit_at END,
                execution_time = CASE WHEN t.task_instance = w.task_instance AND t.task_name = w.task_name THEN l.permit_at
                                      ELSE v_hend + interval '2 seconds' END,
                version = t.version + 1, last_reschedule_reason = 'fair',
                last_reschedule_detail = CASE WHEN t.task_instance = w.task_instance AND t.task_name = w.task_name
                    THEN 'fair share of ' || p_key || ': a permit booked in its turn'
                    ELSE 'fair share of ' || p_key || ': its permit went to a job ahead of it in the fair queue' END,
                last_rescheduled_at = p_now
            FROM losers l JOIN winners w ON w.n = l.n AND w.priority = l.priority
            WHERE ((t.task_name = l.task_name AND t.task_instance = l.task_instance)
                   OR (t.task_name = w.task_name AND t.task_instance = w.task_instance))
              AND (p_task_id IS NULL OR NOT (t.task_name = p_task_name AND t.task_instance = p_task_id))
            RETURNING t.permit_at
        )
        SELECT (SELECT count(*) FROM moved m WHERE m.permit_at <= p_now),
               (SELECT l.permit_at FROM losers l JOIN winners w ON w.n = l.n AND w.priority = l.priority
                WHERE w.task_name = p_task_name AND w.task_instance = p_task_id)
        INTO v_due, v_my_slot;
        IF v_due > 0 THEN
            PERFORM pg_notify('layover_jobs', ''); -- the winners are due: wake the workers
        END IF;
    END IF;

    -- 3. bookings. Bucket: the permits the request dimension has until the horizon (GCRA: the
    -- k-th from greatest(tat, now), k from 1, fits at start + (k - capacity) / rate), or up to
    -- p_max_jobs candidates when only tokens are limited; of them, in booking order, those whose
    -- slot (the latest over the limited dimensions, cumulated) is within the horizon. Slots: the
    -- free slots, each called now.
    v_unit := coalesce(v_mean, 1) * CASE WHEN p_rr > 0 THEN 1 / p_rr ELSE 1 END;
    IF p_mode = 'bucket' THEN
        v_slots := CASE WHEN p_rr > 0
                        THEN greatest(0, floor(extract(epoch FROM v_hend - v_start) * p_rr + p_rc))::int
                        ELSE least(p_max_jobs, 500) END;
        IF v_tokens AND v_slots > 0 THEN -- candidates: four times the jobs of the line's mean cost the tokens left by the horizon end admit
            v_slots := least(v_slots, greatest(5, ceil(4 * least(
                CASE WHEN p_tr > 0 THEN (extract(epoch FROM v_hend - v_tstart) * p_tr + p_tc) / (v_unit * p_tr) END,
                CASE WHEN p_ir > 0 THEN (extract(epoch FROM v_hend - v_istart) * p_ir + p_ic) / (v_unit * p_ir) END,
                CASE WHEN p_or > 0 THEN (extract(epoch FROM v_hend - v_ostart) * p_or + p_oc) / (v_unit * p_or) END)))::int);
        END IF;
    ELSE
        SELECT greatest(0, p_slots
                   - (SELECT count(*) FROM layover.concurrency_slots s
                      WHERE s.limit_key = p_key AND s.slot < p_slots AND s.holder_id IS NOT NULL
                        AND (s.claimed_at >= now()
                             OR EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                                        WHERE t.task_name = s.holder_type AND t.task_instance = s.holder_id
                                          AND t.version = s.holder_version AND t.picked
                                          AND t.last_heartbeat > p_now - make_interval(secs => p_dead_after_s))))
                   - (SELECT count(*) FROM layover.scheduled_tasks t
                      WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NOT NULL
                        AND NOT t.picked AND t.permit_at >= p_now - make_interval(secs => p_grace_s)))::int
        INTO v_slots;
    END IF;
    IF v_slots > 0 THEN
        SELECT t.priority INTO v_top FROM layover.scheduled_tasks t
        WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
        ORDER BY t.priority DESC, t.fair_tag LIMIT 1;
        -- the reserved share counts the jobs a round books: a token-only bucket's candidates are many
        -- more, so it counts the horizon's worth of jobs at the line's mean cost (seconds) instead
        v_credit := v_credit + p_low_share * CASE WHEN p_mode = 'bucket' AND p_rr <= 0
                                                  THEN least(v_slots, greatest(1, p_horizon_s / greatest(coalesce(v_mean, 1), 1e-6)))
                                                  ELSE v_slots END;
        v_reserve := floor(v_credit)::int;
        WITH chosen AS (
            (SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, 0 AS cls FROM layover.scheduled_tasks t
             WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
               AND t.priority < v_top
             ORDER BY t.priority DESC, t.fair_tag LIMIT v_reserve)
            UNION ALL
            (SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, 1 AS cls FROM layover.scheduled_tasks t
             WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked
             ORDER BY t.priority DESC, t.fair_tag LIMIT v_slots)
            UNION ALL
            (SELECT t.task_name, t.task_instance, t.fair_tag, t.priority, 1 AS cls FROM layover.scheduled_tasks t
             WHERE t.task_name = p_task_name AND t.task_instance = p_task_id AND t.fair_tag IS NOT NULL
               AND v_my_slot IS NULL)
        ), once AS (
            SELECT DISTINCT ON (c.task_name, c.task_instance) c.* FROM chosen c
            ORDER BY c.task_name, c.task_instance, c.cls
        ), first AS (
            SELECT o.* FROM once o ORDER BY o.cls, o.priority DESC, o.fair_tag LIMIT v_slots
        ), each_need AS ( -- per job: what each token dimension takes of it (its need times the key's share,
            -- at most the dimension's capacity, as GCRA admits a need: a job too large for the bucket is
            -- booked like a full one, and parked as too large when picked); a job without an estimate
            -- takes the line's mean cost of every dimension
            SELECT f.*,
                   least(p_tc, CASE WHEN t.token_estimate IS NULL THEN v_unit * p_tr
                       ELSE t.token_estimate[1] * least(1, greatest(0.05, coalesce(v_ts, 1))) END) AS nt,
                   least(p_ic, CASE WHEN t.token_estimate IS NULL THEN v_unit * p_ir
                       ELSE t.token_estimate[2] * least(1, greatest(0.05, coalesce(v_is, 1))) END) AS ni,
                   least(p_oc, CASE WHEN t.token_estimate IS NULL THEN v_unit * p_or
                       ELSE t.token_estimate[3] * least(1, greatest(0.05, coalesce(v_os, 1))) END) AS no
            FROM first f
            JOIN layover.scheduled_tasks t ON t.task_name = f.task_name AND t.task_instance = f.task_instance
        ), may_fit AS ( -- the prefix that fits within the horizon, before any row is locked (a token bucket's
            -- candidates are many more than fit: locking them all would hold rows the workers pick)
            SELECT e.* FROM (
                SELECT e.*, layover.fair_slot(p_now, p_rr, p_rc, v_start, row_number() OVER w,
                           CASE WHEN v_tokens THEN ARRAY[p_tr, p_tc, p_ir, p_ic, p_or, p_oc] END,
                           ARRAY[v_tstart, v_istart, v_ostart],
                           ARRAY[sum(e.nt) OVER w, sum(e.ni) OVER w, sum(e.no) OVER w]) AS at
                FROM each_need e
                WINDOW w AS (ORDER BY e.cls, e.priority DESC, e.fair_tag ROWS UNBOUNDED PRECEDING)) e
            WHERE p_mode = 'slots' OR NOT v_tokens OR e.at <= v_hend
        ), locked AS (
            SELECT m.task_name, m.task_instance, m.fair_tag, m.priority, m.cls, m.nt, m.ni, m.no
            FROM may_fit m
            JOIN layover.scheduled_tasks t ON t.task_name = m.task_name AND t.task_instance = m.task_instance
            FOR UPDATE OF t SKIP LOCKED
        ), fitting AS ( -- the slots of the rows locked, in booking order (no more than may_fit gave them)
            SELECT l.*, CASE WHEN p_mode = 'slots' THEN p_now
                        ELSE layover.fair_slot(p_now, p_rr, p_rc, v_start, row_number() OVER w,
                           CASE WHEN v_tokens THEN ARRAY[p_tr, p_tc, p_ir, p_ic, p_or, p_oc] END,
                           ARRAY[v_tstart, v_istart, v_ostart],
                           ARRAY[sum(l.nt) OVER w, sum(l.ni) OVER w, sum(l.no) OVER w]) END AS at
            FROM locked l
            WINDOW w AS (ORDER BY l.cls, l.priority DESC, l.fair_tag ROWS UNBOUNDED PRECEDING)
        ), moved AS (
            UPDATE layover.scheduled_tasks t
            SET execution_time = s.at, permit_at = s.at, version = t.version + 1, last_reschedule_reason = 'fair',
                last_reschedule_detail = CASE WHEN p_mode = 'slots'
                    THEN 'fair share of ' || p_key || ': a concurrency slot free in its turn'
                    ELSE 'fair share of ' || p_key || ': a permit booked in its turn' END,
                last_rescheduled_at = p_now
            FROM fitting s
            WHERE t.task_name = s.task_name AND t.task_instance = s.task_instance
              AND (p_task_id IS NULL OR NOT (s.task_name = p_task_name AND s.task_instance = p_task_id))
            RETURNING t.task_name
        ), flow_counts AS (
            UPDATE layover.fair_flows f
            SET booked = f.booked + c.n, last_booked_at = p_now
            FROM (SELECT t.fairness_key, t.priority, count(*) AS n FROM fitting s
                  JOIN layover.scheduled_tasks t ON t.task_name = s.task_name AND t.task_instance = s.task_instance
                  GROUP BY t.fairness_key, t.priority) c
            WHERE f.provider_key = p_key AND f.fairness_key = c.fairness_key AND f.priority = c.priority
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM fitting), (SELECT max(fair_tag) FROM fitting),
               coalesce(v_my_slot, (SELECT at FROM fitting WHERE task_name = p_task_name AND task_instance = p_task_id)),
               (SELECT count(*) FROM fitting WHERE cls = 0),
               (SELECT coalesce(jsonb_object_agg(x.priority::text,
                           greatest(x.tag, layover.fair_class_clock(v_clocks, x.priority))), '{}'::jsonb)
                FROM (SELECT priority, max(fair_tag) AS tag FROM fitting GROUP BY priority) x),
               (SELECT ARRAY[sum(f2.nt), sum(f2.ni), sum(f2.no)] FROM fitting f2),
               (SELECT count(*) FROM fitting f3 WHERE f3.at <= p_now)
        INTO v_booked, v_max_tag, v_my_slot, v_low, v_clocks, v_sums, v_due
        FROM (SELECT count(*) FROM moved) m, (SELECT count(*) FROM flow_counts) fc;

        IF v_booked > 0 THEN
            IF p_mode = 'bucket' THEN
                IF p_rr > 0 THEN
                    PERFORM layover.book_requests(p_key, v_start, v_booked, p_rr);
                END IF;
                IF v_tokens THEN
                    UPDATE layover.buckets bk
                    SET token_tat = layover.gcra_take(bk.token_tat, p_now, p_tr, v_sums[1]),
                        input_tat = layover.gcra_take(bk.input_tat, p_now, p_ir, v_sums[2]),
                        output_tat = layover.gcra_take(bk.output_tat, p_now, p_or, v_sums[3])
                    WHERE bk.provider_key = p_key;
                END IF;
            ELSIF v_due > 0 THEN
                PERFORM pg_notify('layover_jobs', ''); -- the called jobs are due: wake the workers
            END IF;
            UPDATE layover.fair_lines l
            SET vclock = greatest(l.vclock, v_max_tag), class_clocks = l.class_clocks || v_clocks,
                booked = l.booked + v_booked
            WHERE l.provider_key = p_key;
        END IF;
    END IF;
    UPDATE layover.fair_lines l
    SET rounds = l.rounds + 1, last_round_at = p_now,
        low_credit = CASE WHEN v_credit IS NULL THEN l.low_credit ELSE least(greatest(v_credit - v_low, 0), 1) END
    WHERE l.provider_key = p_key;

    IF v_my_slot IS NULL AND p_task_id IS NOT NULL THEN
        SELECT t.fair_tag, t.priority INTO v_my_tag, v_my_prio FROM layover.scheduled_tasks t
        WHERE t.task_name = p_task_name AND t.task_instance = p_task_id;
        SELECT l.class_clocks, l.active_weight INTO v_clocks, v_weight FROM layover.fair_lines l WHERE l.provider_key = p_key;
        IF v_my_tag IS NOT NULL THEN
            v_my_est := v_hend + make_interval(secs => least(86400, greatest(2, 2 * greatest(0,
                            v_my_tag - layover.fair_class_clock(v_clocks, v_my_prio))
                        * greatest(coalesce(v_weight, 1), 1e-9) / v_rate)));
        END IF;
    END IF;
    RETURN QUERY SELECT false, v_my_slot, v_my_est, v_booked, v_tagged,
        EXISTS (SELECT 1 FROM layover.scheduled_tasks t
                WHERE t.provider_key = p_key AND t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked),
        v_ts, v_is, v_os;
END
$$;

COMMENT ON FUNCTION layover.fair_round_limit(text, timestamptz, text, float8, float8, float8, float8, float8, float8,
        float8, float8, int, float8, float8, float8, float8, int, text, text, bigint, float8) IS
    'One round of a provider key''s fair queue (V25): a bucket of any dimensions (token costs) or a concurrency limit.';

-- One round on a request-only bucket: fair_round_limit in mode 'bucket' with no token dimension.
-- Parameters: key, now, request rate (/s), capacity, horizon (s), low-priority share, max jobs to
-- tag, the caller's task name, id, version (NULLs: a pump round), permit grace (s). Kept for the
-- fairness benchmark (bench FairnessBench), which calls it; core calls fair_round_limit.
CREATE FUNCTION layover.fair_round(
        p_key text, p_now timestamptz, p_rate float8, p_cap float8, p_horizon_s float8, p_low_share float8,
        p_max_jobs int, p_task_name text, p_task_id text, p_version bigint, p_grace_s float8)
    RETURNS TABLE (carried boolean, slot timestamptz, estimate timestamptz, booked int, tagged int, waiting boolean)
    LANGUAGE sql VOLATILE AS
$$
    SELECT r.carried, r.slot, r.estimate, r.booked, r.tagged, r.waiting
    FROM layover.fair_round_limit(p_key, p_now, 'bucket', p_rate, p_cap, 0, 0, 0, 0, 0, 0, 0, 0, p_rate,
             p_horizon_s, p_low_share, p_max_jobs, p_task_name, p_task_id, p_version, p_grace_s) r
$$;

COMMENT ON FUNCTION layover.fair_round(text, timestamptz, float8, float8, float8, float8, int, text, text, bigint, float8) IS
    'For workers before V25: layover.fair_round_limit on a request-only bucket (one implementation, V25).';

-- ---------------------------------------------------------------------------
-- fairness: each provider key's flows with waiting jobs (or booked ones), their weight and share.
-- One row per (provider_key, fairness_key) of a job with a fairness key that has not run.
--   waiting     jobs tagged, waiting for a permit      booked   jobs holding a permit
--   untagged    due jobs not in the queue yet (the next round tags them)
--   weight      the weight a job tagged now gets (layover.fairness_weight)
--   share       weight / the sum of the weights of the key's flows with waiting jobs: the share of
--               the key's permits the flow gets while all of them wait
--   lag         how far the flow's last tag is ahead of its priority's clock (virtual time)
-- ---------------------------------------------------------------------------
CREATE VIEW layover.fairness AS
WITH jobs AS (
    SELECT t.provider_key, t.fairness_key,
           count(*) FILTER (WHERE t.fair_tag IS NOT NULL AND t.permit_at IS NULL AND NOT t.picked) AS waiting,
           count(*) FILTER (WHERE t.permit_at IS NOT NULL) AS booked,
           count(*) FILTER (WHERE t.fair_tag IS NULL AND t.permit_at IS NULL AND NOT t.picked) AS untagged,
           count(*) FILTER (WHERE t.picked) AS running
    FROM layover.scheduled_tasks t
    WHERE t.fairness_key IS NOT NULL AND t.provider_key IS NOT NULL
    GROUP BY t.provider_key, t.fairness_key
), weighted AS (
    SELECT j.*, layover.fairness_weight(j.fairness_key) AS weight FROM jobs j
)
SELECT w.provider_key, w.fairness_key, w.waiting, w.booked, w.untagged, w.running, w.weight,
       CASE WHEN w.waiting > 0
            THEN w.weight / sum(w.weight) FILTER (WHERE w.waiting > 0) OVER (PARTITION BY w.provider_key) END AS share,
       f.lag, f.tagged, f.booked AS booked_total, f.last_booked_at
FROM weighted w
LEFT JOIN (SELECT ff.provider_key, ff.fairness_key,
                  max(ff.vfinish - layover.fair_class_clock(fl.class_clocks, ff.priority)) AS lag,
                  sum(ff.tagged) AS tagged, sum(ff.booked) AS booked, max(ff.last_booked_at) AS last_booked_at
           FROM layover.fair_flows ff JOIN layover.fair_lines fl ON fl.provider_key = ff.provider_key
           GROUP BY ff.provider_key, ff.fairness_key) f
       ON f.provider_key = w.provider_key AND f.fairness_key = w.fairness_key;

COMMENT ON VIEW layover.fairness IS
    'Each provider key''s fairness keys with jobs: waiting, booked, untagged, running, weight, share of the key''s permits.';


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
-- Owners: layover.batches and layover.batch_items are written by core's BatchStore / BatchSql only,
-- and by the functions below. The functions that also touch the job table (batch_gather,
-- batch_collect, batch_finish, batch_leave, batch_wake) are the only writes of scheduled_tasks
-- outside core's JobStore for batches; they never change a row's version or picked state except
-- where said (batch_gather, version-checked, as a reschedule of the picked job would).
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

-- Gathers jobs into their key's open batch, in one transaction: the picked job (version-checked)
-- and, along with it, others of the key's due backlog the caller locked (FOR UPDATE SKIP LOCKED,
-- not picked, version-checked). Each gets an item, the open batch its line and bytes (sealed, and a
-- new one opened, when the next line would pass p_max_lines or p_max_bytes), and its job row the
-- item and a run time of p_wait_until[i] (a reschedule that counts nothing: reason 'batched').
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
        UPDATE layover.scheduled_tasks t
        SET batch_item = v_item, execution_time = p_wait_until[i], picked = false, picked_by = NULL,
            last_heartbeat = NULL, version = t.version + 1,
            last_reschedule_reason = 'batched', last_reschedule_detail = 'in batch ' || b.id,
            last_rescheduled_at = now()
        WHERE t.task_name = p_task_name AND t.task_instance = p_ids[i];
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
-- their counts and tokens to the batch, and makes their waiting jobs due at once. Returns how many
-- lines were stored.
CREATE FUNCTION layover.batch_collect(
        p_batch bigint, p_custom_ids text[], p_kinds text[], p_statuses int[], p_results text[],
        p_input bigint[], p_output bigint[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
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
    ), woken AS (
        UPDATE layover.scheduled_tasks t
        SET execution_time = now()
        FROM stored s
        WHERE t.batch_item = s.id AND NOT t.picked
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM stored) + 0 * (SELECT count(*) FROM counted) + 0 * (SELECT count(*) FROM woken)
    INTO v_n;
    IF v_n > 0 THEN
        PERFORM pg_notify('layover_jobs', '');
    END IF;
    RETURN v_n;
END
$$;

COMMENT ON FUNCTION layover.batch_collect(bigint, text[], text[], int[], text[], bigint[], bigint[]) IS
    'Stores result lines on their items, once each (V22), and makes their jobs due.';

-- Ends a batch in state p_state (ended, expired, cancelled, failed): items still without a line
-- are returned (their jobs route anew at their next pick, made due at once). Returns how many
-- items were returned. A batch already finished is left as it is (0).
CREATE FUNCTION layover.batch_finish(p_batch bigint, p_state text, p_error text)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
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
    ), woken AS (
        UPDATE layover.scheduled_tasks t SET execution_time = now()
        FROM back WHERE t.batch_item = back.id AND NOT t.picked
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM back) + 0 * (SELECT count(*) FROM woken) INTO v_n;
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
-- it. Returns how many jobs were made due.
CREATE FUNCTION layover.batch_wake(p_since timestamptz)
    RETURNS int
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    v_n int;
BEGIN
    UPDATE layover.scheduled_tasks t SET execution_time = now()
    FROM layover.batch_items i JOIN layover.batches b ON b.id = i.batch_id
    WHERE t.batch_item = i.id AND i.state <> 'gathered' AND NOT t.picked AND t.execution_time > now()
      AND b.finished_at >= p_since;
    GET DIAGNOSTICS v_n = ROW_COUNT;
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
-- rows of Layover's own recurring tasks (recovery sweep, retention) are not jobs
WHERE t.task_name NOT LIKE 'layover-%';

COMMENT ON VIEW layover.jobs IS
    'Live jobs. state in (scheduled, running, rescheduled, retrying); attempts = attempts spent; args as jsonb.';


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
-- ---------------------------------------------------------------------------
CREATE FUNCTION layover.forget_job_type(p_job_type text) RETURNS bigint
    LANGUAGE sql VOLATILE AS
$$
    WITH jobs AS (DELETE FROM layover.scheduled_tasks WHERE task_name = p_job_type RETURNING 1),
         letters AS (DELETE FROM layover.dead_letters WHERE job_type = p_job_type RETURNING 1)
    SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM letters)
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
