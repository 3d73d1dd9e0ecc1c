package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.layover.core.EnqueuedGroup;
import dev.layover.core.GroupOptions;
import dev.layover.core.GroupResult;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Groups and the dead-letter store (docs/composition.md): a parked member holds its group open
 * until it is replayed and done, or discarded; then the group's policy says whether the callback
 * runs (on complete) or is skipped (on success only).
 */
@DatabaseTest
class GroupsDeadLetterTest {

    record Report(String name) {}

    private final AtomicBoolean broken = new AtomicBoolean(true);
    private final Map<String, AtomicInteger> callbacks = new ConcurrentHashMap<>();
    private final Map<String, GroupResult> seen = new ConcurrentHashMap<>();
    private Layover layover;
    private JobType<Work> work;
    private JobType<Report> report;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private DeadLetters start(TestDatabase db) {
        work = JobType.builder("work", Work.class).handler((a, ctx) -> a.n() == 0 && broken.get()
                ? Outcome.rejected("the model refused segment " + a.name()) : Outcome.done(a.name())).build();
        report = JobType.builder("report", Report.class).handler((a, ctx) -> {
            ctx.group().ifPresent(g -> seen.put(ctx.jobId(), g)); // before the count the test waits for
            callbacks.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return Outcome.done();
        }).build();
        layover = Layover.builder(db.newDataSource(6)).register(work, report).threads(3)
                .pollInterval(Duration.ofMillis(50)).shutdownMaxWait(Duration.ofSeconds(5)).start();
        return DeadLetters.create(layover);
    }

    private EnqueuedGroup parkedGroup(TestDatabase db, GroupOptions<Report> options) {
        EnqueuedGroup g = layover.enqueueGroup(options, work,
                List.of(new Work("a", 1), new Work("b", 1), new Work("bad", 0)));
        Await.equal(Fixtures.WAIT, "the group's parked and done members", "1/2", () -> {
            Map<String, Object> r = db.row("select parked, done from layover.job_groups where group_id = ?", g.groupId());
            return r.get("parked") + "/" + r.get("done");
        });
        assertEquals("waiting", db.value("select callback_state from layover.job_groups where group_id = ?", g.groupId()));
        return g;
    }

    private long deadLetterOf(TestDatabase db, EnqueuedGroup g) {
        String bad = g.members().get(2).id();
        return (Long) db.value("select id from layover.dead_letters where job_id = ?", bad);
    }

    private int runs(String group) {
        AtomicInteger n = callbacks.get(group);
        return n == null ? 0 : n.get();
    }

    @Test
    void aReplayedMemberThatFinishesReleasesTheCallback(TestDatabase db) {
        DeadLetters store = start(db);
        EnqueuedGroup g = parkedGroup(db, GroupOptions.callback(report, new Report("r1")));
        broken.set(false);
        store.replay(deadLetterOf(db, g), ReplayOptions.by("alice"));
        Await.equal(Fixtures.WAIT, "the callback's runs", 1, () -> runs(g.groupId()));
        assertEquals(3, seen.get(g.groupId()).done());
        assertEquals("bad", seen.get(g.groupId()).members().get(2).result(String.class));
    }

    @Test
    void aDiscardedMemberEndsTheGroupAndTheCallbackRunsOnComplete(TestDatabase db) {
        DeadLetters store = start(db);
        EnqueuedGroup g = parkedGroup(db, GroupOptions.callback(report, new Report("r2")));
        store.discard(Selection.one(deadLetterOf(db, g)), ActionOptions.by("alice"));
        Await.equal(Fixtures.WAIT, "the callback's runs", 1, () -> runs(g.groupId()));
        GroupResult r = seen.get(g.groupId());
        assertEquals(2, r.done());
        assertEquals(1, r.discarded());
        assertEquals("discarded", db.value("select state from layover.group_members where job_id = ?",
                g.members().get(2).id()));
    }

    @Test
    void aDiscardedMemberSkipsTheCallbackOfAGroupOnSuccessOnly(TestDatabase db) {
        DeadLetters store = start(db);
        EnqueuedGroup g = parkedGroup(db, GroupOptions.callback(report, new Report("r3")).onSuccessOnly());
        store.discard(Selection.one(deadLetterOf(db, g)), ActionOptions.by("alice"));
        Await.equal(Fixtures.WAIT, "the group's callback state", "skipped", () -> db.value(
                "select callback_state from layover.job_groups where group_id = ?", g.groupId()));
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'report'"),
                "the skipped callback's job is gone");
        assertFalse(callbacks.containsKey(g.groupId()));
    }

    @Test
    void aSkippedChildGroupsCallbackEndsDiscardedInItsParent(TestDatabase db) {
        DeadLetters store = start(db);
        layover.enqueueGroup(GroupOptions.callback(report, new Report("parent")).open().withKey("parent"), work,
                List.of(new Work("p", 1)));
        EnqueuedGroup child = parkedGroup(db, GroupOptions.callback(report, new Report("child")).onSuccessOnly()
                .withKey("child").inGroup("parent"));
        layover.sealGroup(null, "parent");
        store.discard(Selection.one(deadLetterOf(db, child)), ActionOptions.by("alice"));
        Await.equal(Fixtures.WAIT, "the parent's callback runs", 1, () -> runs("parent"));
        assertEquals("skipped", db.value("select callback_state from layover.job_groups where group_id = 'child'"));
        GroupResult parent = seen.get("parent");
        assertEquals(1, parent.done());
        assertEquals(1, parent.discarded(), "the skipped child's callback");
        assertFalse(callbacks.containsKey("child"));
    }
}
