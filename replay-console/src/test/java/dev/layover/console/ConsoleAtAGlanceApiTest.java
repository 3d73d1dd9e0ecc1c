package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.CallFailedException;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.InteractiveCalls;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.NotAdmittedException;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.FallbackChain;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the console's pages lead with (issue 41), from real jobs: the jobs page's summary by why a
 * job waits, the workers, which worker applies a limit set at run time and since when, a fallback
 * chain's endpoints with their calls, 429s and errors, the outage banner's plan (what the sweep
 * replays, when the next trial is), and charts in the zone asked for.
 */
@DatabaseTest
class ConsoleAtAGlanceApiTest {

    record Doc(String text) {}

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

    private void start(TestDatabase db, JobType<?>... types) {
        layover = Fixtures.layover(db, types).workerName("glance-worker").timeSeriesFlushInterval(Duration.ofSeconds(1))
                .plugin(RecoverySweep.plugin()).start();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
    }

    @Test
    void theJobsPageLeadsWithTheJobsGroupedByWhyTheyWaitAndUntilWhen(TestDatabase db) {
        JobType<Fixtures.Work> limited = Fixtures.work((args, ctx) -> Outcome.rateLimited(Duration.ofMinutes(10), "429 slow down"));
        start(db, limited);
        for (int i = 0; i < 3; i++) {
            layover.enqueue(limited, new Fixtures.Work("later-" + i, i), EnqueueOptions.after(Duration.ofHours(2)));
        }
        layover.enqueue(limited, new Fixtures.Work("now", 1));
        Await.until(Fixtures.WAIT, "the job rescheduled by its 429", () -> db.count(
                "select count(*) from layover.jobs where reschedule_reason = 'rate_limited'") == 1);

        ApiClient.Resp r = api.get("/api/jobs");
        assertEquals(200, r.status(), r.body());
        assertEquals(4, r.json().get("total").asLong());
        assertFalse(r.json().get("summaryMore").asBoolean());
        JsonNode summary = r.json().get("summary");
        assertEquals(2, summary.size(), summary.toString());
        JsonNode news = group(summary, "new");
        assertEquals(3, news.get("n").asLong());
        assertEquals("test:provider", news.get("providerKey").asText());
        assertTrue(Instant.parse(news.get("firstRunAt").asText()).isAfter(Instant.now().plus(Duration.ofMinutes(110))));
        JsonNode limitedGroup = group(summary, "rate_limited");
        assertEquals(1, limitedGroup.get("n").asLong());
        assertNotNull(limitedGroup.get("cooldownUntil").asText(null), "the key cools down: until when " + limitedGroup);
        assertTrue(limitedGroup.get("someDetail").asText().contains("429"), limitedGroup.toString());

        JsonNode filtered = api.get("/api/jobs?why=new").json();
        assertEquals(3, filtered.get("total").asLong(), "the summary follows the filter");
        assertEquals(1, filtered.get("summary").size());
    }

    private static JsonNode group(JsonNode summary, String why) {
        for (JsonNode g : summary) {
            if (g.get("why").asText().equals(why)) {
                return g;
            }
        }
        throw new AssertionError("no group " + why + " in " + summary);
    }

    @Test
    void theWorkersAreListedAndALimitSetAtRunTimeSaysWhichWorkerAppliesItSinceWhen(TestDatabase db) {
        start(db, Fixtures.work());
        Await.until(Fixtures.WAIT, "the worker's row", () -> api.get("/api/workers").json().get("items").size() == 1);
        JsonNode w = api.get("/api/workers").json().get("items").get(0);
        assertEquals("glance-worker", w.get("workerName").asText());
        assertEquals(2, w.get("threads").asInt());
        assertTrue(w.get("alive").asBoolean(), w.toString());
        assertTrue(w.get("heartbeatAgeMs").asLong() < 20_000, w.toString());
        assertEquals(0, w.get("runningJobs").asLong());
        assertTrue(w.hasNonNull("version") && w.hasNonNull("startedAt"), w.toString());

        ApiClient.Resp set = api.post("/api/limits", "{\"key\": \"test:provider\", \"requestsPerMinute\": 90, \"reason\": \"test\"}");
        assertEquals(200, set.status(), set.body());
        Await.until(Fixtures.WAIT, "the worker applies the limit", () -> api.get("/api/provider-keys/test:provider").json()
                .at("/limitOverride/workers/0/appliedAt").isTextual());
        JsonNode applied = api.get("/api/provider-keys/test:provider").json().at("/limitOverride/workers/0");
        assertEquals("glance-worker", applied.get("workerName").asText());
        assertTrue(applied.get("appliesIt").asBoolean());
        Instant setAt = Instant.parse(api.get("/api/limits?key=test:provider").json().at("/items/0/setAt").asText());
        Instant appliedAt = Instant.parse(applied.get("appliedAt").asText());
        assertFalse(appliedAt.isBefore(setAt), setAt + " / " + appliedAt);
        assertEquals("glance-worker", api.get("/api/limits?key=test:provider").json().at("/items/0/workers/0/workerName").asText());

        api.post("/api/limits", "{\"key\": \"test:provider\", \"requestsPerMinute\": 45, \"reason\": \"lower\"}");
        JsonNode changed = api.get("/api/provider-keys/test:provider").json().at("/limitOverride/workers/0");
        // until the worker reports the new values, it applies an earlier limit, not this one
        if (!changed.get("appliesIt").asBoolean()) {
            assertTrue(changed.get("appliedAt").isNull(), changed.toString());
        }
        Await.until(Fixtures.WAIT, "the worker applies the new limit", () -> api.get("/api/provider-keys/test:provider").json()
                .at("/limitOverride/workers/0/appliesIt").asBoolean());
    }

    @Test
    void aKeysPageCountsItsInteractiveCallsBesideItsJobs(TestDatabase db) {
        start(db);
        InteractiveCalls calls = layover.interactive();
        for (int i = 0; i < 3; i++) {
            assertEquals("answer", calls.call("web:chat", 0, Duration.ZERO, () -> "answer"));
        }
        assertThrows(CallFailedException.class, () -> calls.call("web:chat", 0, Duration.ZERO, () -> {
            throw Outcome.rateLimited(Duration.ofSeconds(30), "429 slow down").toException();
        }));
        assertThrows(NotAdmittedException.class, () -> calls.call("web:chat", 0, Duration.ZERO, () -> "not called"));
        Await.until(Fixtures.WAIT, "the interactive calls flushed", () -> {
            JsonNode i = api.get("/api/provider-keys/web:chat").json().get("interactive");
            return i != null && !i.isNull() && i.get("admitted").asLong() == 4 && i.get("notAdmitted").asLong() == 1;
        });
        JsonNode i = api.get("/api/provider-keys/web:chat").json().get("interactive");
        assertEquals(3, i.get("answered").asLong(), i.toString());
        assertEquals(1, i.get("rateLimited").asLong());
        assertEquals(1, i.get("failed").asLong());
        assertEquals(1, i.at("/notAdmittedBy/cooling").asLong());
        assertTrue(i.get("meanWaitMs").asDouble() >= 0);
    }

    @Test
    void aChainsModelKeyListsItsEndpointsAndEachEndpointCountsItsCalls429sAndErrors(TestDatabase db) throws Exception {
        // the primary answers 429 (a short cooldown), the secondary answers
        FallbackChain<String> chain = FallbackChain.<String>builder()
                .endpoint("fake:model@primary", "primary")
                .endpoint("fake:model@secondary", "secondary")
                .build();
        JobType<Doc> translate = JobType.builder("translate", Doc.class).providerKey("fake:model")
                .handler((args, ctx) -> {
                    chain.call(ctx, ep -> {
                        if (ep.client().equals("primary")) {
                            throw Outcome.rateLimited(Duration.ofMillis(200), "429 slow down").toException();
                        }
                        return "summary of " + args.text();
                    });
                    return Outcome.done();
                }).build();
        start(db, translate);
        for (int i = 0; i < 4; i++) {
            layover.enqueue(translate, new Doc("doc " + i));
        }
        Await.equal(Fixtures.WAIT, "four translated", 4L, () -> db.count("select count(*) from layover.job_history"));
        Await.until(Fixtures.WAIT, "the calls flushed", () -> api.get("/api/provider-keys/fake:model").json()
                .get("endpoints").size() == 2);

        JsonNode model = api.get("/api/provider-keys/fake:model").json();
        JsonNode endpoints = model.get("endpoints");
        assertTrue(endpoints.get(0).get("calls").asLong() >= endpoints.get(1).get("calls").asLong(), "busiest first: " + endpoints);
        // the four jobs may all meet the primary's 429 before its cooldown is known: a tie, in either order
        int s = endpoints.get(0).get("providerKey").asText().equals("fake:model@secondary") ? 0 : 1;
        JsonNode secondary = endpoints.get(s);
        assertEquals("fake:model@secondary", secondary.get("providerKey").asText(), endpoints.toString());
        assertEquals(4, secondary.get("calls").asLong());
        assertEquals(4, secondary.get("answered").asLong());
        JsonNode primary = endpoints.get(1 - s);
        assertTrue(primary.get("rateLimited").asLong() >= 1, primary.toString());
        assertEquals(0, primary.get("answered").asLong());
        assertTrue(model.get("asEndpoint").isNull(), "the model is no endpoint");

        JsonNode asEndpoint = api.get("/api/provider-keys/fake:model@secondary").json().get("asEndpoint");
        assertEquals(4, asEndpoint.get("answered").asLong(), asEndpoint.toString());
        assertEquals(0, asEndpoint.get("errors").asLong());
        assertEquals("fake:model", asEndpoint.at("/usedBy/0/providerKey").asText());

        HttpResponse<String> chart = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(console.url()
                        + "api/time-series/calls.svg?resolution=10s&minutes=10&providerKey=fake:model@secondary&tz=Europe/Berlin"))
                .header("Authorization", "Bearer " + Fixtures.TOKEN).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, chart.statusCode(), chart.body());
        assertTrue(chart.body().contains("Provider calls") && chart.body().contains("answered 4"), chart.body());
        assertTrue(chart.body().contains(" CET<") || chart.body().contains(" CEST<"), "the zone on the axis");
        assertEquals(400, api.get("/api/time-series/calls.svg?tz=Mars/Olympus").status());
    }

    @Test
    void anOutageSaysWhatTheSweepWillReplayAndWhenTheNextTrialIs(TestDatabase db) {
        start(db, Fixtures.work());
        for (int i = 0; i < 3; i++) {
            Fixtures.deadLetter("open-" + i).failure("breaker_open").insert(db);
        }
        Fixtures.deadLetter("refused").failure("auth_refused").insert(db);
        assertEquals(0, api.get("/api/overview").json().get("outages").size(), "no breaker open: no outage");

        layover.providerStates().forceOpen("test:provider", Duration.ofMinutes(5), "incident");
        JsonNode o = api.get("/api/overview").json().at("/outages/0");
        assertEquals("test:provider", o.get("providerKey").asText());
        assertTrue(o.get("sweepScheduled").asBoolean(), o.toString());
        assertEquals(3, o.get("sweepReplaysTotal").asLong());
        assertEquals(3, o.at("/sweepReplays/breaker_open").asLong());
        assertEquals(1, o.get("waitsForAPersonTotal").asLong());
        assertEquals(1, o.at("/waitsForAPerson/auth_refused").asLong());
        Instant openUntil = Instant.parse(o.get("openUntil").asText());
        assertFalse(Instant.parse(o.get("nextTrialAt").asText()).isBefore(openUntil), "no trial before the open period ends");
        assertEquals(o, api.get("/api/provider-keys/test:provider").json().get("outage"), "the key's page shows the same");
        assertEquals(1, api.get("/api/dead-letters").json().get("outages").size());

        layover.providerStates().forceOpen("test:provider", null, "until further notice");
        JsonNode forever = api.get("/api/overview").json().at("/outages/0");
        assertTrue(forever.get("nextTrialAt").isNull(), "forced open without an end: no trial " + forever);
        assertTrue(forever.get("trial").asText().contains("until a person closes it"));
    }
}
