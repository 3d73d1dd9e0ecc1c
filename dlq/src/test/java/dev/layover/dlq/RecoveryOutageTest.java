package dev.layover.dlq;

import static dev.layover.dlq.RecoveryFixtures.KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.core.provider.state.ProviderStates;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.dlq.RecoveryFixtures.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The recovery sweep and trial as installed in running Layover instances: an outage, and a close from elsewhere. */
@DatabaseTest
class RecoveryOutageTest {

    private static final Duration WAIT = Duration.ofSeconds(45);

    private final FakeProvider fake = FakeProvider.start();
    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
        fake.close();
    }

    private static long liveJobs(TestDatabase db) {
        return db.count("select count(*) from layover.jobs where job_type <> ?", RecoverySweep.TASK_NAME);
    }

    private Layover start(Layover.Builder b) {
        Layover l = b.start();
        instances.add(l);
        return l;
    }

    @Test
    void anOutageEndsWithEveryJobDoneExactlyOnce(TestDatabase db) {
        fake.primary().phase(FakeProvider.Phase.OUTAGE);
        Map<String, AtomicInteger> successes = RecoveryFixtures.counter();
        JobType<Chat> chat = RecoveryFixtures.chat(fake.primary().url(), RecoveryFixtures.quickPolicy(1), successes);
        Layover layover = start(Layover.builder(db.newDataSource(16))
                .register(chat)
                .threads(4)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5))
                .breakers(BreakerSettings.defaults().withThresholds(Duration.ofSeconds(60), 4, 4, 0.5)
                        .withOpenFor(Duration.ofMillis(500), Duration.ofSeconds(2)))
                .cooldowns(RecoveryFixtures.TINY_COOLDOWNS)
                .plugin(RecoverySweep.builder()
                        .checkEvery(Duration.ofMillis(100))
                        .firstBatch(2).growthFactor(2).maxBatch(8)
                        .spreadOver(Duration.ofMillis(300))
                        .trialEvery(Duration.ofMillis(300), Duration.ofSeconds(1)).trialBackoff(2)
                        .build()));
        List<Chat> jobs = new ArrayList<>();
        for (int i = 1; i <= 30; i++) {
            jobs.add(new Chat("job " + i));
        }
        layover.enqueueBatch(chat, jobs);

        // 503s open the breaker; every job parks, the first ones after their attempts, the others on the open breaker
        Await.equal(WAIT, "dead letters", 30L, () -> db.count("select count(*) from layover.dead_letters"));
        assertEquals("open", db.value("select state from layover.breakers where provider_key = ?", KEY),
                "the breaker opened on the 503s");
        Map<String, Object> byType = db.row("""
                select count(*) filter (where failure_type = 'provider_unavailable') as unavailable,
                       count(*) filter (where failure_type = 'breaker_open') as breaker_open
                from layover.dead_letters""");
        assertTrue(((Number) byType.get("unavailable")).longValue() >= 1, byType.toString());
        assertTrue(((Number) byType.get("breaker_open")).longValue() >= 1, byType.toString());

        // no traffic: a trial replays one parked job; the provider is still down, so it fails and parks again
        Await.until(WAIT, "a failed trial", () -> db.count("""
                select count(*) from layover.dead_letters
                where state = 'parked' and park_count >= 2 and replays -> -1 ->> 'kind' = 'trial'""") >= 1);
        assertEquals(0, db.count("select coalesce(sum(auto_replay_count), 0) from layover.dead_letters"),
                "a failed trial spends no replay budget");
        assertEquals(0, successes.size());

        // the provider comes back: the next trial closes the breaker and the sweep replays everything
        fake.primary().phase(FakeProvider.Phase.NORMAL);
        Await.equal(WAIT, "replayed dead letters", 30L,
                () -> db.count("select count(*) from layover.dead_letters where state = 'replayed'"));
        Await.equal(WAIT, "live jobs", 0L, () -> liveJobs(db));
        Await.equal(WAIT, "jobs done", 30, successes::size);

        assertTrue(successes.values().stream().allMatch(n -> n.get() == 1), "every job completed exactly once: "
                + successes);
        assertEquals(30, fake.primary().successes(), "one successful call per job at the provider");
        assertEquals(BreakerState.CLOSED, layover.providerStates().breakerState(KEY));
        List<Map<String, Object>> trials = db.rows("""
                select d.id, d.state, d.auto_replay_count, d.replays -> -1 ->> 'kind' as last_kind
                from layover.dead_letters d where d.replays @> '[{"kind": "trial"}]'""");
        assertTrue(trials.size() >= 2, "a failed and a successful trial: " + trials);
        assertEquals(1, db.count("select count(*) from layover.dead_letters where replays -> -1 ->> 'kind' = 'trial'"),
                "exactly one dead letter ended with its trial: the successful one");
        assertEquals(29, db.count("select count(*) from layover.dead_letters where auto_replay_count = 1"),
                "every other one was replayed by the sweep, spending one unit of its budget");
        assertEquals(List.of(2L, 4L, 8L, 8L, 7L), RecoveryFixtures.sweepBatches(db), "growing batches");
        assertEquals(0, db.count("select count(*) from layover.audit_log where actor = 'recovery-sweep' "
                + "and subject is distinct from ?", KEY), "every sweep and trial audit row names the key");
        Await.equal(WAIT, "sweep phase", "idle",
                () -> db.value("select phase from layover.recovery_state where provider_key = ?", KEY));
    }

    @Test
    void aCloseFromAnotherProcessStartsTheSweep(TestDatabase db) {
        Map<String, AtomicInteger> runs = RecoveryFixtures.counter();
        JobType<Work> work = Fixtures.work(3, (args, ctx) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return null;
        });
        // listen(false): the close must be found in the database, not heard
        start(Fixtures.layover(db, work).plugin(RecoverySweep.builder()
                .checkEvery(Duration.ofMillis(100))
                .firstBatch(3).growthFactor(2).maxBatch(12)
                .spreadOver(Duration.ofMillis(100))
                .listen(false)
                .build()));
        ProviderStates console = ProviderStates.create(db.newDataSource(2)); // an operator's JVM
        assertTrue(console.forceOpen("test:provider", null, "provider incident"));
        Fixtures.insertMany(db, 40, "w", "test:provider", "breaker_open", "parked");

        Await.equal(WAIT, "sweep phase", "breaker_open",
                () -> db.rows("select phase from layover.recovery_state").stream().map(r -> r.get("phase"))
                        .findFirst().orElse(null));
        assertEquals(0, liveJobs(db), "no trial while an operator holds it open");

        assertTrue(console.forceClose("test:provider", "incident over"));
        Await.equal(WAIT, "replayed dead letters", 40L,
                () -> db.count("select count(*) from layover.dead_letters where state = 'replayed'"));
        Await.equal(WAIT, "live jobs", 0L, () -> liveJobs(db));
        Await.equal(WAIT, "jobs run", 40, runs::size);
        assertTrue(runs.values().stream().allMatch(n -> n.get() == 1), "each job ran once: " + runs);
        assertEquals(List.of(3L, 6L, 12L, 12L, 7L), RecoveryFixtures.sweepBatches(db), "growing batches");
        Map<String, Object> state = db.row("select * from layover.recovery_state where provider_key = 'test:provider'");
        assertEquals(db.value("select closed_at from layover.breakers where provider_key = 'test:provider'"),
                state.get("handled_closed_at"), "the close handled is the console's");
        assertEquals(40L, ((Number) state.get("replayed")).longValue());
        assertEquals(5, state.get("batches"));
    }
}
