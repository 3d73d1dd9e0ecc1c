-- Layover schema, version 4: the recovery sweep and the recovery trial (module layover-dlq).
--
-- The sweep is a db-scheduler recurring task that runs on one worker of the cluster at a time.
-- It learns of breaker transitions from layover.breakers (closed_at newer than the close it last
-- handled), never only from one JVM's listeners, so a close made by another JVM or by an operator's
-- console starts it too. What it did and what it will do next, per provider key, is kept here.
--
-- Forward-only: a released file is never edited; a change is a new file.

-- ---------------------------------------------------------------------------
-- recovery_state: one row per provider key the sweep has worked on.
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

-- ---------------------------------------------------------------------------
-- The sweep's reads of parked dead letters: the distinct keys with parked entries (a skip
-- scan, one probe per key), and per key and failure type the oldest parked entries in id
-- order. Partial: parked entries only, so it stays small when the table holds millions of
-- replayed ones.
-- ---------------------------------------------------------------------------
CREATE INDEX dead_letters_recovery_idx
    ON layover.dead_letters (provider_key, failure_type, id)
    WHERE state = 'parked';

-- ---------------------------------------------------------------------------
-- How the sweep's replays of a key are doing (live sweep jobs, pending or failing) is read
-- before every batch; this keeps that read to the replayed jobs of the key, however many
-- other jobs of the key are queued. Partial: only jobs made by a replay.
-- ---------------------------------------------------------------------------
CREATE INDEX scheduled_tasks_replays_idx
    ON layover.scheduled_tasks (provider_key, replay_kind)
    WHERE dead_letter_id IS NOT NULL;
