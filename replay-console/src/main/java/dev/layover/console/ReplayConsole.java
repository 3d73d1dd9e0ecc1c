package dev.layover.console;

import dev.layover.core.Layover;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Objects;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replay console: a web console and JSON API over jobs, dead letters, provider state and the
 * audit log, served by the JDK's built-in HTTP server. Embed it in an application:
 *
 * <pre>{@code
 * ReplayConsole console = ReplayConsole.start(layover, ConsoleOptions.defaults().withPort(7070));
 * System.out.println("console: " + console.url() + "?token=" + console.token());
 * ...
 * console.close();
 * }</pre>
 *
 * <p>or run it standalone ({@link ConsoleMain}). The API is documented in
 * {@code docs/console-api.md}.
 *
 * <p>Give it the application's {@link Layover} instance when you can
 * ({@link #start(Layover, ConsoleOptions)}): edited args are then validated against the
 * registered job type before a replay, and the console uses the instance's provider state (a
 * breaker forced closed here is heard at once by the instance's listeners, such as the recovery
 * sweep). With only a {@link DataSource} ({@link #start(DataSource, ConsoleOptions)}) the console
 * cannot know the args types: replays run the stored args, and edited args are refused (400) with
 * a message saying why.
 *
 * <p>Security by default (see {@link ConsoleOptions}): it listens on 127.0.0.1; every request
 * needs the access token; state-changing requests also need a token header and a same-origin
 * request, and are refused in read-only mode; sensitive-looking values are masked; pages render
 * data as text only, under a strict Content-Security-Policy.
 *
 * <p>Hazards: a bulk replay or discard runs on the request's thread until it ends (the dead-letter
 * store commits it in batches; a client that gives up does not stop it). The console reads
 * {@code layover.jobs} with aggregate queries for the overview, which scan the job table: on a
 * very large backlog, refresh less often.
 */
public final class ReplayConsole implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ReplayConsole.class);

    private final ConsoleServer server;
    private final ConsoleStore store;
    private final String token;
    private final URI url;
    private final boolean readOnly;
    private volatile boolean closed;

    private ReplayConsole(ConsoleServer server, ConsoleStore store, String token, URI url, boolean readOnly) {
        this.server = server;
        this.store = store;
        this.token = token;
        this.url = url;
        this.readOnly = readOnly;
    }

    /**
     * Starts a console on a database, without the application's job types: replays run the
     * stored args; edited args cannot be validated and are refused.
     *
     * @param dataSource the Layover database (already migrated); the console keeps up to
     *     {@code options.threads()} connections busy at once
     * @param options where to listen, the token, read-only
     * @return the running console
     * @throws IllegalStateException when the database has no Layover schema
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static ReplayConsole start(DataSource dataSource, ConsoleOptions options) {
        return start(Objects.requireNonNull(dataSource, "dataSource"), null, options);
    }

    /**
     * Starts a console over an application's Layover instance (started or not): edited args are
     * validated against its registered job types, and breaker actions go through its provider
     * state.
     *
     * @param layover the application's instance; its data source is used
     * @param options where to listen, the token, read-only
     * @return the running console
     * @throws IllegalStateException when the database has no Layover schema
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static ReplayConsole start(Layover layover, ConsoleOptions options) {
        Objects.requireNonNull(layover, "layover");
        return start(layover.dataSource(), layover, options);
    }

    private static ReplayConsole start(DataSource dataSource, Layover layover, ConsoleOptions options) {
        Objects.requireNonNull(options, "options");
        ConsoleSql sql = new ConsoleSql(dataSource);
        if (!sql.schemaPresent()) {
            throw new IllegalStateException("the database has no Layover schema (layover.dead_letters, "
                    + "layover.audit_log, layover.breakers): migrate it first (LayoverMigrations.migrate, or the "
                    + "standalone console's --migrate)");
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(options.bind());
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("cannot resolve the bind address '" + options.bind() + "'", e);
        }
        String token = options.token() != null ? options.token() : ConsoleSecurity.newToken();
        ConsoleStore store = new ConsoleStore(dataSource, layover, sql);
        ConsoleServer server;
        try {
            server = new ConsoleServer(new InetSocketAddress(address, options.port()), options,
                    port -> new ConsoleSecurity(token, options, address.isLoopbackAddress(), port));
        } catch (IOException e) {
            store.close();
            throw new UncheckedIOException("cannot listen on " + options.bind() + ":" + options.port() + ": "
                    + e.getMessage(), e);
        }
        new ConsoleApi(store, sql, options, server.security()).register(server);
        server.start();
        String host = address.isAnyLocalAddress() ? "127.0.0.1" : address.getHostAddress();
        if (host.contains(":")) {
            host = "[" + host + "]";
        }
        URI url = URI.create("http://" + host + ":" + server.port() + "/");
        LOG.info("Layover replay console listening on {}{}{}", url, options.readOnly() ? " (read-only)" : "",
                store.validatesArgs() ? "" : " (without job types: edited args cannot be validated)");
        return new ReplayConsole(server, store, token, url, options.readOnly());
    }

    /** @return the console's address, e.g. {@code http://127.0.0.1:7070/} */
    public URI url() {
        return url;
    }

    /**
     * @return the access token. Hazard: it is a secret; print it only where operators (and no one
     *     else) read
     */
    public String token() {
        return token;
    }

    /**
     * @return the link that opens the console in a browser: {@link #url()} with
     *     {@code ?token=...} (the page drops it from the address bar at once). Same hazard as
     *     {@link #token()}.
     */
    public URI loginUrl() {
        return URI.create(url + "?token=" + token);
    }

    /** @return the port the console listens on */
    public int port() {
        return server.port();
    }

    /** @return whether the console refuses state-changing requests */
    public boolean readOnly() {
        return readOnly;
    }

    /** Stops listening (requests in flight are cut off) and releases the console's threads. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        server.stop();
        store.close();
    }
}
