package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Scenario 4 (dead letters): concurrent replays of one dead letter with the workers running (the
 * replayed job runs exactly once), a replay racing a discard (exactly one of them wins), and a
 * replayed job that parks again or finishes while an operator discards its dead letter.
 *
 * <p>The rules tested here: a discard acts only on dead letters in {@code parked} or
 * {@code review}. While its replay is live, a dead letter is {@code replayed}, and a discard skips
 * it (counted under {@code STATE}); the live job is never touched by a discard. If the job then
 * parks again, the same dead letter comes back as {@code parked} (park count + 1) and can be
 * discarded; if it finishes, the dead letter stays {@code replayed}. Concurrent park and discard
 * are serialized by the dead letter's row lock, so the end state is one of those two, never a
 * discarded dead letter with a live job or a second dead letter.
 */
@DatabaseTest
class DeadLetterRaceReliabilityTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private static void report(String scenario, Map<String, ?> figures) {
        StringBuilder b = new StringBuilder("\n=== RELIABILITY ").append(scenario).append('\n');
        figures.forEach((k, v) -> b.append("    ").append(k).append(": ").append(v).append('\n'));
        System.out.println(b);
    }

    @Test
    void fiftyConcurrentReplaysOfEachDeadLetterRunItsJobExactlyOnce(TestDatabase db) throws Exception {
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        JobType<Work> work = Fixtures.work(3, (args, ctx) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return Outcome.done();
        });
        layover = Fixtures.layover(db, work).start();
        DeadLetters store = DeadLetters.create(layover);
        int letters = 10;
        int threads = 50;
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < letters; i++) {
            ids.add(Fixtures.deadLetter("race-" + i).insert(db));
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicInteger replayed = new AtomicInteger();
        AtomicInteger conflicts = new AtomicInteger();
        try {
            for (long id : ids) {
                CyclicBarrier go = new CyclicBarrier(threads);
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    String who = "console-" + t;
                    futures.add(pool.submit(() -> {
                        go.await(10, TimeUnit.SECONDS);
                        try {
                            store.replay(id, ReplayOptions.by(who));
                            replayed.incrementAndGet();
                        } catch (ReplayConflictException e) {
                            conflicts.incrementAndGet();
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) {
                    f.get(30, TimeUnit.SECONDS);
                }
            }
        } finally {
            pool.shutdown();
        }
        Await.equal(WAIT, "job rows", 0L, () -> Fixtures.jobs(db));
        layover.awaitCompletions(WAIT);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("dead letters", letters);
        f.put("concurrent replays of each", threads);
        f.put("replays that succeeded", replayed.get());
        f.put("refused as conflicts", conflicts.get());
        f.put("replayed jobs run", runs.size());
        f.put("runs per job", new java.util.TreeSet<>(runs.values().stream().map(AtomicInteger::get).toList()));
        report("scenario 4a: 50 concurrent replays of one dead letter, workers running", f);
        assertEquals(letters, replayed.get(), "exactly one replay per dead letter");
        assertEquals(letters * (threads - 1), conflicts.get());
        assertEquals(letters, runs.size());
        assertTrue(runs.values().stream().allMatch(n -> n.get() == 1), "each replayed job ran exactly once");
        assertEquals(letters, db.count("select count(*) from layover.dead_letters where state = 'replayed' and replay_count = 1"));
    }

    @Test
    void aReplayRacingADiscardHasExactlyOneWinner(TestDatabase db) throws Exception {
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        JobType<Work> work = Fixtures.work(3, (args, ctx) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return Outcome.done();
        });
        layover = Fixtures.layover(db, work).start();
        DeadLetters store = DeadLetters.create(layover);
        int letters = 40;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        int replayWins = 0;
        int discardWins = 0;
        try {
            for (int i = 0; i < letters; i++) {
                long id = Fixtures.deadLetter("rd-" + i).insert(db);
                CyclicBarrier go = new CyclicBarrier(2);
                Future<Boolean> replay = pool.submit(() -> {
                    go.await(10, TimeUnit.SECONDS);
                    try {
                        store.replay(id, ReplayOptions.by("alice"));
                        return true;
                    } catch (ReplayConflictException e) {
                        return false;
                    }
                });
                Future<Boolean> discard = pool.submit(() -> {
                    go.await(10, TimeUnit.SECONDS);
                    return store.discard(Selection.one(id), ActionOptions.by("bob")).changed() == 1;
                });
                boolean r = replay.get(30, TimeUnit.SECONDS);
                boolean d = discard.get(30, TimeUnit.SECONDS);
                assertTrue(r ^ d, "exactly one of replay and discard wins for dead letter " + id);
                if (r) {
                    replayWins++;
                } else {
                    discardWins++;
                }
            }
        } finally {
            pool.shutdown();
        }
        Await.equal(WAIT, "job rows", 0L, () -> Fixtures.jobs(db));
        layover.awaitCompletions(WAIT);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("races", letters);
        f.put("replay won / discard won", replayWins + " / " + discardWins);
        f.put("jobs run", runs.size());
        f.put("dead letters replayed / discarded", db.count("select count(*) from layover.dead_letters where state = 'replayed'")
                + " / " + db.count("select count(*) from layover.dead_letters where state = 'discarded'"));
        report("scenario 4b: replay racing discard", f);
        assertEquals(replayWins, runs.size(), "a job exists (and ran once) exactly for the replays that won");
        assertTrue(runs.values().stream().allMatch(n -> n.get() == 1));
        assertEquals(replayWins, db.count("select count(*) from layover.dead_letters where state = 'replayed'"));
        assertEquals(discardWins, db.count("select count(*) from layover.dead_letters where state = 'discarded'"));
    }

    @Test
    void aReplayedJobThatParksOrFinishesWhileItsDeadLetterIsDiscardedEndsConsistently(TestDatabase db) throws Exception {
        Map<String, CountDownLatch> release = new ConcurrentHashMap<>();
        Map<String, CountDownLatch> running = new ConcurrentHashMap<>();
        JobType<Work> work = Fixtures.work(1, (args, ctx) -> {
            running.get(ctx.jobId()).countDown();
            release.get(ctx.jobId()).await(20, TimeUnit.SECONDS);
            return args.n() == 0 ? Outcome.done() : Outcome.rejected("still refused");
        });
        layover = Fixtures.layover(db, work).threads(16).start();
        DeadLetters store = DeadLetters.create(layover);
        int pairs = 6;
        Map<String, Long> deadLetterOf = new LinkedHashMap<>();
        for (int i = 0; i < pairs * 2; i++) {
            String job = "j-" + i;
            // even: the replayed job finishes; odd: it parks again
            long id = Fixtures.deadLetter(job).args("{\"name\":\"" + job + "\",\"n\":" + (i % 2) + "}").insert(db);
            deadLetterOf.put(job, id);
            release.put(job, new CountDownLatch(1));
            running.put(job, new CountDownLatch(1));
        }
        // phase 1: while the replayed jobs run, a discard of their dead letters changes nothing
        for (var e : deadLetterOf.entrySet()) {
            store.replay(e.getValue(), ReplayOptions.by("alice"));
        }
        for (var e : running.entrySet()) {
            assertTrue(e.getValue().await(20, TimeUnit.SECONDS), e.getKey() + " running");
        }
        BulkResult whileRunning = store.discard(Selection.ids(deadLetterOf.values()), ActionOptions.by("bob"));
        assertEquals(0, whileRunning.changed());
        assertEquals(pairs * 2, whileRunning.skipped(BulkResult.SkipReason.STATE));

        // phase 2: each job finishes or parks at the moment the operator keeps clicking discard
        ExecutorService clicks = Executors.newFixedThreadPool(4);
        List<Future<Integer>> attempts = new ArrayList<>();
        for (var e : deadLetterOf.entrySet()) {
            long id = e.getValue();
            boolean parks = Integer.parseInt(e.getKey().substring(2)) % 2 == 1;
            attempts.add(clicks.submit(() -> {
                int tries = 0;
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(parks ? 10 : 1);
                while (System.nanoTime() < until) {
                    tries++;
                    if (store.discard(Selection.one(id), ActionOptions.by("bob")).changed() == 1) {
                        return tries;
                    }
                }
                return -tries;
            }));
            release.get(e.getKey()).countDown();
        }
        int discarded = 0;
        for (Future<Integer> a : attempts) {
            if (a.get(30, TimeUnit.SECONDS) > 0) {
                discarded++;
            }
        }
        clicks.shutdown();
        Await.equal(WAIT, "job rows", 0L, () -> Fixtures.jobs(db));
        layover.awaitCompletions(WAIT);

        Map<String, Object> f = new LinkedHashMap<>();
        f.put("replayed jobs", pairs * 2 + " (half finish, half park again)");
        f.put("discard while they run", "changed " + whileRunning.changed() + ", skipped " + whileRunning.skippedTotal() + " (state replayed)");
        f.put("discards that succeeded while racing", discarded);
        f.put("end states", db.rows("select state, park_count, count(*) n from layover.dead_letters group by 1, 2 order by 1, 2"));
        report("scenario 4c: a replayed job finishing or parking while its dead letter is discarded", f);
        for (var e : deadLetterOf.entrySet()) {
            Map<String, Object> dl = db.row("select state, park_count, replay_count from layover.dead_letters where id = ?", e.getValue());
            boolean parks = dl.get("park_count").equals(2);
            int n = Integer.parseInt(e.getKey().substring(2));
            if (n % 2 == 0) {
                assertEquals("replayed", dl.get("state"), e.getKey() + " finished: its dead letter stays replayed");
                assertEquals(1, dl.get("park_count"));
            } else {
                assertTrue(parks, e.getKey() + " parked again into the same dead letter");
                assertEquals("discarded", dl.get("state"), e.getKey() + " parked, then the click discarded it");
            }
        }
        assertEquals(pairs * 2, db.count("select count(*) from layover.dead_letters"), "no second dead letter");
        assertEquals(pairs, discarded);
    }
}
