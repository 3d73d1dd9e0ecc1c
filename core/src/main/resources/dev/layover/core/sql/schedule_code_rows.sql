-- The code schedules as stored, for a start's reconciliation (serialized by an advisory lock taken first).
SELECT name, source, definition_hash, generation, removed_at IS NOT NULL AS removed
FROM layover.schedules
WHERE tenant = ''
