package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import javax.sql.DataSource;

/**
 * The benchmark database: a scratch database created on the server of {@code --jdbc-url} or
 * {@code LAYOVER_JDBC_URL} and dropped afterwards (so a benchmark never writes into a database in
 * use), else an embedded Postgres.
 */
final class BenchDatabase implements AutoCloseable {

    private final EmbeddedPostgres embedded;
    private final HikariDataSource pool;
    private final String adminUrl;
    private final String scratch;
    private final String url;
    final String description;

    private BenchDatabase(EmbeddedPostgres embedded, HikariDataSource pool, String adminUrl, String scratch,
            String description) {
        this.url = pool.getJdbcUrl();
        this.embedded = embedded;
        this.pool = pool;
        this.adminUrl = adminUrl;
        this.scratch = scratch;
        this.description = description;
    }

    static BenchDatabase open(String[] args, int poolSize) throws Exception {
        return open(args, poolSize, "");
    }

    /**
     * A scratch database of its own beside the runner's (a section that needs a fresh database per arm).
     *
     * @param suffix appended to the scratch database's name, so it never meets the runner's own
     */
    static BenchDatabase open(String[] args, int poolSize, String suffix) throws Exception {
        String url = System.getenv("LAYOVER_JDBC_URL");
        for (int i = 0; i < args.length - 1; i++) {
            if (args[i].equals("--jdbc-url")) {
                url = args[i + 1];
            }
        }
        EmbeddedPostgres pg = null;
        String description;
        String adminUrl = null;
        String scratch = null;
        if (url == null || url.isBlank()) {
            pg = EmbeddedPostgres.builder().start();
            url = pg.getJdbcUrl("postgres", "postgres");
            description = "embedded Postgres (zonky) " + version(url);
        } else {
            adminUrl = url;
            scratch = "layover_bench_" + ProcessHandle.current().pid() + suffix;
            admin(adminUrl, "DROP DATABASE IF EXISTS " + scratch);
            admin(adminUrl, "CREATE DATABASE " + scratch);
            url = url.replaceFirst("(jdbc:postgresql://[^/?]+)/[^?]*", "$1/" + scratch);
            description = "scratch database " + scratch + " on " + adminUrl.replaceAll("password=[^&]*", "password=***")
                    + " " + version(url);
        }
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setMaximumPoolSize(poolSize);
        cfg.setPoolName("bench");
        return new BenchDatabase(pg, new HikariDataSource(cfg), adminUrl, scratch, description);
    }

    private static void admin(String url, String sql) throws Exception {
        try (var c = java.sql.DriverManager.getConnection(url); var st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private static String version(String url) throws Exception {
        try (var c = java.sql.DriverManager.getConnection(url); var st = c.createStatement();
                var rs = st.executeQuery("select current_setting('server_version'), current_setting('autovacuum'),"
                        + " current_setting('synchronous_commit')")) {
            rs.next();
            // a server's vacuum and commit settings change what a long run measures: they are printed with it
            return "(PostgreSQL " + rs.getString(1) + ", autovacuum " + rs.getString(2) + ", synchronous_commit "
                    + rs.getString(3) + ")";
        }
    }

    /** @return the first column of the first row of {@code sql}, as a long */
    static long count(DataSource ds, String sql) throws Exception {
        try (var c = ds.getConnection(); var st = c.createStatement(); var rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Runs {@code sql} (autocommit). */
    static void exec(DataSource ds, String sql) throws Exception {
        try (var c = ds.getConnection(); var st = c.createStatement()) {
            st.execute(sql);
        }
    }

    String jdbcUrl() {
        return url;
    }

    DataSource dataSource() {
        return pool;
    }

    @Override
    public void close() throws Exception {
        pool.close();
        if (scratch != null) {
            admin(adminUrl, "DROP DATABASE IF EXISTS " + scratch + " WITH (FORCE)");
        }
        if (embedded != null) {
            embedded.close();
        }
    }
}
