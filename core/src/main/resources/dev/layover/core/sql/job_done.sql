-- Finished jobs, deleted in one statement with their stored steps (layover.job_steps); a row whose
-- version moved on is left alone. A deleted group member's row in layover.group_members ends done
-- with its result, in the same statement. Returns the count of jobs deleted, the groups whose
-- members ended (text[], null when none), for layover.group_settle in the same transaction, and the
-- types and ids of the jobs deleted that others run after (text[] each, null when none), for
-- layover.dependencies_completed in the same transaction. A job whose row a dependent's enqueue is
-- marking (JobSql.MARK_DEPENDED_ON) waits for that transaction and returns the mark.
--   :names, :ids, :versions, :results   one element per job (a result: jsonb text or null)
-- job_done_history.sql is this statement and the jobs' history rows.
WITH moved AS (
    DELETE FROM layover.scheduled_tasks t
    USING unnest(:names::text[], :ids::text[], :versions::bigint[], :results::text[]) AS d(name, id, version, result)
    WHERE t.task_name = d.name AND t.task_instance = d.id AND t.version = d.version
    RETURNING t.task_name, t.task_instance, t.group_id, d.result, t.has_dependents
), steps AS (
    DELETE FROM layover.job_steps s USING moved m
    WHERE s.job_type = m.task_name AND s.job_id = m.task_instance
), members AS (
    UPDATE layover.group_members g
    SET state = 'done', result = m.result::jsonb, finished_at = now()
    FROM moved m
    WHERE m.group_id IS NOT NULL AND g.group_id = m.group_id AND g.job_type = m.task_name
      AND g.job_id = m.task_instance AND g.state = 'pending'
    RETURNING g.group_id
)
SELECT (SELECT count(*) FROM moved), (SELECT array_agg(DISTINCT group_id) FROM members),
       (SELECT array_agg(task_name) FROM moved WHERE has_dependents),
       (SELECT array_agg(task_instance) FROM moved WHERE has_dependents)
