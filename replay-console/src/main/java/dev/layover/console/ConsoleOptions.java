package dev.layover.console;

import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * How a {@link ReplayConsole} (or a mounted {@link ConsoleServlet}) listens and whom it lets in. Immutable: every {@code with..}
 * returns new options.
 *
 * <pre>{@code
 * ReplayConsole console = ReplayConsole.start(layover, ConsoleOptions.defaults()
 *         .withPort(7070)
 *         .withToken(System.getenv("LAYOVER_CONSOLE_TOKEN"))
 *         .withReadOnly(true));
 * }</pre>
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #withBind(String)}</td><td>{@code 127.0.0.1}: only this machine can connect</td></tr>
 *   <tr><td>{@link #withPort(int)}</td><td>0: any free port (see {@link ReplayConsole#url()});
 *       the standalone program uses 7070</td></tr>
 *   <tr><td>{@link #withToken(String)}</td><td>none: a 256-bit token is generated with
 *       {@code SecureRandom} at start (see {@link ReplayConsole#token()})</td></tr>
 *   <tr><td>{@link #withReadOnly(boolean)}</td><td>false: operators may replay, discard, move
 *       back, force breakers and reveal masked values</td></tr>
 *   <tr><td>{@link #withOperatorHeader(String)}</td><td>{@code X-Layover-Operator}: the request
 *       header naming who acts, written to the audit log</td></tr>
 *   <tr><td>{@link #withDefaultOperator(String)}</td><td>{@code console}: the name used when a
 *       request does not carry that header</td></tr>
 *   <tr><td>{@link #withPublicUrl(String)}</td><td>none: the console's origin is the one the
 *       request's {@code Host} header names</td></tr>
 *   <tr><td>{@link #withThreads(int)}</td><td>8 request threads</td></tr>
 *   <tr><td>{@link #withSessionTtl(Duration)}</td><td>12 hours: a browser session opened with
 *       {@code ?token=...} expires after this</td></tr>
 *   <tr><td>{@link #withExternalAuthentication(boolean)}</td><td>false: the console's own token
 *       is required</td></tr>
 *   <tr><td>{@link #withAnonymousAccess(boolean)}</td><td>false: with external authentication, a
 *       request without a signed-in user ({@code getRemoteUser() == null}) is refused 401</td></tr>
 *   <tr><td>{@link #withAnonymousWrites(boolean)}</td><td>false: a request let in without a
 *       signed-in user may read, never act</td></tr>
 *   <tr><td>{@link #withHeaderTimeout(Duration)}</td><td>10 seconds for a request's headers</td></tr>
 *   <tr><td>{@link #withReadTimeout(Duration)}</td><td>30 seconds for a request's body</td></tr>
 *   <tr><td>{@link #withIdleTimeout(Duration)}</td><td>30 seconds of silence closes a connection</td></tr>
 *   <tr><td>{@link #withMaxConnections(int)}</td><td>100 connections at once</td></tr>
 * </table>
 *
 * <p>Bind, port, threads, header and idle timeouts and the connection limit configure the
 * console's own server ({@link ReplayConsole}); a {@link ConsoleServlet} mounted in an
 * application runs under its container's settings.
 *
 * <p>Hazards: binding to anything but loopback exposes the console to the network: put it behind
 * TLS (a reverse proxy; set {@link #withPublicUrl(String)}) and keep the token secret. The
 * operator name is what the caller says it is; a proxy that authenticates people should set the
 * operator header itself.
 */
public final class ConsoleOptions {

    /** Shortest configured token accepted. */
    public static final int MIN_TOKEN_LENGTH = 16;

    private static final ConsoleOptions DEFAULTS = new ConsoleOptions();

    private String bind = "127.0.0.1";
    private int port;
    private String token;
    private boolean readOnly;
    private String operatorHeader = "X-Layover-Operator";
    private String defaultOperator = "console";
    private URI publicUrl;
    private int threads = 8;
    private Duration sessionTtl = Duration.ofHours(12);
    private boolean externalAuthentication;
    private boolean anonymousAccess;
    private boolean anonymousWrites;
    private Duration headerTimeout = Duration.ofSeconds(10);
    private Duration readTimeout = Duration.ofSeconds(30);
    private Duration idleTimeout = Duration.ofSeconds(30);
    private int maxConnections = 100;

    private ConsoleOptions() {}

    private ConsoleOptions copy() {
        ConsoleOptions o = new ConsoleOptions();
        o.bind = bind;
        o.port = port;
        o.token = token;
        o.readOnly = readOnly;
        o.operatorHeader = operatorHeader;
        o.defaultOperator = defaultOperator;
        o.publicUrl = publicUrl;
        o.threads = threads;
        o.sessionTtl = sessionTtl;
        o.externalAuthentication = externalAuthentication;
        o.anonymousAccess = anonymousAccess;
        o.anonymousWrites = anonymousWrites;
        o.headerTimeout = headerTimeout;
        o.readTimeout = readTimeout;
        o.idleTimeout = idleTimeout;
        o.maxConnections = maxConnections;
        return o;
    }

    /** @return the defaults listed in the class description */
    public static ConsoleOptions defaults() {
        return DEFAULTS;
    }

    /**
     * @param address the address to listen on, e.g. {@code 127.0.0.1} (default), {@code ::1} or
     *     {@code 0.0.0.0} (every interface: see the hazards in the class description). Only for
     *     {@link ReplayConsole}; a mounted {@link ConsoleServlet} listens where its container does.
     * @return new options
     */
    public ConsoleOptions withBind(String address) {
        if (address == null || address.isBlank()) {
            throw new IllegalArgumentException("bind address must not be empty");
        }
        ConsoleOptions o = copy();
        o.bind = address.strip();
        return o;
    }

    /**
     * @param port 1-65535, or 0 (default) for any free port. Only for {@link ReplayConsole}.
     * @return new options
     */
    public ConsoleOptions withPort(int port) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0-65535, was " + port);
        }
        ConsoleOptions o = copy();
        o.port = port;
        return o;
    }

    /**
     * @param token the access token every request must present, at least
     *     {@value #MIN_TOKEN_LENGTH} characters of printable ASCII without spaces; {@code null}
     *     (default) to generate one at start. Not used with {@link #withExternalAuthentication}.
     * @return new options
     */
    public ConsoleOptions withToken(String token) {
        if (token != null) {
            if (token.length() < MIN_TOKEN_LENGTH) {
                throw new IllegalArgumentException("the console token must be at least " + MIN_TOKEN_LENGTH
                        + " characters long (leave it unset to generate one)");
            }
            for (int i = 0; i < token.length(); i++) {
                char ch = token.charAt(i);
                if (ch <= ' ' || ch >= 127) {
                    throw new IllegalArgumentException("the console token must be printable ASCII without spaces");
                }
            }
        }
        ConsoleOptions o = copy();
        o.token = token;
        return o;
    }

    /**
     * @param readOnly true to refuse every state-changing request (403) and every reveal of
     *     masked values; default false
     * @return new options
     */
    public ConsoleOptions withReadOnly(boolean readOnly) {
        ConsoleOptions o = copy();
        o.readOnly = readOnly;
        return o;
    }

    /**
     * @param header the request header naming the operator (written to the audit log); default
     *     {@code X-Layover-Operator}. Behind an authenticating proxy, name the header it sets.
     * @return new options
     */
    public ConsoleOptions withOperatorHeader(String header) {
        if (header == null || !header.matches("[A-Za-z0-9-]{1,100}")) {
            throw new IllegalArgumentException("operator header must be an HTTP header name, was: " + header);
        }
        ConsoleOptions o = copy();
        o.operatorHeader = header;
        return o;
    }

    /**
     * @param name the operator name used when a request names none, 1-200 characters; default
     *     {@code console}
     * @return new options
     */
    public ConsoleOptions withDefaultOperator(String name) {
        if (name == null || name.isBlank() || name.length() > 200) {
            throw new IllegalArgumentException("default operator must be 1-200 characters");
        }
        ConsoleOptions o = copy();
        o.defaultOperator = name;
        return o;
    }

    /**
     * The URL browsers use to reach the console when it is behind a reverse proxy, e.g.
     * {@code https://layover.ops.example.com} or {@code https://ops.example.com/layover/}. Its
     * origin is accepted by the same-origin check of state-changing requests, and its host by the
     * {@code Host} check; an https URL makes the session cookie {@code Secure}.
     *
     * @param url an http or https URL, or {@code null} (default)
     * @return new options
     */
    public ConsoleOptions withPublicUrl(String url) {
        URI u = null;
        if (url != null) {
            u = URI.create(url);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            if (!(scheme.equals("http") || scheme.equals("https")) || u.getHost() == null) {
                throw new IllegalArgumentException("public URL must be an http(s) URL with a host, was: " + url);
            }
        }
        ConsoleOptions o = copy();
        o.publicUrl = u;
        return o;
    }

    /**
     * @param n request threads, 1-200; default 8. A bulk replay holds one for its whole run.
     *     Only for {@link ReplayConsole}: a mounted servlet runs on its container's threads.
     * @return new options
     */
    public ConsoleOptions withThreads(int n) {
        if (n < 1 || n > 200) {
            throw new IllegalArgumentException("threads must be 1-200, was " + n);
        }
        ConsoleOptions o = copy();
        o.threads = n;
        return o;
    }

    /**
     * @param ttl how long a browser session lasts after {@code ?token=...}; default 12 hours
     * @return new options
     */
    public ConsoleOptions withSessionTtl(Duration ttl) {
        ConsoleOptions o = copy();
        o.sessionTtl = positive(ttl, "session TTL");
        return o;
    }

    /**
     * For a {@link ConsoleServlet} mounted in an application that authenticates its users itself
     * (Spring Security, a servlet filter, the container): no console token is asked for, and the
     * operator written to the audit log is {@code request.getRemoteUser()} (falling back to the
     * operator header, then the default operator). CSRF protection (a token header on every
     * state-changing request, which the page reads from {@code api/session}), the same-origin
     * check, read-only mode and every response header (CSP and friends) still apply.
     *
     * <p>A request that reaches the servlet without a signed-in user ({@code getRemoteUser()}
     * is {@code null}: the application's security let it through, or there is none; Spring
     * Security's anonymous user counts as none) is refused 401 unless
     * {@link #withAnonymousAccess(boolean)} allows it, and such a request is read-only unless
     * {@link #withAnonymousWrites(boolean)} says otherwise.
     *
     * @param external true to rely on the application's authentication; default false
     * @return new options
     */
    public ConsoleOptions withExternalAuthentication(boolean external) {
        ConsoleOptions o = copy();
        o.externalAuthentication = external;
        return o;
    }

    /**
     * With {@link #withExternalAuthentication(boolean) external authentication}: whether a request
     * without a signed-in user ({@code request.getRemoteUser() == null}) is let in. Such a request
     * is read-only (403 on every state-changing request and every reveal) unless
     * {@link #withAnonymousWrites(boolean)} is also set. Without external authentication the
     * console's own token authenticates and this setting changes nothing.
     *
     * <p>Hazard: with this on, anyone who reaches the servlet reads the console: dead letters'
     * (masked) args and errors, provider state, the audit log.
     *
     * @param allowed true to let requests without a user in (read-only); default false (401)
     * @return new options
     */
    public ConsoleOptions withAnonymousAccess(boolean allowed) {
        ConsoleOptions o = copy();
        o.anonymousAccess = allowed;
        return o;
    }

    /**
     * Whether a request let in without a signed-in user (see {@link #withAnonymousAccess(boolean)})
     * may act: replay, discard, force breakers, set limits, reveal masked values. CSRF and
     * same-origin checks still apply; the audit log names the operator header's value or the
     * default operator.
     *
     * <p>Hazard: with anonymous access on, anyone who reaches the servlet can act.
     *
     * @param allowed true to let anonymous requests act; default false (read-only)
     * @return new options
     */
    public ConsoleOptions withAnonymousWrites(boolean allowed) {
        ConsoleOptions o = copy();
        o.anonymousWrites = allowed;
        return o;
    }

    /**
     * @param timeout how long a connection may take to send a request's line and headers once it
     *     has started sending them; a client still sending after that (a "slowloris" trickling
     *     a header a byte at a time) is disconnected. Default 10 seconds. Only for
     *     {@link ReplayConsole} (a container has its own settings).
     * @return new options
     */
    public ConsoleOptions withHeaderTimeout(Duration timeout) {
        ConsoleOptions o = copy();
        o.headerTimeout = positive(timeout, "header timeout");
        return o;
    }

    /**
     * @param timeout how long a request's body may take to arrive in full (bodies are at most
     *     1 MiB); a slower one is answered 408 and its connection closed. Default 30 seconds.
     *     Applies to a mounted {@link ConsoleServlet} too.
     * @return new options
     */
    public ConsoleOptions withReadTimeout(Duration timeout) {
        ConsoleOptions o = copy();
        o.readTimeout = positive(timeout, "read timeout");
        return o;
    }

    /**
     * @param timeout how long a connection may stay silent (no byte either way) before it is
     *     closed, including between keep-alive requests and within one blocking read; default
     *     30 seconds. Only for {@link ReplayConsole}.
     * @return new options
     */
    public ConsoleOptions withIdleTimeout(Duration timeout) {
        ConsoleOptions o = copy();
        o.idleTimeout = positive(timeout, "idle timeout");
        return o;
    }

    /**
     * @param n the most connections open at once, 1-10,000; default 100. Further clients wait in
     *     the operating system's accept queue until one closes. Only for {@link ReplayConsole}.
     * @return new options
     */
    public ConsoleOptions withMaxConnections(int n) {
        if (n < 1 || n > 10_000) {
            throw new IllegalArgumentException("max connections must be 1-10000, was " + n);
        }
        ConsoleOptions o = copy();
        o.maxConnections = n;
        return o;
    }

    private static Duration positive(Duration d, String what) {
        Objects.requireNonNull(d, what);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(what + " must be positive");
        }
        return d;
    }

    /** @return the address to listen on */
    public String bind() {
        return bind;
    }

    /** @return the port, 0 for any free port */
    public int port() {
        return port;
    }

    /** @return the configured token, or {@code null} to generate one */
    public String token() {
        return token;
    }

    /** @return whether state-changing requests are refused */
    public boolean readOnly() {
        return readOnly;
    }

    /** @return the header naming the operator */
    public String operatorHeader() {
        return operatorHeader;
    }

    /** @return the operator name used when a request names none */
    public String defaultOperator() {
        return defaultOperator;
    }

    /** @return the public URL, or {@code null} */
    public URI publicUrl() {
        return publicUrl;
    }

    /** @return request threads */
    public int threads() {
        return threads;
    }

    /** @return the browser session lifetime */
    public Duration sessionTtl() {
        return sessionTtl;
    }

    /** @return whether the application authenticates (no console token) */
    public boolean externalAuthentication() {
        return externalAuthentication;
    }

    /** @return whether a request without a signed-in user is let in (external authentication) */
    public boolean anonymousAccess() {
        return anonymousAccess;
    }

    /** @return whether a request let in without a signed-in user may act */
    public boolean anonymousWrites() {
        return anonymousWrites;
    }

    /** @return the time allowed for a request's headers */
    public Duration headerTimeout() {
        return headerTimeout;
    }

    /** @return the time allowed for a request's body */
    public Duration readTimeout() {
        return readTimeout;
    }

    /** @return the idle timeout of a connection */
    public Duration idleTimeout() {
        return idleTimeout;
    }

    /** @return the most connections open at once */
    public int maxConnections() {
        return maxConnections;
    }

    @Override
    public String toString() {
        return "ConsoleOptions[bind=" + bind + ", port=" + port + ", token=" + (token == null ? "generated" : "set")
                + ", readOnly=" + readOnly + ", operatorHeader=" + operatorHeader + ", defaultOperator="
                + defaultOperator + ", publicUrl=" + publicUrl + ", threads=" + threads + ", sessionTtl=" + sessionTtl
                + ", externalAuthentication=" + externalAuthentication + ", anonymousAccess=" + anonymousAccess
                + ", anonymousWrites=" + anonymousWrites + ", headerTimeout=" + headerTimeout
                + ", readTimeout=" + readTimeout + ", idleTimeout=" + idleTimeout + ", maxConnections="
                + maxConnections + "]";
    }
}
