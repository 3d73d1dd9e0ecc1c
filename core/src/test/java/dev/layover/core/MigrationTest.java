package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.migrations.LayoverMigrations;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import org.junit.jupiter.api.Test;

/** Migrations create the schema once; running them again, or from Layover's start, changes nothing. */
@DatabaseTest
class MigrationTest {

    @Test
    void migratingTwiceDoesNoHarm() {
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            assertTrue(LayoverMigrations.migrate(db.dataSource()) >= 1);
            db.execute("insert into layover.dead_letters (job_type, job_id, failure_type, first_enqueued_at)"
                    + " values ('t', 'i', 'rejected', now())");
            assertEquals(0, LayoverMigrations.migrate(db.dataSource()));
            assertTrue(LayoverMigrations.isUpToDate(db.dataSource()));
            assertEquals(1, db.count("select count(*) from layover.dead_letters"), "data survives a second run");
            Layover.builder(db.dataSource()).build();
            assertEquals(1, db.count("select count(*) from layover.dead_letters"));
            for (String relation : new String[] {"scheduled_tasks", "dead_letters", "jobs"}) {
                assertEquals(1, db.count("select count(*) from information_schema.tables"
                        + " where table_schema = 'layover' and table_name = ?", relation), relation);
            }
        }
    }

    @Test
    void theJobTableIsVacuumedAfterTwoPercentOfItDies() {
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            LayoverMigrations.migrate(db.dataSource());
            String options = "select array_to_string(reloptions, ',') from pg_class"
                    + " where oid = 'layover.scheduled_tasks'::regclass";
            assertEquals("autovacuum_vacuum_scale_factor=0.02,autovacuum_vacuum_threshold=1000,"
                    + "autovacuum_analyze_scale_factor=0.02,autovacuum_analyze_threshold=1000",
                    db.value(options), "a million-job backlog is vacuumed after 21,000 dead rows, not 200,050");
        }
    }

    @Test
    void aFreshDatabaseIsNotUpToDateUntilMigrated() {
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            assertTrue(!LayoverMigrations.isUpToDate(db.dataSource()));
            Layover.builder(db.dataSource()).build();
            assertTrue(LayoverMigrations.isUpToDate(db.dataSource()));
        }
    }

    @Test
    void migrationsCanBeLeftToTheApplication() {
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            Layover.builder(db.dataSource()).migrate(false).build();
            assertEquals(0, db.count("select count(*) from information_schema.schemata where schema_name = 'layover'"));
        }
    }
}
