package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Replay of one dead letter: exactly once, what the new job carries, and what refuses it. */
@DatabaseTest
class ReplayTest {

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    @Test
    void fiftyConcurrentReplaysOfOneDeadLetterCreateExactlyOneJob(TestDatabase db) throws Exception {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        long id = Fixtures.deadLetter("race-1").insert(db);

        int threads = 50;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        AtomicInteger replayed = new AtomicInteger();
        AtomicInteger conflicts = new AtomicInteger();
        List<Future<?>> futures = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            String who = "console-" + i;
            futures.add(pool.submit(() -> {
                ready.countDown();
                go.await();
                try {
                    store.replay(id, ReplayOptions.by(who));
                    replayed.incrementAndGet();
                } catch (ReplayConflictException e) {
                    assertEquals(ReplayConflictException.Reason.STATE, e.reason());
                    conflicts.incrementAndGet();
                }
                return null;
            }));
        }
        assertTrue(ready.await(10, TimeUnit.SECONDS));
        go.countDown();
        for (Future<?> f : futures) {
            f.get(30, TimeUnit.SECONDS);
        }
        pool.shutdown();

        assertEquals(1, replayed.get(), "exactly one replay succeeds");
        assertEquals(49, conflicts.get(), "every other one is refused as a conflict");
        assertEquals(1, db.count("select count(*) from layover.scheduled_tasks where task_instance = 'race-1'"));
        Map<String, Object> dl = db.row("select state, replay_count, jsonb_array_length(replays) n "
                + "from layover.dead_letters where id = ?", id);
        assertEquals("replayed", dl.get("state"));
        assertEquals(1, dl.get("replay_count"));
        assertEquals(1, dl.get("n"));
        assertEquals(1, db.count("select count(*) from layover.audit_log where action = 'replay'"));
    }

    @Test
    void concurrentBulkReplaysOfTheSameDeadLettersCreateOneJobEach(TestDatabase db) throws Exception {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        Fixtures.insertMany(db, 400, "bulk", "test:provider", "provider_unavailable", "parked");
        DeadLetterFilter all = DeadLetterFilter.all();

        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<BulkResult>> futures = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            String who = "console-" + i;
            futures.add(pool.submit(() -> {
                go.await();
                return store.replay(Selection.matching(all), ReplayOptions.by(who).batchSize(50));
            }));
        }
        go.countDown();
        long changed = 0;
        for (Future<BulkResult> f : futures) {
            changed += f.get(60, TimeUnit.SECONDS).changed();
        }
        pool.shutdown();

        assertEquals(400, changed, "each dead letter replayed by exactly one of the runs");
        assertEquals(400, Fixtures.jobs(db));
        assertEquals(0, db.count("select count(*) from layover.dead_letters where replay_count <> 1"));
    }

    @Test
    void aReplayCreatesAJobWithTheDeadLettersIdArgsProviderKeyPriorityAndLink(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        long id = Fixtures.deadLetter("order-17").args("{\"name\":\"order-17\",\"n\":5}").insert(db);
        db.update("update layover.dead_letters set priority = 7 where id = ?", id);
        Instant runAt = Instant.now().plus(Duration.ofMinutes(10));

        Replayed r = store.replay(id, ReplayOptions.by("alice").note("provider is back").runAt(runAt));

        assertEquals("order-17", r.jobId());
        assertEquals("work", r.jobType());
        assertEquals(ReplayKind.MANUAL, r.kind());
        assertFalse(r.argsEdited());
        assertTrue(Math.abs(Duration.between(runAt, r.runAt()).toMillis()) < 2, "run at the given time");
        Map<String, Object> job = db.row("select * from layover.jobs where id = 'order-17'");
        assertEquals("work", job.get("job_type"));
        assertEquals("scheduled", job.get("state"));
        assertEquals(0, job.get("attempts"));
        assertEquals("test:provider", job.get("provider_key"));
        assertEquals(7, ((Number) job.get("priority")).intValue());
        assertEquals(id, ((Number) job.get("dead_letter_id")).longValue());
        assertEquals("manual", job.get("replay_kind"));
        assertEquals("{\"n\": 5, \"name\": \"order-17\"}", job.get("args"));
        Map<String, Object> raw = db.row("select picked, version, consecutive_failures from layover.scheduled_tasks "
                + "where task_instance = 'order-17'");
        assertEquals(false, raw.get("picked"));
        assertEquals(1L, raw.get("version"));
        assertEquals(0, raw.get("consecutive_failures"));

        DeadLetter dl = store.get(id).orElseThrow();
        assertEquals(DeadLetterState.REPLAYED, dl.state());
        assertEquals(1, dl.replayCount());
        assertEquals(0, dl.autoReplayCount());
        assertEquals(1, dl.replays().size());
        DeadLetter.Replay h = dl.replays().get(0);
        assertEquals("order-17", h.jobId());
        assertEquals("alice", h.by());
        assertEquals(ReplayKind.MANUAL, h.kind());
        assertNotNull(h.at());
    }

    @Test
    void aReplayIsRefusedWhenALiveJobWithTheSameIdExistsAndChangesNothing(TestDatabase db) {
        JobType<Work> work = Fixtures.work();
        layover = Fixtures.layover(db, work).build();
        DeadLetters store = DeadLetters.create(layover);
        layover.enqueue(work, new Work("live", 1), EnqueueOptions.key("dup-1").withDelay(Duration.ofHours(1)));
        long id = Fixtures.deadLetter("dup-1").insert(db);

        ReplayConflictException e = assertThrows(ReplayConflictException.class,
                () -> store.replay(id, ReplayOptions.by("alice")));

        assertEquals(ReplayConflictException.Reason.LIVE_JOB_EXISTS, e.reason());
        assertTrue(e.getMessage().contains("live job 'dup-1'"), e.getMessage());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
        assertEquals(0, db.count("select replay_count from layover.dead_letters where id = ?", id));
        assertEquals("{\"n\": 1, \"name\": \"live\"}", db.value("select args::text from layover.jobs where id = 'dup-1'"));
        assertEquals(0, db.count("select count(*) from layover.audit_log"), "a refused replay leaves no audit row");
    }

    @Test
    void aReplayOfAReplayedOrDiscardedDeadLetterIsAConflictAndOfAMissingOneNotFound(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        long replayed = Fixtures.deadLetter("a").state("replayed").insert(db);
        long discarded = Fixtures.deadLetter("b").state("discarded").insert(db);

        ReplayConflictException e1 = assertThrows(ReplayConflictException.class,
                () -> store.replay(replayed, ReplayOptions.by("alice")));
        assertTrue(e1.getMessage().contains("already replayed"), e1.getMessage());
        ReplayConflictException e2 = assertThrows(ReplayConflictException.class,
                () -> store.replay(discarded, ReplayOptions.by("alice")));
        assertEquals(ReplayConflictException.Reason.STATE, e2.reason());
        DeadLetterNotFoundException e3 = assertThrows(DeadLetterNotFoundException.class,
                () -> store.replay(999_999, ReplayOptions.by("alice")));
        assertEquals(999_999, e3.deadLetterId());
        assertEquals(0, Fixtures.jobs(db));
    }

    @Test
    void aReplayedJobThatFailsAgainUpdatesTheSameDeadLetterWithBothJobsErrors(TestDatabase db) {
        AtomicInteger runs = new AtomicInteger();
        JobType<Work> work = Fixtures.work(2, (args, ctx) -> {
            throw new IllegalStateException("boom " + runs.incrementAndGet());
        });
        layover = Fixtures.layover(db, work).start();
        DeadLetters store = DeadLetters.create(layover);
        layover.enqueue(work, new Work("e2e", 1), EnqueueOptions.key("e2e-1"));
        Await.equal(Fixtures.WAIT, "parked dead letters", 1L,
                () -> db.count("select count(*) from layover.dead_letters where state = 'parked'"));
        long id = ((Number) db.value("select id from layover.dead_letters")).longValue();

        store.replay(id, ReplayOptions.by("alice"));
        Await.equal(Fixtures.WAIT, "park count", 2,
                () -> db.value("select park_count from layover.dead_letters where id = ?", id));

        assertEquals(1, db.count("select count(*) from layover.dead_letters"), "no second dead letter");
        DeadLetter dl = store.get(id).orElseThrow();
        assertEquals(DeadLetterState.PARKED, dl.state(), "a manual replay that fails again goes back to parked");
        assertEquals(2, dl.parkCount());
        assertEquals(1, dl.replayCount());
        assertEquals(4, dl.errors().size(), "two attempts of the first job, two of the replay");
        assertEquals(List.of("boom 1", "boom 2", "boom 3", "boom 4"),
                dl.errors().stream().map(DeadLetter.AttemptError::message).map(m -> m.replaceAll(" \\(.*", "")).toList());
        assertEquals("job_error", dl.failureType());
        assertEquals(0, Fixtures.jobs(db));
    }

    @Test
    void aReplayedJobThatSucceedsLeavesTheDeadLetterReplayed(TestDatabase db) {
        List<Work> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        JobType<Work> work = Fixtures.work(3, (args, ctx) -> {
            seen.add(args);
            return null;
        });
        layover = Fixtures.layover(db, work).start();
        DeadLetters store = DeadLetters.create(layover);
        long id = Fixtures.deadLetter("ok-1").args("{\"name\":\"ok-1\",\"n\":3}").insert(db);

        store.replay(id, ReplayOptions.by("alice"));

        Await.equal(Fixtures.WAIT, "runs", 1, seen::size);
        assertEquals(new Work("ok-1", 3), seen.get(0));
        // the handler has returned; its outcome reaches the completer a moment later (awaitCompletions
        // alone may look before it does)
        Await.equal(Fixtures.WAIT, "the replayed job deleted", 0L, () -> Fixtures.jobs(db));
        assertEquals("replayed", db.value("select state from layover.dead_letters where id = ?", id));
    }

    @Test
    void aSweepReplayThatFailsAgainGoesToReviewAndATrialBackToParkedWithoutSpendingBudget(TestDatabase db) {
        JobType<Work> work = Fixtures.work(1, (args, ctx) -> {
            throw new IllegalStateException("still down");
        });
        layover = Fixtures.layover(db, work).start();
        DeadLetters store = DeadLetters.create(layover);
        long swept = Fixtures.deadLetter("sweep-1").insert(db);
        long trial = Fixtures.deadLetter("trial-1").insert(db);

        store.replay(swept, ReplayOptions.by("recovery-sweep").kind(ReplayKind.SWEEP));
        store.replay(trial, ReplayOptions.by("recovery-trial").kind(ReplayKind.TRIAL));
        Await.equal(Fixtures.WAIT, "re-parked", 2L,
                () -> db.count("select count(*) from layover.dead_letters where park_count = 2"));

        DeadLetter s = store.get(swept).orElseThrow();
        assertEquals(DeadLetterState.REVIEW, s.state());
        assertEquals(1, s.autoReplayCount());
        DeadLetter t = store.get(trial).orElseThrow();
        assertEquals(DeadLetterState.PARKED, t.state());
        assertEquals(0, t.autoReplayCount(), "a trial spends no replay budget");
        assertEquals(1, t.replayCount());
        assertEquals(ReplayKind.TRIAL, t.replays().get(0).kind());

        ReplayConflictException e = assertThrows(ReplayConflictException.class,
                () -> store.replay(swept, ReplayOptions.by("recovery-sweep").kind(ReplayKind.SWEEP)));
        assertEquals(ReplayConflictException.Reason.STATE, e.reason(), "a sweep never replays what is in review");
    }

    @Test
    void aSweepReplayWithItsBudgetSpentMovesTheDeadLetterToReviewInsteadOfReplaying(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        long spent = Fixtures.deadLetter("spent-1").autoReplays(2).insert(db);
        long fresh = Fixtures.deadLetter("fresh-1").autoReplays(1).insert(db);

        ReplayConflictException e = assertThrows(ReplayConflictException.class,
                () -> store.replay(spent, ReplayOptions.by("recovery-sweep").kind(ReplayKind.SWEEP).replayBudget(2)));
        assertEquals(ReplayConflictException.Reason.BUDGET_SPENT, e.reason());
        assertEquals("review", db.value("select state from layover.dead_letters where id = ?", spent));
        assertEquals(0, db.count("select count(*) from layover.jobs where id = 'spent-1'"));

        BulkResult r = store.replay(Selection.ids(fresh), ReplayOptions.by("recovery-sweep").kind(ReplayKind.SWEEP)
                .replayBudget(2));
        assertEquals(1, r.changed());
        assertEquals(2, db.count("select auto_replay_count from layover.dead_letters where id = ?", fresh));
        assertEquals("sweep", db.value("select replay_kind from layover.jobs where id = 'fresh-1'"));
    }

    @Test
    void replayRunTimesCanBeSpreadOverAWindow(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        Fixtures.insertMany(db, 200, "spread", "test:provider", "provider_unavailable", "parked");
        Instant base = Instant.now().plus(Duration.ofHours(1));

        store.replay(Selection.matching(DeadLetterFilter.all()),
                ReplayOptions.by("alice").runAt(base).spreadOver(Duration.ofMinutes(10)));

        Map<String, Object> span = db.row("select extract(epoch from min(run_at)) lo, extract(epoch from max(run_at)) hi "
                + "from layover.jobs");
        double lo = ((Number) span.get("lo")).doubleValue() - base.getEpochSecond();
        double hi = ((Number) span.get("hi")).doubleValue() - base.getEpochSecond();
        assertTrue(lo >= -1 && lo < 60, "earliest near the base, was +" + lo + " s");
        assertTrue(hi > 480 && hi <= 601, "latest near base + 10 min, was +" + hi + " s");
    }
}
