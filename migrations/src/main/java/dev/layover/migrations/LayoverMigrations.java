package dev.layover.migrations;

import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Creates and upgrades Layover's tables and views in schema {@value #SCHEMA}.
 *
 * <p>Usage: {@code LayoverMigrations.migrate(dataSource)}. {@code Layover.builder(ds).start()}
 * calls it for you unless told not to ({@code .migrate(false)}), for teams that run
 * migrations from their own Flyway or from a deploy step: point that Flyway at
 * {@value #LOCATION} with schema {@value #SCHEMA}.
 *
 * <p>What it does to the database: creates schema {@value #SCHEMA} if missing, and applies the
 * forward-only scripts under {@value #LOCATION} that are not applied yet, recording them in
 * {@code layover.flyway_schema_history}. Running it again, or from many JVMs at once, is safe:
 * Flyway takes a Postgres advisory lock and applies each script once.
 */
public final class LayoverMigrations {

    /** The schema every Layover table and view lives in. */
    public static final String SCHEMA = "layover";

    /**
     * The classpath location of the migration scripts. Not under {@code db/migration}, Flyway's
     * (and Spring Boot's) default location: Flyway scans a location's subfolders too, so an
     * application's own Flyway would apply Layover's scripts to its own schema.
     */
    public static final String LOCATION = "classpath:db/layover";

    private LayoverMigrations() {}

    /**
     * Applies every pending migration.
     *
     * @param dataSource a data source for the target database; its user needs CREATE on the
     *     database (for the schema) the first time
     * @return how many migrations this call applied (0 when already up to date)
     * @throws IllegalStateException when the database cannot be reached or a script fails; the
     *     message names the cause
     */
    public static int migrate(DataSource dataSource) {
        try {
            MigrateResult result = flyway(dataSource).migrate();
            return result.migrationsExecuted;
        } catch (RuntimeException e) {
            throw new IllegalStateException("Layover migration failed: " + rootMessage(e), e);
        }
    }

    /**
     * Tells whether the schema is present and fully migrated, without changing anything.
     *
     * @param dataSource a data source for the target database
     * @return true when no migration is pending
     */
    public static boolean isUpToDate(DataSource dataSource) {
        return flyway(dataSource).info().pending().length == 0;
    }

    private static Flyway flyway(DataSource dataSource) {
        return Flyway.configure()
                .dataSource(dataSource)
                .locations(LOCATION)
                .schemas(SCHEMA)
                .defaultSchema(SCHEMA)
                .createSchemas(true)
                .table("flyway_schema_history")
                .failOnMissingLocations(true)
                .loggers("slf4j")
                .load();
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = t.getMessage();
        return m == null ? t.getClass().getSimpleName() : m.strip();
    }
}
