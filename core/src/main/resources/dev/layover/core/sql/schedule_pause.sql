-- Pauses a schedule: nothing is due until it is resumed.
UPDATE layover.schedules
SET paused = true, due_at = NULL, held = false, updated_at = now()
WHERE tenant = :tenant AND name = :name AND NOT paused
