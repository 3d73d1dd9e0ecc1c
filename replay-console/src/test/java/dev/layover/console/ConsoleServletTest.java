package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.net.HttpCookie;
import java.net.http.HttpRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link ConsoleServlet} mounted under a path of an application ({@code /app/layover/*}): every
 * address is relative to the mount point, the session cookie is the mount point's; with external
 * authentication no console token is asked for, the audit log names the application's user, and
 * CSRF, same-origin and the security headers still hold.
 */
@DatabaseTest
class ConsoleServletTest {

    private Layover layover;
    private MountedServer app;

    @AfterEach
    void stop() throws Exception {
        if (app != null) {
            app.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }

    private ApiClient mount(TestDatabase db, ConsoleOptions options, boolean appAuthentication) throws Exception {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        app = new MountedServer(ConsoleServlet.create(layover, options), appAuthentication);
        return new ApiClient(app.url(), Fixtures.TOKEN);
    }

    @Test
    void mountedUnderAPathThePageItsAssetsAndTheApiAreRelativeToTheMountPoint(TestDatabase db) throws Exception {
        ApiClient api = mount(db, Fixtures.options(), false);
        long id = Fixtures.deadLetter("m1").insert(db);

        ApiClient.Resp bare = api.send(api.request("/app/layover").GET());
        assertEquals(308, bare.status());
        assertEquals("layover/", bare.headers().firstValue("Location").orElseThrow());

        ApiClient.Resp login = api.send(api.request("?token=" + Fixtures.TOKEN).GET());
        assertEquals(303, login.status(), login.body());
        assertEquals("./", login.headers().firstValue("Location").orElseThrow());
        String setCookie = login.headers().firstValue("Set-Cookie").orElseThrow();
        assertTrue(setCookie.contains("Path=/app/layover/"), setCookie);
        HttpCookie cookie = HttpCookie.parse(setCookie).get(0);
        String c = cookie.getName() + "=" + cookie.getValue();

        ApiClient.Resp page = api.send(api.request("").header("Cookie", c).GET());
        assertEquals(200, page.status());
        assertTrue(page.body().contains("src=\"static/console.js\"") && page.body().contains("href=\"static/console.css\""),
                "relative asset addresses: " + page.body());
        assertFalse(page.body().contains("\"/static"), page.body());
        assertEquals(200, api.send(api.request("static/console.js").header("Cookie", c).GET()).status());
        ApiClient.Resp session = api.send(api.request("api/session").header("Cookie", c).GET());
        assertEquals(200, session.status(), session.body());
        String csrf = session.json().get("csrfToken").asText();

        ApiClient.Resp discard = api.send(api.request("api/dead-letters/" + id + "/discard").header("Cookie", c)
                .header("X-Layover-Token", csrf).header("Origin", "http://127.0.0.1:" + app.port())
                .header("Sec-Fetch-Site", "same-origin").POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(200, discard.status(), discard.body());
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", id));
        assertEquals(401, api.send(api.request("api/overview").GET()).status(), "a token is still required");
        assertTrue(api.get("api/overview").headers().firstValue("Content-Security-Policy").orElseThrow()
                .contains("script-src 'self'"));
    }

    @Test
    void withExternalAuthenticationTheApplicationsUserActsAndCsrfAndSameOriginStillHold(TestDatabase db)
            throws Exception {
        ApiClient api = mount(db, ConsoleOptions.defaults().withExternalAuthentication(true), true);
        long id = Fixtures.deadLetter("e1").insert(db);
        String origin = "http://127.0.0.1:" + app.port();

        assertEquals(401, api.send(api.request("api/session").GET()).status(), "the application's security decides");
        ApiClient.Resp session = api.send(api.request("api/session").header(MountedServer.USER_HEADER, "carol").GET());
        assertEquals(200, session.status(), session.body());
        assertEquals("external", session.json().get("auth").asText());
        String csrf = session.json().get("csrfToken").asText();
        assertFalse(csrf.isEmpty());
        String davesCsrf = api.send(api.request("api/session").header(MountedServer.USER_HEADER, "dave").GET())
                .json().get("csrfToken").asText();
        assertNotEquals(csrf, davesCsrf, "one CSRF token per user");
        ApiClient.Resp page = api.send(api.request("").header(MountedServer.USER_HEADER, "carol").GET());
        assertEquals(200, page.status());
        assertTrue(page.headers().firstValue("Content-Security-Policy").orElseThrow().contains("default-src 'self'"));

        String path = "api/dead-letters/" + id + "/discard";
        ApiClient.Resp noCsrf = api.send(api.request(path).header(MountedServer.USER_HEADER, "carol")
                .header("Origin", origin).POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(403, noCsrf.status(), noCsrf.body());
        ApiClient.Resp othersCsrf = api.send(api.request(path).header(MountedServer.USER_HEADER, "carol")
                .header("X-Layover-Token", davesCsrf).header("Origin", origin).POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(403, othersCsrf.status(), othersCsrf.body());
        ApiClient.Resp crossSite = api.send(api.request(path).header(MountedServer.USER_HEADER, "carol")
                .header("X-Layover-Token", csrf).header("Origin", "http://evil.example")
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(403, crossSite.status(), crossSite.body());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));

        ApiClient.Resp ok = api.send(api.request(path).header(MountedServer.USER_HEADER, "carol")
                .header("X-Layover-Token", csrf).header("Origin", origin).header("X-Layover-Operator", "mallory")
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(200, ok.status(), ok.body());
        assertEquals("carol", db.value("select actor from layover.audit_log where action = 'discard'"),
                "the application's user, not what a header claims");
        assertEquals(401, api.send(api.request("api/overview").header("Authorization", "Bearer " + Fixtures.TOKEN)
                .GET()).status(), "a console token does not get past the application's security");
    }

    @Test
    void readOnlyStillHoldsWithExternalAuthentication(TestDatabase db) throws Exception {
        ApiClient api = mount(db, ConsoleOptions.defaults().withExternalAuthentication(true).withReadOnly(true), true);
        long id = Fixtures.deadLetter("r1").insert(db);
        String csrf = api.send(api.request("api/session").header(MountedServer.USER_HEADER, "carol").GET())
                .json().get("csrfToken").asText();
        ApiClient.Resp r = api.send(api.request("api/dead-letters/" + id + "/replay").header(MountedServer.USER_HEADER,
                "carol").header("X-Layover-Token", csrf).POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(403, r.status());
        assertTrue(r.error().contains("read-only"), r.error());
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void withExternalAuthenticationARequestWithoutAUserIsRefusedUnlessAnonymousAccessWasAllowed(TestDatabase db)
            throws Exception {
        ApiClient api = mount(db, ConsoleOptions.defaults().withExternalAuthentication(true), false);
        long id = Fixtures.deadLetter("a1").insert(db);
        ApiClient.Resp overview = api.send(api.request("api/overview").GET());
        assertEquals(401, overview.status(), overview.body());
        assertTrue(overview.error().contains("signed-in user"), overview.error());
        ApiClient.Resp page = api.send(api.request("").GET());
        assertEquals(401, page.status());
        assertFalse(page.body().contains("<script"), "no console page without a user: " + page.body());
        ApiClient.Resp session = api.send(api.request("api/session").GET());
        assertEquals(401, session.status(), "no CSRF token for anyone: " + session.body());
        ApiClient.Resp discard = api.send(api.request("api/dead-letters/" + id + "/discard")
                .header("Origin", "http://127.0.0.1:" + app.port()).POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(401, discard.status(), discard.body());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
    }

    @Test
    void anAnonymousRequestLetInReadsOnlyUnlessAnonymousWritesWereAllowed(TestDatabase db) throws Exception {
        ApiClient api = mount(db, ConsoleOptions.defaults().withExternalAuthentication(true).withAnonymousAccess(true),
                false);
        long id = Fixtures.deadLetter("a2").insert(db);
        String origin = "http://127.0.0.1:" + app.port();
        assertEquals(200, api.send(api.request("api/overview").GET()).status());
        assertEquals(200, api.send(api.request("api/dead-letters/" + id).GET()).status());
        ApiClient.Resp session = api.send(api.request("api/session").GET());
        assertEquals(200, session.status(), session.body());
        assertTrue(session.json().get("readOnly").asBoolean(), session.body());
        assertTrue(session.json().get("anonymous").asBoolean(), session.body());
        assertFalse(session.json().get("revealAllowed").asBoolean(), session.body());
        String csrf = session.json().get("csrfToken").asText();
        ApiClient.Resp detail = api.send(api.request("api/dead-letters/" + id).GET());
        assertFalse(detail.json().get("actions").get("discard").asBoolean(), detail.body());
        ApiClient.Resp discard = api.send(api.request("api/dead-letters/" + id + "/discard")
                .header("X-Layover-Token", csrf).header("Origin", origin).POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(403, discard.status(), discard.body());
        assertTrue(discard.error().contains("read-only"), discard.error());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
        app.close();
        app = null;
        layover.stop();

        api = mount(db, ConsoleOptions.defaults().withExternalAuthentication(true).withAnonymousAccess(true)
                .withAnonymousWrites(true), false);
        origin = "http://127.0.0.1:" + app.port();
        session = api.send(api.request("api/session").GET());
        assertFalse(session.json().get("readOnly").asBoolean(), session.body());
        ApiClient.Resp allowed = api.send(api.request("api/dead-letters/" + id + "/discard")
                .header("X-Layover-Token", session.json().get("csrfToken").asText()).header("Origin", origin)
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertEquals(200, allowed.status(), allowed.body());
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", id));
        assertEquals("console", db.value("select actor from layover.audit_log where action = 'discard'"),
                "no user: the default operator");
    }
}
