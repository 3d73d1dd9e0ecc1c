package dev.layover.core.observability;

import static dev.layover.core.observability.ObservabilityFixtures.WAIT;
import static dev.layover.core.observability.ObservabilityFixtures.WORKER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.FallbackChain;
import dev.layover.core.provider.state.FakeChat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/** Every finished job leaves a row in layover.job_history, written with its removal; read back with SQL. */
// alone in the fast profile: it asserts that no layover-history-retention- thread exists in the JVM
@Isolated
@DatabaseTest
class JobHistoryTest {

    record Work(String text) {}

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private FakeProvider fake;
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
        if (fake != null) {
            fake.close();
        }
    }

    private JobType<Work> start(TestDatabase db, Function<Layover.Builder, Layover.Builder> config,
            Function<Integer, Outcome> script) {
        JobType<Work> type = JobType.builder("work", Work.class)
                .policy(ObservabilityFixtures.fastRetries(2))
                .providerKey("fake:work")
                .handler((args, ctx) -> {
                    Thread.sleep(20); // the provider call's latency (stands for one; not a wait)
                    return script.apply(runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet());
                })
                .build();
        layover = config.apply(ObservabilityFixtures.builder(db).register(type)).start();
        return type;
    }

    private static Map<String, Object> history(TestDatabase db, String jobId) {
        return db.row("select * from layover.job_history where job_type = 'work' and job_id = ?", jobId);
    }

    @Test
    void aCompletedJobLeavesItsRow(TestDatabase db) {
        JobType<Work> type = start(db, b -> b, n -> n == 1 ? Outcome.transientFailure("502", null) : Outcome.done());
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "history rows", 1L, () -> db.count("select count(*) from layover.job_history"));
        assertEquals(0, db.count("select count(*) from layover.jobs"), "removed in the same statement");

        Map<String, Object> h = history(db, id);
        assertEquals("completed", h.get("outcome"));
        assertEquals(1, h.get("attempts"), "one failed attempt before it succeeded");
        assertEquals(0, h.get("reschedules"));
        assertEquals("fake:work", h.get("provider_key"));
        assertEquals(WORKER, h.get("worker"));
        assertNull(h.get("failure_type"));
        assertNull(h.get("dead_letter_id"));
        assertNull(h.get("provider_trail"), "no fallback chain");
        assertNull(h.get("args"), "args are not kept by default");
        double ms = (Double) h.get("duration_ms");
        assertTrue(ms >= 15 && ms < 5000, "the handler sleeps 20 ms: " + ms);
        Timestamp enqueued = (Timestamp) h.get("enqueued_at");
        Timestamp started = (Timestamp) h.get("started_at");
        Timestamp finished = (Timestamp) h.get("finished_at");
        assertTrue(!started.before(enqueued), "started after it was enqueued");
        assertTrue(!finished.before(started), "finished after its last run started");
        assertEquals(1, db.count("select count(*) from layover.job_history where job_type = 'work' and job_id = ?"
                + " and outcome = 'completed'", id), "did job X run? one indexed lookup");
    }

    @Test
    void aParkedJobsRowPointsToItsDeadLetter(TestDatabase db) {
        JobType<Work> type = start(db, b -> b, n -> Outcome.rejected("400 bad request: context too long"));
        String id = layover.enqueue(type, new Work("b")).id();
        Await.equal(WAIT, "history rows", 1L, () -> db.count("select count(*) from layover.job_history"));
        Map<String, Object> h = history(db, id);
        Map<String, Object> dl = db.row("select * from layover.dead_letters where job_id = ?", id);
        assertEquals("parked", h.get("outcome"));
        assertEquals("rejected", h.get("failure_type"));
        assertEquals(dl.get("id"), h.get("dead_letter_id"));
        assertEquals(dl.get("error_message"), h.get("detail"));
        assertEquals(dl.get("attempts"), h.get("attempts"));
        assertEquals(WORKER, h.get("worker"));
        assertNotNull(h.get("started_at"));
        assertTrue((Double) h.get("duration_ms") >= 15);
    }

    @Test
    void aJobParkedWithoutRunningHasNoDuration(TestDatabase db) {
        JobType<Work> type = start(db, b -> b, n -> Outcome.done());
        layover.providerStates().forceOpen("fake:work", null, "test");
        String id = layover.enqueue(type, new Work("c")).id();
        Await.equal(WAIT, "history rows", 1L, () -> db.count("select count(*) from layover.job_history"));
        Map<String, Object> h = history(db, id);
        assertEquals("breaker_open", h.get("failure_type"));
        assertNull(h.get("duration_ms"), "no handler ran");
        assertNotNull(h.get("started_at"), "it was picked");
        assertEquals(0, runs.size());
    }

    @Test
    void argsAreKeptWhenAskedFor(TestDatabase db) {
        JobType<Work> type = start(db, b -> b.historyArgs(true), n -> Outcome.done());
        String id = layover.enqueue(type, new Work("keep me")).id();
        Await.equal(WAIT, "history rows", 1L, () -> db.count("select count(*) from layover.job_history"));
        assertEquals("keep me", db.value("select args->>'text' from layover.job_history where job_id = ?", id));
    }

    @Test
    void historyOffWritesNoRow(TestDatabase db) {
        JobType<Work> type = start(db, b -> b.history(false), n -> Outcome.done());
        layover.enqueue(type, new Work("done"));
        Await.equal(WAIT, "finished", 0L, () -> db.count("select count(*) from layover.jobs"));
        layover.providerStates().forceOpen("fake:work", null, "test");
        layover.enqueue(type, new Work("parked"));
        Await.equal(WAIT, "parked", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Await.equal(WAIT, "finished", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertTrue(layover.awaitCompletions(WAIT));
        assertEquals(0, db.count("select count(*) from layover.job_history"));
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().startsWith("layover-history-retention-")), "no retention either");
    }

    @Test
    void theTrailOfAChainedCallIsKeptInTheHistoryAndWithTheDeadLetter(TestDatabase db) throws Exception {
        fake = FakeProvider.start();
        fake.primary().throttledRetryAfter(Duration.ofSeconds(30)).phase(FakeProvider.Phase.THROTTLED);
        FallbackChain<URI> chain = FallbackChain.<URI>builder()
                .endpoint("fake:primary", fake.primary().url())
                .endpoint("fake:secondary", fake.secondary().url())
                .build();
        JobType<Work> type = JobType.builder("translate", Work.class)
                .policy(JobPolicy.defaults())
                .handler((args, ctx) -> {
                    chain.call(ctx, ep -> FakeChat.complete(ep.client(), args.text()));
                    return Outcome.done();
                })
                .build();
        layover = ObservabilityFixtures.builder(db).register(type).start();

        String answered = layover.enqueue(type, new Work("hello")).id();
        Await.equal(WAIT, "history rows", 1L, () -> db.count("select count(*) from layover.job_history"));
        // the trail, readable with SQL: one line per endpoint of the run
        List<Map<String, Object>> steps = db.rows("""
                select s->>'key' as key, s->>'result' as result, (s->>'attempt')::int as attempt
                from layover.job_history h, jsonb_array_elements(h.provider_trail) s
                where h.job_type = 'translate' and h.job_id = ?""", answered);
        assertEquals(List.of("fake:primary", "fake:secondary"), steps.stream().map(r -> r.get("key")).toList());
        assertEquals(List.of("rate_limited", "answered"), steps.stream().map(r -> r.get("result")).toList());
        assertEquals(1, steps.get(0).get("attempt"));

        // both endpoints refuse: the job parks; its dead letter and its history row keep the same trail
        fake.secondary().phase(FakeProvider.Phase.REJECTING);
        String rejected = layover.enqueue(type, new Work("again")).id();
        Await.equal(WAIT, "history rows", 2L, () -> db.count("select count(*) from layover.job_history"));
        Object dlTrail = db.value("select provider_trail::text from layover.dead_letters where job_id = ?", rejected);
        Object hTrail = db.value("select provider_trail::text from layover.job_history where job_id = ?", rejected);
        assertEquals(dlTrail, hTrail);
        JsonNode t = JSON.readTree((String) hTrail);
        assertEquals("skipped_cooldown", t.get(0).get("result").asText(), t.toString());
        assertEquals("rejected", t.get(1).get("result").asText(), t.toString());
        assertEquals("parked", db.value("select outcome from layover.job_history where job_id = ?", rejected));
    }
}
