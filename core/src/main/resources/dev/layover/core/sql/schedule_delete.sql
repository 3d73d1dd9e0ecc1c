-- Deletes a run-time schedule; its occurrences already enqueued stay jobs.
DELETE FROM layover.schedules WHERE tenant = :tenant AND name = :name AND source = 'api'
