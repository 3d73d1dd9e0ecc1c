package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.spi.Db;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.LayoverPostgresExtension;
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
import org.junit.jupiter.api.extension.ExtendWith;
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
@ExtendWith(LayoverPostgresExtension.class)
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
    void anOverloadCoolsDownBrieflyAndCountsAsABreakerFailure(TestDatabase db) {
        ProviderGate g = gate(db);
        g.admitEndpoint(KEY, 0); // first sight creates the breaker row
        Instant until = g.afterCall(KEY, null, Outcome.overloaded(null, "529 overloaded_error"));
        assertEquals(clock.instant().plusSeconds(1), until);
        assertEquals(1, breaker(db).get("failures"));
        assertEquals("overloaded: 529 overloaded_error", breaker(db).get("last_failure"));
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
            g.afterCall(KEY, null, Outcome.overloaded(null, "503"));
            g.afterCall(KEY, null, Outcome.overloaded(null, "503 again"));
            clock.advance(Duration.ofSeconds(11));
        }
        assertEquals("closed", breaker(db).get("state"));
        assertEquals(2, breaker(db).get("failures"), "only the last window's failures");
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
                return g.admit(g.newRun(KEY, "t", "job", 1, 0, 1));
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

    // ---- buckets -------------------------------------------------------------------------------

    @Test
    void aBucketHandsOutFutureSlotsOnceAndAJobKeepsItsPermit(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.requestsPerSecond(1).withLease(1)));
        g.start();
        try {
            Instant now = clock.instant();
            assertInstanceOf(Admission.Go.class, g.admit(g.newRun(KEY, "t", "a", 1, 0, 1)));
            Admission.Wait second = (Admission.Wait) g.admit(g.newRun(KEY, "t", "b", 1, 0, 1));
            Admission.Wait third = (Admission.Wait) g.admit(g.newRun(KEY, "t", "c", 1, 0, 1));
            assertEquals("bucket", second.reason());
            assertEquals(now.plusSeconds(1), second.runAt(), "the next permit exists 1 s later");
            assertEquals(now.plusSeconds(2), third.runAt(), "and the one after 2 s later: slots, not polling");
            assertEquals(second.runAt(), second.permitAt());

            // job b comes back at its slot, holding its permit in the row
            db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version, permit_at)"
                    + " values ('t', 'b', ?, true, 7, ?)", Timestamp.from(second.runAt()), Timestamp.from(second.permitAt()));
            Object tatBefore = db.value("select request_tat from layover.buckets");
            clock.advance(Duration.ofSeconds(1));
            ProviderRun b = g.newRun(KEY, "t", "b", 7, 0, 1);
            Object rowBefore = db.value("select xmin::text from layover.scheduled_tasks where task_instance = 'b'");
            assertInstanceOf(Admission.Go.class, g.admit(b));
            assertEquals(tatBefore, db.value("select request_tat from layover.buckets"), "its permit was spent, no new one taken");
            assertEquals(rowBefore, db.value("select xmin::text from layover.scheduled_tasks where task_instance = 'b'"),
                    "spent without a write of the job's row");
            // the same run asks again (a second call of its key): it has carried its permit, so it pays
            assertInstanceOf(Admission.Wait.class, g.admit(b));
            assertNotEquals(tatBefore, db.value("select request_tat from layover.buckets"), "a new permit booked");
            // a row moved off the permit's run time (a retry, a revival) holds nothing, whatever its version
            db.update("update layover.scheduled_tasks set execution_time = execution_time + interval '1 ms', version = 8"
                    + " where task_instance = 'b'");
            Object tat2 = db.value("select request_tat from layover.buckets");
            assertInstanceOf(Admission.Wait.class, g.admit(g.newRun(KEY, "t", "b", 8, 0, 1)));
            assertNotEquals(tat2, db.value("select request_tat from layover.buckets"), "not carried: it booked");
        } finally {
            g.stop();
        }
    }

    @Test
    void leasedPermitsAreSpentWithoutARoundTrip(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.requestsPerSecond(10).withLease(5)));
        g.start();
        try {
            g.admit(g.newRun(KEY, "t", "0", 1, 0, 1)); // first sight: reads the state, takes a lease of 5
            long before = g.inlineStatements();
            for (int i = 1; i < 5; i++) {
                assertInstanceOf(Admission.Go.class, g.admit(g.newRun(KEY, "t", "j" + i, 1, 0, 1)));
            }
            assertEquals(before, g.inlineStatements(), "four permits spent from the lease");
            assertInstanceOf(Admission.Go.class, g.admit(g.newRun(KEY, "t", "j5", 1, 0, 1)));
            assertEquals(before + 1, g.inlineStatements(), "the sixth takes a new lease");
        } finally {
            g.stop();
        }
    }

    /**
     * The permits of jobs picked at their places in a line, taken together: as many as their takes
     * one by one would take (the k-th fits while the tat before it is within the burst of now), the
     * tat moved on from as early as the grace.
     */
    @Test
    void placesInALineTakeTogetherWhatTheirTakesOneByOneWould(TestDatabase db) {
        // 10/s, burst 1 s: capacity 10; the default grace, 2 s
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.requestsPerSecond(10)));
        g.start();
        try {
            g.admit(g.newRun(KEY, "t", "first", 1, 0, 1)); // the key met: its bucket row written, its state cached
            Instant now = clock.instant();
            // five permits booked ahead of now: five more fit, the sixth would wait 0.1 s
            db.update("update layover.buckets set request_tat = ?", Timestamp.from(now.plusMillis(500)));
            long before = g.inlineStatements();
            assertEquals(Map.of(KEY, 5), g.takePlaces(Map.of(KEY, 8), now));
            assertEquals(before + 1, g.inlineStatements(), "one statement");
            assertEquals(now.plusSeconds(1), at(db.value("select request_tat from layover.buckets")), "five requests' time on");
            assertEquals(Map.of(), g.takePlaces(Map.of(KEY, 1), now), "none fits: nothing taken");
            assertEquals(now.plusSeconds(1), at(db.value("select request_tat from layover.buckets")));

            // an idle bucket: the places came up to the grace late, so the tat moves on from the grace (2 s) ago and
            // 2 s × 10 + the capacity's 10 fit, as one by one; the tat ends where the 30th permit put it
            clock.advance(Duration.ofSeconds(30));
            Instant later = clock.instant();
            assertEquals(Map.of(KEY, 30), g.takePlaces(Map.of(KEY, 40), later));
            assertEquals(later.plusSeconds(1), at(db.value("select request_tat from layover.buckets")));
            assertEquals(Map.of(), g.takePlaces(Map.of("never:met", 3), later), "a key this instance has not met: left to its jobs");
        } finally {
            g.stop();
        }
    }

    /**
     * The places' take waits for a bucket row another transaction holds (a skipped key would send
     * each of its jobs to a take of its own), and gives up, taking nothing, past its bound.
     */
    @Test
    void placesInALineWaitForABucketRowHeldElsewhereUpToTheirBound(TestDatabase db) throws Exception {
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.requestsPerSecond(10)));
        g.start();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            g.admit(g.newRun(KEY, "t", "first", 1, 0, 1)); // the key met: its bucket row written, its state cached
            Instant now = clock.instant();
            db.update("update layover.buckets set request_tat = ?", Timestamp.from(now.minusSeconds(10))); // idle
            try (java.sql.Connection holder = db.dataSource().getConnection()) {
                holder.setAutoCommit(false);
                holder.createStatement().execute("select 1 from layover.buckets for update");
                Future<Map<String, Integer>> taken = pool.submit(() -> g.takePlaces(Map.of(KEY, 3), now));
                Await.until(Duration.ofSeconds(10), "the take waiting for the row", () -> db.count(
                        "select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'"
                        + " and query like '%layover.buckets%'") == 1);
                holder.commit(); // the holder's statement is done
                assertEquals(Map.of(KEY, 3), taken.get(10, java.util.concurrent.TimeUnit.SECONDS), "taken once the row was free");

                holder.createStatement().execute("select 1 from layover.buckets for update"); // held past the bound
                Object tat = db.value("select request_tat from layover.buckets");
                assertEquals(Map.of(), pool.submit(() -> g.takePlaces(Map.of(KEY, 3), now)).get(10, java.util.concurrent.TimeUnit.SECONDS),
                        "cancelled after " + Buckets.PLACES_WAIT_SECONDS + " s: nothing taken");
                holder.rollback();
                assertEquals(tat, db.value("select request_tat from layover.buckets"));
            }
        } finally {
            pool.shutdownNow();
            g.stop();
        }
    }

    /** A job picked at its place in the line, past the grace: it takes one permit and leases none (the places behind stand for them). */
    @Test
    void aLineJobPickedPastItsGraceTakesOnePermitAndLeasesNone(TestDatabase db) {
        ProviderGate.Config config = bucketConfig(BucketSettings.requestsPerSecond(10).withLease(5));
        ProviderGate first = gate(db, "worker-a", config);
        first.start();
        ProviderGate g = gate(db, "worker-b", config); // no lease of worker-a's in memory
        g.start();
        try {
            first.admit(first.newRun(KEY, "t", "first", 1, 0, 1)); // the bucket row written (a take and a lease of 4)
            Instant now = clock.instant();
            db.update("update layover.buckets set request_tat = ?", Timestamp.from(now.minusSeconds(10))); // idle
            db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version,"
                    + " last_reschedule_reason) values ('t', 'late', ?, true, 7, 'bucket')", Timestamp.from(now.minusSeconds(5)));
            assertInstanceOf(Admission.Go.class, g.admit(g.newRun(KEY, "t", "late", 7, 0, 1).joinsLineWithin(Duration.ofHours(1))));
            // from now (its place is past the grace), one request's time; a lease of 4 more would put it at now + 0.5 s
            assertEquals(now.plusMillis(100), at(db.value("select request_tat from layover.buckets")));
        } finally {
            g.stop();
            first.stop();
        }
    }

    @Test
    void aTokenLimitCountsEachCallsEstimate(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.tokensPerMinute(600).withLease(1).withTokenBurst(Duration.ofSeconds(1))));
        g.start(); // 10 tokens per second, capacity 10
        try {
            Instant now = clock.instant();
            assertInstanceOf(Admission.Go.class, g.admit(g.newRun(KEY, "t", "a", 1, 4, 1)));
            assertInstanceOf(Admission.Go.class, g.admit(g.newRun(KEY, "t", "b", 1, 4, 1)));
            Admission.Wait c = (Admission.Wait) g.admit(g.newRun(KEY, "t", "c", 1, 4, 1));
            assertEquals(now.plusMillis(200), c.runAt(), "8 of 10 tokens used: 2 more tokens free in 200 ms");
        } finally {
            g.stop();
        }
    }

    @Test
    void aFallbackEndpointWithoutAFreePermitReservesNothing(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", bucketConfig(BucketSettings.requestsPerSecond(1).withLease(1)));
        g.start();
        try {
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 0));
            Object tat = db.value("select request_tat from layover.buckets");
            Admission.Wait w = (Admission.Wait) g.admitEndpoint(KEY, 0);
            assertNull(w.permitAt());
            assertEquals(tat, db.value("select request_tat from layover.buckets"));
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
