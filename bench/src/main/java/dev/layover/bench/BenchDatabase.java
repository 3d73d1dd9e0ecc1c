package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import javax.sql.DataSource;

/** The benchmark database: {@code --jdbc-url} or {@code LAYOVER_JDBC_URL}, else an embedded Postgres. */
final class BenchDatabase implements AutoCloseable {

    private final EmbeddedPostgres embedded;
    private final HikariDataSource pool;
    final String description;

    private BenchDatabase(EmbeddedPostgres embedded, HikariDataSource pool, String description) {
        this.embedded = embedded;
        this.pool = pool;
        this.description = description;
    }

    static BenchDatabase open(String[] args, int poolSize) throws Exception {
        String url = System.getenv("LAYOVER_JDBC_URL");
        for (int i = 0; i < args.length - 1; i++) {
            if (args[i].equals("--jdbc-url")) {
                url = args[i + 1];
            }
        }
        EmbeddedPostgres pg = null;
        String description;
        if (url == null || url.isBlank()) {
            pg = EmbeddedPostgres.builder().start();
            url = pg.getJdbcUrl("postgres", "postgres");
            description = "embedded Postgres (zonky)";
        } else {
            description = url.replaceAll("password=[^&]*", "password=***");
        }
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setMaximumPoolSize(poolSize);
        cfg.setPoolName("bench");
        return new BenchDatabase(pg, new HikariDataSource(cfg), description);
    }

    DataSource dataSource() {
        return pool;
    }

    @Override
    public void close() throws Exception {
        pool.close();
        if (embedded != null) {
            embedded.close();
        }
    }
}
