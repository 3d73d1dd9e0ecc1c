package dev.layover.testing;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A PgBouncer of its own in front of a Postgres server, for tests of Layover behind a pooler: a
 * {@code pgbouncer} process on a free port of 127.0.0.1 with a generated configuration, stopped and
 * deleted on {@link #close()}.
 *
 * <pre>{@code
 * Assumptions.assumeTrue(PgBouncer.unavailable().isEmpty(), () -> PgBouncer.unavailable().get());
 * try (PgBouncer bouncer = PgBouncer.in(PgBouncer.PoolMode.TRANSACTION)
 *         .server(db.server().host(), db.server().port(), "postgres", null).start()) {
 *     String url = bouncer.jdbcUrl(db.name()) + "&prepareThreshold=0";
 *     ...
 * }
 * }</pre>
 *
 * <p>The configuration: every database name ({@code * = host=.. port=..}) forwarded to the server;
 * {@code auth_type = trust} towards clients, with a user list holding the one user (and its
 * password, for PgBouncer's own login to the server); the pool mode; {@code default_pool_size}
 * server connections per database and user (default 20); {@code max_client_conn} 1000;
 * {@code ignore_startup_parameters = extra_float_digits} (pgjdbc sends it); no Unix socket; the log
 * in the scratch directory, copied to {@code target/server-logs/} on close. {@link Builder#setting}
 * adds any other {@code [pgbouncer]} setting. When this JVM runs as root, PgBouncer (which refuses
 * root) runs as the {@code postgres} OS user.
 *
 * <p>The binary: the system property {@code layover.test.pgbouncer}, else {@code /usr/sbin/pgbouncer},
 * else {@code pgbouncer} on the {@code PATH}. {@link #unavailable()} says why it cannot be used.
 */
public final class PgBouncer implements AutoCloseable {

    /** PgBouncer's {@code pool_mode}. */
    public enum PoolMode {
        /** A server connection per client connection, for as long as the client holds it. */
        SESSION,
        /** A server connection per transaction (or per autocommitted statement). */
        TRANSACTION,
        /** A server connection per statement; multi-statement transactions are refused. */
        STATEMENT
    }

    private final Process process;
    private final Path dir;
    private final int port;
    private final String user;
    private final String version;
    private volatile boolean closed;

    private PgBouncer(Process process, Path dir, int port, String user, String version) {
        this.process = process;
        this.dir = dir;
        this.port = port;
        this.user = user;
        this.version = version;
    }

    /**
     * Why PgBouncer cannot be started here, if it cannot.
     *
     * @return the reason, or empty
     */
    public static Optional<String> unavailable() {
        if (binary().isEmpty()) {
            return Optional.of("no pgbouncer binary: install it (Debian: apt-get install pgbouncer) or point "
                    + "-Dlayover.test.pgbouncer at it");
        }
        return ServerProcesses.serviceUserMissing();
    }

    private static Optional<Path> binary() {
        String named = System.getProperty("layover.test.pgbouncer");
        if (named != null && !named.isBlank()) {
            Path p = Paths.get(named);
            return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
        }
        Path debian = Paths.get("/usr/sbin/pgbouncer");
        if (Files.isExecutable(debian)) {
            return Optional.of(debian);
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(java.io.File.pathSeparator)) {
                Path p = Paths.get(d, "pgbouncer");
                if (Files.isExecutable(p)) {
                    return Optional.of(p);
                }
            }
        }
        return Optional.empty();
    }

    /**
     * @return the first line of {@code pgbouncer --version}, e.g. {@code PgBouncer 1.18.0}
     * @throws IllegalStateException when it is {@link #unavailable()}
     */
    public static String installedVersion() {
        Path bin = binary().orElseThrow(() -> new IllegalStateException(unavailable().orElse("no pgbouncer")));
        return ServerProcesses.run(List.of(bin.toString(), "--version"), Duration.ofSeconds(30))
                .lines().findFirst().orElse("PgBouncer (unknown version)").trim();
    }

    /**
     * @param major a major version
     * @param minor a minor version
     * @return whether the installed PgBouncer is that version or newer
     */
    public static boolean installedAtLeast(int major, int minor) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)\\.(\\d+)").matcher(installedVersion());
        if (!m.find()) {
            return false;
        }
        int ma = Integer.parseInt(m.group(1));
        int mi = Integer.parseInt(m.group(2));
        return ma > major || (ma == major && mi >= minor);
    }

    /**
     * Starts configuring a PgBouncer.
     *
     * @param mode its pool mode
     * @return a builder
     */
    public static Builder in(PoolMode mode) {
        return new Builder(Objects.requireNonNull(mode, "mode"));
    }

    /** Configures a {@link PgBouncer}; {@link #server} is required. */
    public static final class Builder {
        private final PoolMode mode;
        private String host;
        private int serverPort;
        private String user;
        private String password;
        private int poolSize = 20;
        private final Map<String, String> settings = new LinkedHashMap<>();

        private Builder(PoolMode mode) {
            this.mode = mode;
        }

        /**
         * The Postgres server behind it, and the one user clients connect as.
         *
         * @param host its host
         * @param port its port
         * @param user the user
         * @param password the user's password, or null when the server trusts it
         * @return this builder
         */
        public Builder server(String host, int port, String user, String password) {
            this.host = Objects.requireNonNull(host, "host");
            this.serverPort = port;
            this.user = Objects.requireNonNull(user, "user");
            this.password = password;
            return this;
        }

        /**
         * @param serverConnections {@code default_pool_size}: server connections per database and user; default 20
         * @return this builder
         */
        public Builder poolSize(int serverConnections) {
            if (serverConnections < 1) {
                throw new IllegalArgumentException("pool size must be at least 1, was " + serverConnections);
            }
            this.poolSize = serverConnections;
            return this;
        }

        /**
         * Any further {@code [pgbouncer]} setting, e.g. {@code max_prepared_statements} on 1.21 or newer.
         *
         * @param key the setting
         * @param value its value
         * @return this builder
         */
        public Builder setting(String key, String value) {
            if (!key.matches("[a-z_]+") || value.contains("\n")) {
                throw new IllegalArgumentException("not a PgBouncer setting: " + key + " = " + value);
            }
            settings.put(key, value);
            return this;
        }

        /**
         * Writes the configuration and starts PgBouncer; returns once it accepts connections.
         *
         * @return the running PgBouncer; close it
         * @throws IllegalStateException when it is {@link #unavailable()} or does not come up (with its log)
         */
        public PgBouncer start() {
            if (host == null) {
                throw new IllegalStateException("server(..) is required");
            }
            unavailable().ifPresent(reason -> {
                throw new IllegalStateException(reason);
            });
            Path bin = binary().orElseThrow();
            String version = installedVersion();
            Path dir = null;
            try {
                dir = ServerProcesses.scratchDirectory("layover-pgbouncer");
                int port = ServerProcesses.freePort();
                Path users = dir.resolve("userlist.txt");
                Files.writeString(users, quote(user) + " " + quote(password == null ? "" : password) + "\n",
                        StandardCharsets.UTF_8);
                Path ini = dir.resolve("pgbouncer.ini");
                StringBuilder cfg = new StringBuilder()
                        .append("[databases]\n")
                        .append("* = host=").append(host).append(" port=").append(serverPort).append('\n')
                        .append("[pgbouncer]\n")
                        .append("listen_addr = 127.0.0.1\n")
                        .append("listen_port = ").append(port).append('\n')
                        .append("unix_socket_dir =\n")
                        .append("auth_type = trust\n")
                        .append("auth_file = ").append(users).append('\n')
                        .append("pool_mode = ").append(mode.name().toLowerCase(Locale.ROOT)).append('\n')
                        .append("default_pool_size = ").append(poolSize).append('\n')
                        .append("max_client_conn = 1000\n")
                        .append("ignore_startup_parameters = extra_float_digits\n")
                        .append("logfile = ").append(dir.resolve("pgbouncer.log")).append('\n')
                        .append("pidfile = ").append(dir.resolve("pgbouncer.pid")).append('\n');
                settings.forEach((k, v) -> cfg.append(k).append(" = ").append(v).append('\n'));
                Files.writeString(ini, cfg, StandardCharsets.UTF_8);
                ServerProcesses.giveToServiceUser(users);
                ServerProcesses.giveToServiceUser(ini);
                List<String> cmd = ServerProcesses.asServiceUser(new ArrayList<>(List.of(bin.toString(), ini.toString())));
                Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                        .redirectOutput(dir.resolve("pgbouncer.out").toFile())
                        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
                PgBouncer bouncer = new PgBouncer(p, dir, port, user, version);
                try {
                    bouncer.awaitListening();
                } catch (RuntimeException e) {
                    bouncer.close();
                    throw e;
                }
                return bouncer;
            } catch (IOException e) {
                ServerProcesses.deleteTree(dir);
                throw new IllegalStateException("cannot start PgBouncer: " + e.getMessage(), e);
            }
        }

        private static String quote(String s) {
            return '"' + s.replace("\"", "\"\"") + '"';
        }
    }

    private void awaitListening() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            if (!process.isAlive()) {
                throw new IllegalStateException("PgBouncer exited (" + process.exitValue() + "):\n" + log());
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("PgBouncer did not listen on " + port + " within 30 s:\n" + log());
                }
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
    }

    /** @return the port it listens on (127.0.0.1) */
    public int port() {
        return port;
    }

    /** @return the first line of {@code pgbouncer --version}, e.g. {@code PgBouncer 1.18.0} */
    public String version() {
        return version;
    }

    /**
     * @param database a database on the server behind it
     * @return {@code jdbc:postgresql://127.0.0.1:<port>/<database>?user=<user>}; append parameters with {@code &}
     */
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?user=" + user;
    }

    /** @return PgBouncer's log so far (connections, warnings such as packets dropped from idle servers) */
    public String log() {
        StringBuilder b = new StringBuilder();
        for (String f : new String[] {"pgbouncer.out", "pgbouncer.log"}) {
            try {
                b.append(Files.readString(dir.resolve(f), StandardCharsets.UTF_8));
            } catch (IOException e) {
                // not written yet
            }
        }
        return b.toString();
    }

    /** Stops PgBouncer (SIGTERM, then SIGKILL after 10 s) and deletes its directory. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        // pgbouncer itself, not runuser around it: runuser waits 2 s after a signal of its own
        List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
        if (all.isEmpty()) {
            all.add(process.toHandle());
        }
        all.forEach(ProcessHandle::destroy);
        all.add(process.toHandle());
        for (ProcessHandle h : all) {
            try {
                h.onExit().get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                h.destroyForcibly();
            }
        }
        ServerProcesses.keepLog(dir.resolve("pgbouncer.log"), "pgbouncer");
        ServerProcesses.deleteTree(dir);
    }
}
