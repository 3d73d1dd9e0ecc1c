package dev.layover.migrations;

import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationVersion;
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
 *
 * <p>Until the first release the schema is one baseline script, {@code V1__baseline.sql}. A
 * database migrated by the pre-release chain of scripts it replaced (versions 1 to 31) is refused
 * with a message saying so: there is no upgrade path from it; drop schema {@value #SCHEMA} and
 * migrate again.
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

    /** The version of the baseline script, the only one before the first release. */
    private static final MigrationVersion BASELINE = MigrationVersion.fromVersion("1");

    private LayoverMigrations() {}

    /**
     * Applies every pending migration.
     *
     * @param dataSource a data source for the target database; its user needs CREATE on the
     *     database (for the schema) the first time
     * @return how many migrations this call applied (0 when already up to date)
     * @throws IllegalStateException when the database cannot be reached, a script fails, or the
     *     schema was made by the pre-release chain of scripts; the message names the cause
     */
    public static int migrate(DataSource dataSource) {
        try {
            Flyway flyway = flyway(dataSource);
            refusePreReleaseChain(flyway);
            MigrateResult result = flyway.migrate();
            return result.migrationsExecuted;
        } catch (PreReleaseChain e) {
            throw e;
        } catch (RuntimeException e) {
            throw new IllegalStateException("Layover migration failed: " + rootMessage(e), e);
        }
    }

    /**
     * Fails when the history table records the pre-release chain: a version after the baseline,
     * or a version 1 that is not the baseline script (another checksum). Flyway would otherwise
     * report a checksum mismatch, which reads as a corrupt history rather than as what it is.
     */
    private static void refusePreReleaseChain(Flyway flyway) {
        for (MigrationInfo m : flyway.info().applied()) {
            MigrationVersion v = m.getVersion();
            if (v == null) {
                continue;
            }
            if (v.isNewerThan(BASELINE) || (v.equals(BASELINE) && !m.isChecksumMatching())) {
                throw new PreReleaseChain("Layover migration failed: this database was migrated by a pre-release chain "
                        + "of Layover's migrations (" + SCHEMA + ".flyway_schema_history records version " + v
                        + (v.equals(BASELINE) ? " with another checksum than " + LOCATION + "/V1__baseline.sql" : "")
                        + "); drop schema " + SCHEMA + " (DROP SCHEMA " + SCHEMA + " CASCADE) and start again: "
                        + "before the first release there is no upgrade path, the schema is one baseline script");
            }
        }
    }

    /** The database holds a schema of the pre-release migration chain. */
    private static final class PreReleaseChain extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        PreReleaseChain(String message) {
            super(message);
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
