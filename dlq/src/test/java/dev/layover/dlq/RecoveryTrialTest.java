package dev.layover.dlq;

import static dev.layover.dlq.RecoveryFixtures.KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.dlq.RecoveryFixtures.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Recovery trials while a breaker stays open with no traffic. */
@DatabaseTest
class RecoveryTrialTest {

    private static final Duration WAIT = Duration.ofSeconds(45);

    private final FakeProvider fake = FakeProvider.start();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
        fake.close();
    }

    private static void insertParked(TestDatabase db, int n) {
        db.update("""
                INSERT INTO layover.dead_letters
                    (job_type, job_id, args, provider_key, failure_type, attempts, first_enqueued_at, parked_at)
                SELECT 'chat', 'c-' || g, jsonb_build_object('text', 'chat ' || g), ?, 'breaker_open', 0, now(),
                       now() - interval '1 minute'
                FROM generate_series(1, ?) g ORDER BY g""", KEY, n);
    }

    @Test
    void failedTrialsSpendNoBudgetTakeTheParkedJobsInTurnAndBackOff(TestDatabase db) {
        fake.primary().phase(FakeProvider.Phase.OUTAGE);
        Map<String, AtomicInteger> successes = RecoveryFixtures.counter();
        JobType<Chat> chat = RecoveryFixtures.chat(fake.primary().url(), RecoveryFixtures.quickPolicy(1), successes);
        layover = Layover.builder(db.newDataSource(12))
                .register(chat)
                .threads(2)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5))
                .breakers(BreakerSettings.defaults().withOpenFor(Duration.ofMillis(100), Duration.ofMillis(200)))
                .cooldowns(RecoveryFixtures.TINY_COOLDOWNS)
                .plugin(RecoverySweep.builder()
                        .checkEvery(Duration.ofMillis(50))
                        .trialEvery(Duration.ofMillis(300), Duration.ofMillis(1200)).trialBackoff(2)
                        .build())
                .build();
        insertParked(db, 3);
        assertTrue(layover.providerStates().forceOpen(KEY, Duration.ofMillis(200), "outage"));
        layover.start();

        Await.until(WAIT, "five trials", () -> RecoveryFixtures.trialRunTimes(db).size() >= 5);
        Await.until(WAIT, "the fifth trial to fail", () -> fake.primary().calls() >= 5
                && db.count("select count(*) from layover.jobs where job_type = 'chat'") == 0);

        List<Instant> runs = RecoveryFixtures.trialRunTimes(db).subList(0, 5);
        long[] gaps = new long[4];
        for (int i = 0; i < 4; i++) {
            gaps[i] = Duration.between(runs.get(i), runs.get(i + 1)).toMillis();
        }
        long[] least = {300, 600, 1200, 1200};
        for (int i = 0; i < 4; i++) {
            assertTrue(gaps[i] >= least[i], "trial " + (i + 2) + " came " + gaps[i] + " ms after the previous one, "
                    + "expected at least " + least[i] + " ms; gaps " + java.util.Arrays.toString(gaps));
        }
        layover.stop(); // no further trial while the rest is checked
        assertEquals(0, db.count("select coalesce(sum(auto_replay_count), 0) from layover.dead_letters"),
                "failed trials spend no replay budget");
        assertEquals(0, db.count("select count(*) from layover.dead_letters where state not in ('parked', 'replayed')"),
                "each failed trial's dead letter is parked again (one may be out on a trial)");
        assertTrue(db.count("select count(*) from layover.dead_letters where state = 'parked'") >= 2);
        List<Map<String, Object>> trialed = db.rows("select a.ids[1] as dead_letter from layover.audit_log a "
                + "where a.actor = 'recovery-sweep' and a.details ->> 'kind' = 'trial' order by a.id limit 3");
        assertEquals(3, new HashSet<>(trialed.stream().map(r -> r.get("dead_letter")).toList()).size(),
                "the first three trials took the three parked jobs in turn: " + trialed);
        assertEquals(0, successes.size());
        assertNotEquals(BreakerState.CLOSED, layover.providerStates().breakerState(KEY));
        Map<String, Object> s = db.row("select phase, trials from layover.recovery_state where provider_key = ?", KEY);
        assertEquals("breaker_open", s.get("phase"));
        assertTrue((Integer) s.get("trials") >= 5, s.toString());
        assertEquals(0, RecoveryFixtures.sweepBatches(db).size(), "no sweep while the breaker is open");
    }

    @Test
    void noTrialWhileLiveJobsOfTheKeyWillMakeTheTrialCall(TestDatabase db) {
        Map<String, AtomicInteger> successes = RecoveryFixtures.counter();
        JobType<Chat> chat = RecoveryFixtures.chat(fake.primary().url(), RecoveryFixtures.quickPolicy(1), successes);
        layover = Layover.builder(db.newDataSource(12))
                .register(chat)
                .threads(2)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5))
                .cooldowns(RecoveryFixtures.TINY_COOLDOWNS)
                .plugin(RecoverySweep.builder()
                        .checkEvery(Duration.ofMillis(50))
                        .trialEvery(Duration.ofMillis(100), Duration.ofMillis(100))
                        .spreadOver(Duration.ofMillis(200))
                        .build())
                .build();
        insertParked(db, 2);
        assertTrue(layover.providerStates().forceOpen(KEY, Duration.ofSeconds(2), "outage"));
        layover.enqueue(chat, new Chat("traffic"));
        layover.start();

        // the live job is due before the breaker's open period ends: it is picked, parked breaker_open
        // (the breaker is still open); then, with no traffic left, the trials begin
        Await.until(WAIT, "the breaker closed by a trial", () -> layover.providerStates().breakerState(KEY)
                == BreakerState.CLOSED);
        assertEquals(Boolean.TRUE, db.value("""
                select (select min(at) from layover.audit_log where details ->> 'kind' = 'trial')
                     > (select parked_at from layover.dead_letters where job_id not in ('c-1', 'c-2'))"""),
                "the first trial came after the live job had gone");
        Await.equal(WAIT, "dead letters replayed", 3L,
                () -> db.count("select count(*) from layover.dead_letters where state = 'replayed'"));
        Await.equal(WAIT, "jobs done", 3, successes::size);
        assertEquals(1, db.count("select count(*) from layover.audit_log where details ->> 'kind' = 'trial'"),
                "one trial, which succeeded");
    }
}
