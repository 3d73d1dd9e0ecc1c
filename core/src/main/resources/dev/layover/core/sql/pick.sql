-- The pick is the admission: due jobs, as many as each provider key admits now, taken in one call
-- (layover.pick, in the migrations: each key's limits, cooldown, breaker and fair queue read and
-- moved in the same statement that marks its jobs picked; a job its key does not admit is not
-- touched). :now is null in production (the database's clock) and a test clock's time in tests.
SELECT p.*
FROM layover.pick(:worker, :now::timestamptz, :limit, :types::text[], :after, :options::jsonb) p
