package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.spi.Db;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import dev.layover.core.internal.gate.Admission;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.testing.Await;
import dev.layover.testing.TestClock;
import dev.layover.core.provider.state.BreakerEvent;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.ProviderStates;

/**
 * The provider state's statements, one gate (or two, standing for two JVMs) on a real database,
 * with a clock the test moves.
 */
@DatabaseTest
class ProviderGateTest {

    private static final String KEY = "openai:gpt-4o-mini";
    private final TestClock clock = new TestClock(Instant.now().truncatedTo(ChronoUnit.MILLIS));

    private ProviderGate gate(TestDatabase db, String name, ProviderGate.Config config) {
        if (!gates) { // the test's time starts with its first gate, not when the instance was made (a test
            gates = true; // database cloned on a loaded machine took 20 s: rows the database stamps were ahead)
            clock.set(Instant.now().truncatedTo(ChronoUnit.MILLIS));
        }
        return new ProviderGate(new Db(db.dataSource()), clock, name, config);
    }

    private boolean gates;

    private ProviderGate gate(TestDatabase db) {
        return gate(db, "worker-a", ProviderGate.Config.defaults());
    }

    /** Cooldowns alone: a 429 stating no limit would otherwise start a discovered pace (DiscoveredPaceTest). */
    private ProviderGate gateWithoutDiscovery(TestDatabase db) {
        return gate(db, "worker-a", new ProviderGate.Config(BreakerSettings.defaults(), Map.of(),
                CooldownSettings.defaults().withoutDiscovery(), Map.of(), List.of()));
    }

    private static ProviderGate.Config breakerConfig(BreakerSettings s) {
        return new ProviderGate.Config(s, Map.of(), CooldownSettings.defaults(), Map.of(), List.of());
    }

    private static ProviderGate.Config bucketConfig(BucketSettings b) {
        return new ProviderGate.Config(BreakerSettings.defaults(), Map.of(), CooldownSettings.defaults(),
                Map.of(KEY, b), List.of());
    }

    private static Instant at(Object ts) {
        return ((Timestamp) ts).toInstant();
    }

    private Map<String, Object> breaker(TestDatabase db) {
        return db.row("select * from layover.breakers where provider_key = ?", KEY);
    }

    // ---- cooldowns ----------------------------------------------------------------------------

    @Test
    void aCooldownOnlyEverMovesForward(TestDatabase db) {
        ProviderGate g = gate(db);
        Instant first = g.afterCall(KEY, null, Outcome.rateLimited(Duration.ofSeconds(30), "429"));
        assertEquals(clock.instant().plusSeconds(30), first);
        Instant second = g.afterCall(KEY, null, Outcome.rateLimited(Duration.ofSeconds(5), "429 shorter"));
        assertEquals(first, second, "a shorter wait never pulls the cooldown back");
        assertEquals(first, at(db.value("select until from layover.cooldowns where provider_key = ?", KEY)));
        assertEquals("429", db.value("select detail from layover.cooldowns where provider_key = ?", KEY),
                "the detail is the one of the cooldown that set until");
        Instant third = g.afterCall(KEY, null, Outcome.rateLimited(Duration.ofSeconds(60), "429 longer"));
        assertEquals(clock.instant().plusSeconds(60), third);
    }

    @Test
    void rateLimitsWithoutRetryAfterEscalateWhileBackToBackAndStartOverLater(TestDatabase db) {
        ProviderGate g = gateWithoutDiscovery(db);
        List<Long> waits = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Instant until = g.afterCall(KEY, null, Outcome.rateLimited(null));
            waits.add(Duration.between(clock.instant(), until).toSeconds());
            clock.advance(Duration.between(clock.instant(), until).plusMillis(100)); // the next 429 right after
        }
        assertEquals(List.of(1L, 2L, 4L, 8L, 16L, 32L, 60L, 60L), waits, "1 s doubling to the 60 s cap");
        clock.advance(Duration.ofMinutes(5)); // longer than the strike memory
        Instant until = g.afterCall(KEY, null, Outcome.rateLimited(null));
        assertEquals(1, Duration.between(clock.instant(), until).toSeconds(), "a later rate limit starts over");
    }

    @Test
    void aBurstOfRateLimitsDuringOneCooldownCountsAsOneStrike(TestDatabase db) {
        ProviderGate g = gateWithoutDiscovery(db);
        for (int i = 0; i < 10; i++) { // ten calls in flight when the limit hit
            g.afterCall(KEY, null, Outcome.rateLimited(null));
        }
        assertEquals(1, db.count("select strikes from layover.cooldowns where provider_key = ?", KEY));
        assertEquals(clock.instant().plusSeconds(1), at(db.value("select until from layover.cooldowns")));
    }

    @Test
    void aSpentQuotaWithAKnownResetCoolsDownUntilTheReset(TestDatabase db) {
        ProviderGate g = gate(db);
        Instant reset = clock.instant().plus(Duration.ofMinutes(20));
        assertEquals(reset, g.afterCall(KEY, null, Outcome.quotaExhausted(reset, "RPD")));
        assertEquals("quota_exhausted", db.value("select reason from layover.cooldowns"));
        assertNull(g.afterCall("other:key", null, Outcome.quotaExhausted(null, "insufficient_quota")),
                "no reset known, no cooldown");
    }

    @Test
    void anOverloadAmongSuccessesBacksOffItsJobAloneAndCountsAsABreakerFailure(TestDatabase db) {
        ProviderGate g = gate(db);
        for (int i = 0; i < 20; i++) {
            g.afterCall(KEY, null, Outcome.done());
        }
        assertNull(g.afterCall(KEY, null, Outcome.overloaded(null, "503 Service Unavailable")),
                "one 503 among twenty successes pauses no one");
        assertEquals(0L, db.count("select count(*) from layover.cooldowns"));
        assertEquals(1, breaker(db).get("failures"));
        assertEquals("overloaded: 503 Service Unavailable", breaker(db).get("last_failure"));
        assertNull(g.afterCall(KEY, null, Outcome.overloaded(null, "503 again")), "two failures in 22 calls: still none");
    }

    @Test
    void overloadsAtARateCoolTheKeyDownAndAStatedWaitIsHonouredAtOnce(TestDatabase db) {
        ProviderGate g = gate(db);
        g.afterCall(KEY, null, Outcome.done());
        assertNull(g.afterCall(KEY, null, Outcome.overloaded(null, "529 overloaded_error")));
        assertNull(g.afterCall(KEY, null, Outcome.overloaded(null, "529 overloaded_error")));
        Instant until = g.afterCall(KEY, null, Outcome.overloaded(null, "529 overloaded_error"));
        assertEquals(clock.instant().plusSeconds(1), until, "three failures in four calls: the fleet pauses");
        assertEquals("overloaded", db.value("select reason from layover.cooldowns"));

        Instant stated = g.afterCall("other:key", null, Outcome.overloaded(Duration.ofSeconds(7), "503 Retry-After: 7"));
        assertEquals(clock.instant().plusSeconds(7), stated, "a wait the provider states is its signal: honoured");
    }

    @Test
    void aSuccessAfterACooldownEndedStartsTheNextOneAtOneStrike(TestDatabase db) {
        ProviderGate g = gateWithoutDiscovery(db);
        for (int i = 0; i < 3; i++) {
            Instant until = g.afterCall(KEY, null, Outcome.rateLimited(null));
            clock.advance(Duration.between(clock.instant(), until).plusMillis(100));
        }
        assertEquals(3, db.count("select strikes from layover.cooldowns where provider_key = ?", KEY));
        g.start();
        g.afterCall(KEY, null, Outcome.done());
        g.stop(); // writes the success counted in memory
        Instant until = gateWithoutDiscovery(db).afterCall(KEY, null, Outcome.rateLimited(null));
        assertEquals(clock.instant().plusSeconds(1), until,
                "the strikes were a burst: after a success the next cooldown is a first strike's, not a fourth's");
    }

    // ---- breakers ------------------------------------------------------------------------------

    @Test
    void failuresOpenTheBreakerOnlyPastEveryThreshold(TestDatabase db) {
        BreakerSettings s = BreakerSettings.defaults().withThresholds(Duration.ofSeconds(60), 4, 2, 0.5);
        ProviderGate g = gate(db, "worker-a", breakerConfig(s));
        assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 0));
        for (int i = 0; i < 3; i++) {
            g.afterCall(KEY, null, Outcome.done());
        }
        g.afterCall(KEY, null, Outcome.transientFailure("timeout", null)); // 4 calls, 1 failure
        assertEquals("closed", breaker(db).get("state"));
        assertEquals(4, breaker(db).get("calls"), "successes counted locally travel with the failure");
        g.afterCall(KEY, null, Outcome.transientFailure("timeout", null)); // 5 calls, 2 failures: ratio 0.4
        assertEquals("closed", breaker(db).get("state"));
        g.afterCall(KEY, null, Outcome.authRefused("401")); // 6 calls, 3 failures: ratio 0.5
        Map<String, Object> b = breaker(db);
        assertEquals("open", b.get("state"));
        assertEquals("closed", b.get("previous_state"));
        assertEquals(clock.instant().plusSeconds(30), at(b.get("open_until")), "open for openFor (30 s)");
        assertTrue(((String) b.get("reason")).startsWith("3 failures in 6 calls"), (String) b.get("reason"));
        assertInstanceOf(Admission.Refuse.class, g.admitEndpoint(KEY, 0), "no call while open");
    }

    @Test
    void rateLimitsRejectionsSnoozesAndTheJobsOwnErrorsAreNeverBreakerFailures(TestDatabase db) {
        BreakerSettings s = BreakerSettings.defaults().withThresholds(Duration.ofSeconds(60), 1, 1, 0.1);
        ProviderGate g = gate(db, "worker-a", breakerConfig(s));
        g.admitEndpoint(KEY, 0);
        for (int i = 0; i < 20; i++) {
            g.afterCall(KEY, null, Outcome.rateLimited(Duration.ZERO, "429"));
            g.afterCall(KEY, null, Outcome.rejected("400"));
            g.afterCall(KEY, null, Outcome.snooze(Duration.ZERO));
            g.afterCall(KEY, null, Outcome.retry("NullPointerException"));
        }
        g.refreshOnce();
        Map<String, Object> b = breaker(db);
        assertEquals("closed", b.get("state"));
        assertEquals(0, b.get("failures"));
        assertEquals(0, b.get("calls"));
    }

    @Test
    void failuresSpreadBeyondTheWindowNeverOpenIt(TestDatabase db) {
        BreakerSettings s = BreakerSettings.defaults().withThresholds(Duration.ofSeconds(10), 1, 3, 0.5);
        ProviderGate g = gate(db, "worker-a", breakerConfig(s));
        g.admitEndpoint(KEY, 0);
        for (int i = 0; i < 10; i++) {
            g.afterCall(KEY, null, Outcome.done()); // a success between them: no row of failures builds up
            g.afterCall(KEY, null, Outcome.overloaded(null, "503"));
            g.afterCall(KEY, null, Outcome.overloaded(null, "503 again"));
            clock.advance(Duration.ofSeconds(11));
        }
        assertEquals("closed", breaker(db).get("state"));
        assertEquals(2, breaker(db).get("failures"), "only the last window's failures");
    }

    @Test
    void failuresInARowOpenItWhateverTheWindowHolds(TestDatabase db) {
        BreakerSettings s = BreakerSettings.defaults().withConsecutiveFailures(4);
        ProviderGate g = gate(db, "worker-a", breakerConfig(s));
        g.admitEndpoint(KEY, 0);
        for (int i = 0; i < 50; i++) {
            g.afterCall(KEY, null, Outcome.done());
        }
        g.afterCall(KEY, null, Outcome.overloaded(null, "503"));
        for (int i = 0; i < 2; i++) {
            g.afterCall(KEY, null, Outcome.overloaded(null, "503 again"));
            assertEquals("closed", breaker(db).get("state"), "a row of " + (i + 2));
        }
        g.afterCall(KEY, null, Outcome.overloaded(null, "503, the fourth in a row"));
        assertEquals("open", breaker(db).get("state"), "4 failures in 54 calls: the window alone would not open it");
        assertTrue(String.valueOf(breaker(db).get("reason")).contains("4 failures in a row"),
                String.valueOf(breaker(db).get("reason")));
    }

    @Test
    void sixteenWorkersOfTwoInstancesInHalfOpenGetExactlyOneTrial(TestDatabase db) throws Exception {
        ProviderGate a = gate(db, "worker-a", ProviderGate.Config.defaults());
        ProviderGate b = gate(db, "worker-b", ProviderGate.Config.defaults());
        a.admitEndpoint(KEY, 0);
        b.admitEndpoint(KEY, 0);
        db.update("update layover.breakers set state = 'open', open_until = ? where provider_key = ?",
                Timestamp.from(clock.instant().minusSeconds(1)), KEY);
        a.refreshOnce();
        b.refreshOnce();
        CyclicBarrier start = new CyclicBarrier(16);
        ExecutorService pool = Executors.newFixedThreadPool(16);
        List<Future<Admission>> results = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            ProviderGate g = i % 2 == 0 ? a : b;
            results.add(pool.submit(() -> {
                start.await();
                return g.admitEndpoint(KEY, 0);
            }));
        }
        int trials = 0;
        int waits = 0;
        for (Future<Admission> f : results) {
            Admission ad = f.get();
            if (ad instanceof Admission.Go go) {
                assertNotNull(go.trialToken(), "a call in half-open is the trial");
                trials++;
            } else {
                assertEquals("breaker_half_open", ((Admission.Wait) ad).reason());
                waits++;
            }
        }
        pool.shutdown();
        assertEquals(1, trials, "exactly one trial call across both instances");
        assertEquals(15, waits);
        Map<String, Object> row = breaker(db);
        assertEquals("half_open", row.get("state"));
        assertNotNull(row.get("trial_claimed_by"));
    }

    @Test
    void aFailedTrialReopensTheBreakerForTwiceAsLongAndASuccessfulOneClosesIt(TestDatabase db) {
        ProviderGate g = gate(db);
        List<BreakerEvent> events = new CopyOnWriteArrayList<>();
        new ProviderStateHandle(g).addListener(events::add);
        g.admitEndpoint(KEY, 0);
        db.update("update layover.breakers set state = 'open', open_until = ?, open_count = 1 where provider_key = ?",
                Timestamp.from(clock.instant().minusSeconds(1)), KEY);
        g.refreshOnce();
        Admission.Go trial = (Admission.Go) g.admitEndpoint(KEY, 0);
        g.afterCall(KEY, trial.trialToken(), Outcome.overloaded(null, "still 503"));
        Map<String, Object> b = breaker(db);
        assertEquals("open", b.get("state"));
        assertEquals(clock.instant().plusSeconds(60), at(b.get("open_until")), "30 s * 2^1");
        assertEquals(2, b.get("open_count"));
        assertEquals("trial call failed: overloaded: still 503", b.get("reason"));

        clock.advance(Duration.ofSeconds(61));
        Admission.Go second = (Admission.Go) g.admitEndpoint(KEY, 0);
        g.afterCall(KEY, second.trialToken(), Outcome.done());
        b = breaker(db);
        assertEquals("closed", b.get("state"));
        assertEquals(clock.instant(), at(b.get("closed_at")));
        assertEquals(0, b.get("open_count"));
        assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 0));
        dev.layover.testing.Await.equal(Duration.ofSeconds(5), "events", 4, events::size);
        assertEquals(List.of("open>half_open", "half_open>open", "open>half_open", "half_open>closed"),
                events.stream().map(e -> e.from().code() + ">" + e.to().code()).toList());
        assertTrue(events.stream().allMatch(BreakerEvent::local));
    }

    @Test
    void aStaleTrialClaimIsTakenOverAndALateVerdictIsIgnored(TestDatabase db) {
        ProviderGate a = gate(db, "worker-a", ProviderGate.Config.defaults());
        ProviderGate b = gate(db, "worker-b", ProviderGate.Config.defaults());
        a.admitEndpoint(KEY, 0);
        b.admitEndpoint(KEY, 0);
        db.update("update layover.breakers set state = 'open', open_until = ? where provider_key = ?",
                Timestamp.from(clock.instant()), KEY);
        a.refreshOnce();
        Admission.Go first = (Admission.Go) a.admitEndpoint(KEY, 0);
        b.refreshOnce();
        assertInstanceOf(Admission.Wait.class, b.admitEndpoint(KEY, 0), "the trial is held");
        clock.advance(BreakerSettings.defaults().trialTimeout().plusSeconds(1)); // worker-a died mid-call
        Admission.Go second = (Admission.Go) b.admitEndpoint(KEY, 0);
        assertEquals("worker-b", breaker(db).get("trial_claimed_by"));
        a.afterCall(KEY, first.trialToken(), Outcome.overloaded(null, "late"));
        assertEquals("half_open", breaker(db).get("state"), "the stale claim's verdict changes nothing");
        b.afterCall(KEY, second.trialToken(), Outcome.done());
        assertEquals("closed", breaker(db).get("state"));
    }

    @Test
    void aTrialThatSaysNothingAboutHealthGivesItsClaimBack(TestDatabase db) {
        ProviderGate a = gate(db, "worker-a", ProviderGate.Config.defaults());
        ProviderGate b = gate(db, "worker-b", ProviderGate.Config.defaults());
        a.admitEndpoint(KEY, 0);
        db.update("update layover.breakers set state = 'open', open_until = ? where provider_key = ?",
                Timestamp.from(clock.instant()), KEY);
        a.refreshOnce();
        Admission.Go trial = (Admission.Go) a.admitEndpoint(KEY, 0);
        a.afterCall(KEY, trial.trialToken(), Outcome.rejected("400 bad prompt"));
        assertNull(breaker(db).get("trial_token"));
        assertEquals("half_open", breaker(db).get("state"));
        Admission next = b.admitEndpoint(KEY, 0);
        assertNotNull(((Admission.Go) next).trialToken(), "the next worker takes the trial at once");
    }

    // ---- buckets (a call its job's pick did not admit: layover.take) ------------------------------

    @Test
    void aTokenLimitCountsEachCallsEstimate(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.tokensPerMinute(600).withTokenBurst(Duration.ofSeconds(1))));
        g.start(); // 10 tokens per second, capacity 10
        try {
            Instant now = clock.instant();
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 4));
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 4));
            Admission.Wait c = (Admission.Wait) g.admitEndpoint(KEY, 4);
            assertEquals(now.plusMillis(200), c.runAt(), "8 of 10 tokens used: 2 more tokens free in 200 ms");
            assertInstanceOf(Admission.TooLarge.class, g.admitEndpoint(KEY, 11), "more than the capacity: never");
        } finally {
            g.stop();
        }
    }

    @Test
    void aFallbackEndpointWithoutAFreePermitReservesNothing(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.requestsPerSecond(1)));
        g.start();
        try {
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 0));
            Object tat = db.value("select request_tat from layover.buckets");
            Admission.Wait w = (Admission.Wait) g.admitEndpoint(KEY, 0);
            assertTrue(w.runAt().isAfter(clock.instant()), "it would fit later: " + w.runAt());
            assertEquals(tat, db.value("select request_tat from layover.buckets"), "nothing was taken");
        } finally {
            g.stop();
        }
    }

    // ---- operators -----------------------------------------------------------------------------

    @Test
    void forceOpenHoldsUntilForceCloseAndEachChangeIsOneEvent(TestDatabase db) {
        ProviderGate g = gate(db);
        ProviderStates states = new ProviderStateHandle(g);
        List<BreakerEvent> events = new CopyOnWriteArrayList<>();
        states.addListener(events::add);
        assertTrue(states.forceOpen(KEY, null, "provider incident #42"));
        assertEquals(false, states.forceOpen(KEY, null, "again"), "already open: no change");
        Map<String, Object> b = breaker(db);
        assertEquals("open", b.get("state"));
        assertEquals("forced open: again", b.get("reason"));
        clock.advance(Duration.ofDays(30));
        assertInstanceOf(Admission.Refuse.class, g.admitEndpoint(KEY, 0), "no trial while forced open");
        assertEquals(BreakerState.OPEN, states.breakerState(KEY));
        assertTrue(states.forceClose(KEY, "incident over"));
        assertEquals(false, states.forceClose(KEY, "again"));
        assertEquals("closed", breaker(db).get("state"));
        assertNotNull(breaker(db).get("closed_at"));
        assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 0));
        dev.layover.testing.Await.equal(Duration.ofSeconds(5), "events", 2, events::size);
        assertEquals(BreakerState.OPEN, events.get(0).to());
        assertEquals(BreakerState.CLOSED, events.get(1).to());
        assertEquals("forced closed: incident over", events.get(1).reason());
    }

    @Test
    void forceOpenForADurationEndsInTheUsualTrial(TestDatabase db) {
        ProviderGate g = gate(db);
        new ProviderStateHandle(g).forceOpen(KEY, Duration.ofMinutes(5), "maintenance");
        assertInstanceOf(Admission.Refuse.class, g.admitEndpoint(KEY, 0));
        clock.advance(Duration.ofMinutes(5));
        assertNotNull(((Admission.Go) g.admitEndpoint(KEY, 0)).trialToken());
    }
}
