package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.Layover;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.core.provider.state.ProviderStates;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.net.http.HttpRequest;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Limits at run time from the console (issue 19): a key's override set and reverted through
 * {@code ProviderStates}, read back from {@code layover.limit_overrides}, each audited with the
 * limits before and after; bad input answered 400 naming the field, nothing written.
 */
@DatabaseTest
class ConsoleLimitsTest {

    private Layover layover;
    private ReplayConsole console;
    private ApiClient api;

    @BeforeEach
    void start(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build(); // not started: nothing configures the keys
        console = ReplayConsole.start(db.dataSource(), Fixtures.options());
        api = new ApiClient(console);
    }

    @AfterEach
    void stop() {
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }

    @Test
    void anOperatorsLimitIsSetReadBackAndRevertedAndBothAreAudited(TestDatabase db) {
        ApiClient.Resp set = api.post("/api/limits", "{\"key\": \"openai:gpt-4o\", \"requestsPerMinute\": 600, "
                + "\"maxInFlight\": 4, \"reason\": \"tier lowered\"}");
        assertEquals(200, set.status(), set.body());
        assertEquals("set_limit", set.json().get("action").asText());
        assertEquals("openai:gpt-4o", set.json().get("key").asText());
        assertTrue(set.json().get("before").isNull(), "no override before");
        assertEquals(600.0, set.json().at("/after/requestsPerMinute").asDouble());
        assertEquals(4, set.json().at("/after/maxInFlight").asInt());
        assertTrue(set.json().at("/after/tokensPerMinute").isNull(), "left as configured");

        assertEquals(600.0, ((Number) db.value("select requests_per_minute from layover.limit_overrides "
                + "where limit_key = 'openai:gpt-4o'")).doubleValue());
        assertEquals(4, ((Number) db.value("select max_in_flight from layover.limit_overrides "
                + "where limit_key = 'openai:gpt-4o'")).intValue());
        assertNull(db.value("select tokens_per_minute from layover.limit_overrides where limit_key = 'openai:gpt-4o'"));
        assertEquals("by alice: tier lowered",
                db.value("select reason from layover.limit_overrides where limit_key = 'openai:gpt-4o'"));
        assertEquals(LimitOverride.requestsPerMinute(600).withMaxInFlight(4),
                ProviderStates.create(db.dataSource()).limitOverride("openai:gpt-4o"), "what the workers read");

        JsonNode audit = api.get("/api/audit").json().get("items").get(0);
        assertEquals("set_limit", audit.get("action").asText());
        assertEquals("alice", audit.get("actor").asText());
        assertEquals("limit:openai:gpt-4o", audit.get("subject").asText());
        assertEquals("tier lowered", audit.get("note").asText());
        assertTrue(audit.at("/details/before").isNull(), audit.toString());
        assertEquals(600.0, audit.at("/details/after/requestsPerMinute").asDouble());
        assertEquals(set.json().get("auditId").asLong(), audit.get("id").asLong());

        JsonNode all = api.get("/api/limits").json();
        assertEquals(1, all.get("items").size());
        JsonNode row = all.at("/items/0");
        assertEquals("openai:gpt-4o", row.get("key").asText());
        assertEquals(600.0, row.get("requestsPerMinute").asDouble());
        assertEquals(4, row.get("maxInFlight").asInt());
        assertEquals("by alice: tier lowered", row.get("reason").asText());
        assertFalse(row.get("setBy").asText().isEmpty());
        assertFalse(row.get("setAt").asText().isEmpty());
        assertTrue(row.get("bucket").isNull(), "no worker wrote a bucket row for the key");
        assertEquals(row, api.get("/api/provider-keys/openai%3Agpt-4o").json().get("limitOverride"),
                "the key page shows the same row");
        assertTrue(api.get("/api/provider-keys/other").json().get("limitOverride").isNull());

        ApiClient.Resp again = api.post("/api/limits", "{\"key\": \"openai:gpt-4o\", \"tokensPerMinute\": 90000}");
        assertEquals(200, again.status(), again.body());
        assertEquals(600.0, again.json().at("/before/requestsPerMinute").asDouble());
        assertTrue(again.json().at("/after/requestsPerMinute").isNull(), "a set replaces the whole override");
        assertEquals(LimitOverride.tokensPerMinute(90000), ProviderStates.create(db.dataSource()).limitOverride("openai:gpt-4o"));
        assertEquals("by alice", db.value("select reason from layover.limit_overrides where limit_key = 'openai:gpt-4o'"));

        ApiClient.Resp revert = api.post("/api/limits/revert", "{\"key\": \"openai:gpt-4o\", \"reason\": \"tier back\"}");
        assertEquals(200, revert.status(), revert.body());
        assertEquals("revert_limit", revert.json().get("action").asText());
        assertEquals(90000.0, revert.json().at("/removed/tokensPerMinute").asDouble());
        assertEquals(0, db.count("select count(*) from layover.limit_overrides"));
        audit = api.get("/api/audit").json().get("items").get(0);
        assertEquals("revert_limit", audit.get("action").asText());
        assertEquals("limit:openai:gpt-4o", audit.get("subject").asText());
        assertEquals("tier back", audit.get("note").asText());
        assertEquals(90000.0, audit.at("/details/removed/tokensPerMinute").asDouble());
        assertEquals(0, api.get("/api/limits").json().get("items").size());

        ApiClient.Resp nothing = api.post("/api/limits/revert", "{\"key\": \"openai:gpt-4o\"}");
        assertEquals(404, nothing.status(), nothing.body());
        assertTrue(nothing.error().contains("no limits set by an operator"), nothing.error());
        assertEquals(3, db.count("select count(*) from layover.audit_log where subject = 'limit:openai:gpt-4o'"),
                "a revert of nothing is not audited");
    }

    @Test
    void theListShowsEveryOverrideNewestFirstWithTheKeysBucketAndConcurrencyRows(TestDatabase db) {
        db.update("INSERT INTO layover.buckets (provider_key, requests_per_minute, burst_ms) "
                + "VALUES ('openai:gpt-4o', 500, 1000)");
        assertEquals(200, api.post("/api/limits", "{\"key\": \"tenant:42\", \"maxInFlight\": 2}").status());
        assertEquals(200, api.post("/api/limits", "{\"key\": \"openai:gpt-4o\", \"requestsPerMinute\": 500.5, "
                + "\"inputTokensPerMinute\": 1e6, \"outputTokensPerMinute\": 2000}").status());
        JsonNode items = api.get("/api/limits").json().get("items");
        assertEquals(List.of("openai:gpt-4o", "tenant:42"), List.of(items.at("/0/key").asText(), items.at("/1/key").asText()),
                "newest first");
        assertEquals(500.0, items.at("/0/bucket/requestsPerMinute").asDouble(), "the bucket row as the database has it");
        assertEquals(1e6, items.at("/0/inputTokensPerMinute").asDouble());
        assertTrue(items.at("/1/bucket").isNull());
        JsonNode one = api.get("/api/limits?key=tenant%3A42").json().get("items");
        assertEquals(1, one.size());
        assertEquals(2, one.at("/0/maxInFlight").asInt());
        assertTrue(one.at("/0/requestsPerMinute").isNull());
        assertEquals(0, api.get("/api/limits?key=nobody").json().get("items").size());
        assertFalse(api.get("/api/limits").json().get("more").asBoolean());
    }

    @Test
    void badInputIs400NamingTheFieldAndChangesNothing(TestDatabase db) {
        String longKey = "k".repeat(201);
        Object[][] probes = {
            {"{\"key\": \"\", \"requestsPerMinute\": 60}", "key", "key is required"},
            {"{\"key\": \"   \", \"requestsPerMinute\": 60}", "key", "key is required"},
            {"{\"requestsPerMinute\": 60}", "key", "key is required"},
            {"{\"key\": 7, \"requestsPerMinute\": 60}", "key", "must be a string"},
            {"{\"key\": \"" + longKey + "\", \"requestsPerMinute\": 60}", "key", "at most 200 characters"},
            {"{\"key\": \"a\\u0000b\", \"requestsPerMinute\": 60}", "key", "NUL"},
            {"{\"key\": \"k\", \"requestsPerMinute\": \"600\"}", "requestsPerMinute", "must be a number"},
            {"{\"key\": \"k\", \"tokensPerMinute\": true}", "tokensPerMinute", "must be a number"},
            {"{\"key\": \"k\", \"requestsPerMinute\": 0}", "requestsPerMinute", "above 0"},
            {"{\"key\": \"k\", \"inputTokensPerMinute\": -5}", "inputTokensPerMinute", "above 0"},
            {"{\"key\": \"k\", \"outputTokensPerMinute\": 1e400}", "outputTokensPerMinute", "at most 1,000,000,000,000"},
            {"{\"key\": \"k\", \"requestsPerMinute\": 1000000000001}", "requestsPerMinute", "at most 1,000,000,000,000"},
            {"{\"key\": \"k\", \"maxInFlight\": 0}", "maxInFlight", "1 to 100,000"},
            {"{\"key\": \"k\", \"maxInFlight\": -1}", "maxInFlight", "1 to 100,000"},
            {"{\"key\": \"k\", \"maxInFlight\": 100001}", "maxInFlight", "1 to 100,000"},
            {"{\"key\": \"k\", \"maxInFlight\": 99999999999999999999999}", "maxInFlight", "1 to 100,000"},
            {"{\"key\": \"k\", \"maxInFlight\": 2.5}", "maxInFlight", "whole number"},
            {"{\"key\": \"k\", \"maxInFlight\": \"4\"}", "maxInFlight", "whole number"},
            {"{\"key\": \"k\", \"requestPerMinute\": 60}", "requestPerMinute", "unknown field 'requestPerMinute'"},
            {"{\"key\": \"k\", \"requestsPerMinute\": 60, \"weight\": 2}", "weight", "unknown field"},
            {"{\"key\": \"k\", \"requestsPerMinute\": 60, \"reason\": 5}", "reason", "must be a string"},
            {"{\"key\": \"k\", \"requestsPerMinute\": 60, \"reason\": \"" + "r".repeat(501) + "\"}", "reason",
                "longer than 500"},
            {"{\"key\": \"k\"}", "", "set at least one of requestsPerMinute"},
            {"{\"key\": \"k\", \"requestsPerMinute\": null, \"maxInFlight\": null}", "", "set at least one of"},
            {"[1]", "", "must be a JSON object"},
            {"{\"key\": ", "", "not valid JSON"},
        };
        for (Object[] p : probes) {
            ApiClient.Resp r = api.post("/api/limits", (String) p[0]);
            assertEquals(400, r.status(), p[0] + " -> " + r.body());
            assertEquals(p[1], r.json().path("field").asText(), p[0] + " -> " + r.body());
            assertTrue(r.error().contains((String) p[2]), p[0] + " -> " + r.error());
            for (String dbWords : List.of("ERROR:", "PSQLException", "violates", "ConfigurationException")) {
                assertFalse(r.error().contains(dbWords), p[0] + " leaks: " + r.error());
            }
        }
        for (String body : List.of("{}", "{\"key\": \"\"}", "{\"key\": \"" + longKey + "\"}", "{\"key\": \"a\\u0000b\"}",
                "{\"key\": [1]}", "{\"key\": \"k\", \"requestsPerMinute\": 60}")) {
            ApiClient.Resp r = api.post("/api/limits/revert", body);
            assertEquals(400, r.status(), body + " -> " + r.body());
            assertTrue(List.of("key", "requestsPerMinute").contains(r.json().path("field").asText()), body + " -> " + r.body());
        }
        for (String q : List.of("?key=" + "k".repeat(201), "?key=a%00b")) {
            ApiClient.Resp r = api.get("/api/limits" + q);
            assertEquals(400, r.status(), q + " -> " + r.body());
            assertEquals("key", r.json().path("field").asText(), q + " -> " + r.body());
        }
        assertEquals(0, db.count("select count(*) from layover.limit_overrides"));
        assertEquals(0, db.count("select count(*) from layover.audit_log"));
    }

    @Test
    void aLimitIsNotSetWithoutATokenFromAnotherOriginOrInReadOnlyMode(TestDatabase db) {
        String body = "{\"key\": \"k\", \"requestsPerMinute\": 60}";
        ApiClient.Resp noToken = api.send(api.request("/api/limits")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)));
        assertEquals(401, noToken.status(), noToken.body());
        for (String path : List.of("/api/limits", "/api/limits/revert")) {
            ApiClient.Resp crossOrigin = api.send(api.authorized(path).header("Origin", "http://evil.example")
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)));
            assertEquals(403, crossOrigin.status(), crossOrigin.body());
            assertTrue(crossOrigin.error().contains("cross-origin"), crossOrigin.error());
        }
        assertEquals(405, api.get("/api/limits/revert").status());
        console.close();
        console = ReplayConsole.start(db.dataSource(), Fixtures.options().withReadOnly(true));
        api = new ApiClient(console);
        ApiClient.Resp ro = api.post("/api/limits", body);
        assertEquals(403, ro.status(), ro.body());
        assertTrue(ro.error().contains("read-only"), ro.error());
        assertEquals(403, api.post("/api/limits/revert", "{\"key\": \"k\"}").status());
        assertEquals(200, api.get("/api/limits").status(), "reading is allowed");
        assertEquals(0, db.count("select count(*) from layover.limit_overrides"));
        assertEquals(0, db.count("select count(*) from layover.audit_log"));
    }
}
