package dev.layover.console;

import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * How a {@link ReplayConsole} listens and whom it lets in. Immutable: every {@code with..}
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
 *       {@code /?token=...} expires after this</td></tr>
 * </table>
 *
 * <p>Hazards: binding to anything but loopback exposes the console to the network: put it behind
 * TLS (a reverse proxy; set {@link #withPublicUrl(String)}) and keep the token secret. The
 * operator name is what the caller says it is; a proxy that authenticates people should set the
 * operator header itself.
 */
public final class ConsoleOptions {

    /** Shortest configured token accepted. */
    public static final int MIN_TOKEN_LENGTH = 16;

    private static final ConsoleOptions DEFAULTS = new ConsoleOptions("127.0.0.1", 0, null, false,
            "X-Layover-Operator", "console", null, 8, Duration.ofHours(12));

    private final String bind;
    private final int port;
    private final String token;
    private final boolean readOnly;
    private final String operatorHeader;
    private final String defaultOperator;
    private final URI publicUrl;
    private final int threads;
    private final Duration sessionTtl;

    private ConsoleOptions(String bind, int port, String token, boolean readOnly, String operatorHeader,
            String defaultOperator, URI publicUrl, int threads, Duration sessionTtl) {
        this.bind = bind;
        this.port = port;
        this.token = token;
        this.readOnly = readOnly;
        this.operatorHeader = operatorHeader;
        this.defaultOperator = defaultOperator;
        this.publicUrl = publicUrl;
        this.threads = threads;
        this.sessionTtl = sessionTtl;
    }

    /** @return the defaults listed in the class description */
    public static ConsoleOptions defaults() {
        return DEFAULTS;
    }

    /**
     * @param address the address to listen on, e.g. {@code 127.0.0.1} (default), {@code ::1} or
     *     {@code 0.0.0.0} (every interface: see the hazards in the class description)
     * @return new options
     */
    public ConsoleOptions withBind(String address) {
        if (address == null || address.isBlank()) {
            throw new IllegalArgumentException("bind address must not be empty");
        }
        return new ConsoleOptions(address.strip(), port, token, readOnly, operatorHeader, defaultOperator, publicUrl,
                threads, sessionTtl);
    }

    /**
     * @param port 1-65535, or 0 (default) for any free port
     * @return new options
     */
    public ConsoleOptions withPort(int port) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0-65535, was " + port);
        }
        return new ConsoleOptions(bind, port, token, readOnly, operatorHeader, defaultOperator, publicUrl, threads,
                sessionTtl);
    }

    /**
     * @param token the access token every request must present, at least
     *     {@value #MIN_TOKEN_LENGTH} characters of printable ASCII without spaces; {@code null}
     *     (default) to generate one at start
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
        return new ConsoleOptions(bind, port, token, readOnly, operatorHeader, defaultOperator, publicUrl, threads,
                sessionTtl);
    }

    /**
     * @param readOnly true to refuse every state-changing request (403) and every reveal of
     *     masked values; default false
     * @return new options
     */
    public ConsoleOptions withReadOnly(boolean readOnly) {
        return new ConsoleOptions(bind, port, token, readOnly, operatorHeader, defaultOperator, publicUrl, threads,
                sessionTtl);
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
        return new ConsoleOptions(bind, port, token, readOnly, header, defaultOperator, publicUrl, threads,
                sessionTtl);
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
        return new ConsoleOptions(bind, port, token, readOnly, operatorHeader, name, publicUrl, threads, sessionTtl);
    }

    /**
     * The URL browsers use to reach the console when it is behind a reverse proxy, e.g.
     * {@code https://layover.ops.example.com} (the console must sit at the root of its origin; a
     * path prefix is not supported). Its origin is accepted by the
     * same-origin check of state-changing requests, and its host by the {@code Host} check.
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
        return new ConsoleOptions(bind, port, token, readOnly, operatorHeader, defaultOperator, u, threads,
                sessionTtl);
    }

    /**
     * @param n request threads, 1-200; default 8. A bulk replay holds one for its whole run.
     * @return new options
     */
    public ConsoleOptions withThreads(int n) {
        if (n < 1 || n > 200) {
            throw new IllegalArgumentException("threads must be 1-200, was " + n);
        }
        return new ConsoleOptions(bind, port, token, readOnly, operatorHeader, defaultOperator, publicUrl, n,
                sessionTtl);
    }

    /**
     * @param ttl how long a browser session lasts after {@code /?token=...}; default 12 hours
     * @return new options
     */
    public ConsoleOptions withSessionTtl(Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("session TTL must be positive");
        }
        return new ConsoleOptions(bind, port, token, readOnly, operatorHeader, defaultOperator, publicUrl, threads,
                ttl);
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

    @Override
    public String toString() {
        return "ConsoleOptions[bind=" + bind + ", port=" + port + ", token=" + (token == null ? "generated" : "set")
                + ", readOnly=" + readOnly + ", operatorHeader=" + operatorHeader + ", defaultOperator="
                + defaultOperator + ", publicUrl=" + publicUrl + ", threads=" + threads + ", sessionTtl=" + sessionTtl
                + "]";
    }
}
