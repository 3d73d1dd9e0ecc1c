package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The sweep's rules, one run at a time: the runner is driven by hand (no recurring task) while a
 * started Layover instance runs the replayed jobs.
 */
@DatabaseTest
class RecoverySweepRulesTest {

    private static final String KEY = "test:provider";

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private Layover start(TestDatabase db, JobType<?>... types) {
        layover = Fixtures.layover(db, types)
                .breakers(RecoveryFixtures.NEVER_OPENS)
                .cooldowns(RecoveryFixtures.TINY_COOLDOWNS)
                .start();
        return layover;
    }

    private static RecoverySweep.Builder quick() {
        return RecoverySweep.builder().spreadOver(Duration.ZERO).trials(false);
    }

    /** Runs the sweep, waits for the jobs it made, again, until {@code done} (or fails after the wait). */
    private static void drive(SweepRunner runner, TestDatabase db, String what, BooleanSupplier done) {
        Await.until(Fixtures.WAIT, what, () -> {
            if (done.getAsBoolean()) {
                return true;
            }
            runner.runOnce();
            RecoveryFixtures.awaitNoJobs(db);
            return done.getAsBoolean();
        });
    }

    private static String phase(TestDatabase db, String key) {
        List<Map<String, Object>> rows = db.rows("select phase from layover.recovery_state where provider_key = ?", key);
        return rows.isEmpty() ? null : (String) rows.get(0).get("phase");
    }

    @Test
    void nonReplayableTypesEntriesWithoutAKeyAndUnknownJobTypesAreNeverTouched(TestDatabase db) {
        JobType<Work> work = Fixtures.work();
        JobType<Work> picky = JobType.builder("picky", Work.class).providerKey(a -> KEY).handler((a, c) -> null).build();
        start(db, work, picky);
        Instant before = Instant.now().minusSeconds(60);
        List<Long> auto = new java.util.ArrayList<>();
        for (String f : List.of("provider_unavailable", "breaker_open", "rate_limit_exhausted", "quota_exhausted")) {
            auto.add(Fixtures.deadLetter("auto-" + f).failure(f).parkedAt(before).insert(db));
        }
        auto.add(Fixtures.deadLetter("picky-unavailable").type("picky").failure("provider_unavailable").parkedAt(before)
                .insert(db));
        List<Long> untouched = new java.util.ArrayList<>();
        for (String f : List.of("rejected", "auth_refused", "job_error", "bad_args", "handler_parked",
                "snooze_exhausted")) {
            untouched.add(Fixtures.deadLetter("never-" + f).failure(f).parkedAt(before).insert(db));
        }
        untouched.add(Fixtures.deadLetter("no-key-1").provider(null).parkedAt(before).insert(db));
        untouched.add(Fixtures.deadLetter("no-key-2").provider(null).failure("breaker_open").parkedAt(before).insert(db));
        untouched.add(Fixtures.deadLetter("ghost").type("ghost").failure("breaker_open").parkedAt(before).insert(db));
        untouched.add(Fixtures.deadLetter("in-review").state("review").parkedAt(before).insert(db));
        untouched.add(Fixtures.deadLetter("picky-breaker").type("picky").failure("breaker_open").parkedAt(before)
                .insert(db));
        RecoveryFixtures.closedNow(db, KEY);

        SweepRunner runner = new SweepRunner(quick().firstBatch(2)
                .autoReplay("picky", FailureType.PROVIDER_UNAVAILABLE).build(), layover);
        drive(runner, db, "the sweep to finish", () -> "idle".equals(phase(db, KEY))
                && db.count("select count(*) from layover.dead_letters where state = 'replayed'") == auto.size());

        for (long id : auto) {
            assertEquals("replayed", db.value("select state from layover.dead_letters where id = ?", id));
        }
        for (long id : untouched) {
            Map<String, Object> d = db.row("select state, replay_count, auto_replay_count, failure_type, job_type "
                    + "from layover.dead_letters where id = ?", id);
            assertEquals(0, d.get("replay_count"), "untouched: " + d);
            assertTrue(Set.of("parked", "review").contains((String) d.get("state")), d.toString());
            assertEquals(0, db.count("select count(*) from layover.audit_log where ids @> array[?::bigint]", id),
                    "no audit row names " + d);
        }
        runner.runOnce();
        assertEquals(auto.size(), db.count("select count(*) from layover.dead_letters where state = 'replayed'"),
                "a further run changes nothing");
    }

    @Test
    void batchesGrowWhileReplaysSucceedAndShrinkWhenTheyFailAgain(TestDatabase db) {
        // jobs n = 5..8 fail (transient, one attempt): half of the second batch parks again
        JobType<Work> work = Fixtures.work(1, (args, ctx) -> args.n() >= 5 && args.n() <= 8
                ? Outcome.transientFailure("still broken", null) : null);
        start(db, work);
        db.update("""
                INSERT INTO layover.dead_letters
                    (job_type, job_id, args, provider_key, failure_type, attempts, first_enqueued_at, parked_at)
                SELECT 'work', 'g-' || g, jsonb_build_object('name', 'g-' || g, 'n', g), ?, 'breaker_open', 0,
                       now(), now() - interval '1 minute'
                FROM generate_series(1, 40) g ORDER BY g""", KEY);
        RecoveryFixtures.closedNow(db, KEY);
        SweepRunner runner = new SweepRunner(quick().firstBatch(4).growthFactor(2).maxBatch(32).build(), layover);

        drive(runner, db, "the sweep to finish", () -> "idle".equals(phase(db, KEY))
                && db.count("select count(*) from layover.dead_letters where state = 'parked'") == 0);

        assertEquals(List.of(4L, 8L, 4L, 8L, 16L), RecoveryFixtures.sweepBatches(db),
                "grows x2, halves after the failures of the second batch, grows again");
        assertEquals(4, db.count("select count(*) from layover.dead_letters where state = 'review' and park_count = 2 "
                + "and (args ->> 'n')::int between 5 and 8"), "a sweep replay that parks again goes to review");
        Map<String, Object> s = db.row("select * from layover.recovery_state where provider_key = ?", KEY);
        assertEquals(4L, ((Number) s.get("parked_again")).longValue());
        assertEquals(36L, ((Number) s.get("replayed")).longValue() - 4L, s.toString());
        assertEquals(5, s.get("batches"));
    }

    @Test
    void theReplayBudgetMovesRepeatFailuresToReview(TestDatabase db) {
        AtomicInteger calls = new AtomicInteger();
        JobType<Work> work = Fixtures.work(1, (args, ctx) -> {
            calls.incrementAndGet();
            return Outcome.transientFailure("still broken", null);
        });
        start(db, work);
        long id = Fixtures.deadLetter("flaky").parkedAt(Instant.now().minusSeconds(60)).insert(db);
        SweepRunner runner = new SweepRunner(quick().replayBudget(2).build(), layover);
        DeadLetters store = DeadLetters.create(layover);

        for (int round = 1; round <= 2; round++) {
            RecoveryFixtures.closedNow(db, KEY);
            drive(runner, db, "the sweep replay to fail again", () -> "review".equals(
                    db.value("select state from layover.dead_letters where id = ?", id)));
            assertEquals(round, db.value("select auto_replay_count from layover.dead_letters where id = ?", id));
            store.replay(id, ReplayOptions.by("alice").note("try once more"));
            RecoveryFixtures.awaitNoJobs(db);
            Await.equal(Fixtures.WAIT, "state after the manual replay", "parked",
                    () -> db.value("select state from layover.dead_letters where id = ?", id));
        }
        RecoveryFixtures.closedNow(db, KEY);
        drive(runner, db, "the budget to be spent", () -> "review".equals(
                db.value("select state from layover.dead_letters where id = ?", id)));

        assertEquals(4, calls.get(), "two sweep replays and two manual ones ran; the third sweep made no job");
        Map<String, Object> d = db.row("select auto_replay_count, replay_count, park_count from layover.dead_letters "
                + "where id = ?", id);
        assertEquals(2, d.get("auto_replay_count"));
        assertEquals(4, d.get("replay_count"));
        assertEquals(List.of("sweep", "manual", "sweep", "manual"), db.rows("select r ->> 'kind' as k from "
                + "layover.dead_letters d, jsonb_array_elements(d.replays) r where d.id = ?", id).stream()
                .map(r -> r.get("k")).toList());
        assertEquals(1L, ((Number) db.value("select moved_to_review from layover.recovery_state")).longValue());
        assertEquals(1, db.count("select count(*) from layover.audit_log where actor = 'recovery-sweep' and count = 0 "
                + "and details ->> 'moved_to_review' = '1'"), "the audit row of the batch says it moved one to review");
    }

    @Test
    void rateLimitAndQuotaEntriesComeBackWhenTheCooldownHasEndedAndTheyAreOldEnough(TestDatabase db) {
        JobType<Work> work = JobType.builder("work", Work.class)
                .providerKey(a -> a.name().startsWith("q") ? "quota:key" : "rl:key")
                .handler((a, c) -> null)
                .build();
        start(db, work);
        Instant tenMinutes = Instant.now().minusSeconds(600);
        long oldRateLimited = Fixtures.deadLetter("rl-old").provider("rl:key").failure("rate_limit_exhausted")
                .parkedAt(tenMinutes).insert(db);
        long youngRateLimited = Fixtures.deadLetter("rl-young").provider("rl:key").failure("rate_limit_exhausted")
                .insert(db);
        long unavailable = Fixtures.deadLetter("rl-unavailable").provider("rl:key").failure("provider_unavailable")
                .parkedAt(tenMinutes).insert(db);
        long quota = Fixtures.deadLetter("q-old").provider("quota:key").failure("quota_exhausted")
                .parkedAt(Instant.now().minusSeconds(7200)).insert(db);
        long youngQuota = Fixtures.deadLetter("q-young").provider("quota:key").failure("quota_exhausted")
                .parkedAt(tenMinutes).insert(db);
        // the quota resets in an hour: the key cools down until then
        db.update("insert into layover.cooldowns (provider_key, until, reason, started_at, updated_at) "
                + "values ('quota:key', now() + interval '1 hour', 'quota_exhausted', now(), now())");
        SweepRunner runner = new SweepRunner(quick().rateLimitMinAge(Duration.ofMinutes(5))
                .quotaMinAge(Duration.ofHours(1)).build(), layover);

        runner.runOnce();
        RecoveryFixtures.awaitNoJobs(db);
        assertEquals("replayed", state(db, oldRateLimited), "old enough, no cooldown, no breaker close needed");
        assertEquals("parked", state(db, youngRateLimited), "younger than the minimum age");
        assertEquals("parked", state(db, unavailable), "provider_unavailable waits for a breaker close");
        assertEquals("parked", state(db, quota), "the quota's reset has not passed");

        db.update("update layover.cooldowns set until = now() - interval '1 second' where provider_key = 'quota:key'");
        drive(runner, db, "the quota entry to come back", () -> "replayed".equals(state(db, quota)));
        assertEquals("parked", state(db, youngQuota), "younger than the quota's minimum age");
        assertEquals("parked", state(db, youngRateLimited));
        assertEquals(1, db.value("select auto_replay_count from layover.dead_letters where id = ?", quota));
    }

    @Test
    void aSweepStartsOnlyForACloseItHasNotHandledAndRespectsTheCloseCutoff(TestDatabase db) {
        start(db, Fixtures.work());
        long before = Fixtures.deadLetter("before").failure("breaker_open")
                .parkedAt(Instant.now().minusSeconds(60)).insert(db);
        RecoveryFixtures.closedNow(db, KEY);
        SweepRunner runner = new SweepRunner(quick().closeGrace(Duration.ZERO).build(), layover);
        drive(runner, db, "the first sweep", () -> "replayed".equals(state(db, before)));
        // parked after the close (and its grace): a failure while closed, not part of the outage
        long after = Fixtures.deadLetter("after").failure("provider_unavailable").insert(db);
        for (int i = 0; i < 3; i++) {
            runner.runOnce();
        }
        assertEquals("parked", state(db, after), "parked after the close handled: waits for the next close");
        RecoveryFixtures.closedNow(db, KEY);
        drive(runner, db, "the next close's sweep", () -> "replayed".equals(state(db, after)));
    }

    @Test
    void settingsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> RecoverySweep.builder().autoReplay(FailureType.REJECTED));
        assertThrows(IllegalArgumentException.class,
                () -> RecoverySweep.builder().autoReplay("work", FailureType.BAD_ARGS));
        assertThrows(IllegalArgumentException.class, () -> RecoverySweep.builder().firstBatch(20).maxBatch(10).build());
        assertThrows(IllegalArgumentException.class, () -> RecoverySweep.builder().checkEvery(Duration.ZERO));
        RecoverySweep d = RecoverySweep.plugin();
        assertEquals(Duration.ofSeconds(5), d.checkEvery());
        assertEquals(10, d.firstBatch());
        assertEquals(500, d.maxBatch());
        assertEquals(3, d.replayBudget());
        assertEquals(RecoverySweep.DEFAULT_AUTO_REPLAY, d.autoReplayable("anything"));
        assertEquals(List.of(Duration.ofMinutes(1), Duration.ofMinutes(3), Duration.ofMinutes(9), Duration.ofMinutes(9)),
                List.of(d.trialInterval(0), d.trialInterval(1), d.trialInterval(2), d.trialInterval(3)));
        assertEquals(List.of(20, 40, 500), List.of(d.grow(10), d.grow(20), d.grow(400)));
        assertEquals(Set.of(), RecoverySweep.builder().autoReplay("work").build().autoReplayable("work"));
    }

    private static String state(TestDatabase db, long id) {
        return (String) db.value("select state from layover.dead_letters where id = ?", id);
    }
}
