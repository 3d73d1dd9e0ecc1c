-- ===========================================================================
-- Recurring jobs (issue 47): layover.schedules and the view layover.schedules_view
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- One row per schedule: a job type with a cron expression and zone, or a fixed interval, whose
-- occurrences are ordinary jobs. Written only by core's schedule statements (schedule_*.sql). A
-- schedule is named per tenant ('' for the schedules defined in code). source 'code': reconciled at
-- each start from the application's code (definition_hash, generation: a JVM writes a code schedule
-- only when its generation is at least the row's; removed_at marks one no longer in the code).
-- source 'api': created, changed and deleted at run time. next_at is the next occurrence's instant
-- (nominal, before jitter); due_at is when a scheduler loop looks at the row next (next_at, or the
-- recheck of an occurrence held back by the overlap policy QUEUE; null while paused or removed).
-- The loops claim due rows with FOR UPDATE SKIP LOCKED on schedules_due_idx, so an idle poll is one
-- index probe however many schedules exist. Each occurrence's job id is
-- 'sched:<tenant>/<name>@<instant>': enqueued once across the fleet.
-- ---------------------------------------------------------------------------
CREATE TABLE layover.schedules (
    tenant          text        NOT NULL DEFAULT '',
    name            text        NOT NULL,
    job_type        text        NOT NULL,
    cron            text,
    zone            text,
    every_ms        bigint,
    args            jsonb,
    args_from_code  boolean     NOT NULL DEFAULT false,
    missed          text        NOT NULL DEFAULT 'skip',
    missed_window_ms bigint,
    overlap         text        NOT NULL DEFAULT 'skip',
    jitter_ms       bigint      NOT NULL DEFAULT 0,
    priority        smallint    NOT NULL DEFAULT 0,
    next_at         timestamptz NOT NULL,
    due_at          timestamptz,
    held            boolean     NOT NULL DEFAULT false,
    last_at         timestamptz,
    last_job_id     text,
    last_enqueued_at timestamptz,
    last_outcome    text,
    paused          boolean     NOT NULL DEFAULT false,
    source          text        NOT NULL,
    definition_hash text,
    generation      bigint      NOT NULL DEFAULT 0,
    removed_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, name),
    CONSTRAINT schedules_timing_check CHECK ((cron IS NOT NULL AND zone IS NOT NULL AND every_ms IS NULL)
                                             OR (cron IS NULL AND zone IS NULL AND every_ms > 0)),
    CONSTRAINT schedules_source_check CHECK (source IN ('code', 'api')),
    CONSTRAINT schedules_missed_check CHECK (missed IN ('skip', 'run_last', 'catch_up')),
    CONSTRAINT schedules_overlap_check CHECK (overlap IN ('skip', 'queue', 'allow'))
);

-- the scheduler loops' claim: WHERE due_at <= now() ORDER BY due_at (paused and removed rows have none)
CREATE INDEX schedules_due_idx ON layover.schedules (due_at) WHERE due_at IS NOT NULL;

COMMENT ON TABLE layover.schedules IS
    'Recurring jobs: one row per schedule (tenant, name); each occurrence is an ordinary job with id sched:<tenant>/<name>@<instant>. Read layover.schedules_view.';

-- ---------------------------------------------------------------------------
-- The documented view of schedules: what runs when, what ran last and how it ended.
-- last_job_state: the last occurrence's job as it is now: 'waiting' or 'running' (in the queue),
-- 'completed', 'parked', 'cancelled' (from the history, or a parked dead letter), or null when
-- unknown (never run, or its history row was deleted by retention).
-- ---------------------------------------------------------------------------
CREATE VIEW layover.schedules_view AS
SELECT s.tenant,
       s.name,
       s.job_type,
       s.source,
       CASE WHEN s.cron IS NOT NULL THEN s.cron || ' (' || s.zone || ')'
            ELSE 'every ' || (s.every_ms * interval '1 millisecond')::text END AS timing,
       s.cron,
       s.zone,
       s.every_ms * interval '1 millisecond'                             AS every,
       s.paused,
       s.removed_at IS NOT NULL                                          AS removed,
       CASE WHEN s.paused OR s.removed_at IS NOT NULL THEN NULL ELSE s.next_at END AS next_at,
       s.held                                                            AS held_by_overlap,
       s.last_at,
       s.last_job_id,
       s.last_enqueued_at,
       s.last_outcome,
       CASE WHEN s.last_job_id IS NULL THEN NULL
            WHEN t.picked THEN 'running'
            WHEN t.task_instance IS NOT NULL THEN 'waiting'
            WHEN h.outcome IS NOT NULL THEN h.outcome
            WHEN d.state IS NOT NULL THEN 'parked'
       END                                                               AS last_job_state,
       s.missed,
       s.missed_window_ms * interval '1 millisecond'                     AS missed_window,
       s.overlap,
       s.jitter_ms * interval '1 millisecond'                            AS jitter,
       s.args,
       s.updated_at
FROM layover.schedules s
LEFT JOIN layover.scheduled_tasks t ON t.task_name = s.job_type AND t.task_instance = s.last_job_id
LEFT JOIN LATERAL (SELECT x.outcome FROM layover.job_history x
                   WHERE x.job_type = s.job_type AND x.job_id = s.last_job_id
                   ORDER BY x.finished_at DESC LIMIT 1) h ON true
LEFT JOIN LATERAL (SELECT y.state FROM layover.dead_letters y
                   WHERE y.job_type = s.job_type AND y.job_id = s.last_job_id
                   ORDER BY y.id DESC LIMIT 1) d ON true;

COMMENT ON VIEW layover.schedules_view IS
    'Recurring jobs: each schedule with its timing, next occurrence, last occurrence and its job''s state now, paused.';
