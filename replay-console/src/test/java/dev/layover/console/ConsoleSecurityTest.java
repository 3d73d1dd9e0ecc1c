package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpCookie;
import java.net.InetAddress;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Tokens, sessions, CSRF and same-origin checks, read-only mode, Host check, response headers. */
@DatabaseTest
class ConsoleSecurityTest {

    private Layover layover;
    private ReplayConsole console;
    private ApiClient api;

    @AfterEach
    void stop() {
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }

    private void start(TestDatabase db, ConsoleOptions options) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, options);
        api = new ApiClient(console);
    }

    private String origin() {
        return "http://127.0.0.1:" + console.port();
    }

    @Test
    void requestsWithoutTheTokenGet401(TestDatabase db) {
        start(db, Fixtures.options());
        long id = Fixtures.deadLetter("a").insert(db);
        for (String path : List.of("/api/overview", "/api/dead-letters", "/api/dead-letters/" + id, "/api/session",
                "/api/audit", "/api/breakers", "/api/jobs", "/api/history?q=a", "/api/job-runs/work/a",
                "/api/provider-keys/test%3Aprovider", "/api/time-series", "/api/time-series/throughput.svg", "/",
                "/static/console.js", "/static/console.css")) {
            ApiClient.Resp r = api.send(api.request(path).GET());
            assertEquals(401, r.status(), path);
            assertFalse(r.body().contains("connection reset"), path);
        }
        ApiClient.Resp wrong = api.send(api.request("/api/overview").header("Authorization", "Bearer nope-nope-nope-nope"));
        assertEquals(401, wrong.status());
        ApiClient.Resp wrongHeader = api.send(api.request("/api/overview").header("X-Layover-Token", "nope-nope-nope-nope"));
        assertEquals(401, wrongHeader.status());
        ApiClient.Resp post = api.send(api.request("/api/dead-letters/" + id + "/replay")
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{}")));
        assertEquals(401, post.status());
        assertTrue(post.headers().firstValue("WWW-Authenticate").isPresent());
        assertEquals(401, api.send(api.request("/?token=wrong-token-wrong-token")).status());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void openingTheConsoleWithTheTokenSetsAnHttpOnlySameSiteStrictCookieAndDropsTheTokenFromTheUrl(TestDatabase db) {
        start(db, Fixtures.options());
        ApiClient.Resp login = api.send(api.request("/?token=" + Fixtures.TOKEN));
        assertEquals(303, login.status());
        assertEquals("./", login.headers().firstValue("Location").orElseThrow(), "relative to the mount point");
        String setCookie = login.headers().firstValue("Set-Cookie").orElseThrow();
        assertTrue(setCookie.contains("HttpOnly"), setCookie);
        assertTrue(setCookie.contains("SameSite=Strict"), setCookie);
        assertFalse(setCookie.contains(Fixtures.TOKEN), "the cookie holds a session id, not the token");
        HttpCookie cookie = HttpCookie.parse(setCookie).get(0);

        ApiClient.Resp page = api.send(api.request("/").header("Cookie", cookie.getName() + "=" + cookie.getValue()));
        assertEquals(200, page.status());
        assertTrue(page.body().contains("\"static/console.js\""), "relative to the mount point");
        assertFalse(page.body().contains("<script>"), "no inline script");
        ApiClient.Resp session = api.send(api.request("/api/session").header("Cookie", cookie.getName() + "=" + cookie.getValue())
                .header("Authorization", "Basic cHJveHk6cGFzcw=="));
        assertEquals(200, session.status(), "a proxy's own Authorization scheme does not hide the session");
        assertEquals("session", session.json().get("auth").asText());
        assertNotNull(session.json().get("csrfToken").asText());
    }

    @Test
    void theSessionCookieAloneCannotChangeStateButWithTheCsrfHeaderFromTheSameOriginItCan(TestDatabase db) {
        start(db, Fixtures.options());
        long id = Fixtures.deadLetter("a").insert(db);
        HttpCookie cookie = HttpCookie.parse(api.send(api.request("/?token=" + Fixtures.TOKEN))
                .headers().firstValue("Set-Cookie").orElseThrow()).get(0);
        String c = cookie.getName() + "=" + cookie.getValue();
        String csrf = api.send(api.request("/api/session").header("Cookie", c)).json().get("csrfToken").asText();

        ApiClient.Resp cookieOnly = api.send(api.request("/api/dead-letters/" + id + "/discard").header("Cookie", c)
                .header("Origin", origin()).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}")));
        assertEquals(403, cookieOnly.status(), cookieOnly.body());
        assertTrue(cookieOnly.error().contains("X-Layover-Token"), cookieOnly.error());
        ApiClient.Resp wrongCsrf = api.send(api.request("/api/dead-letters/" + id + "/discard").header("Cookie", c)
                .header("X-Layover-Token", "not-the-csrf-token").header("Origin", origin())
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(403, wrongCsrf.status());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));

        ApiClient.Resp ok = api.send(api.request("/api/dead-letters/" + id + "/discard").header("Cookie", c)
                .header("X-Layover-Token", csrf).header("Origin", origin()).header("Sec-Fetch-Site", "same-origin")
                .header("X-Layover-Operator", "bob").POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(200, ok.status(), ok.body());
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", id));
        assertEquals("bob", db.value("select actor from layover.audit_log where action = 'discard'"));
    }

    @Test
    void crossOriginPostsAreRefusedWith403AndChangeNothing(TestDatabase db) {
        start(db, Fixtures.options());
        long id = Fixtures.deadLetter("a").insert(db);
        String path = "/api/dead-letters/" + id + "/replay";
        List<String[]> attacks = List.of(
                new String[] {"Origin", "http://evil.example"},
                new String[] {"Origin", "http://127.0.0.1:" + (console.port() + 1)},
                new String[] {"Origin", "null"},
                new String[] {"Referer", "http://evil.example/page"},
                new String[] {"Sec-Fetch-Site", "cross-site"},
                new String[] {"Sec-Fetch-Site", "same-site"});
        for (String[] h : attacks) {
            ApiClient.Resp r = api.send(api.authorized(path).header(h[0], h[1]).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{}")));
            assertEquals(403, r.status(), h[0] + ": " + h[1] + " -> " + r.body());
            assertTrue(r.error().contains("cross-origin"), r.error());
        }
        ApiClient.Resp breaker = api.send(api.authorized("/api/breakers/k/force-open").header("Origin", "http://evil.example")
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(403, breaker.status());
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        assertEquals(0, db.count("select count(*) from layover.breakers"));

        ApiClient.Resp sameOrigin = api.send(api.authorized(path).header("Origin", origin())
                .header("Referer", origin() + "/").header("Sec-Fetch-Site", "same-origin")
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(200, sameOrigin.status(), sameOrigin.body());
    }

    @Test
    void readOnlyModeRefusesEveryPostAndEveryRevealWith403(TestDatabase db) {
        start(db, Fixtures.options().withReadOnly(true));
        long id = Fixtures.deadLetter("a").args("{\"name\":\"a\",\"n\":1,\"token\":\"abc\"}").insert(db);
        for (String path : List.of("/api/dead-letters/" + id + "/replay", "/api/dead-letters/" + id + "/discard",
                "/api/dead-letters/" + id + "/move-back", "/api/dead-letters/replay", "/api/dead-letters/discard",
                "/api/dead-letters/move-back", "/api/breakers/k/force-open", "/api/breakers/k/force-close")) {
            ApiClient.Resp r = api.post(path, "{\"filter\": {}}");
            assertEquals(403, r.status(), path);
            assertTrue(r.error().contains("read-only"), r.error());
        }
        assertEquals(403, api.get("/api/dead-letters/" + id + "?reveal=true").status());
        assertEquals(200, api.get("/api/dead-letters/" + id).status());
        assertTrue(api.get("/api/session").json().get("readOnly").asBoolean());
        assertFalse(api.get("/api/dead-letters/" + id).json().at("/actions/replay").asBoolean());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
        assertEquals(0, db.count("select count(*) from layover.audit_log"));
    }

    @Test
    void aRevealNeedsTheTokenInAHeaderAndTheSameOrigin(TestDatabase db) {
        start(db, Fixtures.options());
        long id = Fixtures.deadLetter("a").args("{\"name\":\"a\",\"n\":1,\"token\":\"abc\"}").insert(db);
        HttpCookie cookie = HttpCookie.parse(api.send(api.request("/?token=" + Fixtures.TOKEN))
                .headers().firstValue("Set-Cookie").orElseThrow()).get(0);
        ApiClient.Resp r = api.send(api.request("/api/dead-letters/" + id + "?reveal=true")
                .header("Cookie", cookie.getName() + "=" + cookie.getValue()));
        assertEquals(403, r.status());
        ApiClient.Resp cross = api.send(api.authorized("/api/dead-letters/" + id + "?reveal=true")
                .header("Sec-Fetch-Site", "cross-site"));
        assertEquals(403, cross.status());
        assertEquals(0, db.count("select count(*) from layover.audit_log"));
    }

    @Test
    void everyResponseCarriesTheSecurityHeaders(TestDatabase db) {
        start(db, Fixtures.options());
        for (ApiClient.Resp r : List.of(api.get("/api/overview"), api.get("/"), api.get("/static/console.js"),
                api.get("/api/dead-letters/404404"), api.send(api.request("/api/overview")), api.get("/api/history"),
                api.get("/api/job-runs/work/a"), api.get("/api/provider-keys/k"), api.get("/api/dead-letters/%00"),
                api.get("/api/time-series"), api.get("/api/time-series/depth.svg"), api.get("/api/time-series/pie.svg"))) {
            String csp = r.headers().firstValue("Content-Security-Policy").orElseThrow();
            assertTrue(csp.contains("default-src 'self'"), csp);
            assertTrue(csp.contains("script-src 'self'"), csp);
            assertFalse(csp.contains("unsafe-inline"), csp);
            assertTrue(csp.contains("frame-ancestors 'none'"), csp);
            assertEquals("nosniff", r.headers().firstValue("X-Content-Type-Options").orElseThrow());
            assertEquals("no-referrer", r.headers().firstValue("Referrer-Policy").orElseThrow());
            assertEquals("no-store", r.headers().firstValue("Cache-Control").orElseThrow());
        }
        assertEquals("text/javascript; charset=utf-8", api.get("/static/console.js").headers().firstValue("Content-Type").orElseThrow());
    }

    @Test
    void aConsoleOnLoopbackRefusesAForeignHostNameAgainstDnsRebinding(TestDatabase db) throws Exception {
        start(db, Fixtures.options());
        assertTrue(rawGet("evil.example:" + console.port()).startsWith("HTTP/1.1 403"));
        assertTrue(rawGet("localhost:" + console.port()).startsWith("HTTP/1.1 200"));
        assertTrue(rawGet("127.0.0.1:" + console.port()).startsWith("HTTP/1.1 200"));
    }

    private String rawGet(String host) throws Exception {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), console.port())) {
            OutputStream out = s.getOutputStream();
            out.write(("GET /api/session HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + Fixtures.TOKEN
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            in.transferTo(buf);
            return buf.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void aGeneratedTokenIsLongAndRandomAndAConfiguredOneMustNotBeShort(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, ConsoleOptions.defaults());
        ReplayConsole second = ReplayConsole.start(layover, ConsoleOptions.defaults());
        try {
            assertTrue(console.token().length() >= 43, console.token());
            assertFalse(console.token().equals(second.token()));
            assertEquals("127.0.0.1", console.url().getHost());
            assertEquals(200, new ApiClient(console).get("/api/session").status());
            assertEquals(401, new ApiClient(console.url(), second.token()).get("/api/session").status());
        } finally {
            second.close();
        }
        assertThrows(IllegalArgumentException.class, () -> ConsoleOptions.defaults().withToken("short"));
        assertThrows(IllegalArgumentException.class, () -> ConsoleOptions.defaults().withToken("has a space in it, long enough"));
    }

    @Test
    void anOperatorNameWithControlCharactersIs400(TestDatabase db) {
        start(db, Fixtures.options());
        long id = Fixtures.deadLetter("a").insert(db);
        ApiClient.Resp r = api.send(api.request("/api/dead-letters/" + id + "/discard")
                .header("Authorization", "Bearer " + Fixtures.TOKEN).header("X-Layover-Operator", "x".repeat(201))
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(400, r.status());
        ApiClient.Resp dflt = api.send(api.request("/api/dead-letters/" + id + "/discard")
                .header("Authorization", "Bearer " + Fixtures.TOKEN).POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(200, dflt.status());
        assertEquals("console", db.value("select actor from layover.audit_log where action = 'discard'"));
    }

    @Test
    void thePageScriptNeverHandsDataToAnApiThatParsesHtml() throws Exception {
        String js;
        try (InputStream in = ReplayConsole.class.getResourceAsStream("/dev/layover/console/static/console.js")) {
            js = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        for (String api : List.of("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                "new Function", "createContextualFragment", "DOMParser", "setTimeout('", "setInterval('")) {
            assertFalse(js.contains(api), "console.js uses " + api);
        }
        String html;
        try (InputStream in = ReplayConsole.class.getResourceAsStream("/dev/layover/console/static/index.html")) {
            html = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertFalse(html.contains("<script>"), "no inline script");
        assertFalse(html.contains("style="), "no inline style");
        assertFalse(html.contains(" on"), "no inline event handler");
    }

    @Test
    void aPostBodyThatIsNotJsonIs415AndAGetOnAPostEndpointIs405(TestDatabase db) {
        start(db, Fixtures.options());
        long id = Fixtures.deadLetter("a").insert(db);
        ApiClient.Resp form = api.send(api.authorized("/api/dead-letters/" + id + "/discard")
                .header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString("note=x")));
        assertEquals(415, form.status());
        assertEquals(405, api.get("/api/breakers/k/force-open").status());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
    }
}
