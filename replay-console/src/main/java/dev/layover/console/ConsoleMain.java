package dev.layover.console;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.migrations.LayoverMigrations;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

/**
 * The standalone replay console.
 *
 * <pre>
 * java -jar layover-replay-console-&lt;version&gt;-standalone.jar --jdbc-url URL [--port 7070]
 *      [--bind 127.0.0.1] [--token T] [--read-only] [--migrate] [--public-url URL]
 *      [--version] [--help]
 * </pre>
 *
 * <table>
 *   <caption>Options</caption>
 *   <tr><th>option</th><th>environment</th><th>default</th></tr>
 *   <tr><td>{@code --jdbc-url URL}</td><td>{@code LAYOVER_JDBC_URL}</td><td>required; a
 *       {@code jdbc:postgresql:} URL</td></tr>
 *   <tr><td></td><td>{@code LAYOVER_JDBC_USER}, {@code LAYOVER_JDBC_PASSWORD}</td><td>from the
 *       URL (keep passwords out of command lines: other users can read them)</td></tr>
 *   <tr><td>{@code --port N}</td><td></td><td>7070 (0: any free port)</td></tr>
 *   <tr><td>{@code --bind ADDR}</td><td></td><td>127.0.0.1</td></tr>
 *   <tr><td>{@code --token T}</td><td>{@code LAYOVER_CONSOLE_TOKEN}</td><td>generated, and printed
 *       once at start</td></tr>
 *   <tr><td>{@code --read-only}</td><td></td><td>off</td></tr>
 *   <tr><td>{@code --migrate}</td><td></td><td>off: the schema must already be up to date</td></tr>
 *   <tr><td>{@code --public-url URL}</td><td></td><td>none (see
 *       {@link ConsoleOptions#withPublicUrl(String)})</td></tr>
 * </table>
 *
 * <p>Without job types, the standalone console replays stored args and refuses edited ones (it
 * cannot validate them); embed the console in the application for that. A missing or unreachable
 * database, or a schema that is not up to date, is one line on stderr and exit code 2.
 */
public final class ConsoleMain {

    /** Exit code of a start that failed (bad option, database missing or unreachable, port taken). */
    public static final int EXIT_FAILED = 2;

    private static final String USAGE = """
            usage: java -jar layover-replay-console-<version>-standalone.jar --jdbc-url URL [options]
              --jdbc-url URL     the Layover database (or LAYOVER_JDBC_URL); user and password in the URL,
                                 or LAYOVER_JDBC_USER / LAYOVER_JDBC_PASSWORD
              --port N           port to listen on (default 7070; 0 = any free port)
              --bind ADDR        address to listen on (default 127.0.0.1: this machine only)
              --token T          access token, at least 16 characters (or LAYOVER_CONSOLE_TOKEN);
                                 default: generated and printed once
              --read-only        refuse every change (replay, discard, breakers, reveal)
              --migrate          create or update the Layover schema first (default: require it up to date)
              --public-url URL   the URL browsers use, when behind a reverse proxy
              --version          print the console's version
              --help             this text""";

    private ConsoleMain() {}

    /**
     * Runs the console until the JVM is stopped.
     *
     * @param args the options above
     */
    public static void main(String[] args) {
        quietLogging();
        Launch launch = launch(args, System.getenv(), System.out, System.err);
        if (launch.console() == null) {
            System.exit(launch.exitCode());
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            launch.close();
            stopped.countDown();
        }, "layover-console-shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The outcome of a start.
     *
     * @param exitCode 0, or {@link #EXIT_FAILED}
     * @param console the running console, or {@code null} when it did not start (or for
     *     {@code --help})
     * @param pool the connection pool, or {@code null}
     */
    record Launch(int exitCode, ReplayConsole console, HikariDataSource pool) implements AutoCloseable {
        @Override
        public void close() {
            if (console != null) {
                console.close();
            }
            if (pool != null) {
                pool.close();
            }
        }
    }

    /** Parses, connects, checks the schema and starts; reports on {@code out} and {@code err}. */
    static Launch launch(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        String jdbcUrl = env.get("LAYOVER_JDBC_URL");
        String token = env.get("LAYOVER_CONSOLE_TOKEN");
        String user = env.get("LAYOVER_JDBC_USER");
        String password = env.get("LAYOVER_JDBC_PASSWORD");
        ConsoleOptions options = ConsoleOptions.defaults().withPort(7070);
        boolean migrate = false;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String value = null;
                int eq = a.indexOf('=');
                if (a.startsWith("--") && eq > 0) {
                    value = a.substring(eq + 1);
                    a = a.substring(0, eq);
                }
                switch (a) {
                    case "--help", "-h" -> {
                        out.println(USAGE);
                        return new Launch(0, null, null);
                    }
                    case "--version" -> {
                        out.println("layover-replay-console " + version());
                        return new Launch(0, null, null);
                    }
                    case "--read-only" -> options = options.withReadOnly(true);
                    case "--migrate" -> migrate = true;
                    case "--jdbc-url", "--port", "--bind", "--token", "--public-url" -> {
                        if (value == null) {
                            if (i + 1 >= args.length) {
                                return fail(err, a + " needs a value (see --help)");
                            }
                            value = args[++i];
                        }
                        switch (a) {
                            case "--jdbc-url" -> jdbcUrl = value;
                            case "--port" -> options = options.withPort(port(value));
                            case "--bind" -> options = options.withBind(value);
                            case "--token" -> token = value;
                            default -> options = options.withPublicUrl(value);
                        }
                    }
                    default -> {
                        return fail(err, "unknown option '" + a + "' (see --help)");
                    }
                }
            }
            if (token != null && !token.isEmpty()) {
                options = options.withToken(token);
            }
        } catch (IllegalArgumentException e) {
            return fail(err, e.getMessage());
        }
        if (jdbcUrl == null || jdbcUrl.isBlank()) {
            return fail(err, "no database: pass --jdbc-url jdbc:postgresql://host:5432/db or set LAYOVER_JDBC_URL");
        }
        if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
            return fail(err, "the database URL must be a jdbc:postgresql: URL, was " + redact(jdbcUrl));
        }

        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null) {
            props.setProperty("password", password);
        }
        DriverManager.setLoginTimeout(10);
        try (Connection c = DriverManager.getConnection(jdbcUrl, props)) {
            c.isValid(5);
        } catch (SQLException e) {
            return fail(err, "cannot connect to the database at " + redact(jdbcUrl) + ": " + firstLine(e.getMessage()));
        }

        HikariDataSource pool;
        try {
            HikariConfig cfg = new HikariConfig();
            cfg.setJdbcUrl(jdbcUrl);
            if (user != null) {
                cfg.setUsername(user);
            }
            if (password != null) {
                cfg.setPassword(password);
            }
            cfg.setPoolName("layover-console");
            cfg.setMaximumPoolSize(options.threads() + 2);
            cfg.setMinimumIdle(1);
            cfg.setConnectionTimeout(10_000);
            pool = new HikariDataSource(cfg);
        } catch (RuntimeException e) {
            return fail(err, "cannot connect to the database at " + redact(jdbcUrl) + ": " + firstLine(rootMessage(e)));
        }

        try {
            if (migrate) {
                int n = LayoverMigrations.migrate(pool);
                out.println("layover-console: schema " + (n == 0 ? "already up to date" : "migrated (" + n
                        + " migration" + (n == 1 ? "" : "s") + " applied)"));
            } else if (!LayoverMigrations.isUpToDate(pool)) {
                pool.close();
                return fail(err, "the database at " + redact(jdbcUrl) + " has no Layover schema, or an older one: "
                        + "run with --migrate, or migrate it from the application");
            }
        } catch (RuntimeException e) {
            pool.close();
            return fail(err, "cannot read the Layover schema at " + redact(jdbcUrl) + ": " + firstLine(rootMessage(e)));
        }

        ReplayConsole console;
        try {
            console = ReplayConsole.start(pool, options);
        } catch (UncheckedIOException | IllegalArgumentException | IllegalStateException e) {
            pool.close();
            return fail(err, firstLine(e.getMessage()));
        } catch (RuntimeException e) {
            pool.close();
            return fail(err, "cannot start: " + firstLine(rootMessage(e)));
        }
        out.println("layover-console: listening on " + console.url() + (options.readOnly() ? " (read-only)" : "")
                + " — without the application's job types: replays run stored args, edited args are refused");
        if (options.token() == null) {
            out.println("layover-console: access token (shown once, keep it secret): " + console.token());
            out.println("layover-console: open " + console.loginUrl());
        } else {
            out.println("layover-console: open " + console.url() + "?token=<your token>");
        }
        return new Launch(0, console, pool);
    }

    /** @return the artifact's version, from the resource the build filters, or {@code unknown} */
    static String version() {
        try (java.io.InputStream in = ConsoleMain.class.getResourceAsStream("/dev/layover/console/version.properties")) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            String v = p.getProperty("version", "unknown");
            return v.startsWith("${") ? "unknown" : v;
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    private static int port(String v) {
        try {
            return Integer.parseInt(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--port must be a number 0-65535, was '" + v + "'");
        }
    }

    private static Launch fail(PrintStream err, String message) {
        err.println("layover-console: " + message);
        return new Launch(EXIT_FAILED, null, null);
    }

    /** The URL with any password parameter hidden. */
    static String redact(String url) {
        return url.replaceAll("(?i)(password=)[^&]*", "$1***").replaceAll("(//[^/:@]+:)[^@/]+@", "$1***@");
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "unknown error";
        }
        String t = s.strip();
        int nl = t.indexOf('\n');
        return nl < 0 ? t : t.substring(0, nl).strip();
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    }

    private static void quietLogging() {
        setIfAbsent("org.slf4j.simpleLogger.defaultLogLevel", "info");
        setIfAbsent("org.slf4j.simpleLogger.log.com.zaxxer.hikari", "warn");
        setIfAbsent("org.slf4j.simpleLogger.log.org.flywaydb", "warn");
        setIfAbsent("org.slf4j.simpleLogger.log.org.eclipse.jetty", "warn");
        setIfAbsent("org.slf4j.simpleLogger.log.dev.layover.console", "warn");
        setIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
        setIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
    }

    private static void setIfAbsent(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }
}
