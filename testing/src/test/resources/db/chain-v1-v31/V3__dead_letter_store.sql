-- Layover schema, version 3: the dead-letter store (module layover-dlq).
--   * indexes for filtered keyset pages, replay by filter and retention;
--   * text search over the error: a lower-cased error_text column, trigram-indexed
--     when the server has pg_trgm;
--   * layover.audit_log: who replayed, discarded, edited, moved back or forced what, and when.
--
-- Forward-only: a released file is never edited; a change is a new file.

-- ---------------------------------------------------------------------------
-- Keyset pages are ordered by (parked_at DESC, id DESC). V1 has that index alone
-- and with state first. These serve the other filters of the console, alone or
-- with a state: the index walk returns rows already in page order, so a page
-- reads about `limit` rows whatever the table size.
-- ---------------------------------------------------------------------------
CREATE INDEX dead_letters_job_type_page_idx
    ON layover.dead_letters (job_type, state, parked_at DESC, id DESC);
CREATE INDEX dead_letters_provider_page_idx
    ON layover.dead_letters (provider_key, state, parked_at DESC, id DESC);
CREATE INDEX dead_letters_failure_page_idx
    ON layover.dead_letters (failure_type, state, parked_at DESC, id DESC);

-- Retention deletes replayed and discarded entries by the time they reached that state.
CREATE INDEX dead_letters_retention_idx
    ON layover.dead_letters (state_changed_at)
    WHERE state IN ('replayed', 'discarded');

-- ---------------------------------------------------------------------------
-- Text search: "text in the error" is a case-insensitive substring of the error
-- class and message. error_text holds them lower-cased (lower() of the
-- database's collation), compared in collation "C": the store matches
-- error_text LIKE lower(pattern), a byte-wise match several times cheaper per
-- row than ILIKE over the expression, which matters when a page has to read
-- past many rows to find its matches.
--
-- With pg_trgm a trigram GIN index on error_text serves rare texts. pg_trgm is
-- a trusted contrib extension (PostgreSQL 13+), but a server may lack contrib
-- or refuse it: then no index is created and a text filter reads the rows the
-- other filters leave (correct, slower). An existing pg_trgm, in any schema, is
-- used as is; else it is created in schema layover.
-- ---------------------------------------------------------------------------
ALTER TABLE layover.dead_letters
    ADD COLUMN error_text text COLLATE "C"
    GENERATED ALWAYS AS (lower(coalesce(error_class, '') || ' ' || coalesce(error_message, ''))) STORED;
-- A larger sample makes the planner's estimate of how often a text occurs stable, so that it
-- walks the page order for common texts and uses the trigram index for rare ones.
ALTER TABLE layover.dead_letters ALTER COLUMN error_text SET STATISTICS 1000;

DO $$
DECLARE
    trgm_schema text;
BEGIN
    SELECT n.nspname INTO trgm_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pg_trgm';

    IF trgm_schema IS NULL AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA layover;
            trgm_schema := 'layover';
        EXCEPTION WHEN others THEN
            RAISE NOTICE 'layover: pg_trgm could not be created (%); text search over dead letters will not be indexed', SQLERRM;
        END;
    END IF;

    IF trgm_schema IS NOT NULL THEN
        EXECUTE format('CREATE INDEX dead_letters_error_text_idx ON layover.dead_letters '
                       'USING gin (error_text %I.gin_trgm_ops)', trgm_schema);
    END IF;
END
$$;

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
