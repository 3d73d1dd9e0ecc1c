package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.layover.core.InvalidArgsException;
import dev.layover.core.LayoverException;
import dev.layover.core.UnknownJobTypeException;
import dev.layover.dlq.DeadLetterNotFoundException;
import dev.layover.dlq.ReplayConflictException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP side: the JDK's {@link HttpServer}, one handler that checks the host, authenticates,
 * serves the page shell and its two assets, and routes {@code /api/...} to {@link ConsoleApi}.
 * Errors become JSON ({@code {"error": ..., "status": ..., "field": ...}}).
 */
final class ConsoleServer {

    private static final Logger LOG = LoggerFactory.getLogger(ConsoleServer.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String STATIC = "/dev/layover/console/static/";
    private static final Map<String, String[]> ASSETS = Map.of(
            "/", new String[] {"index.html", "text/html; charset=utf-8"},
            "/static/console.css", new String[] {"console.css", "text/css; charset=utf-8"},
            "/static/console.js", new String[] {"console.js", "text/javascript; charset=utf-8"});

    /** An API endpoint. */
    @FunctionalInterface
    interface Endpoint {
        JsonNode handle(ConsoleRequest r);
    }

    /** A route: method, path pattern (groups are path parameters), whether it changes state. */
    private record Route(String method, Pattern path, boolean stateChanging, String what, Endpoint endpoint) {}

    private final HttpServer server;
    private final ExecutorService executor;
    private final ConsoleSecurity security;
    private final ConsoleOptions options;
    private final List<Route> routes = new ArrayList<>();
    private final Map<String, byte[]> assetCache = new ConcurrentHashMap<>();

    ConsoleServer(InetSocketAddress address, ConsoleOptions options, ConsoleSecurity.Factory securityFactory)
            throws IOException {
        this.options = options;
        this.server = HttpServer.create(address, 64);
        this.security = securityFactory.create(server.getAddress().getPort());
        AtomicInteger n = new AtomicInteger();
        this.executor = new ThreadPoolExecutor(options.threads(), options.threads(), 60, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(1000), r -> {
                    Thread t = new Thread(r, "layover-console-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        server.setExecutor(executor);
        server.createContext("/", this::handle);
    }

    ConsoleSecurity security() {
        return security;
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** Adds a read-only endpoint. */
    void get(String path, Endpoint e) {
        routes.add(new Route("GET", Pattern.compile(path), false, null, e));
    }

    /** Adds a state-changing endpoint; {@code what} names it in refusals. */
    void post(String path, String what, Endpoint e) {
        routes.add(new Route("POST", Pattern.compile(path), true, what, e));
    }

    void start() {
        server.start();
    }

    void stop() {
        server.stop(0);
        executor.shutdownNow();
    }

    // ---------------------------------------------------------------- request handling

    private void handle(HttpExchange ex) {
        try {
            ConsoleSecurity.securityHeaders(ex.getResponseHeaders());
            try {
                security.checkHost(ex);
                route(ex);
            } catch (ApiException e) {
                error(ex, e.status(), e.getMessage(), e.field());
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("Layover console: request {} {} ended: {}", ex.getRequestMethod(), ex.getRequestURI().getPath(),
                    e.toString());
        } finally {
            ex.close();
        }
    }

    private void route(HttpExchange ex) throws IOException {
        String method = ex.getRequestMethod().toUpperCase(Locale.ROOT);
        String path = ex.getRequestURI().getRawPath();
        Map<String, List<String>> query = ConsoleRequest.parseQuery(ex.getRequestURI().getRawQuery());

        if (path.equals("/") && method.equals("GET") && query.containsKey("token")) {
            login(ex, query.get("token").get(0));
            return;
        }
        ConsoleSecurity.Auth auth = security.authenticate(ex);
        if (!path.startsWith("/api/")) {
            String[] asset = ASSETS.get(path);
            if (auth == null) {
                if (path.equals("/")) {
                    page(ex, 401, "<!doctype html><meta charset=utf-8><title>Layover console</title>"
                            + "<h1>Layover replay console</h1><p>This console needs its access token. Open "
                            + "<code>/?token=&lt;token&gt;</code> once (the standalone program prints the link at "
                            + "start); the token is then kept in a session cookie.</p>");
                } else {
                    error(ex, 401, "this console needs its access token", null);
                }
                return;
            }
            if (asset == null || !(method.equals("GET") || method.equals("HEAD"))) {
                error(ex, 404, "no such page: " + path, null);
                return;
            }
            asset(ex, asset[0], asset[1]);
            return;
        }
        if (auth == null) {
            ex.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"layover-console\"");
            error(ex, 401, "this console needs its access token: send Authorization: Bearer <token>, or open "
                    + "/?token=<token> in the browser", null);
            return;
        }
        String apiPath = path.substring(4);
        boolean pathMatched = false;
        for (Route r : routes) {
            Matcher m = r.path().matcher(apiPath);
            if (!m.matches()) {
                continue;
            }
            pathMatched = true;
            if (!r.method().equals(method)) {
                continue;
            }
            if (r.stateChanging()) {
                security.checkStateChanging(ex, auth, r.what());
            }
            List<String> params = new ArrayList<>();
            for (int i = 1; i <= m.groupCount(); i++) {
                params.add(ConsoleRequest.decode(m.group(i)));
            }
            ConsoleRequest req = new ConsoleRequest(ex, params, auth, options);
            JsonNode body;
            try {
                body = r.endpoint().handle(req);
            } catch (ApiException e) {
                throw e;
            } catch (DeadLetterNotFoundException e) {
                throw new ApiException(404, e.getMessage());
            } catch (ReplayConflictException e) {
                throw new ApiException(409, e.getMessage());
            } catch (InvalidArgsException e) {
                throw new ApiException(400, e.getMessage(), "args");
            } catch (UnknownJobTypeException e) {
                throw new ApiException(409, e.getMessage());
            } catch (IllegalArgumentException e) {
                throw new ApiException(400, e.getMessage());
            } catch (LayoverException e) {
                LOG.warn("Layover console: {} {} failed: {}", method, path, e.getMessage());
                throw new ApiException(503, "the database failed: " + Masking.maskText(e.getMessage()));
            } catch (RuntimeException e) {
                LOG.error("Layover console: {} {} failed", method, path, e);
                throw new ApiException(500, "internal error (" + e.getClass().getSimpleName()
                        + "); see the console's log");
            }
            json(ex, 200, body);
            return;
        }
        if (pathMatched) {
            ex.getResponseHeaders().set("Allow", method.equals("GET") ? "POST" : "GET");
            error(ex, 405, method + " is not allowed on " + path, null);
        } else {
            error(ex, 404, "no such endpoint: " + path, null);
        }
    }

    private void login(HttpExchange ex, String candidate) throws IOException {
        ConsoleSecurity.Session s = security.login(candidate);
        if (s == null) {
            page(ex, 401, "<!doctype html><meta charset=utf-8><title>Layover console</title>"
                    + "<h1>Layover replay console</h1><p>That token is not this console's access token.</p>");
            return;
        }
        Headers h = ex.getResponseHeaders();
        h.add("Set-Cookie", security.cookie(s));
        h.set("Location", "/");
        ex.sendResponseHeaders(303, -1);
    }

    void logout(ConsoleRequest r) {
        security.logout(r.auth().session());
        r.exchange().getResponseHeaders().add("Set-Cookie", security.expiredCookie());
    }

    private void asset(HttpExchange ex, String name, String type) throws IOException {
        byte[] bytes = assetCache.computeIfAbsent(name, n -> {
            try (InputStream in = ConsoleServer.class.getResourceAsStream(STATIC + n)) {
                if (in == null) {
                    throw new IllegalStateException("missing console asset " + n);
                }
                return in.readAllBytes();
            } catch (IOException e) {
                throw new IllegalStateException("cannot read console asset " + n, e);
            }
        });
        ex.getResponseHeaders().set("Content-Type", type);
        if (ex.getRequestMethod().equalsIgnoreCase("HEAD")) {
            ex.sendResponseHeaders(200, -1);
            return;
        }
        ex.sendResponseHeaders(200, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    private static void page(HttpExchange ex, int status, String html) throws IOException {
        byte[] bytes = html.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    static void json(HttpExchange ex, int status, JsonNode body) throws IOException {
        byte[] bytes = JSON.writeValueAsBytes(body);
        ex.getResponseHeaders().set("Content-Type", "application/json; charset=utf-8");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    private static void error(HttpExchange ex, int status, String message, String field) throws IOException {
        ObjectNode n = JSON.createObjectNode();
        n.put("error", message);
        n.put("status", status);
        if (field != null) {
            n.put("field", field);
        }
        json(ex, status, n);
    }
}
