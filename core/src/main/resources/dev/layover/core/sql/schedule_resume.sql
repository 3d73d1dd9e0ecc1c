-- Resumes a paused schedule at its first occurrence after now (:next_at).
UPDATE layover.schedules
SET paused = false, next_at = :next_at::timestamptz,
    due_at = CASE WHEN removed_at IS NULL THEN :next_at::timestamptz END, held = false, updated_at = now()
WHERE tenant = :tenant AND name = :name AND paused
