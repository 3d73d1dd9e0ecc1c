-- Layover schema, version 31: the job table is vacuumed as its dead rows pile up, not when they
-- reach a fifth of it (issue 23).
--
-- Every job leaves two dead row versions in layover.scheduled_tasks (its pick's update and its
-- delete; a reschedule leaves one more). Autovacuum's stock trigger is 50 dead rows plus 20% of
-- the table: behind a backlog of a million jobs, 200,000 dead rows, which ten keys of 50 calls/s
-- leave in about 3 minutes, and the table and its indexes bloat in between. The bench's ten-key
-- million-job arm had 4 autovacuums in 900 s and grew 1.26x; with this trigger, 15 and 1.09x. Its
-- pick latency was no better either way (docs/benchmarks.md).
--
-- The trigger for this table is now 1,000 dead rows plus 2% of it: 21,000 behind a million jobs,
-- 1,200 behind 10,000 (about what the stock trigger gave at that size). Autovacuum still visits
-- the table at most once per autovacuum_naptime (stock: 1 minute); the server's own settings are
-- not touched, and a DBA's ALTER TABLE .. SET (..) after this migration overrides it. ANALYZE
-- follows the same rule, so the planner's row estimate (which also spaces the depth samples, V30)
-- stays near the backlog's size.
--
-- No rows change. Workers of every version read and write the table as before.
--
-- Forward-only: a released file is never edited; a change is a new file.

ALTER TABLE layover.scheduled_tasks SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_analyze_threshold = 1000
);
