package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.DiscoverySettings;
import dev.layover.core.provider.state.Workers;
import dev.layover.core.spi.Db;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A key whose 429s state no limit (Gemini's, Bedrock's real shapes) gets a pace the fleet discovers
 * itself: slow start, an increase along a cubic curve at most once per interval fleet-wide, one multiplicative
 * decrease per 429 burst, all in one row of {@code layover.buckets} shared by every instance.
 */
@DatabaseTest
class DiscoveredPaceTest {

    private static final Logger LOG = LoggerFactory.getLogger(DiscoveredPaceTest.class);
    private static final String KEY = "fake:gemini";
    private static final Outcome.RateLimited STATES_NOTHING = new Outcome.RateLimited(null, "RESOURCE_EXHAUSTED", null);
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private final FakeProvider fake = FakeProvider.start();
    private final List<Layover> instances = new ArrayList<>();
    private final List<ProviderGate> gates = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
        gates.forEach(ProviderGate::stop);
        fake.close();
    }

    @Test
    void twoInstancesDiscoverAPaceUnderALimitNobodyStatesWithoutSpendingAnAttempt(TestDatabase db) throws Exception {
        int limit = 20;
        // Gemini's and Bedrock's real 429s: no limit in the message, no rate-limit headers, no retry-after;
        // refused calls count against the limit
        fake.primary().statesNoLimit(true).limitPerSecond(limit).countRefused(true);
        AtomicInteger runs = new AtomicInteger();
        JobType<Chat> chat = JobType.builder("chat", Chat.class)
                .providerKey(KEY)
                .handler((args, ctx) -> {
                    runs.incrementAndGet();
                    boolean gemini = Math.floorMod(args.text().hashCode(), 2) == 0;
                    call(gemini ? FakeProvider.Api.GEMINI_GENERATE_CONTENT : FakeProvider.Api.BEDROCK_CONVERSE, args.text());
                    return Outcome.done();
                })
                .build();
        for (String name : new String[] {"worker-a", "worker-b"}) {
            instances.add(Workers.builder(db.newDataSource(16), name).register(chat).threads(8)
                    .cooldowns(CooldownSettings.defaults().withDiscovery(DiscoverySettings.defaults())).start());
        }
        int jobs = 500;
        List<Chat> args = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            args.add(new Chat("job " + i));
        }
        instances.get(0).enqueueBatch(chat, args);
        Await.equal(Duration.ofSeconds(120), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        instances.forEach(l -> l.awaitCompletions(Duration.ofSeconds(10)));

        int refused = fake.primary().rateLimited();
        Map<String, Object> pace = db.row("select * from layover.provider_keys where provider_key = ?", KEY);
        LOG.info("MEASURED discovered pace, limit {}/s stated nowhere, refused calls counted, 2 instances x 8 threads, {} jobs: "
                + "{} calls, {} answered 429 ({} %), pace at the end {} requests/s ({}), {} decreases, {} increases", limit,
                jobs, runs.get(), refused, Math.round(100.0 * refused / runs.get()),
                (Double) pace.get("requests_per_minute") / 60, pace.get("discovery_phase"), pace.get("discovery_decreases"),
                pace.get("discovery_increases"));
        assertEquals(jobs, fake.primary().successes(), "every job answered once");
        assertEquals(jobs + refused, runs.get(), "a run is a success or a 429, nothing else");
        assertEquals(0L, db.count("select coalesce(max(attempts), 0) from layover.job_history"), "no attempt spent");
        assertEquals("discovered", pace.get("pace_source"));
        double rate = (Double) pace.get("requests_per_minute") / 60;
        assertTrue(rate > 0.4 * limit && rate < 1.6 * limit, "the pace found the limit's neighbourhood: " + rate + "/s");
        assertTrue((Integer) pace.get("discovery_decreases") >= 1, "it met the limit and decreased");
        // without discovery every cooldown's end is a burst into the limit (11-17 % in the etiquette benchmark)
        assertTrue(refused <= 0.15 * runs.get(), "429s only while discovering: " + refused + " of " + runs.get());
    }

    @Test
    void aFirst429StatingNothingStartsASlowStartThatTheFleetAndARestartedInstanceRead(TestDatabase db) {
        ProviderGate a = gate(db, "worker-a", DiscoverySettings.defaults(), Map.of());
        ProviderGate b = gate(db, "worker-b", DiscoverySettings.defaults(), Map.of());
        b.admitEndpoint(KEY, 0); // b knows the key
        Long started = System.nanoTime();
        a.afterCall(KEY, null, STATES_NOTHING);
        Map<String, Object> row = db.row("select * from layover.provider_keys where provider_key = ?", KEY);
        assertEquals("discovered", row.get("pace_source"));
        assertEquals("slow_start", row.get("discovery_phase"));
        assertEquals(60.0, (Double) row.get("requests_per_minute"), 1e-9, "the initial 1 request/s");
        assertNull(row.get("discovery_ceiling_per_minute"), "no ceiling before the first burst");
        double cooldown = ((Number) db.value("select extract(epoch from until - now()) from layover.cooldowns "
                + "where provider_key = ?", KEY)).doubleValue();
        assertTrue(cooldown <= 0.5 + (System.nanoTime() - started) / 1e9, "the pause (500 ms), not the escalating 1 s: " + cooldown);

        b.refreshOnce();
        assertEquals(60.0, b.learnedBucket(KEY).requestsPerMinute(), 1e-9, "the other instance paces itself by it");
        ProviderGate restarted = gate(db, "worker-a-again", DiscoverySettings.defaults(), Map.of());
        restarted.admitEndpoint(KEY, 0); // first sight reads the key's state
        assertEquals(60.0, restarted.learnedBucket(KEY).requestsPerMinute(), 1e-9, "a restarted instance reads it too");
    }

    @Test
    void manyWorkersMeetingOneBurstDecreaseThePaceOnce(TestDatabase db) throws Exception {
        ProviderGate a = gate(db, "worker-a", DiscoverySettings.defaults(), Map.of());
        ProviderGate b = gate(db, "worker-b", DiscoverySettings.defaults(), Map.of());
        a.afterCall(KEY, null, STATES_NOTHING);
        db.update("update layover.buckets set requests_per_minute = 3000, discovery_phase = 'steady', "
                + "discovery_decreased_at = now() - interval '1 minute' where provider_key = ?", KEY);
        a.refreshOnce();
        b.admitEndpoint(KEY, 0);
        int threads = 16;
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            ProviderGate g = i % 2 == 0 ? a : b;
            Thread t = new Thread(() -> {
                try {
                    go.await();
                    g.afterCall(KEY, null, STATES_NOTHING);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.start();
            ts.add(t);
        }
        go.countDown();
        for (Thread t : ts) {
            t.join(10_000);
        }
        Map<String, Object> row = db.row("select * from layover.provider_keys where provider_key = ?", KEY);
        assertEquals(1, row.get("discovery_decreases"), "16 429s of one burst, two instances: one decrease");
        assertEquals(2100.0, (Double) row.get("requests_per_minute"), 1e-9, "3000 × 0.7");
        assertEquals(3000.0, (Double) row.get("discovery_ceiling_per_minute"), 1e-9, "the rate the burst came at");

        // the next burst, an interval later, decreases once more
        Await.until(Duration.ofSeconds(10), "a second burst decreases", () -> {
            b.afterCall(KEY, null, STATES_NOTHING);
            return db.count("select discovery_decreases from layover.buckets where provider_key = ?", KEY) == 2;
        });
        assertEquals(1470.0, (Double) db.value("select requests_per_minute from layover.buckets where provider_key = ?", KEY),
                1e-9, "2100 × 0.7");
    }

    @Test
    void successesWriteNothingAndTheFleetIncreasesAtMostOncePerInterval(TestDatabase db) throws Exception {
        DiscoverySettings quick = DiscoverySettings.defaults().withRule(Duration.ofMillis(200), Duration.ofSeconds(4), 0.7);
        ProviderGate a = gate(db, "worker-a", quick, Map.of());
        ProviderGate b = gate(db, "worker-b", quick, Map.of());
        a.afterCall(KEY, null, STATES_NOTHING);
        // a steady pace of 600/min that binds: a due job of the key waits for it
        db.update("update layover.buckets set requests_per_minute = 600, discovery_ceiling = 600, discovery_phase = 'steady' "
                + "where provider_key = ?", KEY);
        waiting(db, true);
        a.refreshOnce();
        b.admitEndpoint(KEY, 0);
        long statementsBefore = a.inlineStatements() + b.inlineStatements();
        long began = System.nanoTime();
        AtomicInteger successes = new AtomicInteger();
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            ProviderGate g = i % 2 == 0 ? a : b;
            Thread t = new Thread(() -> {
                while (db.count("select discovery_increases from layover.buckets where provider_key = ?", KEY) < 4) {
                    for (int k = 0; k < 50; k++) {
                        g.afterCall(KEY, null, Outcome.done());
                        successes.incrementAndGet();
                    }
                }
            });
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            t.join(30_000);
        }
        double seconds = (System.nanoTime() - began) / 1e9;
        long statements = a.inlineStatements() + b.inlineStatements() - statementsBefore;
        Map<String, Object> row = db.row("select * from layover.buckets where provider_key = ?", KEY);
        int increases = (Integer) row.get("discovery_increases");
        LOG.info("MEASURED {} successes in {} s: {} gate statements, {} increases", successes.get(), seconds, statements, increases);
        assertTrue(successes.get() >= 400, "many successes: " + successes.get());
        long intervals = (long) Math.ceil(seconds / 0.2) + 1;
        assertTrue(statements <= 2 * intervals, "at most one try per interval and instance, not one per success: "
                + statements + " statements for " + successes.get() + " successes in " + intervals + " intervals");
        assertTrue(increases <= intervals, "at most one increase per interval fleet-wide: " + increases + " in " + intervals);
        // from the ceiling, each interval (0.2 s) one step along the cubic curve with recovery 4 s:
        // past the ceiling by 0.3 (0.2 / 4)^3 of it after one step, 0.3 (0.4 / 4)^3 after two, ...
        double expected = 600 * (1 + 0.3 * Math.pow(increases * 0.2 / 4, 3));
        assertEquals(expected, (Double) row.get("requests_per_minute"), 1e-6,
                "each interval one step along the curve past the ceiling: " + increases + " increases");

        // a pace no job waits for does not grow
        waiting(db, false);
        long until = System.nanoTime() + Duration.ofMillis(600).toNanos();
        while (System.nanoTime() < until) {
            a.afterCall(KEY, null, Outcome.done());
        }
        assertEquals(increases, db.count("select discovery_increases from layover.buckets where provider_key = ?", KEY),
                "no demand beyond the pace, no increase");

        // jobs waiting while the bucket fills up (the threads, not the pace, hold them back): no increase either
        waiting(db, true);
        db.update("update layover.buckets set request_tat = now() - interval '1 hour' where provider_key = ?", KEY);
        until = System.nanoTime() + Duration.ofMillis(600).toNanos();
        while (System.nanoTime() < until) {
            a.afterCall(KEY, null, Outcome.done());
        }
        assertEquals(increases, db.count("select discovery_increases from layover.buckets where provider_key = ?", KEY),
                "a bucket with permits free is not a pace that binds");
    }

    @Test
    void slowStartDoublesToTheFirstBurstAndRestartsAfterALongCooldown(TestDatabase db) {
        DiscoverySettings quick = DiscoverySettings.defaults().withRule(Duration.ofMillis(100), Duration.ofSeconds(4), 0.7);
        ProviderGate a = gate(db, "worker-a", quick, Map.of());
        a.afterCall(KEY, null, STATES_NOTHING);
        List<Double> rates = new ArrayList<>();
        // the starting rate read before any success (on a loaded machine an interval can pass before the first one)
        rates.add((Double) db.value("select requests_per_minute from layover.buckets where provider_key = ?", KEY));
        waiting(db, true);
        Await.until(Duration.ofSeconds(20), "slow start doubled four times", () -> {
            a.afterCall(KEY, null, Outcome.done());
            double rpm = (Double) db.value("select requests_per_minute from layover.buckets where provider_key = ?", KEY);
            if (rates.isEmpty() || rates.get(rates.size() - 1) != rpm) {
                rates.add(rpm);
            }
            return rpm >= 960;
        });
        assertEquals(List.of(60.0, 120.0, 240.0, 480.0, 960.0), rates, "doubling every interval");

        // a stated wait of 15 s: the first burst of a slow start halves the decreased rate (960 × 0.7 / 2 = 336),
        // and the long cooldown restarts slow start below it
        a.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofSeconds(15), "RESOURCE_EXHAUSTED", null));
        Map<String, Object> row = db.row("select * from layover.provider_keys where provider_key = ?", KEY);
        assertEquals("slow_start", row.get("discovery_phase"));
        assertEquals(60.0, (Double) row.get("requests_per_minute"), 1e-9, "from the initial rate again");
        assertEquals(336.0, (Double) row.get("discovery_ceiling_per_minute"), 1e-9, "up to the rate before");
        db.update("update layover.cooldowns set until = now() where provider_key = ?", KEY); // an operator ends the wait
        rates.clear();
        waiting(db, true);
        Await.until(Duration.ofSeconds(20), "slow start back to the rate before, then steady", () -> {
            a.afterCall(KEY, null, Outcome.done());
            Map<String, Object> r = db.row("select requests_per_minute, discovery_phase from layover.buckets "
                    + "where provider_key = ?", KEY);
            double rpm = (Double) r.get("requests_per_minute");
            if (rates.isEmpty() || rates.get(rates.size() - 1) != rpm) {
                rates.add(rpm);
            }
            return "steady".equals(r.get("discovery_phase"));
        });
        assertEquals(List.of(60.0, 120.0, 240.0, 336.0), rates, "doubling, capped at the rate before");
    }

    @Test
    void aDecreasedPaceIsBackAtItsCeilingAfterTheRecoveryTimeAndPassesItAsFast(TestDatabase db) {
        // an interval of 100 ms and a recovery of 400 ms: each increase is a quarter of the recovery
        DiscoverySettings curve = DiscoverySettings.defaults().withRule(Duration.ofMillis(100), Duration.ofMillis(400), 0.7);
        ProviderGate a = gate(db, "worker-a", curve, Map.of());
        a.afterCall(KEY, null, STATES_NOTHING);
        // just after a decrease: 0.7 of a ceiling of 3000/min
        db.update("update layover.buckets set requests_per_minute = 2100, discovery_ceiling = 3000, "
                + "discovery_phase = 'steady' where provider_key = ?", KEY);
        waiting(db, true);
        a.refreshOnce();
        List<Double> rates = new ArrayList<>();
        Await.until(Duration.ofSeconds(20), "nine increases", () -> {
            a.afterCall(KEY, null, Outcome.done());
            double rpm = (Double) db.value("select requests_per_minute from layover.buckets where provider_key = ?", KEY);
            if (rpm != (rates.isEmpty() ? 2100 : rates.get(rates.size() - 1))) {
                rates.add(rpm);
            }
            return rates.size() >= 9;
        });
        for (int n = 1; n <= 9; n++) {
            double expected = 3000 * (1 - 0.3 * Math.pow(1 - n / 4.0, 3));
            assertEquals(expected, rates.get(n - 1), 1e-6, "increase " + n + " of " + rates);
        }
        assertEquals(3000.0, rates.get(3), 1e-6, "back at the ceiling after the recovery time (four intervals)");
        assertEquals(3000 * 1.3, rates.get(7), 1e-6, "past it by the decrease's share as long again after");
        assertEquals(3000.0, (Double) db.value("select discovery_ceiling from layover.buckets where provider_key = ?", KEY),
                1e-9, "the ceiling moves only at a decrease");
    }

    @Test
    void aConfiguredBucketAndAStatedPaceComeFirst(TestDatabase db) {
        ProviderGate configured = gate(db, "worker-a", DiscoverySettings.defaults(), Map.of(KEY, BucketSettings.requestsPerSecond(10)));
        configured.start();
        ProviderGate other = gate(db, "worker-b", DiscoverySettings.defaults(), Map.of());
        configured.afterCall(KEY, null, STATES_NOTHING);
        other.afterCall(KEY, null, STATES_NOTHING);
        Map<String, Object> row = db.row("select * from layover.provider_keys where provider_key = ?", KEY);
        assertEquals("configured", row.get("pace_source"));
        assertEquals(600.0, (Double) row.get("requests_per_minute"), 1e-9);

        String key = "fake:bedrock";
        ProviderGate a = gate(db, "worker-c", DiscoverySettings.defaults(), Map.of());
        a.afterCall(key, null, STATES_NOTHING);
        assertEquals("discovered", db.value("select pace_source from layover.provider_keys where provider_key = ?", key));
        a.afterCall(key, null, new Outcome.RateLimited(Duration.ofSeconds(1), "429", 50.0));
        row = db.row("select * from layover.provider_keys where provider_key = ?", key);
        assertEquals("stated", row.get("pace_source"), "a stated limit replaces a discovered pace");
        assertEquals(2850.0, (Double) row.get("requests_per_minute"), 1e-9);
        assertFalse(a.learnedBucket(key) == null);
        a.afterCall(key, null, STATES_NOTHING);
        other.afterCall(key, null, STATES_NOTHING);
        row = db.row("select * from layover.provider_keys where provider_key = ?", key);
        assertEquals("stated", row.get("pace_source"), "and is not replaced by one while in force");
        assertEquals(2850.0, (Double) row.get("requests_per_minute"), 1e-9);

        ProviderGate off = gate(db, "worker-d", DiscoverySettings.off(), Map.of());
        off.afterCall("fake:off", null, STATES_NOTHING);
        assertEquals(0L, db.count("select count(*) from layover.buckets where provider_key = 'fake:off'"), "turned off");
    }

    @Test
    void anOperatorResetsADiscoveredPaceByDeletingItsRow(TestDatabase db) {
        ProviderGate a = gate(db, "worker-a", DiscoverySettings.defaults(), Map.of());
        a.afterCall(KEY, null, STATES_NOTHING);
        db.update("update layover.buckets set requests_per_minute = 30, discovery_phase = 'steady', discovery_decreases = 7 "
                + "where provider_key = ?", KEY);
        a.refreshOnce();
        assertNotNull(a.learnedBucket(KEY));
        assertEquals(1, db.update("delete from layover.buckets where provider_key = ? and discovered", KEY));
        db.update("update layover.cooldowns set until = now() where provider_key = ?", KEY);
        a.refreshOnce(); // a worker's refresh, every second: the row is gone, so is the pace
        assertNull(a.learnedBucket(KEY), "the instance dropped the pace when its refresh found the row gone");
        Await.until(Duration.ofSeconds(5), "the key called again", () -> !(a.admitEndpoint(KEY, 0) instanceof Admission.Wait));
        for (int i = 0; i < 20; i++) {
            assertSame(Admission.Go.class, a.admitEndpoint(KEY, 0).getClass(), "called freely");
        }
        assertEquals(0L, db.count("select count(*) from layover.buckets where provider_key = ?", KEY), "not written back");
        a.afterCall(KEY, null, STATES_NOTHING);
        Map<String, Object> row = db.row("select * from layover.provider_keys where provider_key = ?", KEY);
        assertEquals(60.0, (Double) row.get("requests_per_minute"), 1e-9, "the next 429 starts afresh");
        assertEquals(0, row.get("discovery_decreases"));
    }

    /** A due job of the key waiting unpicked and the pace's bucket drained (the pace binds), or no job waiting. */
    private static void waiting(TestDatabase db, boolean waits) {
        db.update("delete from layover.scheduled_tasks where task_name = 'waiting-for-the-pace'");
        if (waits) {
            db.update("update layover.buckets set request_tat = now() + interval '1 hour' where provider_key = ?", KEY);
            db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version, "
                    + "provider_key) values ('waiting-for-the-pace', 'w1', now() - interval '1 second', false, 1, ?)", KEY);
        }
    }

    /** One call in the API's real shape; a failure is thrown as its classified outcome. */
    private void call(FakeProvider.Api api, String prompt) throws Exception {
        URI url = fake.primary().url(api);
        String body = api == FakeProvider.Api.GEMINI_GENERATE_CONTENT
                ? "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"" + prompt + "\"}]}]}"
                : "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"" + prompt + "\"}]}]}";
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(url).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        Provider p = api == FakeProvider.Api.GEMINI_GENERATE_CONTENT ? Provider.GEMINI : Provider.BEDROCK;
        Optional<Classification> failure = ProviderClassifier.defaults().classify(p, r);
        if (failure.isPresent()) {
            if (r.statusCode() == 429 && failure.get().requestLimitPerSecond() != null) {
                throw new AssertionError("the fake stated a limit: " + r.body());
            }
            throw failure.get().toOutcome().toException();
        }
    }

    private ProviderGate gate(TestDatabase db, String name, DiscoverySettings discovery, Map<String, BucketSettings> buckets) {
        ProviderGate g = new ProviderGate(new Db(db.dataSource()), Clock.systemUTC(), name, new ProviderGate.Config(
                BreakerSettings.defaults(), Map.of(), CooldownSettings.defaults().withDiscovery(discovery), buckets, List.of()));
        gates.add(g);
        return g;
    }
}
