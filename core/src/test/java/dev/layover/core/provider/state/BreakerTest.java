package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Circuit breakers seen from running workers and a fake provider. */
@DatabaseTest
class BreakerTest {

    private static final String KEY = "fake:primary";
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Opens on 4 failures out of at least 4 calls within a minute. */
    private static final BreakerSettings SMALL = BreakerSettings.defaults().withThresholds(Duration.ofSeconds(60), 4, 4, 0.5);

    private final FakeProvider fake = FakeProvider.start();
    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
        fake.close();
    }

    private Layover start(Layover.Builder b) {
        Layover l = b.start();
        instances.add(l);
        return l;
    }

    private static Object state(TestDatabase db) {
        List<Map<String, Object>> rows = db.rows("select state from layover.breakers where provider_key = ?", KEY);
        return rows.isEmpty() ? null : rows.get(0).get("state");
    }

    private static JobType<Chat> chat(String key, java.net.URI url, JobPolicy policy, Runnable onCall) {
        return JobType.builder("chat", Chat.class)
                .providerKey(key)
                .policy(policy)
                .handler((args, ctx) -> {
                    onCall.run();
                    FakeChat.complete(url, args.text());
                    return Outcome.done();
                })
                .build();
    }

    @Test
    void fiveOhThreesOpenTheBreakerAndJobsPickedWhileOpenAreParkedWithoutCalling(TestDatabase db) {
        fake.primary().phase(FakeProvider.Phase.OUTAGE);
        JobPolicy policy = JobPolicy.defaults().withMaxAttempts(20).withBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
        JobType<Chat> chat = chat(KEY, fake.primary().url(), policy, () -> { });
        List<BreakerEvent> events = new CopyOnWriteArrayList<>();
        Layover layover = start(Workers.builder(db.dataSource(), "worker-a").register(chat).breakers(SMALL)
                .breakerListener(events::add));
        for (int i = 0; i < 6; i++) {
            layover.enqueue(chat, new Chat("job " + i));
        }
        Await.equal(WAIT, "breaker state", "open", () -> state(db));
        Await.equal(WAIT, "jobs parked breaker_open", 6L,
                () -> db.count("select count(*) from layover.dead_letters where failure_type = 'breaker_open'"));
        int callsWhenOpen = fake.primary().calls();
        assertEquals(fake.primary().unavailable(), callsWhenOpen, "every call was a 503");
        Map<String, Object> b = db.row("select * from layover.breakers where provider_key = ?", KEY);
        assertTrue((Integer) b.get("failures") >= 4, "opened by the failures: " + b);
        assertTrue(((String) b.get("reason")).contains("overloaded"), (String) b.get("reason"));

        layover.enqueue(chat, new Chat("after"));
        Await.equal(WAIT, "jobs parked breaker_open", 7L,
                () -> db.count("select count(*) from layover.dead_letters where failure_type = 'breaker_open'"));
        assertEquals(callsWhenOpen, fake.primary().calls(), "no call while the breaker is open");
        Map<String, Object> dl = db.row("select * from layover.dead_letters where job_id = (select job_id from "
                + "layover.dead_letters order by id desc limit 1)");
        assertEquals(0, dl.get("attempts"), "parking on an open breaker spends no attempt");
        assertEquals(KEY, dl.get("provider_key"));
        Await.until(WAIT, "the opening told to listeners", () -> events.stream().anyMatch(
                e -> e.to() == BreakerState.OPEN && e.local()));
    }

    @Test
    void anOutageAfterAWindowOfSuccessesOpensTheBreakerByItsFailuresInARow(TestDatabase db) {
        JobPolicy policy = JobPolicy.defaults().withMaxAttempts(20).withBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
        JobType<Chat> chat = chat(KEY, fake.primary().url(), policy, () -> { });
        // the default window and ratio: 40 successes would take 40 failures to outweigh
        BreakerSettings settings = BreakerSettings.defaults().withConsecutiveFailures(5);
        Layover layover = start(Workers.builder(db.dataSource(), "worker-a").register(chat).breakers(settings));
        for (int i = 0; i < 40; i++) {
            layover.enqueue(chat, new Chat("served " + i));
        }
        Await.equal(WAIT, "jobs served", 40L,
                () -> db.count("select count(*) from layover.job_history where outcome = 'completed'"));
        Await.until(WAIT, "the successes counted in the window",
                () -> db.count("select coalesce(sum(calls), 0) from layover.breakers where provider_key = ?", KEY) >= 40);

        fake.primary().phase(FakeProvider.Phase.OUTAGE);
        for (int i = 0; i < 6; i++) {
            layover.enqueue(chat, new Chat("outage " + i));
        }
        Await.equal(WAIT, "breaker state", "open", () -> state(db));
        Map<String, Object> b = db.row("select * from layover.breakers where provider_key = ?", KEY);
        assertTrue((Integer) b.get("failures") < 20, "opened long before the window's ratio would: " + b);
        assertTrue(((String) b.get("reason")).contains("in a row"), (String) b.get("reason"));
        assertEquals(0, b.get("streak"), "the streak starts again once it opened");
    }

    @Test
    void aFailureAmongSuccessesStartsTheRowAgain(TestDatabase db) {
        JobPolicy policy = JobPolicy.defaults().withMaxAttempts(20).withBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
        AtomicInteger n = new AtomicInteger();
        JobType<Chat> chat = JobType.builder("chat", Chat.class).providerKey(KEY).policy(policy)
                .handler((args, ctx) -> {
                    // every tenth call fails (a share under the overload cooldown's signal): never two
                    // failures in a row without a success between them
                    if (n.incrementAndGet() % 10 == 0) {
                        fake.primary().phase(FakeProvider.Phase.OUTAGE);
                    }
                    try {
                        FakeChat.complete(fake.primary().url(), args.text());
                    } finally {
                        fake.primary().phase(FakeProvider.Phase.NORMAL);
                    }
                    return Outcome.done();
                })
                .build();
        BreakerSettings settings = BreakerSettings.defaults().withConsecutiveFailures(2);
        Layover layover = start(Workers.builder(db.dataSource(), "worker-a").register(chat).breakers(settings)
                .threads(1));
        for (int i = 0; i < 30; i++) {
            layover.enqueue(chat, new Chat("job " + i));
        }
        Await.equal(WAIT, "jobs done", 30L,
                () -> db.count("select count(*) from layover.job_history where outcome = 'completed'"));
        assertTrue(fake.primary().unavailable() >= 3, "calls failed: " + fake.primary().unavailable());
        assertEquals("closed", state(db), "a failure among successes never makes a row");
    }

    @Test
    void rateLimitsNeverOpenTheBreaker(TestDatabase db) {
        fake.primary().limitPerSecond(2).burst(1);
        JobType<Chat> chat = chat(KEY, fake.primary().url(), JobPolicy.defaults(), () -> { });
        BreakerSettings touchy = BreakerSettings.defaults().withThresholds(Duration.ofSeconds(60), 1, 1, 0.01);
        Layover layover = start(Workers.builder(db.dataSource(), "worker-a").register(chat).breakers(touchy));
        List<Chat> jobs = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            jobs.add(new Chat("job " + i));
        }
        layover.enqueueBatch(chat, jobs);
        Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertTrue(fake.primary().rateLimited() > 0, "the provider did answer 429s");
        assertEquals(12, fake.primary().successes());
        layover.stop(); // writes the successes counted in memory
        Map<String, Object> b = db.row("select * from layover.breakers where provider_key = ?", KEY);
        assertEquals("closed", b.get("state"));
        assertEquals(0, b.get("failures"), "a 429 is never a breaker failure");
        assertEquals(12, b.get("calls"), "successes are counted");
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
    }

    @Test
    void sixteenWorkersInHalfOpenMakeExactlyOneTrialCall(TestDatabase db) {
        AtomicInteger handlerCalls = new AtomicInteger();
        AtomicInteger callsBeforeClose = new AtomicInteger();
        Map<String, AtomicInteger> runsPerJob = new ConcurrentHashMap<>();
        JobType<Chat> slow = JobType.builder("chat", Chat.class)
                .providerKey(KEY)
                .handler((args, ctx) -> {
                    handlerCalls.incrementAndGet();
                    runsPerJob.computeIfAbsent(args.text(), k -> new AtomicInteger()).incrementAndGet();
                    if (!"closed".equals(db.value("select state from layover.breakers where provider_key = ?", KEY))) {
                        callsBeforeClose.incrementAndGet();
                    }
                    Thread.sleep(1500); // the trial call in flight
                    return Outcome.done();
                })
                .build();
        db.update("insert into layover.breakers (provider_key, state, opened_at, open_until, open_count)"
                + " values (?, 'open', now() - interval '1 minute', now() - interval '1 second', 1)", KEY);
        start(Workers.builder(db.newDataSource(24), "worker-a").register(slow).threads(8));
        Layover b = start(Workers.builder(db.newDataSource(24), "worker-b").register(slow).threads(8));
        List<Chat> jobs = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            jobs.add(new Chat("job " + i));
        }
        b.enqueueBatch(slow, jobs);
        Await.until(WAIT, "the trial to run", () -> handlerCalls.get() == 1);
        Await.equal(WAIT, "jobs waiting for the trial, untouched", 15L,
                () -> db.count("select count(*) from layover.jobs j join layover.scheduled_tasks t on t.task_instance = j.id "
                        + "where j.waiting_for = 'breaker_trial' and t.version = 1"));
        assertEquals(1, handlerCalls.get(), "one trial call across 16 workers in two instances");
        Await.equal(WAIT, "breaker state", "closed", () -> state(db));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(1, callsBeforeClose.get(), "only the trial ran before the breaker closed");
        assertEquals(16, runsPerJob.size());
        assertTrue(runsPerJob.values().stream().allMatch(n -> n.get() == 1), "every job ran once: " + runsPerJob);
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
    }

    @Test
    void forceOpenParksJobsAndForceCloseLetsThemRunWhileOtherInstancesHearOfIt(TestDatabase db) {
        AtomicInteger calls = new AtomicInteger();
        JobType<Chat> chat = chat(KEY, fake.primary().url(), JobPolicy.defaults(), calls::incrementAndGet);
        List<BreakerEvent> workerEvents = new CopyOnWriteArrayList<>();
        Layover layover = start(Workers.builder(db.dataSource(), "worker-a").register(chat).breakerListener(workerEvents::add));
        layover.enqueue(chat, new Chat("warm"));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));

        ProviderStates console = ProviderStates.create(db.newDataSource(2)); // an operator's JVM
        assertTrue(console.forceOpen(KEY, null, "provider incident"));
        Await.until(WAIT, "the worker to hear of the opening", () -> workerEvents.stream()
                .anyMatch(e -> e.to() == BreakerState.OPEN && !e.local() && "forced open: provider incident".equals(e.reason())));
        layover.enqueue(chat, new Chat("during the incident"));
        try {
            Await.equal(WAIT, "dead letters", 1L,
                    () -> db.count("select count(*) from layover.dead_letters where failure_type = 'breaker_open'"));
        } catch (AssertionError e) { // seen once in a full run, never alone: say where the job was
            throw new AssertionError(e.getMessage() + "; jobs: " + db.rows("select * from layover.jobs")
                    + "; dead letters: " + db.rows("select id, failure_type, state, error_message from layover.dead_letters")
                    + "; history: " + db.rows("select * from layover.job_history")
                    + "; breakers: " + db.rows("select * from layover.breakers")
                    + "; locks waited on: " + db.rows("select pid, state, wait_event_type, query from pg_stat_activity"
                            + " where datname = current_database() and wait_event_type = 'Lock'"), e);
        }
        assertEquals(1, calls.get(), "parked without calling");

        assertTrue(layover.providerStates().forceClose(KEY, "incident over"));
        Map<String, Object> b = db.row("select * from layover.breakers where provider_key = ?", KEY);
        assertEquals("closed", b.get("state"));
        assertNotNull(b.get("closed_at"), "the recovery sweep reads closed_at");
        assertEquals("worker-a", b.get("changed_by"));
        layover.enqueue(chat, new Chat("after"));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(2, calls.get());
        Await.until(WAIT, "the local closing told", () -> workerEvents.stream()
                .anyMatch(e -> e.to() == BreakerState.CLOSED && e.local()));
        assertFalse(console.forceClose(KEY, "again"), "already closed");
    }
}
