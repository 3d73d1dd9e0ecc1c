package dev.layover.console;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.Enumeration;
import java.util.Iterator;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Who may do what:
 *
 * <ul>
 *   <li>every request is authenticated: {@code Authorization: Bearer <token>}, or
 *       {@code X-Layover-Token: <token>}, or the browser session cookie set by {@code ?token=};
 *       with external authentication the application has done it (see
 *       {@link ConsoleOptions#withExternalAuthentication(boolean)}), and a request without a
 *       signed-in user is refused unless anonymous access was allowed, and then reads only unless
 *       anonymous writes were allowed too;
 *   <li>a state-changing request (and a reveal of masked values) additionally carries a token in
 *       a header (the access token, or the session's CSRF token which the page reads from
 *       {@code /api/session}), passes a same-origin check ({@code Origin} or {@code Referer} must
 *       be the console's own origin; {@code Sec-Fetch-Site} must be {@code same-origin} or
 *       {@code none}), and is refused in read-only mode;
 *   <li>the console's own server bound to loopback answers only requests whose {@code Host} is a
 *       loopback name (DNS rebinding);
 *   <li>every response carries a strict Content-Security-Policy and friends.
 * </ul>
 */
final class ConsoleSecurity {

    static final String TOKEN_HEADER = "X-Layover-Token";

    static final String CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
            + "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
            + "frame-ancestors 'none'";

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Set<String> LOOPBACK_HOSTS = Set.of("localhost", "127.0.0.1", "::1", "[::1]");
    private static final int MAX_SESSIONS = 10_000;

    private final byte[] token;
    private final ConsoleOptions options;
    private final boolean loopbackOnly;
    private final byte[] csrfKey = new byte[32];
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();

    /** A browser session: its CSRF token and when it expires. */
    record Session(String id, String csrf, long expiresAtMillis) {}

    /**
     * How a request was authenticated.
     *
     * @param via {@code bearer}, {@code header}, {@code session} or {@code external}
     * @param session the browser session, or {@code null}
     * @param headerToken whether a token was presented in a header (what state-changing requests need)
     * @param csrf the CSRF token the page sends in the token header, or {@code null} (bearer, header)
     * @param user the application's user ({@code getRemoteUser()}) with external authentication
     */
    record Auth(String via, Session session, boolean headerToken, String csrf, String user) {

        /** @return whether the application let the request through without a signed-in user */
        boolean anonymous() {
            return via.equals("external") && user == null;
        }
    }

    /**
     * @param token the access token
     * @param options the options
     * @param loopbackOnly whether to refuse foreign {@code Host} names (the console's own server
     *     bound to loopback)
     */
    ConsoleSecurity(String token, ConsoleOptions options, boolean loopbackOnly) {
        this.token = token.getBytes(StandardCharsets.UTF_8);
        this.options = options;
        this.loopbackOnly = loopbackOnly;
        RANDOM.nextBytes(csrfKey);
    }

    /** @return a fresh token: 256 random bits, URL-safe base64 */
    static String newToken() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /**
     * The session cookie's name: it carries the port, because browsers share cookies between the
     * ports of one host, and two consoles on one machine must not log each other out.
     */
    static String cookieName(HttpServletRequest req) {
        return "layover_console_" + req.getLocalPort();
    }

    /** Adds the headers every response carries. */
    static void securityHeaders(HttpServletResponse h) {
        h.setHeader("Content-Security-Policy", CSP);
        h.setHeader("X-Content-Type-Options", "nosniff");
        h.setHeader("Referrer-Policy", "no-referrer");
        h.setHeader("X-Frame-Options", "DENY");
        h.setHeader("Cross-Origin-Opener-Policy", "same-origin");
        h.setHeader("Cross-Origin-Resource-Policy", "same-origin");
        h.setHeader("Cache-Control", "no-store");
    }

    /**
     * Refuses a request whose {@code Host} is not a loopback name on a console bound to loopback
     * (a page on another site that made its name resolve to 127.0.0.1).
     */
    void checkHost(HttpServletRequest ex) {
        if (!loopbackOnly) {
            return;
        }
        String host = ex.getHeader("Host");
        if (host == null) {
            return;
        }
        String name = hostName(host);
        if (LOOPBACK_HOSTS.contains(name) || name.endsWith(".localhost")) {
            return;
        }
        URI pub = options.publicUrl();
        if (pub != null && pub.getHost().equalsIgnoreCase(name)) {
            return;
        }
        throw ApiException.forbidden("this console answers only requests to a loopback host name "
                + "(localhost, 127.0.0.1, [::1]); Host was '" + host + "'");
    }

    /** @return whether the application authenticates (no console token) */
    boolean external() {
        return options.externalAuthentication();
    }

    /**
     * @param ex the request
     * @return how it is authenticated, or {@code null} when it is not
     */
    Auth authenticate(HttpServletRequest ex) {
        String headerToken = ex.getHeader(TOKEN_HEADER);
        if (options.externalAuthentication()) {
            String user = ex.getRemoteUser();
            if (user == null && !options.anonymousAccess()) {
                return null;
            }
            String csrf = externalCsrf(user);
            return new Auth("external", null, headerToken != null && constantTimeEquals(headerToken, csrf), csrf,
                    user);
        }
        String authz = ex.getHeader("Authorization");
        // another scheme (a proxy's Basic auth, say) is not ours: fall through to the other ways
        if (authz != null && authz.regionMatches(true, 0, "Bearer ", 0, 7) && matches(authz.substring(7).strip())) {
            return new Auth("bearer", null, true, null, null);
        }
        if (headerToken != null && matches(headerToken)) {
            return new Auth("header", null, true, null, null);
        }
        Session s = session(ex);
        if (s != null) {
            boolean csrf = headerToken != null && constantTimeEquals(headerToken, s.csrf());
            return new Auth("session", s, csrf, s.csrf(), null);
        }
        return null;
    }

    /**
     * @param auth a request's authentication
     * @return whether that request may only read: read-only mode, or a request without a
     *     signed-in user when anonymous writes were not allowed
     */
    boolean readOnly(Auth auth) {
        return options.readOnly() || (auth.anonymous() && !options.anonymousWrites());
    }

    /**
     * The CSRF token of an externally authenticated user: a keyed hash of the user name, so it
     * needs no server-side session and differs from user to user.
     */
    private String externalCsrf(String user) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(csrfKey, "HmacSHA256"));
            byte[] h = mac.doFinal(("csrf:" + (user == null ? "" : user)).getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(h);
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available", e);
        }
    }

    /**
     * The checks of a state-changing request (and of a reveal), after authentication.
     *
     * @param ex the request
     * @param auth its authentication
     * @param what the action in a few words, for the messages
     * @throws ApiException 403 when refused
     */
    void checkStateChanging(HttpServletRequest ex, Auth auth, String what) {
        if (options.readOnly()) {
            throw ApiException.forbidden("this console is read-only: " + what + " is not allowed");
        }
        if (readOnly(auth)) {
            throw ApiException.forbidden("this console is read-only without a signed-in user: " + what
                    + " needs the application's login");
        }
        if (!auth.headerToken()) {
            throw ApiException.forbidden(what + (auth.via().equals("external")
                    ? " needs the CSRF token of api/session in the " + TOKEN_HEADER + " header"
                    : " needs the token in the " + TOKEN_HEADER
                            + " header (or Authorization: Bearer), not only the session cookie"));
        }
        checkSameOrigin(ex);
    }

    private void checkSameOrigin(HttpServletRequest h) {
        String site = h.getHeader("Sec-Fetch-Site");
        if (site != null && !(site.equalsIgnoreCase("same-origin") || site.equalsIgnoreCase("none"))) {
            throw ApiException.forbidden("cross-origin request refused (Sec-Fetch-Site: " + site + ")");
        }
        String origin = h.getHeader("Origin");
        if (origin != null) {
            if (origin.equals("null")) {
                if (site == null || !site.equalsIgnoreCase("same-origin")) {
                    throw ApiException.forbidden("cross-origin request refused (Origin: null)");
                }
                return;
            }
            if (!isOwnOrigin(origin, h)) {
                throw ApiException.forbidden("cross-origin request refused (Origin: " + origin + ")");
            }
            return;
        }
        String referer = h.getHeader("Referer");
        if (referer != null) {
            String refOrigin = originOf(referer);
            if (refOrigin == null || !isOwnOrigin(refOrigin, h)) {
                throw ApiException.forbidden("cross-origin request refused (Referer from another origin)");
            }
        }
        // neither Origin nor Referer: not a browser's cross-site request; the header token decides
    }

    private boolean isOwnOrigin(String origin, HttpServletRequest ex) {
        String o = origin.toLowerCase(Locale.ROOT);
        String host = ex.getHeader("Host");
        if (host != null) {
            String own = originOf(ex.getScheme() + "://" + host.strip() + "/");
            if (own != null && own.equals(originOf(o))) {
                return true;
            }
        }
        URI pub = options.publicUrl();
        return pub != null && o.equals(originOf(pub.toString()));
    }

    static String originOf(String url) {
        try {
            URI u = URI.create(url);
            if (u.getScheme() == null || u.getHost() == null) {
                return null;
            }
            String scheme = u.getScheme().toLowerCase(Locale.ROOT);
            int port = u.getPort();
            boolean defaultPort = port == -1 || (scheme.equals("http") && port == 80)
                    || (scheme.equals("https") && port == 443);
            String host = u.getHost().toLowerCase(Locale.ROOT);
            return scheme + "://" + host + (defaultPort ? "" : ":" + port);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /**
     * Opens a browser session when {@code candidate} is the access token.
     *
     * @param candidate the {@code token} query parameter
     * @return the session, or {@code null} for a wrong token
     */
    Session login(String candidate) {
        if (candidate == null || !matches(candidate)) {
            return null;
        }
        long now = System.currentTimeMillis();
        if (sessions.size() >= MAX_SESSIONS) {
            sessions.values().removeIf(s -> s.expiresAtMillis() < now);
            if (sessions.size() >= MAX_SESSIONS) {
                Iterator<String> it = sessions.keySet().iterator();
                it.next();
                it.remove();
            }
        }
        Session s = new Session(newToken(), newToken(), now + options.sessionTtl().toMillis());
        sessions.put(s.id(), s);
        return s;
    }

    /** Ends a browser session. */
    void logout(Session s) {
        if (s != null) {
            sessions.remove(s.id());
        }
    }

    /**
     * @param req the login request
     * @param s the session
     * @return the {@code Set-Cookie} value of a session, for the console's mount point only
     */
    String cookie(HttpServletRequest req, Session s) {
        Duration ttl = options.sessionTtl();
        URI pub = options.publicUrl();
        boolean secure = req.isSecure() || (pub != null && pub.getScheme().equalsIgnoreCase("https"));
        return cookieName(req) + "=" + s.id() + "; Path=" + cookiePath(req) + "; Max-Age=" + ttl.toSeconds()
                + "; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "");
    }

    /** @return the {@code Set-Cookie} value that removes the session cookie */
    String expiredCookie(HttpServletRequest req) {
        return cookieName(req) + "=; Path=" + cookiePath(req) + "; Max-Age=0; HttpOnly; SameSite=Strict";
    }

    private static String cookiePath(HttpServletRequest req) {
        String p = req.getContextPath() + req.getServletPath();
        return p.isEmpty() ? "/" : p + "/";
    }

    private Session session(HttpServletRequest ex) {
        Enumeration<String> cookies = ex.getHeaders("Cookie");
        if (cookies == null) {
            return null;
        }
        String cookieName = cookieName(ex);
        while (cookies.hasMoreElements()) {
            String header = cookies.nextElement();
            for (String part : header.split(";")) {
                String p = part.strip();
                int eq = p.indexOf('=');
                if (eq > 0 && p.substring(0, eq).equals(cookieName)) {
                    Session s = sessions.get(p.substring(eq + 1));
                    if (s != null && s.expiresAtMillis() > System.currentTimeMillis()) {
                        return s;
                    }
                    if (s != null) {
                        sessions.remove(s.id());
                    }
                }
            }
        }
        return null;
    }

    private boolean matches(String candidate) {
        return MessageDigest.isEqual(token, candidate.getBytes(StandardCharsets.UTF_8));
    }

    private static boolean constantTimeEquals(String a, String b) {
        return MessageDigest.isEqual(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    static String hostName(String hostHeader) {
        String h = hostHeader.strip().toLowerCase(Locale.ROOT);
        if (h.startsWith("[")) {
            int end = h.indexOf(']');
            return end > 0 ? h.substring(0, end + 1) : h;
        }
        int colon = h.lastIndexOf(':');
        return colon >= 0 && h.indexOf(':') == colon ? h.substring(0, colon) : h;
    }
}
