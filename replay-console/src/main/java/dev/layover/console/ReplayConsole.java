package dev.layover.console;

import dev.layover.core.Layover;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Objects;
import javax.sql.DataSource;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replay console: a web console and JSON API over jobs, dead letters, provider state, finished
 * jobs and the audit log, served by its own embedded Jetty ({@link ConsoleServlet} at the root).
 * Embed it in an application:
 *
 * <pre>{@code
 * ReplayConsole console = ReplayConsole.start(layover, ConsoleOptions.defaults().withPort(7070));
 * System.out.println("console: " + console.url() + "?token=" + console.token());
 * ...
 * console.close();
 * }</pre>
 *
 * <p>or run it standalone ({@link ConsoleMain}), or mount {@link ConsoleServlet} in the
 * application's own servlet container. The API is documented in {@code docs/console-api.md}.
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
 * data as text only, under a strict Content-Security-Policy. A client cannot stall it: request
 * headers are parsed without holding a request thread, a connection that takes longer than the
 * header timeout to send them is closed, a request body must arrive within the read timeout, a
 * silent connection is closed after the idle timeout, and at most {@code maxConnections} are open
 * at once (the defaults are in {@link ConsoleOptions}).
 *
 * <p>Hazards: a bulk replay or discard runs on the request's thread until it ends (the dead-letter
 * store commits it in batches; a client that gives up does not stop it). The console reads
 * {@code layover.jobs} with aggregate queries for the overview, which scan the job table, and
 * every page polls every 5 seconds while it is visible: on a very large backlog, keep few pages
 * open.
 */
public final class ReplayConsole implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ReplayConsole.class);

    private final Server server;
    private final ConsoleServlet servlet;
    private final URI url;
    private final int port;
    private final boolean readOnly;
    private volatile boolean closed;

    private ReplayConsole(Server server, ConsoleServlet servlet, URI url, int port, boolean readOnly) {
        this.server = server;
        this.servlet = servlet;
        this.url = url;
        this.port = port;
        this.readOnly = readOnly;
    }

    /**
     * Starts a console on a database, without the application's job types: replays run the
     * stored args; edited args cannot be validated and are refused.
     *
     * @param dataSource the Layover database (already migrated); the console keeps up to
     *     {@code options.threads()} connections busy at once
     * @param options where to listen, the token, read-only, timeouts
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
     * @param options where to listen, the token, read-only, timeouts
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
        InetAddress address;
        try {
            address = InetAddress.getByName(options.bind());
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("cannot resolve the bind address '" + options.bind() + "'", e);
        }
        ConsoleServlet servlet = ConsoleServlet.forEmbeddedServer(dataSource, layover, options,
                address.isLoopbackAddress());
        Server server = server(servlet, address, options);
        try {
            server.start();
        } catch (Exception e) {
            stopQuietly(server);
            servlet.destroy();
            String why = e instanceof IOException && e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
            throw new UncheckedIOException("cannot listen on " + options.bind() + ":" + options.port() + ": " + why,
                    e instanceof IOException io ? io : new IOException(e));
        }
        int port = ((ServerConnector) server.getConnectors()[0]).getLocalPort();
        String host = address.isAnyLocalAddress() ? "127.0.0.1" : address.getHostAddress();
        if (host.contains(":")) {
            host = "[" + host + "]";
        }
        URI url = URI.create("http://" + host + ":" + port + "/");
        LOG.info("Layover replay console listening on {}{}{}", url, options.readOnly() ? " (read-only)" : "",
                servlet.validatesArgs() ? "" : " (without job types: edited args cannot be validated)");
        return new ReplayConsole(server, servlet, url, port, options.readOnly());
    }

    /** Jetty with the console's limits: threads, header, read and idle timeouts, connections. */
    private static Server server(ConsoleServlet servlet, InetAddress address, ConsoleOptions options) {
        // request threads, plus one acceptor and one selector
        QueuedThreadPool threads = new QueuedThreadPool(options.threads() + 2, 2);
        threads.setName("layover-console");
        threads.setDaemon(true);
        threads.setReservedThreads(0);
        Server server = new Server(threads);

        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);
        http.setIdleTimeout(options.idleTimeout().toMillis());
        // provider keys and job ids may hold '/' or '%': the console decodes its path parameters itself
        // and serves no files. (Jetty refuses an encoded NUL in a path whatever this says: JsonErrorHandler.)
        http.setUriCompliance(UriCompliance.DEFAULT.with("console",
                UriCompliance.Violation.AMBIGUOUS_PATH_SEPARATOR, UriCompliance.Violation.AMBIGUOUS_PATH_ENCODING,
                UriCompliance.Violation.SUSPICIOUS_PATH_CHARACTERS));
        ServerConnector connector = new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
        connector.setHost(address.getHostAddress());
        connector.setPort(options.port());
        connector.setIdleTimeout(options.idleTimeout().toMillis());
        connector.setReuseAddress(false);
        SlowRequestGuard guard = new SlowRequestGuard(options.headerTimeout().toMillis(), connector.getScheduler());
        connector.addBean(guard); // a bean that is a Connection.Listener: started, and told of every connection
        server.addConnector(connector);
        server.addBean(new NetworkConnectionLimit(options.maxConnections(), connector));

        ServletContextHandler context = new ServletContextHandler("/");
        context.getServletHandler().setDecodeAmbiguousURIs(true);
        context.addServlet(new ServletHolder("layover-console", servlet), "/*");
        context.setErrorHandler(new JsonErrorHandler());
        server.setErrorHandler(new JsonErrorHandler());
        server.setHandler(context);
        server.setStopTimeout(0);
        return server;
    }

    private static void stopQuietly(Server server) {
        try {
            server.stop();
        } catch (Exception e) {
            LOG.debug("Layover console: stopping Jetty: {}", e.toString());
        }
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
        return servlet.token();
    }

    /**
     * @return the link that opens the console in a browser: {@link #url()} with
     *     {@code ?token=...} (the page drops it from the address bar at once). Same hazard as
     *     {@link #token()}.
     */
    public URI loginUrl() {
        return URI.create(url + "?token=" + servlet.token());
    }

    /** @return the port the console listens on */
    public int port() {
        return port;
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
        stopQuietly(server);
        servlet.destroy();
    }
}
