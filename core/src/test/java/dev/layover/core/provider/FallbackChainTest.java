package dev.layover.core.provider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.FakeChat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A fallback chain over the fake provider's two endpoints, each its own provider key. */
@DatabaseTest
class FallbackChainTest {

    record Work(String text) {}

    private static final String PRIMARY = "fake:primary";
    private static final String SECONDARY = "fake:secondary";
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final FakeProvider fake = FakeProvider.start();
    private final Map<String, FallbackResult<String>> results = new ConcurrentHashMap<>();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
        fake.close();
    }

    private JobType<Work> start(TestDatabase db, Function<FallbackResult<String>, Outcome> then, JobPolicy policy) {
        FallbackChain<URI> chain = FallbackChain.<URI>builder()
                .endpoint(PRIMARY, fake.primary().url())
                .endpoint(SECONDARY, fake.secondary().url())
                .build();
        JobType<Work> type = JobType.builder("translate", Work.class)
                .policy(policy)
                .handler((args, ctx) -> {
                    FallbackResult<String> r = chain.call(ctx, ep -> {
                        if (args.text().equals("bug")) {
                            throw new IllegalStateException("a bug of the job's own");
                        }
                        return FakeChat.complete(ep.client(), args.text());
                    });
                    results.put(ctx.jobId(), r);
                    return then.apply(r);
                })
                .build();
        layover = Layover.builder(db.dataSource()).register(type).threads(2).pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5)).start();
        return type;
    }

    private JobType<Work> start(TestDatabase db) {
        return start(db, r -> Outcome.done(), JobPolicy.defaults());
    }

    private String runToDone(TestDatabase db, JobType<Work> type, String text) {
        String id = layover.enqueue(type, new Work(text)).id();
        Await.until(WAIT, "the job's answer", () -> results.containsKey(id));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        return id;
    }

    private static String trail(FallbackResult<?> r) {
        return r.trail().stream().map(s -> s.providerKey() + " " + s.result()).collect(Collectors.joining(", "));
    }

    private static Map<String, Object> breaker(TestDatabase db, String key) {
        return db.row("select * from layover.breakers where provider_key = ?", key);
    }

    @Test
    void aRateLimitedPrimaryFallsBackWithoutABreakerFailureAndIsThenSkippedDuringItsCooldown(TestDatabase db) {
        fake.primary().throttledRetryAfter(Duration.ofSeconds(30)).phase(FakeProvider.Phase.THROTTLED);
        JobType<Work> type = start(db);

        FallbackResult<String> first = results.get(runToDone(db, type, "hello"));
        assertEquals(SECONDARY, first.providerKey());
        assertEquals("<ECHO> hello", first.value());
        assertEquals("fake:primary rate_limited, fake:secondary answered", trail(first));
        assertEquals(Duration.ofSeconds(30).toSeconds(), first.trail().get(0).retryAfter().toSeconds(), 1);
        assertTrue(first.fellBack());
        assertEquals(0, breaker(db, PRIMARY).get("failures"), "a 429 is never a breaker failure");
        assertEquals("rate_limited", db.value("select reason from layover.cooldowns where provider_key = ?", PRIMARY));

        FallbackResult<String> second = results.get(runToDone(db, type, "again"));
        assertEquals("fake:primary skipped_cooldown, fake:secondary answered", trail(second));
        assertEquals(1, fake.primary().calls(), "the cooling primary was not called again");
        assertEquals(2, fake.secondary().successes());
    }

    @Test
    void anOverloadedPrimaryCountsABreakerFailureAndFallsBack(TestDatabase db) {
        fake.primary().phase(FakeProvider.Phase.OUTAGE);
        JobType<Work> type = start(db);
        FallbackResult<String> r = results.get(runToDone(db, type, "hello"));
        assertEquals("fake:primary overloaded, fake:secondary answered", trail(r));
        Map<String, Object> b = breaker(db, PRIMARY);
        assertEquals(1, b.get("failures"));
        assertTrue(((String) b.get("last_failure")).startsWith("overloaded"), (String) b.get("last_failure"));
        assertEquals(1, fake.primary().unavailable());
    }

    @Test
    void anOpenBreakerIsPassedOverWithoutACall(TestDatabase db) {
        JobType<Work> type = start(db);
        layover.providerStates().forceOpen(PRIMARY, null, "test");
        FallbackResult<String> r = results.get(runToDone(db, type, "hello"));
        assertEquals("fake:primary skipped_breaker_open, fake:secondary answered", trail(r));
        assertNull(r.trail().get(0).retryAfter(), "forced open: no known end");
        assertEquals(0, fake.primary().calls());
    }

    @Test
    void aBadRequestStopsTheChainAndItsTrailGoesWithTheDeadLetter(TestDatabase db) {
        fake.primary().phase(FakeProvider.Phase.REJECTING);
        JobType<Work> type = start(db);
        String id = layover.enqueue(type, new Work("hello")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = db.row("select failure_type, provider_trail from layover.dead_letters where job_id = ?", id);
        assertEquals("rejected", dl.get("failure_type"));
        assertEquals(0, fake.secondary().calls(), "a bad request is not retried elsewhere");
        JsonNode trail = json(dl.get("provider_trail"));
        assertEquals(1, trail.size());
        assertEquals(PRIMARY, trail.get(0).get("key").asText());
        assertEquals("rejected", trail.get(0).get("result").asText());
        assertTrue(trail.get(0).get("detail").asText().contains("invalid_request_error"), trail.toString());
        assertEquals(1, trail.get(0).get("attempt").asInt());
        assertEquals(0, breaker(db, PRIMARY).get("failures"), "a bad request is not a breaker failure");
    }

    @Test
    void whenEveryEndpointRefusesTheJobIsRateLimitedWithTheSmallestRetryAfter(TestDatabase db) {
        fake.primary().throttledRetryAfter(Duration.ofSeconds(20)).phase(FakeProvider.Phase.THROTTLED);
        fake.secondary().throttledRetryAfter(Duration.ofSeconds(7)).phase(FakeProvider.Phase.THROTTLED);
        JobType<Work> type = start(db);
        String id = layover.enqueue(type, new Work("hello")).id();
        Await.equal(WAIT, "reschedules", 1, () -> db.row("select reschedules from layover.jobs where id = ?", id).get("reschedules"));
        Map<String, Object> job = db.row("select * from layover.jobs where id = ?", id);
        assertEquals("rate_limited", job.get("reschedule_reason"));
        assertEquals(0, job.get("attempts"));
        long wait = Duration.between(Instant.now(), ((Timestamp) job.get("run_at")).toInstant()).toMillis();
        assertTrue(wait > 5000 && wait <= 7000 + 1750, "the smallest retry-after (7 s) plus jitter, was " + wait + " ms");
        assertTrue(((String) job.get("reschedule_detail")).startsWith("no endpoint answered"), (String) job.get("reschedule_detail"));
        List<Map<String, Object>> steps = db.rows("select e->>'key' as key, e->>'result' as result, (e->>'wait_ms')::bigint as wait_ms"
                + " from layover.jobs, jsonb_array_elements(provider_trail) e where id = ?", id);
        assertEquals(2, steps.size());
        assertEquals(PRIMARY, steps.get(0).get("key"));
        assertEquals("rate_limited", steps.get(0).get("result"));
        assertTrue((Long) steps.get(0).get("wait_ms") >= 19_000);
        assertEquals(SECONDARY, steps.get(1).get("key"));
        assertTrue((Long) steps.get(1).get("wait_ms") >= 6_000 && (Long) steps.get(1).get("wait_ms") <= 7_000);
    }

    @Test
    void whenEveryEndpointFailsTheLastFailureSpendsAnAttempt(TestDatabase db) {
        fake.primary().phase(FakeProvider.Phase.OUTAGE);
        fake.secondary().phase(FakeProvider.Phase.OVERLOADED);
        JobType<Work> type = start(db, r -> Outcome.done(), JobPolicy.defaults().withBackoff(Duration.ofMinutes(1), Duration.ofMinutes(5)));
        String id = layover.enqueue(type, new Work("hello")).id();
        Await.equal(WAIT, "attempts", 1, () -> db.row("select attempts from layover.jobs where id = ?", id).get("attempts"));
        Map<String, Object> job = db.row("select * from layover.jobs where id = ?", id);
        assertEquals("overloaded", json(job.get("last_error")).get("kind").asText());
        JsonNode trail = json(job.get("provider_trail"));
        assertEquals("overloaded", trail.get(0).get("result").asText());
        assertEquals("overloaded", trail.get(1).get("result").asText());
        assertEquals(1, breaker(db, PRIMARY).get("failures"));
        assertEquals(1, breaker(db, SECONDARY).get("failures"));
    }

    @Test
    void theJobsOwnErrorStopsTheChain(TestDatabase db) {
        JobType<Work> type = start(db, r -> Outcome.done(), JobPolicy.defaults().withBackoff(Duration.ofMinutes(1), Duration.ofMinutes(5)));
        String id = layover.enqueue(type, new Work("bug")).id();
        Await.equal(WAIT, "attempts", 1, () -> db.row("select attempts from layover.jobs where id = ?", id).get("attempts"));
        JsonNode trail = json(db.value("select provider_trail from layover.jobs where id = ?", id));
        assertEquals(1, trail.size());
        assertEquals("error", trail.get(0).get("result").asText());
        assertEquals("java.lang.IllegalStateException", json(db.value("select last_error from layover.jobs where id = ?", id))
                .get("error_class").asText());
        assertEquals(0, breaker(db, PRIMARY).get("failures"));
    }

    @Test
    void whoAnsweredIsReadableBySqlWhenTheRunEndsInAReschedule(TestDatabase db) {
        fake.primary().phase(FakeProvider.Phase.UNAUTHORIZED);
        JobType<Work> type = start(db, r -> Outcome.snooze(Duration.ofMinutes(10)), JobPolicy.defaults());
        String id = layover.enqueue(type, new Work("hello")).id();
        Await.equal(WAIT, "reschedules", 1, () -> db.row("select reschedules from layover.jobs where id = ?", id).get("reschedules"));
        String answeredBy = (String) db.value("select e->>'key' from layover.jobs, jsonb_array_elements(provider_trail) e"
                + " where id = ? and e->>'result' = 'answered'", id);
        assertEquals(SECONDARY, answeredBy);
        assertEquals("auth_refused", db.value("select e->>'result' from layover.jobs, jsonb_array_elements(provider_trail) e"
                + " where id = ? and e->>'key' = ?", id, PRIMARY));
        assertEquals(1, breaker(db, PRIMARY).get("failures"), "refused credentials are a breaker failure");
    }

    @Test
    void eachCallToAnEndpointIsCountedInTheTimeSeriesUnderTheEndpointAndUnderTheJobsKey(TestDatabase db) {
        fake.primary().throttledRetryAfter(Duration.ofSeconds(30)).phase(FakeProvider.Phase.THROTTLED);
        FallbackChain<URI> chain = FallbackChain.<URI>builder()
                .endpoint(PRIMARY, fake.primary().url())
                .endpoint(SECONDARY, fake.secondary().url())
                .build();
        JobType<Work> type = JobType.builder("translate", Work.class)
                .providerKey("fake:model")
                .handler((args, ctx) -> {
                    results.put(ctx.jobId(), chain.call(ctx, ep -> FakeChat.complete(ep.client(), args.text())));
                    return Outcome.done();
                })
                .build();
        // nothing flushes while it runs: the stop writes every count at once
        layover = Layover.builder(db.dataSource()).register(type).threads(2).pollInterval(Duration.ofMillis(50))
                .timeSeriesFlushInterval(Duration.ofHours(1)).shutdownMaxWait(Duration.ofSeconds(5)).start();
        runToDone(db, type, "one"); // primary 429, secondary answered
        runToDone(db, type, "two"); // primary skipped (cooling down), secondary answered
        layover.stop();
        layover = null;

        String sum = "select coalesce(sum(amount), 0) from layover.time_series where bucket_seconds = 60 "
                + "and job_type = 'translate' and provider_key = ? and counter = ? and detail = ?";
        assertEquals(1L, db.count(sum, PRIMARY, "endpoint_call", "rate_limited"));
        assertEquals(2L, db.count(sum, SECONDARY, "endpoint_call", "answered"));
        assertEquals(0L, db.count("select count(*) from layover.time_series where detail like 'skipped%'"),
                "a step passed over is not a call");
        assertEquals(1L, db.count(sum, "fake:model", "chain_call", PRIMARY), "the model key knows its endpoints");
        assertEquals(2L, db.count(sum, "fake:model", "chain_call", SECONDARY));
        assertEquals(2L, db.count(sum.replace(" and detail = ?", " and detail is null"), "fake:model", "completed"));
    }

    private static JsonNode json(Object text) {
        try {
            return JSON.readTree((String) text);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
