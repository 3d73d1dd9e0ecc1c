-- Layover schema, version 5: wake-ups across JVMs, and one heartbeat for all of a worker's jobs.

-- A job inserted by anyone (an enqueue in another JVM, a replay, the caller's transaction once it
-- commits) wakes every listening worker at once instead of at its next poll. One notification per
-- statement; Postgres folds identical notifications of one transaction into one, and delivers
-- them only at commit, so a rolled-back enqueue wakes nobody.
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

-- The bulk heartbeat ("every job picked by worker W is alive") finds a worker's rows by this index.
CREATE INDEX scheduled_tasks_picked_by_idx ON layover.scheduled_tasks (picked_by) WHERE picked;
