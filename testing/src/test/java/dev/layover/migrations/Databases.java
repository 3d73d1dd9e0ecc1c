package dev.layover.migrations;

import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/** Plain data sources on test databases, and the pre-release migration chain kept as a test resource. */
final class Databases {

    /**
     * The chain of scripts V1 to V31 (no V9, V11, V12) that built schema layover before the
     * baseline replaced it, as it was when it was replaced.
     */
    static final String CHAIN = "classpath:db/chain-v1-v31";

    /** How many scripts the chain has. */
    static final int CHAIN_SCRIPTS = 28;

    /**
     * What the baseline changed since the chain, one script per change, in order (resources under
     * {@code db/since-chain/}): the chain plus these is the baseline.
     */
    static final java.util.List<String> SINCE_CHAIN = java.util.List.of("the-pick-is-the-admission", "workers",
            "observability", "interactive", "many-keys", "breaker-streak", "schedules", "steps", "groups",
            "dependencies", "signals", "callback-due-at-creation");

    private Databases() {}

    /** @return an unpooled data source on the database: every connection is a new one */
    static DataSource plain(TestDatabase db) {
        return db.server().simpleDataSource(db.name());
    }

    /**
     * Migrates the database with the pre-release chain, configured as {@link LayoverMigrations}
     * configures Flyway.
     *
     * @param target the last version to apply, or null for all
     * @return the scripts applied
     */
    static int migrateChain(TestDatabase db, String target) {
        var config = Flyway.configure()
                .dataSource(plain(db))
                .locations(CHAIN)
                .schemas(LayoverMigrations.SCHEMA)
                .defaultSchema(LayoverMigrations.SCHEMA)
                .createSchemas(true)
                .table("flyway_schema_history")
                .failOnMissingLocations(true)
                .loggers("slf4j");
        if (target != null) {
            config.target(target);
        }
        return config.load().migrate().migrationsExecuted;
    }

    /** Runs statements with no parameters on a connection of its own. */
    static void execute(DataSource ds, String sql) {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(e.getMessage() + " in: " + sql, e);
        }
    }

    /** @return how many versioned scripts the database's history records as applied */
    static int versionsApplied(DataSource ds) {
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(
                        "SELECT count(*) FROM layover.flyway_schema_history WHERE version IS NOT NULL AND success")) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** Applies the changes since the chain ({@link #SINCE_CHAIN}), each in one transaction. */
    static void applySinceChain(TestDatabase db) {
        for (String change : SINCE_CHAIN) {
            String sql;
            try (java.io.InputStream in = Databases.class.getResourceAsStream("/db/since-chain/" + change + ".sql")) {
                sql = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            } catch (java.io.IOException | NullPointerException e) {
                throw new IllegalStateException("missing db/since-chain/" + change + ".sql", e);
            }
            try (java.sql.Connection c = plain(db).getConnection(); java.sql.Statement st = c.createStatement()) {
                c.setAutoCommit(false);
                st.execute("SET search_path TO " + LayoverMigrations.SCHEMA);
                st.execute(sql);
                c.commit();
            } catch (java.sql.SQLException e) {
                throw new IllegalStateException(change + ": " + e.getMessage(), e);
            }
        }
    }
}
