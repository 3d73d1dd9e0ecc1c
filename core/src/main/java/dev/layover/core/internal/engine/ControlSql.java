package dev.layover.core.internal.engine;


/**
 * The SQL of operator control over {@code layover.pauses}, and the reads of each worker's control
 * refresh. Every write of the job table (holding and releasing waiting jobs, a cancel request, the
 * cancel itself) is {@code JobSql}'s. See {@code docs/admission-and-control.md}.
 */
final class ControlSql {

    private ControlSql() {}

    /** Pauses and resumes take this transaction-level advisory lock: they run one at a time. */
    static final long PAUSE_LOCK = 0x4c61796f76657209L;



    static final String LOCK = "SELECT pg_advisory_xact_lock(?)";

    /** Starts a pause unless one is active. Parameters: scope, target, by, reason. */
    static final String INSERT_PAUSE = """
            INSERT INTO layover.pauses (scope, target, paused_by, reason)
            VALUES (?, ?, ?, ?)
            ON CONFLICT (scope, target) WHERE resumed_at IS NULL DO NOTHING
            RETURNING id""";


    /** Parameters: held jobs, pause id. */
    static final String SET_HELD = "UPDATE layover.pauses SET held_jobs = ? WHERE id = ?";

    /** Ends an active pause. Parameters: by, scope, target. */
    static final String END_PAUSE = """
            UPDATE layover.pauses SET resumed_at = now(), resumed_by = ?
            WHERE scope = ? AND target = ? AND resumed_at IS NULL
            RETURNING id""";


    /** Parameters: released jobs, pause id. */
    static final String SET_RELEASED = "UPDATE layover.pauses SET released_jobs = ? WHERE id = ?";

    private static final String PAUSE_COLUMNS = """
            id, scope, target, paused_at, paused_by, reason, held_jobs, resumed_at, resumed_by, released_jobs""";

    /** One pause. Parameter: id. */
    static final String PAUSE_BY_ID = "SELECT " + PAUSE_COLUMNS + " FROM layover.pauses WHERE id = ?";

    /** The active pause of a scope and target. Parameters: scope, target. */
    static final String ACTIVE_PAUSE = "SELECT " + PAUSE_COLUMNS
            + " FROM layover.pauses WHERE scope = ? AND target = ? AND resumed_at IS NULL";

    /** Every active pause, oldest first. */
    static final String ACTIVE_PAUSES = "SELECT " + PAUSE_COLUMNS
            + " FROM layover.pauses WHERE resumed_at IS NULL ORDER BY paused_at, id";

    /** The newest pauses, active or ended. Parameter: limit. */
    static final String RECENT_PAUSES = "SELECT " + PAUSE_COLUMNS
            + " FROM layover.pauses ORDER BY id DESC LIMIT ?";

    /**
     * A worker's control refresh, once a second and on NOTIFY: the active pauses; the jobs this
     * worker has picked that carry a deadline or a cancel request; and whether any waiting job is
     * past its deadline (or will run after it) or has a cancel request left over (its run ended
     * in a reschedule or retry after the request). Parameters: worker, now.
     *
     * <p>Every read of the job table here goes through one of its partial indexes whatever the
     * parameters and the statistics: the deadline checks are the first entry of
     * {@code scheduled_tasks_deadline_idx} and of {@code scheduled_tasks_after_deadline_idx}, read
     * in order ({@code min()}). Written as {@code EXISTS (... deadline <= ?)}, the plan made once
     * for any parameter (PostgreSQL's generic plan, chosen after five runs) read the whole table at
     * every refresh (docs/benchmarks.md, "Deep backlog for 30 minutes"); and an {@code EXISTS} that the
     * planner expects to match early is planned as a sequential scan, which reads the whole table
     * when nothing matches.
     */
    static final String REFRESH = """
            SELECT 'pause' AS kind, p.scope AS a, p.target AS b, NULL::bigint AS version,
                   NULL::timestamptz AS deadline, NULL::timestamptz AS cancel_at, p.paused_by AS by, p.reason AS reason
            FROM layover.pauses p WHERE p.resumed_at IS NULL
            UNION ALL
            SELECT 'mine', t.task_name, t.task_instance, t.version, t.deadline, t.cancel_requested_at,
                   t.cancel_requested_by, t.cancel_reason
            FROM layover.scheduled_tasks t
            WHERE t.picked AND t.picked_by = ? AND (t.deadline IS NOT NULL OR t.cancel_requested_at IS NOT NULL)
            UNION ALL
            SELECT 'due', NULL, NULL, NULL, NULL, NULL, NULL, NULL
            WHERE (SELECT min(t.deadline) FROM layover.scheduled_tasks t WHERE t.deadline IS NOT NULL AND NOT t.picked)
                   <= ?::timestamptz
               OR (SELECT min(t.task_name) FROM layover.scheduled_tasks t
                   WHERE t.deadline < t.execution_time AND t.paused_run_at IS NULL AND NOT t.picked) IS NOT NULL
               OR EXISTS (SELECT 1 FROM layover.scheduled_tasks t WHERE t.cancel_requested_at IS NOT NULL AND NOT t.picked)""";

    /**
     * Waiting jobs to park or cancel now, at most 100. Parameter: now.
     */
    static final String DUE = """
            SELECT t.task_name, t.task_instance, t.version, coalesce(t.consecutive_failures, 0) AS attempts,
                   t.deadline, t.execution_time, t.paused_run_at, t.cancel_requested_at, t.cancel_requested_by,
                   t.cancel_reason
            FROM layover.scheduled_tasks t
            WHERE (t.task_name, t.task_instance) IN (
                (SELECT task_name, task_instance FROM layover.scheduled_tasks
                 WHERE deadline IS NOT NULL AND deadline <= ?::timestamptz AND NOT picked LIMIT 100)
                UNION
                (SELECT task_name, task_instance FROM layover.scheduled_tasks
                 WHERE deadline < execution_time AND paused_run_at IS NULL AND NOT picked LIMIT 100)
                UNION
                (SELECT task_name, task_instance FROM layover.scheduled_tasks
                 WHERE cancel_requested_at IS NOT NULL AND NOT picked LIMIT 100))
              AND NOT t.picked""";
}
