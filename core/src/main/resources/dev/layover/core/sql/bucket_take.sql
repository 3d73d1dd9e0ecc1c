-- One call's request permit and token need from a key's bucket, whole or not at all (layover.take),
-- for a call its job's pick did not admit: a fallback chain's endpoint, a key pool's key.
SELECT t.taken, t.fits_at, t.reserved, t.rates
FROM layover.take(:key, :now::timestamptz, :need::float8[], :interactive, :reserve::float8, :window::float8) t
