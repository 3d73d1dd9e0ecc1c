-- Layover schema, version 18: console reads that do not grow with the tables (issue 21, item 7).
--
-- 1. layover.dead_letter_counts: how many dead letters there are per state, failure type, job
--    type and provider key, kept by statement triggers on layover.dead_letters (its only writer),
--    so the console's overview, facets, bulk preview and provider key page read a few hundred
--    rows instead of counting up to millions.
-- 2. job_history_finished_at_idx also carries outcome, provider key and duration, so "finished
--    in the last hour" (overview, key page) is an index-only scan of the last hour.
-- Forward-only: nothing here changes what earlier versions stored.

-- ---------------------------------------------------------------------------
-- 1. Dead-letter counts. provider_key is '' for dead letters without one (a primary key column
-- cannot be NULL); readers turn it back with nullif(provider_key, ''). Rows whose n reached 0 stay
-- (there are as many rows as combinations ever seen, a few hundred); readers skip n = 0.
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

-- The backfill. The lock keeps parks and state changes out until this migration commits, so no
-- change falls between the count and the triggers (a million dead letters: a few seconds).
LOCK TABLE layover.dead_letters IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO layover.dead_letter_counts (state, failure_type, job_type, provider_key, n)
SELECT d.state, d.failure_type, d.job_type, coalesce(d.provider_key, ''), count(*)
FROM layover.dead_letters d
GROUP BY 1, 2, 3, 4;

-- ---------------------------------------------------------------------------
-- 2. Finished jobs in a recent window by outcome (and key): the finished_at index, replaced by one
-- that also holds what those counts read, so they need no heap visit (job_history is append-only,
-- so its pages are all-visible once vacuumed). Same number of indexes per history insert as before.
-- Building it locks job_history against inserts for the build (10 million rows: about a minute).
-- ---------------------------------------------------------------------------
DROP INDEX layover.job_history_finished_at_idx;
CREATE INDEX job_history_finished_at_idx ON layover.job_history (finished_at)
    INCLUDE (outcome, provider_key, duration_ms);
