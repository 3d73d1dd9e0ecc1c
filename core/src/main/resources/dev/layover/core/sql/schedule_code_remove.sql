-- A code schedule no longer in the code of a start whose generation is at least its own: a tombstone
-- (removed_at), which nothing fires and which a lower generation cannot bring back.
UPDATE layover.schedules
SET removed_at = now(), due_at = NULL, held = false, generation = :generation::bigint, updated_at = now()
WHERE tenant = '' AND name = :name AND source = 'code' AND removed_at IS NULL AND generation <= :generation::bigint
