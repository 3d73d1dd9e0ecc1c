package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.dlq.BulkResult.SkipReason;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Replay, discard and move back of many dead letters: batches, progress, skips, audit. */
@DatabaseTest
class BulkActionsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private DeadLetters store(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        return DeadLetters.create(layover);
    }

    @Test
    void replayOfEverythingMatchingAFilterGoesInBatchesAndReportsProgress(TestDatabase db) throws Exception {
        DeadLetters store = store(db);
        Fixtures.insertMany(db, 3200, "hit", "openai:gpt-4o", "provider_unavailable", "parked");
        Fixtures.insertMany(db, 700, "other-provider", "anthropic:claude", "provider_unavailable", "parked");
        Fixtures.insertMany(db, 300, "other-state", "openai:gpt-4o", "provider_unavailable", "discarded");
        DeadLetterFilter filter = DeadLetterFilter.all().withProviderKeys("openai:gpt-4o")
                .withFailureTypes("provider_unavailable");
        List<BulkProgress> progress = new CopyOnWriteArrayList<>();

        BulkResult r = store.replay(Selection.matching(filter),
                ReplayOptions.by("alice").note("openai recovered").onProgress(progress::add));

        assertEquals(3200, r.changed());
        assertEquals(3200, r.processed());
        assertEquals(0, r.skippedTotal());
        assertEquals(7, r.batches(), "500 per transaction");
        assertEquals(7, progress.size(), "one report per committed batch");
        for (int i = 0; i < progress.size(); i++) {
            BulkProgress p = progress.get(i);
            assertEquals(i + 1, p.batch());
            assertEquals(Math.min(3200, 500L * (i + 1)), p.changed());
            assertEquals(3200, p.expected(), "discarded ones are not counted: they cannot be replayed");
        }
        assertEquals(3200, Fixtures.jobs(db));
        assertEquals(3200, db.count("select count(*) from layover.dead_letters where state = 'replayed'"));
        assertEquals(700, db.count("select count(*) from layover.dead_letters where job_id like 'other-provider-%' "
                + "and state = 'parked'"));

        Map<String, Object> audit = db.row("select actor, action, count, ids, filter::text, note, details::text, "
                + "finished_at from layover.audit_log");
        assertEquals("alice", audit.get("actor"));
        assertEquals("replay", audit.get("action"));
        assertEquals(3200L, audit.get("count"));
        assertNull(audit.get("ids"), "chosen by filter: the filter is kept, not 3,200 ids");
        assertEquals(JSON.readTree("{\"provider_keys\":[\"openai:gpt-4o\"],\"failure_types\":[\"provider_unavailable\"]}"),
                JSON.readTree((String) audit.get("filter")));
        assertEquals("openai recovered", audit.get("note"));
        assertNotNull(audit.get("finished_at"));
        JsonNode details = JSON.readTree((String) audit.get("details"));
        assertEquals("manual", details.get("kind").asText());
        assertEquals(3200, details.get("changed").asLong());
    }

    @Test
    void replayOfEverythingMatchingEndsWhileItsJobsParkAgainDuringTheRun(TestDatabase db) {
        AtomicInteger runs = new AtomicInteger();
        JobType<Work> failing = Fixtures.work(1, (args, ctx) -> {
            runs.incrementAndGet();
            throw new IllegalStateException("still failing");
        });
        layover = Fixtures.layover(db, failing).start();
        DeadLetters store = DeadLetters.create(layover);
        Fixtures.insertMany(db, 300, "loop", "test:provider", "provider_unavailable", "parked");
        DeadLetterFilter parked = DeadLetterFilter.all().withStates(DeadLetterState.PARKED);

        // slow batches give the workers time to run and re-park what was replayed before
        AtomicLong reparkedDuringRun = new AtomicLong();
        BulkResult r = store.replay(Selection.matching(parked), ReplayOptions.by("alice").batchSize(20)
                .onProgress(p -> {
                    sleep(100); // a slow batch (stands for the replay's work; not a wait)
                    reparkedDuringRun.set(db.count("select count(*) from layover.dead_letters where park_count = 2"));
                }));

        assertEquals(300, r.changed(), "each dead letter replayed once, though re-parked ones match the filter again");
        Await.equal(Fixtures.WAIT, "re-parked", 300L,
                () -> db.count("select count(*) from layover.dead_letters where park_count = 2"));
        assertEquals(0, db.count("select count(*) from layover.dead_letters where replay_count <> 1"));
        assertEquals(300, runs.get());
        assertTrue(reparkedDuringRun.get() > 0, "jobs were parked again while the replay ran");
    }

    @Test
    void aReplayLimitStopsAfterThatManyJobs(TestDatabase db) {
        DeadLetters store = store(db);
        Fixtures.insertMany(db, 1000, "lim", "test:provider", "provider_unavailable", "parked");

        BulkResult r = store.replay(Selection.matching(DeadLetterFilter.all()),
                ReplayOptions.by("sweep").limit(130).batchSize(50));

        assertEquals(130, r.changed());
        assertEquals(3, r.batches());
        assertEquals(130, Fixtures.jobs(db));
    }

    @Test
    void replayOfAListCountsWhatItSkippedAndWhy(TestDatabase db) {
        DeadLetters store = store(db);
        long ok = Fixtures.deadLetter("ok").insert(db);
        long review = Fixtures.deadLetter("rev").state("review").insert(db);
        long done = Fixtures.deadLetter("done").state("replayed").insert(db);
        long gone = Fixtures.deadLetter("gone").type("retired-type").insert(db);
        long live = Fixtures.deadLetter("live").insert(db);
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, "
                + "version) values ('work', 'live', '{}'::bytea, now() + interval '1 hour', false, 1)");

        BulkResult r = store.replay(Selection.ids(ok, review, done, gone, live, 424242L, ok), ReplayOptions.by("alice"));

        assertEquals(2, r.changed(), "ok and review");
        assertEquals(6, r.processed(), "duplicates count once");
        assertEquals(Map.of(SkipReason.STATE, 1L, SkipReason.JOB_TYPE_NOT_REGISTERED, 1L,
                SkipReason.LIVE_JOB_EXISTS, 1L, SkipReason.NOT_FOUND, 1L), r.skipped());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", live));
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", gone));
        assertEquals("{" + ok + "," + review + "}", db.value("select ids::text from layover.audit_log"));
    }

    @Test
    void discardChangesParkedAndReviewOnlyAndIsAudited(TestDatabase db) {
        DeadLetters store = store(db);
        long parked = Fixtures.deadLetter("p").insert(db);
        long review = Fixtures.deadLetter("r").state("review").insert(db);
        long replayed = Fixtures.deadLetter("x").state("replayed").insert(db);

        BulkResult r = store.discard(Selection.ids(parked, review, replayed),
                ActionOptions.by("carol").note("duplicates of order 12"));

        assertEquals(2, r.changed());
        assertEquals(1, r.skipped(SkipReason.STATE));
        assertEquals(2, db.count("select count(*) from layover.dead_letters where state = 'discarded'"));
        assertEquals("replayed", db.value("select state from layover.dead_letters where id = ?", replayed));
        Map<String, Object> audit = db.row("select actor, action, count, ids::text, note from layover.audit_log");
        assertEquals(Map.of("actor", "carol", "action", "discard", "count", 2L, "ids", "{" + parked + "," + review + "}",
                "note", "duplicates of order 12"), audit);
        assertThrows(ReplayConflictException.class, () -> store.replay(parked, ReplayOptions.by("carol")),
                "a discarded dead letter is not replayed");
    }

    @Test
    void discardOfEverythingMatchingAFilterLeavesTheRestAlone(TestDatabase db) {
        DeadLetters store = store(db);
        Fixtures.insertMany(db, 1200, "bad", "openai:gpt-4o", "rejected", "parked");
        Fixtures.insertMany(db, 50, "good", "openai:gpt-4o", "provider_unavailable", "parked");
        List<Long> changedSoFar = new ArrayList<>();

        BulkResult r = store.discard(Selection.matching(DeadLetterFilter.all().withFailureTypes("rejected")),
                ActionOptions.by("carol").batchSize(400).onProgress(p -> changedSoFar.add(p.changed())));

        assertEquals(1200, r.changed());
        assertEquals(List.of(400L, 800L, 1200L), changedSoFar);
        assertEquals(50, db.count("select count(*) from layover.dead_letters where state = 'parked'"));
    }

    @Test
    void moveBackTakesReviewToParkedWithAFreshBudget(TestDatabase db) {
        DeadLetters store = store(db);
        long review = Fixtures.deadLetter("r").state("review").autoReplays(3).insert(db);
        long parked = Fixtures.deadLetter("p").insert(db);

        BulkResult r = store.moveBackToParked(Selection.ids(review, parked), ActionOptions.by("dave").note("retry later"));

        assertEquals(1, r.changed());
        assertEquals(1, r.skipped(SkipReason.STATE), "only review moves back");
        Map<String, Object> row = db.row("select state, auto_replay_count from layover.dead_letters where id = ?", review);
        assertEquals("parked", row.get("state"));
        assertEquals(0, row.get("auto_replay_count"));
        assertEquals(1, db.count("select count(*) from layover.audit_log where action = 'move_back' and actor = 'dave' "
                + "and count = 1 and note = 'retry later'"));

        BulkResult again = store.replay(Selection.one(review), ReplayOptions.by("sweep").kind(ReplayKind.SWEEP)
                .replayBudget(3));
        assertEquals(1, again.changed(), "the sweep may replay it again");
    }

    @Test
    void everyActionWritesAnAuditRowWithWhoWhatHowManyAndNote(TestDatabase db) throws Exception {
        DeadLetters store = store(db);
        long a = Fixtures.deadLetter("a").insert(db);
        long b = Fixtures.deadLetter("b").state("review").insert(db);
        long c = Fixtures.deadLetter("c").insert(db);
        Fixtures.insertMany(db, 5, "f", "openai:gpt-4o", "rejected", "parked");

        store.replay(a, ReplayOptions.by("ann").note("one").args("{\"name\":\"a2\",\"n\":2}"));
        store.moveBackToParked(Selection.one(b), ActionOptions.by("ben").note("two"));
        store.replay(Selection.ids(b, c), ReplayOptions.by("cid").note("three"));
        store.discard(Selection.matching(DeadLetterFilter.all().withFailureTypes("rejected")),
                ActionOptions.by("dan").note("four"));
        long breaker = store.auditLog().record("eve", "force_open", "openai:gpt-4o", 1, "five", "{\"until\":\"later\"}");

        List<AuditEntry> log = store.auditLog().list(100, null);
        assertEquals(List.of("force_open", "discard", "replay", "move_back", "replay", "edit"),
                log.stream().map(AuditEntry::action).toList(), "newest first");
        assertEquals(List.of("eve", "dan", "cid", "ben", "ann", "ann"), log.stream().map(AuditEntry::actor).toList());
        assertEquals(List.of(1L, 5L, 2L, 1L, 1L, 1L), log.stream().map(AuditEntry::count).toList());
        assertEquals(List.of("five", "four", "three", "two", "one", "one"), log.stream().map(AuditEntry::note).toList());
        assertEquals(List.of(b, c), log.get(2).ids());
        assertEquals(List.of(), log.get(1).ids());
        assertEquals(JSON.readTree("{\"failure_types\":[\"rejected\"]}"), JSON.readTree(log.get(1).filterJson()));
        assertEquals("openai:gpt-4o", log.get(0).subject());
        assertEquals(breaker, log.get(0).id());
        assertTrue(log.stream().allMatch(e -> e.at() != null && e.finishedAt() != null));

        assertEquals(List.of("edit", "replay"), store.auditLog().forDeadLetter(a).stream().map(AuditEntry::action).toList());
        assertEquals(List.of("move_back", "replay"),
                store.auditLog().forDeadLetter(b).stream().map(AuditEntry::action).toList());
        assertEquals(2, store.auditLog().list(2, log.get(3).id()).size(), "older page");
        assertThrows(IllegalArgumentException.class, () -> store.auditLog().record("eve", "Drop Table", null, 0, null, null));
        assertThrows(IllegalArgumentException.class, () -> ReplayOptions.by(" "));
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
