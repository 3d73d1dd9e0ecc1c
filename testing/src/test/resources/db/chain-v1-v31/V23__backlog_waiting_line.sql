-- Layover schema, version 23: a deep backlog behind a bucket no longer starves its own permits.
--
-- A key with a configured bucket and a backlog deeper than its booking horizon used to book
-- permits for the horizon and leave the rest of its due jobs as they were: due since their
-- enqueue, so every pick took those (the oldest) first and told each to wait, while the jobs
-- holding the permits came due behind them and lost their permits unpicked; the long booking
-- statement also held the bucket row, so every admission of the key waited for it. A million jobs
-- behind one 50/s key started none (docs/benchmarks.md, "Deep backlog"). Now (core's JobSql and
-- PickRewrite):
--   * the booking statement books only the slots within a short horizon, so it holds the bucket
--     row briefly;
--   * the rest of the backlog is placed in the key's waiting line by a statement that never holds
--     the bucket row: one request's time apart, from the line's end, holding no permit;
--   * a pick takes the due jobs holding their booked permit (execution_time = permit_at) first,
--     through the index below, then db-scheduler's order.
--
-- Forward-only; workers of earlier versions ignore the index.

-- The jobs waiting for the permit they booked: a pick takes the due ones first through it.
CREATE INDEX scheduled_tasks_permit_due_idx ON layover.scheduled_tasks (execution_time)
    WHERE permit_at IS NOT NULL AND NOT picked;
