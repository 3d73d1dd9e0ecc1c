package dev.layover.migrations;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * A database migrated by the pre-release chain (a developer's, from before the baseline) is refused
 * with a message that says what it is and what to do, and nothing in it is changed.
 */
@DatabaseTest
class PreReleaseChainTest {

    @Test
    void aSchemaOfTheWholeChainIsToldToBeDroppedAndWorksOnceItIs() {
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            DataSource ds = Databases.plain(db);
            Databases.migrateChain(db, null);

            IllegalStateException e = assertThrows(IllegalStateException.class, () -> LayoverMigrations.migrate(ds));
            assertTrue(e.getMessage().contains("this database was migrated by a pre-release chain of Layover's migrations"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("drop schema layover (DROP SCHEMA layover CASCADE) and start again"),
                    e.getMessage());
            assertEquals(Databases.CHAIN_SCRIPTS, Databases.versionsApplied(ds), "the history is left as it was");

            Databases.execute(ds, "DROP SCHEMA layover CASCADE");
            assertEquals(1, LayoverMigrations.migrate(ds));
            assertEquals(0, LayoverMigrations.migrate(ds));
        }
    }

    @Test
    void aVersionOneThatIsNotTheBaselineIsToldTheSame() {
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            DataSource ds = Databases.plain(db);
            assertEquals(1, Databases.migrateChain(db, "1"));

            IllegalStateException e = assertThrows(IllegalStateException.class, () -> LayoverMigrations.migrate(ds));
            assertTrue(e.getMessage().contains("pre-release chain"), e.getMessage());
            assertTrue(e.getMessage().contains("version 1 with another checksum"), e.getMessage());
            assertTrue(e.getMessage().contains("DROP SCHEMA layover CASCADE"), e.getMessage());
        }
    }
}
