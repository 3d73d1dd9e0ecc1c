package dev.layover.migrations;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** Migrating again, or from several connections at once, is harmless. */
@DatabaseTest
class MigrationRunsTest {

    @Test
    void migratingTwiceAppliesNothingTheSecondTimeAndChangesNothing() {
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            DataSource ds = Databases.plain(db);
            assertEquals(1, LayoverMigrations.migrate(ds));
            SchemaDescription first = SchemaDescription.of(ds);

            assertEquals(0, LayoverMigrations.migrate(ds));
            assertTrue(LayoverMigrations.isUpToDate(ds));
            assertEquals("", first.diff("after one run", SchemaDescription.of(ds), "after two"));
            assertEquals(1, Databases.versionsApplied(ds), "one script recorded");
        }
    }

    @Test
    void fourMigrationsAtOnceOfAFreshDatabaseAllSucceedAndBuildTheSameSchema() throws Exception {
        try (TestDatabase reference = LayoverPostgresExtension.emptyDatabase();
                TestDatabase db = LayoverPostgresExtension.emptyDatabase()) {
            LayoverMigrations.migrate(Databases.plain(reference));
            SchemaDescription expected = SchemaDescription.of(Databases.plain(reference));

            int n = 4;
            CyclicBarrier start = new CyclicBarrier(n);
            ExecutorService pool = Executors.newFixedThreadPool(n);
            try {
                List<Future<Integer>> runs = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    DataSource own = Databases.plain(db); // each thread its own connections
                    Callable<Integer> run = () -> {
                        start.await(30, TimeUnit.SECONDS);
                        return LayoverMigrations.migrate(own);
                    };
                    runs.add(pool.submit(run));
                }
                int applied = 0;
                for (Future<Integer> run : runs) {
                    try {
                        applied += run.get(120, TimeUnit.SECONDS);
                    } catch (ExecutionException e) {
                        throw new AssertionError("a concurrent migration failed: " + e.getCause(), e.getCause());
                    }
                }
                assertEquals(1, applied, "the script applied once in all");
            } finally {
                pool.shutdownNow();
            }
            DataSource ds = Databases.plain(db);
            assertEquals(1, Databases.versionsApplied(ds));
            assertEquals("", expected.diff("one migration", SchemaDescription.of(ds), "four at once"));
        }
    }
}
