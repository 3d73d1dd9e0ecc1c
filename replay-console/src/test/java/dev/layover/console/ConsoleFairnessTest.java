package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.net.http.HttpRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The fair share endpoints (issue 19): a provider key's fairness keys from {@code layover.fairness},
 * bounded; operators' weights set and reverted through {@code ProviderStates}, each audited; bad
 * input answered 400 naming the field.
 */
@DatabaseTest
class ConsoleFairnessTest {

    private Layover layover;
    private ReplayConsole console;
    private ApiClient api;

    @BeforeEach
    void start(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build(); // not started: nothing picks the rows below
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

    /**
     * {@code n} jobs of a fairness key on a provider key, tagged (waiting in its fair queue) or
     * not (due, as a job whose rescheduled run time came).
     */
    static void jobs(TestDatabase db, String providerKey, String fairnessKey, int n, boolean tagged) {
        db.update("""
                INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version, priority,
                                                     consecutive_failures, provider_key, fairness_key, fair_tag)
                SELECT 'fairwork', ? || '-' || g, CASE WHEN ? THEN now() + interval '1 hour' ELSE now() - interval '1 second' END,
                       false, 1, 0, 0, ?, ?, CASE WHEN ? THEN g::float8 END
                FROM generate_series(1, ?) g""",
                providerKey + "/" + fairnessKey, tagged, providerKey, fairnessKey, tagged, n);
    }

    private static String weightBody(String pattern, Object weight, String reason) {
        return "{\"pattern\": " + ApiClient.JSON.valueToTree(pattern) + ", \"weight\": " + weight
                + (reason == null ? "" : ", \"reason\": " + ApiClient.JSON.valueToTree(reason)) + "}";
    }

    @Test
    void aKeysFairnessKeysAreListedMostWaitingFirstWithTheirShare(TestDatabase db) {
        jobs(db, "openai:gpt-4o", "tenant:a", 6, true);
        jobs(db, "openai:gpt-4o", "tenant:b", 3, true);
        jobs(db, "openai:gpt-4o", "tenant:c", 1, false);
        jobs(db, "other:key", "tenant:z", 9, true);
        db.update("INSERT INTO layover.fairness_weights (pattern, weight) VALUES ('tenant:b', 2)");

        JsonNode f = api.get("/api/fairness?providerKey=openai%3Agpt-4o").json();
        assertEquals("openai:gpt-4o", f.get("providerKey").asText());
        assertEquals(3, f.get("flows").asLong());
        assertEquals(9, f.get("waiting").asLong());
        assertEquals(1, f.get("untagged").asLong());
        assertFalse(f.get("more").asBoolean());
        assertTrue(f.get("fairQueue").isNull(), "no pick admitted from the key's fair queue yet");
        JsonNode items = f.get("items");
        assertEquals(3, items.size());
        assertEquals("tenant:a", items.get(0).get("fairnessKey").asText());
        assertEquals(6, items.get(0).get("waiting").asLong());
        assertEquals(1.0 / 3, items.get(0).get("share").asDouble(), 1e-9, "1 of the weights 1 + 2");
        assertEquals("tenant:b", items.get(1).get("fairnessKey").asText());
        assertEquals(2.0, items.get(1).get("weight").asDouble());
        assertEquals(2.0 / 3, items.get(1).get("share").asDouble(), 1e-9);
        assertEquals("tenant:c", items.get(2).get("fairnessKey").asText());
        assertTrue(items.get(2).get("share").isNull(), "nothing waiting in the queue: no share");
        assertEquals(1, items.get(2).get("untagged").asLong());
        assertFalse(items.get(0).has("flows"), "the totals are not repeated on every row");
        assertEquals(1, f.get("weights").size());
        assertEquals("config", f.at("/weights/0/origin").asText());

        JsonNode page = api.get("/api/fairness?providerKey=openai%3Agpt-4o&limit=2").json();
        assertEquals(2, page.get("items").size());
        assertTrue(page.get("more").asBoolean());
        assertEquals(3, page.get("flows").asLong(), "the totals count every fairness key, not only the page");

        JsonNode none = api.get("/api/fairness?providerKey=nobody").json();
        assertEquals(0, none.get("flows").asLong());
        assertEquals(0, none.get("items").size());
    }

    @Test
    void tenThousandFairnessKeysOnOneKeyAnswerOnePageAndTheirTotals(TestDatabase db) {
        db.update("""
                INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version, priority,
                                                     consecutive_failures, provider_key, fairness_key, fair_tag)
                SELECT 'fairwork', 'j' || g || '-' || k, now() + interval '1 hour', false, 1, 0, 0, 'big:key',
                       'tenant:' || g, g + k
                FROM generate_series(1, 10000) g, generate_series(1, CASE WHEN g % 1000 = 0 THEN 3 ELSE 1 END) k""");
        db.update("ANALYZE layover.scheduled_tasks");
        ApiClient.Resp r = api.get("/api/fairness?providerKey=big%3Akey");
        assertEquals(200, r.status(), r.body());
        JsonNode f = r.json();
        assertEquals(10_000, f.get("flows").asLong());
        assertEquals(10_020, f.get("waiting").asLong());
        assertEquals(50, f.get("items").size(), "the default limit");
        assertTrue(f.get("more").asBoolean());
        assertEquals(3, f.at("/items/0/waiting").asLong(), "the fairness keys with the most waiting first");
        assertEquals(3, f.at("/items/9/waiting").asLong());
        assertEquals(1, f.at("/items/10/waiting").asLong());
        assertTrue(r.body().length() < 40_000, "one page, not 10,000 rows: " + r.body().length());
    }

    @Test
    void anOperatorsWeightIsSetAndRevertedAndBothAreAudited(TestDatabase db) {
        jobs(db, "openai:gpt-4o", "tenant:a", 2, true);
        ApiClient.Resp set = api.post("/api/fairness/weights", weightBody("tenant:a", 4, "premium customer"));
        assertEquals(200, set.status(), set.body());
        assertEquals("set_fairness_weight", set.json().get("action").asText());
        assertTrue(set.json().get("before").isNull(), "no weight of its own before: 1");
        assertEquals(4.0, set.json().get("after").asDouble());
        assertEquals(4.0, ((Number) db.value("select layover.fairness_weight('tenant:a')")).doubleValue());
        assertEquals("operator", db.value("select origin from layover.fairness_weights where pattern = 'tenant:a'"));
        assertEquals("by alice: premium customer",
                db.value("select reason from layover.fairness_weights where pattern = 'tenant:a'"));
        JsonNode audit = api.get("/api/audit").json().get("items").get(0);
        assertEquals("set_fairness_weight", audit.get("action").asText());
        assertEquals("alice", audit.get("actor").asText());
        assertEquals("fairness:tenant:a", audit.get("subject").asText());
        assertEquals("premium customer", audit.get("note").asText());
        assertTrue(audit.at("/details/before").isNull(), audit.toString());
        assertEquals(4.0, audit.at("/details/after").asDouble());
        assertEquals(set.json().get("auditId").asLong(), audit.get("id").asLong());

        JsonNode f = api.get("/api/fairness?providerKey=openai%3Agpt-4o").json();
        assertEquals(4.0, f.at("/items/0/weight").asDouble());
        assertEquals("operator", f.at("/weights/0/origin").asText());

        ApiClient.Resp again = api.post("/api/fairness/weights", weightBody("tenant:a", 0.5, null));
        assertEquals(200, again.status(), again.body());
        assertEquals(4.0, again.json().get("before").asDouble());

        ApiClient.Resp revert = api.post("/api/fairness/weights/revert", "{\"pattern\": \"tenant:a\", \"reason\": \"trial over\"}");
        assertEquals(200, revert.status(), revert.body());
        assertEquals(0.5, revert.json().get("removed").asDouble());
        assertEquals(1.0, revert.json().get("now").asDouble(), "no configured weight: 1 again");
        assertEquals(0, db.count("select count(*) from layover.fairness_weights"));
        audit = api.get("/api/audit").json().get("items").get(0);
        assertEquals("revert_fairness_weight", audit.get("action").asText());
        assertEquals("trial over", audit.get("note").asText());
        assertEquals(0.5, audit.at("/details/removed").asDouble());
        assertEquals(1.0, audit.at("/details/now").asDouble());

        ApiClient.Resp nothing = api.post("/api/fairness/weights/revert", "{\"pattern\": \"tenant:a\"}");
        assertEquals(404, nothing.status(), nothing.body());
        assertTrue(nothing.error().contains("no weight set by an operator"), nothing.error());
        assertEquals(3, db.count("select count(*) from layover.audit_log where action like '%fairness_weight'"),
                "a revert of nothing is not audited");
    }

    @Test
    void revertingRestoresTheConfiguredWeightAndAPatternReportsItsOwnRow(TestDatabase db) {
        db.update("INSERT INTO layover.fairness_weights (pattern, weight, configured_weight) VALUES "
                + "('tenant:premium-*', 3, 3), ('tenant:*', 0.5, 0.5)");
        assertEquals(200, api.post("/api/fairness/weights", weightBody("tenant:premium-*", 10, null)).status());
        assertEquals(10.0, ((Number) db.value("select layover.fairness_weight('tenant:premium-7')")).doubleValue());
        ApiClient.Resp revert = api.post("/api/fairness/weights/revert", "{\"pattern\": \"tenant:premium-*\"}");
        assertEquals(200, revert.status(), revert.body());
        assertEquals(10.0, revert.json().get("removed").asDouble());
        assertEquals(3.0, revert.json().get("now").asDouble(), "the pattern's own row: its configured weight again");
        assertEquals("config", db.value("select origin from layover.fairness_weights where pattern = 'tenant:premium-*'"));

        assertEquals(200, api.post("/api/fairness/weights", weightBody("tenant:premium-7", 8, null)).status());
        revert = api.post("/api/fairness/weights/revert", "{\"pattern\": \"tenant:premium-7\"}");
        assertEquals(3.0, revert.json().get("now").asDouble(), "a fairness key: the weight in force, from its pattern");
    }

    @Test
    void badInputIs400NamingTheFieldAndChangesNothing(TestDatabase db) {
        String longPattern = "t".repeat(201);
        Object[][] probes = {
            {"{\"pattern\": \"tenant:a\", \"weight\": \"two\"}", "weight", "must be a number"},
            {"{\"pattern\": \"tenant:a\", \"weight\": true}", "weight", "must be a number"},
            {"{\"pattern\": \"tenant:a\"}", "weight", "weight is required"},
            {"{\"pattern\": \"tenant:a\", \"weight\": null}", "weight", "weight is required"},
            {"{\"pattern\": \"tenant:a\", \"weight\": 0}", "weight", "above 0"},
            {"{\"pattern\": \"tenant:a\", \"weight\": -1.5}", "weight", "above 0"},
            {"{\"pattern\": \"tenant:a\", \"weight\": 1000000.5}", "weight", "at most 1,000,000"},
            {"{\"pattern\": \"tenant:a\", \"weight\": 1e400}", "weight", "at most 1,000,000"},
            {"{\"pattern\": \"\", \"weight\": 2}", "pattern", "pattern is required"},
            {"{\"pattern\": \"   \", \"weight\": 2}", "pattern", "pattern is required"},
            {"{\"weight\": 2}", "pattern", "pattern is required"},
            {"{\"pattern\": 7, \"weight\": 2}", "pattern", "must be a string"},
            {"{\"pattern\": \"" + longPattern + "\", \"weight\": 2}", "pattern", "at most 200 characters"},
            {"{\"pattern\": \"a\\u0000b\", \"weight\": 2}", "pattern", "NUL"},
            {"{\"pattern\": \"tenant:a\", \"weight\": 2, \"reason\": 5}", "reason", "must be a string"},
            {"{\"pattern\": \"tenant:a\", \"weight\": 2, \"reason\": \"" + "r".repeat(501) + "\"}", "reason", "longer than 500"},
        };
        for (Object[] p : probes) {
            ApiClient.Resp r = api.post("/api/fairness/weights", (String) p[0]);
            assertEquals(400, r.status(), p[0] + " -> " + r.body());
            assertEquals(p[1], r.json().path("field").asText(), p[0] + " -> " + r.body());
            assertTrue(r.error().contains((String) p[2]), p[0] + " -> " + r.error());
            for (String dbWords : List.of("ERROR:", "PSQLException", "violates", "ConfigurationException")) {
                assertFalse(r.error().contains(dbWords), p[0] + " leaks: " + r.error());
            }
        }
        for (String body : List.of("{}", "{\"pattern\": \"\"}", "{\"pattern\": \"" + longPattern + "\"}",
                "{\"pattern\": \"a\\u0000b\"}", "{\"pattern\": [1]}")) {
            ApiClient.Resp r = api.post("/api/fairness/weights/revert", body);
            assertEquals(400, r.status(), body + " -> " + r.body());
            assertEquals("pattern", r.json().path("field").asText(), body + " -> " + r.body());
        }
        for (String q : List.of("", "?providerKey=", "?providerKey=" + "k".repeat(201), "?providerKey=k&limit=0",
                "?providerKey=k&limit=501", "?providerKey=k&limit=x", "?providerKey=a%00b")) {
            ApiClient.Resp r = api.get("/api/fairness" + q);
            assertEquals(400, r.status(), q + " -> " + r.body());
            assertTrue(r.json().path("field").asText().equals("providerKey") || r.json().path("field").asText().equals("limit"),
                    q + " -> " + r.body());
        }
        assertEquals(0, db.count("select count(*) from layover.fairness_weights"));
        assertEquals(0, db.count("select count(*) from layover.audit_log"));
    }

    @Test
    void aWeightIsNotSetWithoutATokenFromAnotherOriginOrInReadOnlyMode(TestDatabase db) {
        ApiClient.Resp noToken = api.send(api.request("/api/fairness/weights")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(weightBody("tenant:a", 2, null))));
        assertEquals(401, noToken.status(), noToken.body());
        for (String path : List.of("/api/fairness/weights", "/api/fairness/weights/revert")) {
            // refused as force_open is: the same POST handling (cross-origin, token, read-only)
            ApiClient.Resp crossOrigin = api.send(api.authorized(path).header("Origin", "http://evil.example")
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(weightBody("tenant:a", 2, null))));
            assertEquals(403, crossOrigin.status(), crossOrigin.body());
            assertTrue(crossOrigin.error().contains("cross-origin"), crossOrigin.error());
        }
        assertEquals(405, api.get("/api/fairness/weights").status());
        console.close();
        console = ReplayConsole.start(db.dataSource(), Fixtures.options().withReadOnly(true));
        api = new ApiClient(console);
        ApiClient.Resp ro = api.post("/api/fairness/weights", weightBody("tenant:a", 2, null));
        assertEquals(403, ro.status(), ro.body());
        assertTrue(ro.error().contains("read-only"), ro.error());
        assertEquals(403, api.post("/api/fairness/weights/revert", "{\"pattern\": \"tenant:a\"}").status());
        assertEquals(200, api.get("/api/fairness?providerKey=k").status(), "reading is allowed");
        assertEquals(0, db.count("select count(*) from layover.fairness_weights"));
    }

    @Test
    void twoOperatorsSettingTheSameWeightAtOnceEndWithOneRowAndBothAudited(TestDatabase db) throws Exception {
        int rounds = 10;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int i = 0; i < rounds; i++) {
                String pattern = "tenant:race-" + i;
                CyclicBarrier barrier = new CyclicBarrier(2);
                List<CompletableFuture<ApiClient.Resp>> answers = new ArrayList<>();
                for (String[] op : new String[][] {{"alice", "3"}, {"bob", "5"}}) {
                    answers.add(CompletableFuture.supplyAsync(() -> {
                        try {
                            barrier.await();
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                        return api.send(api.request("/api/fairness/weights")
                                .header("Authorization", "Bearer " + console.token())
                                .header("X-Layover-Operator", op[0])
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString(weightBody(pattern, op[1], "race"))));
                    }, pool));
                }
                for (CompletableFuture<ApiClient.Resp> a : answers) {
                    ApiClient.Resp r = a.get();
                    assertEquals(200, r.status(), r.body());
                }
                assertEquals(1, db.count("select count(*) from layover.fairness_weights where pattern = ?", pattern));
                double w = ((Number) db.value("select weight from layover.fairness_weights where pattern = ?", pattern))
                        .doubleValue();
                assertTrue(w == 3.0 || w == 5.0, "one of the two: " + w);
                String by = (String) db.value("select reason from layover.fairness_weights where pattern = ?", pattern);
                assertEquals(w == 3.0 ? "by alice: race" : "by bob: race", by, "weight and reason from the same write");
                assertEquals(2, db.count("select count(*) from layover.audit_log where subject = ?", "fairness:" + pattern));
                assertEquals(1, db.count("select count(*) from layover.audit_log where subject = ? and actor = 'alice'",
                        "fairness:" + pattern));
            }
        } finally {
            pool.shutdownNow();
        }
        // the revert of one pattern by both at once: one removes it, the other finds nothing (404), one audit row
        assertEquals(200, api.post("/api/fairness/weights", weightBody("tenant:both", 2, null)).status());
        CyclicBarrier barrier = new CyclicBarrier(2);
        List<CompletableFuture<ApiClient.Resp>> answers = new ArrayList<>();
        List<Integer> statuses = new ArrayList<>();
        ExecutorService two = Executors.newFixedThreadPool(2);
        try {
            for (int i = 0; i < 2; i++) {
                answers.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        barrier.await();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    return api.post("/api/fairness/weights/revert", "{\"pattern\": \"tenant:both\"}");
                }, two));
            }
            for (CompletableFuture<ApiClient.Resp> a : answers) {
                statuses.add(a.get().status());
            }
        } finally {
            two.shutdownNow();
        }
        statuses.sort(null);
        assertEquals(List.of(200, 404), statuses);
        assertEquals(1, db.count("select count(*) from layover.audit_log where action = 'revert_fairness_weight'"));
        assertEquals(0, db.count("select count(*) from layover.fairness_weights where pattern = 'tenant:both'"));
    }
}
