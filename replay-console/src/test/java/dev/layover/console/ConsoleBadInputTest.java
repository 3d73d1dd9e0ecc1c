package dev.layover.console;

import static dev.layover.console.ApiClient.enc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Text the database cannot store (a NUL character, a lone surrogate) in any filter, search box,
 * path parameter or JSON body is a 400 that names the field: never a 5xx, never the database's
 * words. Every endpoint that takes text is probed.
 */
@DatabaseTest
class ConsoleBadInputTest {

    private static final String NUL = "a\u0000b";
    private static final String JSON_NUL = "a\\u0000b";
    private static final String JSON_LONE_SURROGATE = "a\\ud800b";

    private Layover layover;
    private ReplayConsole console;
    private ApiClient api;
    private long id;

    @BeforeEach
    void start(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
        id = Fixtures.deadLetter("bad-input").insert(db);
    }

    @AfterEach
    void stop() {
        console.close();
        layover.stop();
    }

    private static void assertRefused(ApiClient.Resp r, String field, String probe) {
        assertEquals(400, r.status(), probe + " -> " + r.body());
        assertEquals(field, r.json().path("field").asText(), probe + " -> " + r.body());
        String error = r.error();
        assertTrue(error.startsWith(field + " contains a"), probe + " -> " + error);
        assertTrue(error.contains("cannot store"), error);
        for (String dbWords : List.of("ERROR:", "invalid byte sequence", "PSQLException", "unsupported Unicode", "0x00")) {
            assertFalse(error.contains(dbWords), probe + " leaks the database's words: " + error);
        }
    }

    @Test
    void aNulInAnyQueryParameterIs400NamingIt() {
        String n = enc(NUL);
        String[][] probes = {
            {"/api/dead-letters?text=" + n, "text"},
            {"/api/dead-letters?jobType=" + n, "jobType"},
            {"/api/dead-letters?providerKey=" + n, "providerKey"},
            {"/api/dead-letters?failureType=" + n, "failureType"},
            {"/api/dead-letters?cursor=" + n, "cursor"},
            {"/api/dead-letters/facets?text=" + n, "text"},
            {"/api/dead-letters/facets?providerKey=" + n, "providerKey"},
            {"/api/dead-letters/preview?text=" + n, "text"},
            {"/api/dead-letters/preview?action=" + n, "action"},
            {"/api/dead-letters/" + id + "?reveal=" + n, "reveal"},
            {"/api/jobs?jobType=" + n, "jobType"},
            {"/api/jobs?providerKey=" + n, "providerKey"},
            {"/api/jobs?why=" + n, "why"},
            {"/api/jobs?cursor=" + n, "cursor"},
            {"/api/audit?before=" + n, "before"},
            {"/api/history?q=" + n, "q"},
            {"/api/history?jobType=" + n, "jobType"},
            {"/api/history?providerKey=" + n, "providerKey"},
            {"/api/history?outcome=" + n, "outcome"},
            {"/api/history?cursor=" + n, "cursor"},
            {"/api/time-series?providerKey=" + n, "providerKey"},
            {"/api/time-series?jobType=" + n, "jobType"},
            {"/api/time-series?resolution=" + n, "resolution"},
            {"/api/time-series/limits.svg?providerKey=" + n, "providerKey"},
            {"/api/fairness?providerKey=" + n, "providerKey"},
            {"/api/limits?key=" + n, "key"},
            {"/api/batches?state=" + n, "state"},
            {"/api/batches?providerKey=" + n, "providerKey"},
            {"/api/batches?cursor=" + n, "cursor"},
            {"/api/batches/1?cursor=" + n, "cursor"},
        };
        for (String[] p : probes) {
            assertRefused(api.get(p[0]), p[1], p[0]);
        }
        assertRefused(api.get("/api/dead-letters?" + n + "=x"), "a query parameter name", "a NUL in a name");
    }

    /**
     * Jetty refuses an encoded NUL in a path before the console sees it (its URI parser allows no
     * exception), so the answer cannot name the parameter; it is still a JSON 400 that says what
     * is wrong, and nothing is changed.
     */
    @Test
    void aNulInAnyPathParameterIs400SayingWhy(TestDatabase db) {
        String n = enc(NUL);
        List<ApiClient.Resp> answers = List.of(
                api.get("/api/dead-letters/" + n),
                api.post("/api/dead-letters/" + n + "/replay", "{}"),
                api.post("/api/dead-letters/" + n + "/discard", "{}"),
                api.post("/api/dead-letters/" + n + "/move-back", "{}"),
                api.post("/api/breakers/" + n + "/force-open", "{}"),
                api.post("/api/breakers/" + n + "/force-close", "{}"),
                api.post("/api/jobs/" + n + "/x/cancel", "{}"),
                api.post("/api/jobs/work/" + n + "/cancel", "{}"),
                api.post("/api/pauses/job-type/" + n + "/pause", "{}"),
                api.post("/api/pauses/job-type/" + n + "/resume", "{}"),
                api.post("/api/pauses/key/" + n + "/pause", "{}"),
                api.post("/api/pauses/key/" + n + "/resume", "{}"),
                api.get("/api/provider-keys/" + n),
                api.get("/api/job-runs/" + n + "/x"),
                api.get("/api/job-runs/work/" + n),
                api.get("/api/batches/" + n));
        for (ApiClient.Resp r : answers) {
            assertEquals(400, r.status(), r.body());
            assertTrue(r.error().contains("encoded NUL, %00"), r.error());
            assertEquals("nosniff", r.headers().firstValue("X-Content-Type-Options").orElseThrow());
        }
        assertEquals(0, db.count("select count(*) from layover.breakers"));
        assertEquals(0, db.count("select count(*) from layover.pauses"));
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
    }

    /** A container that lets an encoded NUL through reaches the console's own check, which names the parameter. */
    @Test
    void theConsolesOwnCheckOfAPathParameterNamesIt() {
        ApiException e = org.junit.jupiter.api.Assertions.assertThrows(ApiException.class,
                () -> InputText.check(NUL, "providerKey"));
        assertEquals(400, e.status());
        assertEquals("providerKey", e.field());
        assertTrue(e.getMessage().startsWith("providerKey contains a NUL character"), e.getMessage());
    }

    @Test
    void aNulOrALoneSurrogateInAnyJsonBodyIs400NamingTheField(TestDatabase db) {
        for (String bad : List.of(JSON_NUL, JSON_LONE_SURROGATE)) {
            assertRefused(api.post("/api/dead-letters/" + id + "/replay", "{\"note\": \"" + bad + "\"}"), "note", bad);
            assertRefused(api.post("/api/dead-letters/" + id + "/replay",
                    "{\"args\": {\"name\": \"" + bad + "\", \"n\": 1}}"), "args.name", bad);
            assertRefused(api.post("/api/dead-letters/" + id + "/replay",
                    "{\"args\": \"{\\\"name\\\": \\\"" + bad + "\\\"}\"}"), "args", bad);
            assertRefused(api.post("/api/dead-letters/" + id + "/discard", "{\"note\": \"" + bad + "\"}"), "note", bad);
            assertRefused(api.post("/api/dead-letters/" + id + "/move-back", "{\"note\": \"" + bad + "\"}"), "note", bad);
            assertRefused(api.post("/api/dead-letters/replay", "{\"filter\": {\"text\": \"" + bad + "\"}}"),
                    "filter.text", bad);
            assertRefused(api.post("/api/dead-letters/discard", "{\"filter\": {\"providerKeys\": [\"" + bad + "\"]}}"),
                    "filter.providerKeys[0]", bad);
            assertRefused(api.post("/api/dead-letters/move-back", "{\"ids\": [1], \"note\": \"" + bad + "\"}"),
                    "note", bad);
            assertRefused(api.post("/api/breakers/k/force-open", "{\"reason\": \"" + bad + "\"}"), "reason", bad);
            assertRefused(api.post("/api/breakers/k/force-close", "{\"reason\": \"" + bad + "\"}"), "reason", bad);
            assertRefused(api.post("/api/jobs/work/x/cancel", "{\"reason\": \"" + bad + "\"}"), "reason", bad);
            assertRefused(api.post("/api/pauses/key/k/pause", "{\"reason\": \"" + bad + "\"}"), "reason", bad);
            assertRefused(api.post("/api/pauses/job-type/work/pause", "{\"reason\": \"" + bad + "\"}"), "reason", bad);
            assertRefused(api.post("/api/fairness/weights", "{\"pattern\": \"" + bad + "\", \"weight\": 2}"), "pattern", bad);
            assertRefused(api.post("/api/fairness/weights", "{\"pattern\": \"t\", \"weight\": 2, \"reason\": \"" + bad
                    + "\"}"), "reason", bad);
            assertRefused(api.post("/api/fairness/weights/revert", "{\"pattern\": \"" + bad + "\"}"), "pattern", bad);
            assertRefused(api.post("/api/limits", "{\"key\": \"" + bad + "\", \"maxInFlight\": 2}"), "key", bad);
            assertRefused(api.post("/api/limits", "{\"key\": \"k\", \"maxInFlight\": 2, \"reason\": \"" + bad
                    + "\"}"), "reason", bad);
            assertRefused(api.post("/api/limits/revert", "{\"key\": \"" + bad + "\"}"), "key", bad);
        }
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
        assertEquals(0, db.count("select count(*) from layover.audit_log"));
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        assertEquals(0, db.count("select count(*) from layover.breakers"));
        assertEquals(0, db.count("select count(*) from layover.pauses"));
        assertEquals(0, db.count("select count(*) from layover.fairness_weights"));
        assertEquals(0, db.count("select count(*) from layover.limit_overrides"));
    }
}
