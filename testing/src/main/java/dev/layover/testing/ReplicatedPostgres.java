package dev.layover.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Two local PostgreSQL clusters, a primary and a streaming standby, made from the installed
 * PostgreSQL binaries, for failover tests: kill the primary ({@link #killPrimary()}, an immediate
 * shutdown), promote the standby ({@link #promoteStandby()}), and watch clients that name both
 * hosts ({@link #jdbcUrl(String)}, pgjdbc's multi-host URL with {@code targetServerType=primary})
 * find the new primary.
 *
 * <pre>{@code
 * Assumptions.assumeTrue(ReplicatedPostgres.unavailable().isEmpty(), () -> ReplicatedPostgres.unavailable().get());
 * try (ReplicatedPostgres pg = ReplicatedPostgres.start(ReplicatedPostgres.Replication.SYNCHRONOUS)) {
 *     pg.createDatabase("app");
 *     String url = pg.jdbcUrl("app");   // jdbc:postgresql://127.0.0.1:p1,127.0.0.1:p2/app?...
 *     ...
 *     pg.killPrimary();
 *     pg.promoteStandby();
 * }
 * }</pre>
 *
 * <p>What it does on the machine: a scratch directory under the system temp directory holding both
 * data directories, their logs and Unix sockets; {@code initdb} (trust authentication, user
 * {@code postgres}, UTF8, C locale) of the primary, started on a free port of 127.0.0.1 with
 * {@code wal_level = replica}; {@code pg_basebackup -R -X stream} of it for the standby, started on
 * another free port; with {@link Replication#SYNCHRONOUS}, then {@code synchronous_standby_names =
 * '*'} on the primary (with the default {@code synchronous_commit = on}: a commit returns once the
 * standby has flushed it), set after the copy so that the standby, once promoted, does not wait for
 * a standby of its own. {@link #start} returns once the standby streams (and, synchronous, is
 * {@code sync}). When this JVM runs as root the binaries run as the {@code postgres} OS user, which
 * owns the directory. {@link #close()} stops both servers (immediate) and deletes the directory; a
 * shutdown hook does the same if the JVM exits first. The servers' logs are copied to
 * {@code target/server-logs/} on close.
 *
 * <p>The binaries: the directory named by the system property {@code layover.test.pgBin} or the
 * environment variable {@code LAYOVER_TEST_PG_BIN}, else the newest {@code /usr/lib/postgresql/<n>/bin}
 * (Debian and Ubuntu's layout). {@link #unavailable()} says why they cannot be used here, for a
 * test to skip with.
 */
public final class ReplicatedPostgres implements AutoCloseable {

    /** How the primary waits for the standby. */
    public enum Replication {
        /** A commit returns once the standby has flushed its WAL: a promoted standby has every committed transaction. */
        SYNCHRONOUS,
        /** A commit returns at once; the standby follows a little behind: a promotion may lose the last commits. */
        ASYNCHRONOUS
    }

    private static final String[] BINARIES = {"initdb", "pg_ctl", "pg_basebackup", "postgres"};
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(120);

    private final Path bin;
    private final Path dir;
    private final Node[] nodes = new Node[2];
    private final Thread shutdownHook;
    private volatile int primary;
    private volatile boolean closed;

    /** One cluster: its data directory, log and port. */
    private record Node(String name, Path data, Path log, int port) {}

    private ReplicatedPostgres(Path bin, Path dir) {
        this.bin = bin;
        this.dir = dir;
        this.shutdownHook = new Thread(this::stopAndDelete, "layover-replicated-pg-stop");
    }

    /**
     * Why the fixture cannot run on this machine, if it cannot: binaries missing, or running as
     * root without a {@code postgres} OS user or {@code runuser}.
     *
     * @return the reason, or empty when {@link #start} can run
     */
    public static Optional<String> unavailable() {
        Optional<Path> bin = binaries();
        if (bin.isEmpty()) {
            return Optional.of("no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup, postgres): install them "
                    + "(Debian: apt-get install postgresql-15) or point -Dlayover.test.pgBin / LAYOVER_TEST_PG_BIN at their directory");
        }
        return ServerProcesses.serviceUserMissing();
    }

    private static Optional<Path> binaries() {
        String named = System.getProperty("layover.test.pgBin", System.getenv("LAYOVER_TEST_PG_BIN"));
        if (named != null && !named.isBlank()) {
            Path p = Paths.get(named);
            return hasAll(p) ? Optional.of(p) : Optional.empty();
        }
        Path debian = Paths.get("/usr/lib/postgresql");
        if (!Files.isDirectory(debian)) {
            return Optional.empty();
        }
        try (Stream<Path> versions = Files.list(debian)) {
            return versions.filter(v -> v.getFileName().toString().matches("\\d+"))
                    .sorted(Comparator.comparingInt((Path v) -> Integer.parseInt(v.getFileName().toString())).reversed())
                    .map(v -> v.resolve("bin")).filter(ReplicatedPostgres::hasAll).findFirst();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static boolean hasAll(Path bin) {
        for (String b : BINARIES) {
            if (!Files.isExecutable(bin.resolve(b))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Creates the primary and its standby and starts both.
     *
     * @param replication synchronous or asynchronous
     * @return the running pair; close it
     * @throws IllegalStateException when the fixture is {@link #unavailable()} or a step fails (with its output)
     */
    public static ReplicatedPostgres start(Replication replication) {
        unavailable().ifPresent(reason -> {
            throw new IllegalStateException(reason);
        });
        Path dir;
        try {
            dir = ServerProcesses.scratchDirectory("layover-replicated-pg");
        } catch (IOException e) {
            throw new IllegalStateException("cannot create a scratch directory: " + e.getMessage(), e);
        }
        ReplicatedPostgres pg = new ReplicatedPostgres(binaries().orElseThrow(), dir);
        Runtime.getRuntime().addShutdownHook(pg.shutdownHook);
        try {
            pg.create(replication);
            return pg;
        } catch (RuntimeException e) {
            pg.close();
            throw e;
        }
    }

    private void create(Replication replication) {
        Node first = new Node("node1", dir.resolve("node1"), dir.resolve("node1.log"), ServerProcesses.freePort());
        cmd("initdb", "-D", first.data().toString(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C");
        appendConfig(first, """
                listen_addresses = '127.0.0.1'
                port = %d
                unix_socket_directories = '%s'
                wal_level = replica
                max_wal_senders = 5
                hot_standby = on
                max_connections = 300
                cluster_name = 'node1'
                """.formatted(first.port(), dir));
        nodes[0] = first;
        primary = 0;
        startNode(first);

        Node second = new Node("node2", dir.resolve("node2"), dir.resolve("node2.log"), ServerProcesses.freePort());
        cmd("pg_basebackup", "-h", "127.0.0.1", "-p", Integer.toString(first.port()), "-U", "postgres",
                "-D", second.data().toString(), "-R", "-X", "stream", "-c", "fast");
        appendConfig(second, """
                port = %d
                cluster_name = 'node2'
                """.formatted(second.port()));
        nodes[1] = second;
        startNode(second);

        if (replication == Replication.SYNCHRONOUS) {
            appendConfig(first, "synchronous_standby_names = '*'\n");
            cmd("pg_ctl", "-D", first.data().toString(), "reload");
        }
        String wanted = replication == Replication.SYNCHRONOUS ? "sync" : "async";
        Await.until(Duration.ofSeconds(60), "the standby streaming (" + wanted + ")", () -> wanted.equals(
                query(first, "postgres", "select sync_state from pg_stat_replication where state = 'streaming'")));
    }

    private void appendConfig(Node node, String lines) {
        try {
            Files.writeString(node.data().resolve("postgresql.conf"), "\n# layover ReplicatedPostgres\n" + lines,
                    StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the configuration of " + node.name() + ": " + e.getMessage(), e);
        }
    }

    private void startNode(Node node) {
        cmd("pg_ctl", "-D", node.data().toString(), "-l", node.log().toString(), "-w", "-t", "60", "start");
    }

    private String cmd(String binary, String... args) {
        List<String> c = new ArrayList<>();
        c.add(bin.resolve(binary).toString());
        c.addAll(List.of(args));
        return ServerProcesses.run(c, COMMAND_TIMEOUT);
    }

    private static String query(Node node, String database, String sql) {
        try (Connection c = DriverManager.getConnection(url(node, database));
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        } catch (SQLException e) {
            return null;
        }
    }

    private static String url(Node node, String database) {
        return "jdbc:postgresql://127.0.0.1:" + node.port() + "/" + database + "?user=postgres";
    }

    /**
     * The URL a client of the pair uses: both hosts, the primary first, {@code targetServerType=primary}
     * (pgjdbc connects to the first host that answers and accepts writes). Append further
     * parameters with {@code &}.
     *
     * @param database a database ({@link #createDatabase})
     * @return {@code jdbc:postgresql://127.0.0.1:<p1>,127.0.0.1:<p2>/<database>?user=postgres&targetServerType=primary}
     */
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:" + nodes[0].port() + ",127.0.0.1:" + nodes[1].port() + "/" + database
                + "?user=postgres&targetServerType=primary";
    }

    /**
     * @param database a database
     * @return a single-host URL of the current primary (the standby once promoted)
     */
    public String primaryJdbcUrl(String database) {
        return url(nodes[primary], database);
    }

    /**
     * @param database a database
     * @return a single-host URL of the standby (read only until promoted)
     */
    public String standbyJdbcUrl(String database) {
        return url(nodes[1], database);
    }

    /**
     * Creates a database on the primary (the standby gets it by replication).
     *
     * @param name a plain identifier
     */
    public void createDatabase(String name) {
        if (!name.matches("[a-z_][a-z0-9_]*")) {
            throw new IllegalArgumentException("a plain lower-case identifier, not: " + name);
        }
        try (Connection c = DriverManager.getConnection(url(nodes[primary], "postgres"));
                Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("CREATE DATABASE " + name + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Kills the primary: {@code pg_ctl stop -m immediate} (every backend gone at once, no checkpoint,
     * as after a crash). Connections to it fail; the standby keeps trying to reach it.
     */
    public void killPrimary() {
        if (primary != 0) {
            throw new IllegalStateException("the original primary is already gone");
        }
        cmd("pg_ctl", "-D", nodes[0].data().toString(), "-m", "immediate", "-w", "stop");
    }

    /**
     * Promotes the standby ({@code pg_ctl promote -w}) and returns once it accepts writes.
     */
    public void promoteStandby() {
        cmd("pg_ctl", "-D", nodes[1].data().toString(), "-w", "-t", "60", "promote");
        primary = 1;
        Await.until(Duration.ofSeconds(60), "the promoted standby accepting writes",
                () -> "f".equals(query(nodes[1], "postgres", "select pg_is_in_recovery()")));
    }

    /** Stops both servers (immediate) and deletes their directory. */
    @Override
    public void close() {
        stopAndDelete();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs (or ran) anyway
        }
    }

    private synchronized void stopAndDelete() {
        if (closed) {
            return;
        }
        closed = true;
        for (Node node : nodes) {
            if (node == null) {
                continue;
            }
            if (Files.exists(node.data().resolve("postmaster.pid"))) {
                try {
                    cmd("pg_ctl", "-D", node.data().toString(), "-m", "immediate", "-w", "stop");
                } catch (RuntimeException e) {
                    System.err.println("ReplicatedPostgres: could not stop " + node.name() + ": " + e.getMessage());
                }
            }
            ServerProcesses.keepLog(node.log(), "replicated-" + node.name());
        }
        ServerProcesses.deleteTree(dir);
    }
}
