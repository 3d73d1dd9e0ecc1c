package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.InvalidArgsException;
import dev.layover.core.Layover;
import dev.layover.core.LayoverException;
import dev.layover.core.UnknownJobTypeException;
import dev.layover.dlq.DeadLetterNotFoundException;
import dev.layover.dlq.ReplayConflictException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletMapping;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.MappingMatch;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replay console as a Jakarta Servlet (6.0): the page, its two assets and the JSON API
 * ({@code docs/console-api.md}), for any servlet container. {@link ReplayConsole} runs it in an
 * embedded Jetty; an application mounts it under a path of its own:
 *
 * <pre>{@code
 * // Spring Boot
 * @Bean
 * ServletRegistrationBean<ConsoleServlet> layoverConsole(Layover layover) {
 *     return new ServletRegistrationBean<>(ConsoleServlet.create(layover,
 *             ConsoleOptions.defaults().withExternalAuthentication(true)), "/layover/*");
 * }
 * }</pre>
 *
 * <p>Map it with a path pattern ({@code /layover/*}); the page is then at {@code /layover/}
 * ({@code /layover} redirects there). Every address the page and its script use is relative to
 * that mount point, and the session cookie's path is the mount point.
 *
 * <p>Authentication: by default every request needs the console's access token ({@link #token()},
 * see {@link ConsoleSecurity}); with {@link ConsoleOptions#withExternalAuthentication(boolean)}
 * the application's own security authenticates, and the audit log names
 * {@code request.getRemoteUser()}. A request that reaches the servlet without a remote user is
 * then refused 401, unless {@link ConsoleOptions#withAnonymousAccess(boolean)} lets it read (and
 * {@link ConsoleOptions#withAnonymousWrites(boolean)} act). Either way state-changing requests need the CSRF header and a
 * same-origin request, and every response carries the strict Content-Security-Policy.
 *
 * <p>Database: the console reads the documented views and tables of the Layover schema (which must
 * be migrated) with single autocommitted statements, and acts through the dead-letter store and
 * core's control API; see {@link ReplayConsole} for the hazards. Without the application's
 * {@link Layover} the console builds a pass-through instance that is never started;
 * {@link #destroy()} stops it.
 */
public final class ConsoleServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(ConsoleServlet.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String STATIC = "/dev/layover/console/static/";
    private static final Map<String, String[]> ASSETS = Map.of(
            "/", new String[] {"index.html", "text/html; charset=utf-8"},
            "/static/console.css", new String[] {"console.css", "text/css; charset=utf-8"},
            "/static/console.js", new String[] {"console.js", "text/javascript; charset=utf-8"});
    private static final Pattern PARAM = Pattern.compile("\\{([A-Za-z]+)}");
    /** The refusal of a request without a signed-in user, with external authentication. */
    private static final String NO_USER = "this console needs a signed-in user of the application: the request "
            + "reached it without one (no remote user), and anonymous access is not allowed";

    /** An API endpoint. */
    @FunctionalInterface
    interface Endpoint {
        JsonNode handle(ConsoleRequest r);
    }

    /** An endpoint that answers with an SVG image (a chart) instead of JSON; its errors are JSON. */
    @FunctionalInterface
    interface SvgEndpoint {
        String handle(ConsoleRequest r);
    }

    /**
     * A route: method, path pattern (groups are path parameters, named by {@code names}), whether
     * it changes state; {@code svg} set for an image endpoint (then {@code endpoint} is null).
     */
    private record Route(String method, Pattern path, List<String> names, boolean stateChanging, String what,
            Endpoint endpoint, SvgEndpoint svg) {}

    private final transient ConsoleSecurity security;
    private final transient ConsoleOptions options;
    private final transient ConsoleStore store;
    /** The console's access token (null with external authentication). */
    private final String token;
    private final transient List<Route> routes = new ArrayList<>();
    private final transient Map<String, byte[]> assetCache = new ConcurrentHashMap<>();

    private ConsoleServlet(DataSource dataSource, Layover layover, ConsoleOptions options, boolean loopbackOnly) {
        Objects.requireNonNull(options, "options");
        ConsoleSql sql = new ConsoleSql(dataSource);
        if (!sql.schemaPresent()) {
            throw new IllegalStateException("the database has no Layover schema (layover.dead_letters, "
                    + "layover.audit_log, layover.breakers): migrate it first (LayoverMigrations.migrate, or the "
                    + "standalone console's --migrate)");
        }
        this.options = options;
        this.token = options.token() != null ? options.token() : ConsoleSecurity.newToken();
        this.security = new ConsoleSecurity(token, options, loopbackOnly);
        this.store = new ConsoleStore(dataSource, layover, sql);
        new ConsoleApi(store, sql, options, security).register(this);
    }

    /**
     * A console over an application's Layover instance (started or not): edited args are
     * validated against its registered job types, and breaker actions go through its provider
     * state.
     *
     * @param layover the application's instance; its data source is used
     * @param options the token (or external authentication), read-only, operator header
     * @return the servlet, to mount with a path pattern such as {@code /layover/*}
     * @throws IllegalStateException when the database has no Layover schema
     */
    public static ConsoleServlet create(Layover layover, ConsoleOptions options) {
        Objects.requireNonNull(layover, "layover");
        return new ConsoleServlet(layover.dataSource(), layover, options, false);
    }

    /**
     * A console on a database, without the application's job types: replays run the stored args;
     * edited args cannot be validated and are refused.
     *
     * @param dataSource the Layover database (already migrated)
     * @param options the token (or external authentication), read-only, operator header
     * @return the servlet, to mount with a path pattern such as {@code /layover/*}
     * @throws IllegalStateException when the database has no Layover schema
     */
    public static ConsoleServlet create(DataSource dataSource, ConsoleOptions options) {
        return new ConsoleServlet(Objects.requireNonNull(dataSource, "dataSource"), null, options, false);
    }

    /** The console's own server: with {@code loopbackOnly}, foreign Host names are refused. */
    static ConsoleServlet forEmbeddedServer(DataSource dataSource, Layover layover, ConsoleOptions options,
            boolean loopbackOnly) {
        return new ConsoleServlet(dataSource, layover, options, loopbackOnly);
    }

    /**
     * @return the access token (the configured one, or the one generated at creation). Unused
     *     with external authentication. Hazard: it is a secret; print it only where operators
     *     (and no one else) read
     */
    public String token() {
        return token;
    }

    /** @return whether edited args can be validated (the application's job types are known) */
    boolean validatesArgs() {
        return store.validatesArgs();
    }

    /** Stops the pass-through Layover instance, if the console made one (never the application's). */
    @Override
    public void destroy() {
        store.close();
    }

    /** Adds a read-only endpoint; {@code {name}} in the path is a path parameter. */
    void get(String path, Endpoint e) {
        routes.add(route("GET", path, false, null, e, null));
    }

    /** Adds a read-only endpoint answering with an SVG image. */
    void getSvg(String path, SvgEndpoint e) {
        routes.add(route("GET", path, false, null, null, e));
    }

    /** Adds a state-changing endpoint; {@code what} names it in refusals. */
    void post(String path, String what, Endpoint e) {
        routes.add(route("POST", path, true, what, e, null));
    }

    private static Route route(String method, String template, boolean stateChanging, String what, Endpoint e,
            SvgEndpoint svg) {
        List<String> names = new ArrayList<>();
        Matcher m = PARAM.matcher(template);
        StringBuilder regex = new StringBuilder();
        int last = 0;
        while (m.find()) {
            regex.append(Pattern.quote(template.substring(last, m.start()))).append("([^/]+)");
            names.add(m.group(1));
            last = m.end();
        }
        regex.append(Pattern.quote(template.substring(last)));
        return new Route(method, Pattern.compile(regex.toString()), names, stateChanging, what, e, svg);
    }

    // ---------------------------------------------------------------- request handling

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) {
        try {
            ConsoleSecurity.securityHeaders(resp);
            try {
                security.checkHost(req);
                route(req, resp);
            } catch (ApiException e) {
                if (!resp.isCommitted()) {
                    error(resp, e.status(), e.getMessage(), e.field());
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("Layover console: request {} {} ended: {}", req.getMethod(), req.getRequestURI(), e.toString());
        }
    }

    /** The request's path below the mount point, still URL-encoded ({@code ""} for the mount point without slash). */
    private static String mountedPath(HttpServletRequest req) {
        String raw = req.getRequestURI();
        HttpServletMapping mapping = req.getHttpServletMapping();
        MappingMatch match = mapping == null ? null : mapping.getMappingMatch();
        String prefix = req.getContextPath()
                + (match == MappingMatch.DEFAULT || match == MappingMatch.CONTEXT_ROOT ? "" : req.getServletPath());
        if (raw.startsWith(prefix)) {
            return raw.substring(prefix.length());
        }
        String info = req.getPathInfo();
        return info == null ? "" : info;
    }

    private void route(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String method = req.getMethod().toUpperCase(Locale.ROOT);
        String path = mountedPath(req);
        if (path.isEmpty()) {
            // the mount point without its slash: relative addresses need the slash
            String mount = req.getContextPath() + req.getServletPath();
            String last = mount.substring(mount.lastIndexOf('/') + 1);
            resp.setHeader("Location", last + "/" + (req.getQueryString() == null ? "" : "?" + req.getQueryString()));
            resp.setStatus(308);
            return;
        }
        Map<String, List<String>> query = ConsoleRequest.parseQuery(req.getQueryString());

        if (path.equals("/") && method.equals("GET") && query.containsKey("token")) {
            login(req, resp, query.get("token").get(0));
            return;
        }
        ConsoleSecurity.Auth auth = security.authenticate(req);
        if (!path.startsWith("/api/")) {
            String[] asset = ASSETS.get(path);
            if (auth == null && security.external()) {
                if (path.equals("/")) {
                    page(resp, 401, "<!doctype html><meta charset=utf-8><title>Layover console</title>"
                            + "<h1>Layover replay console</h1><p>" + NO_USER + "</p>");
                } else {
                    error(resp, 401, NO_USER, null);
                }
                return;
            }
            if (auth == null) {
                if (path.equals("/")) {
                    page(resp, 401, "<!doctype html><meta charset=utf-8><title>Layover console</title>"
                            + "<h1>Layover replay console</h1><p>This console needs its access token. Open this "
                            + "address once with <code>?token=&lt;token&gt;</code> appended (the standalone program "
                            + "prints the link at start); the token is then kept in a session cookie.</p>");
                } else {
                    error(resp, 401, "this console needs its access token", null);
                }
                return;
            }
            if (asset == null || !(method.equals("GET") || method.equals("HEAD"))) {
                error(resp, 404, "no such page: " + path, null);
                return;
            }
            asset(req, resp, asset[0], asset[1]);
            return;
        }
        if (auth == null && security.external()) {
            error(resp, 401, NO_USER, null);
            return;
        }
        if (auth == null) {
            resp.setHeader("WWW-Authenticate", "Bearer realm=\"layover-console\"");
            error(resp, 401, "this console needs its access token: send Authorization: Bearer <token>, or open "
                    + "the console's address with ?token=<token> in the browser", null);
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
                security.checkStateChanging(req, auth, r.what());
            }
            List<String> params = new ArrayList<>();
            for (int i = 1; i <= m.groupCount(); i++) {
                params.add(ConsoleRequest.decode(m.group(i)));
            }
            ConsoleRequest cr = new ConsoleRequest(req, resp, r.names(), params, auth, options);
            if (r.svg() != null) {
                svg(resp, call(() -> r.svg().handle(cr), method, path));
            } else {
                json(resp, 200, call(() -> r.endpoint().handle(cr), method, path));
            }
            return;
        }
        if (pathMatched) {
            resp.setHeader("Allow", method.equals("GET") ? "POST" : "GET");
            error(resp, 405, method + " is not allowed on " + path, null);
        } else {
            error(resp, 404, "no such endpoint: " + path, null);
        }
    }

    private static <T> T call(java.util.function.Supplier<T> endpoint, String method, String path) {
        try {
            return endpoint.get();
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
    }

    private void login(HttpServletRequest req, HttpServletResponse resp, String candidate) throws IOException {
        if (security.external()) {
            // the application authenticated: nothing to do with a token but drop it from the address bar
            resp.setHeader("Location", "./");
            resp.setStatus(303);
            return;
        }
        ConsoleSecurity.Session s = security.login(candidate);
        if (s == null) {
            page(resp, 401, "<!doctype html><meta charset=utf-8><title>Layover console</title>"
                    + "<h1>Layover replay console</h1><p>That token is not this console's access token.</p>");
            return;
        }
        resp.addHeader("Set-Cookie", security.cookie(req, s));
        resp.setHeader("Location", "./");
        resp.setStatus(303);
    }

    private void asset(HttpServletRequest req, HttpServletResponse resp, String name, String type) throws IOException {
        byte[] bytes = assetCache.computeIfAbsent(name, n -> {
            try (InputStream in = ConsoleServlet.class.getResourceAsStream(STATIC + n)) {
                if (in == null) {
                    throw new IllegalStateException("missing console asset " + n);
                }
                return in.readAllBytes();
            } catch (IOException e) {
                throw new IllegalStateException("cannot read console asset " + n, e);
            }
        });
        resp.setStatus(200);
        resp.setContentType(type);
        resp.setContentLength(bytes.length);
        if (req.getMethod().equalsIgnoreCase("HEAD")) {
            return;
        }
        try (OutputStream out = resp.getOutputStream()) {
            out.write(bytes);
        }
    }

    private static void svg(HttpServletResponse resp, String image) throws IOException {
        byte[] bytes = image.getBytes(StandardCharsets.UTF_8);
        resp.setStatus(200);
        resp.setContentType("image/svg+xml; charset=utf-8");
        resp.setContentLength(bytes.length);
        try (OutputStream out = resp.getOutputStream()) {
            out.write(bytes);
        }
    }

    private static void page(HttpServletResponse resp, int status, String html) throws IOException {
        byte[] bytes = html.getBytes(StandardCharsets.UTF_8);
        resp.setStatus(status);
        resp.setContentType("text/html; charset=utf-8");
        resp.setContentLength(bytes.length);
        try (OutputStream out = resp.getOutputStream()) {
            out.write(bytes);
        }
    }

    private static void json(HttpServletResponse resp, int status, JsonNode body) throws IOException {
        byte[] bytes = JSON.writeValueAsBytes(body);
        resp.setStatus(status);
        resp.setContentType("application/json; charset=utf-8");
        resp.setContentLength(bytes.length);
        try (OutputStream out = resp.getOutputStream()) {
            out.write(bytes);
        }
    }

    /** Writes {@code {"error": ..., "status": ..., "field": ...}}. */
    static void error(HttpServletResponse resp, int status, String message, String field) throws IOException {
        ObjectNode n = JSON.createObjectNode();
        n.put("error", message);
        n.put("status", status);
        if (field != null) {
            n.put("field", field);
        }
        json(resp, status, n);
    }
}
