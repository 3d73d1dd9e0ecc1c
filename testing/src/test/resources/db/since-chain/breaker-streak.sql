-- A breaker's streak (issue 50): failures reported in a row with no success reported between them; a
-- long enough streak opens it even while its window still holds earlier successes.
ALTER TABLE layover.breakers ADD COLUMN streak int NOT NULL DEFAULT 0;
