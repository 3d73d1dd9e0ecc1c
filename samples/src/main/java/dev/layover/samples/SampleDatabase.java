package dev.layover.samples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import javax.sql.DataSource;

/**
 * The database of a sample: the one named by {@code --jdbc-url URL} or {@code LAYOVER_JDBC_URL},
 * else an embedded Postgres started from Maven artifacts (zonky), which needs nothing installed.
 */
public final class SampleDatabase implements AutoCloseable {

    private final EmbeddedPostgres embedded;
    private final HikariDataSource dataSource;
    private final String description;
    private final String jdbcUrl;

    private SampleDatabase(EmbeddedPostgres embedded, HikariDataSource dataSource, String description, String jdbcUrl) {
        this.embedded = embedded;
        this.dataSource = dataSource;
        this.description = description;
        this.jdbcUrl = jdbcUrl;
    }

    /**
     * Opens the database the command line or environment names, or starts an embedded one.
     *
     * @param args the program's arguments ({@code --jdbc-url URL} is read)
     * @param poolSize connections in the pool
     * @return the database
     */
    public static SampleDatabase open(String[] args, int poolSize) {
        String url = System.getenv("LAYOVER_JDBC_URL");
        for (int i = 0; i < args.length - 1; i++) {
            if (args[i].equals("--jdbc-url")) {
                url = args[i + 1];
            }
        }
        if (url != null && !url.isBlank()) {
            String masked = url.replaceAll("password=[^&]*", "password=***");
            return new SampleDatabase(null, pool(url, poolSize), masked, masked);
        }
        try {
            EmbeddedPostgres pg = EmbeddedPostgres.builder().start();
            String embeddedUrl = pg.getJdbcUrl("postgres", "postgres");
            return new SampleDatabase(pg, pool(embeddedUrl, poolSize), "embedded Postgres on port " + pg.getPort(),
                    embeddedUrl);
        } catch (IOException e) {
            throw new IllegalStateException("could not start an embedded Postgres (give --jdbc-url or LAYOVER_JDBC_URL "
                    + "to use a running server): " + e.getMessage(), e);
        }
    }

    /**
     * A pool for a given URL.
     *
     * @param url a JDBC URL
     * @param poolSize connections in the pool
     * @return the pool
     */
    public static HikariDataSource pool(String url, int poolSize) {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setMaximumPoolSize(poolSize);
        cfg.setPoolName("layover-sample");
        return new HikariDataSource(cfg);
    }

    /** @return the pool */
    public DataSource dataSource() {
        return dataSource;
    }

    /** @return the database's JDBC URL, passwords masked */
    public String jdbcUrl() {
        return jdbcUrl;
    }

    /** @return where the database is, for a log line (passwords masked) */
    public String description() {
        return description;
    }

    @Override
    public void close() {
        dataSource.close();
        if (embedded != null) {
            try {
                embedded.close();
            } catch (IOException e) {
                System.err.println("could not stop the embedded Postgres: " + e.getMessage());
            }
        }
    }
}
