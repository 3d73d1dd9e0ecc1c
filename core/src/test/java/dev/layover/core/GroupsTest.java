package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Groups (docs/composition.md) on a real Postgres: the callback runs once every member finished,
 * with their results and counts; two instances finishing the members of many small groups at the
 * same moment release each callback once; a parked member holds its group open; an open group takes
 * members until sealed; bad input is refused at the call with nothing written.
 */
@DatabaseTest
class GroupsTest {

    record Segment(String doc, int n) {}

    record Assemble(String doc) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    private final List<Layover> instances = new ArrayList<>();
    private final Map<String, AtomicInteger> callbacks = new ConcurrentHashMap<>();
    private final Map<String, GroupResult> seen = new ConcurrentHashMap<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private JobType<Segment> segment() {
        return JobType.builder("segment", Segment.class).handler((a, ctx) -> {
            if (a.n() < 0) {
                return Outcome.rejected("segment " + a.n() + " cannot be translated");
            }
            return Outcome.done(a.n() * 10);
        }).build();
    }

    private JobType<Assemble> assemble() {
        return JobType.builder("assemble", Assemble.class).handler((a, ctx) -> {
            ctx.group().ifPresent(g -> seen.put(ctx.jobId(), g)); // before the count the test waits for
            callbacks.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return Outcome.done();
        }).build();
    }

    private Layover layover(TestDatabase db, JobType<?>... types) {
        return Layover.builder(db.newDataSource(6)).register(types).threads(3).pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5)).build();
    }

    private Layover started(Layover l) {
        instances.add(l);
        return l.start();
    }

    private static List<Segment> segments(String doc, int n) {
        return IntStream.range(0, n).mapToObj(i -> new Segment(doc, i)).toList();
    }

    @Test
    void theCallbackRunsOnceEveryMemberIsDoneWithTheirResultsAndCounts(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover l = layover(db, seg, asm);
        EnqueuedGroup g = l.enqueueGroup(GroupOptions.callback(asm, new Assemble("doc-1")), seg, segments("doc-1", 40));
        assertTrue(g.created());
        assertEquals(40, g.members().size());
        assertEquals(g.groupId(), g.callback().id(), "the callback's id is the group's");

        Map<String, Object> before = db.row("select * from layover.job_groups where group_id = ?", g.groupId());
        assertEquals(40L, before.get("size"));
        assertEquals(40L, before.get("pending"));
        assertEquals("waiting", before.get("callback_state"));
        assertEquals("group", db.value("select reschedule_reason from layover.jobs where id = ?", g.groupId()),
                "the waiting callback says why it waits");

        started(l);
        Await.equal(WAIT, "the group's callback state", "finished", () -> db.value(
                "select callback_state from layover.job_groups where group_id = ?", g.groupId()));
        assertTrue(l.awaitCompletions(WAIT));
        assertEquals(1, callbacks.get(g.groupId()).get(), "the callback ran once");
        GroupResult r = seen.get(g.groupId());
        assertEquals(40, r.size());
        assertEquals(40, r.done());
        assertEquals(0, r.discarded());
        assertEquals(GroupOptions.Policy.ON_COMPLETE, r.policy());
        int sum = r.members().stream().mapToInt(m -> m.result(Integer.class)).sum();
        assertEquals(IntStream.range(0, 40).map(i -> i * 10).sum(), sum, "every member's Outcome.done(result)");
        Map<String, Object> after = db.row("select * from layover.job_groups where group_id = ?", g.groupId());
        assertEquals(40L, after.get("done"));
        assertEquals(0L, after.get("pending"));
    }

    @Test
    void twoInstancesFinishingTheLastMembersAtOnceReleaseEachCallbackOnce(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover a = layover(db, seg, asm);
        Layover b = layover(db, seg, asm);
        List<String> groups = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            groups.add(a.enqueueGroup(GroupOptions.callback(asm, new Assemble("d" + i)), seg, segments("d" + i, 3))
                    .groupId());
        }
        started(a);
        started(b);
        Await.equal(WAIT, "groups whose callback finished", 150L, () -> db.count(
                "select count(*) from layover.job_groups where callback_state = 'finished'"));
        assertTrue(a.awaitCompletions(WAIT) && b.awaitCompletions(WAIT));
        for (String g : groups) {
            assertEquals(1, callbacks.get(g).get(), "the callback of " + g + " ran once");
            assertEquals(3, seen.get(g).done());
        }
        assertEquals(150L, db.count("select count(*) from layover.job_history h join layover.groups g "
                + "on h.job_type = g.callback_type and h.job_id = g.id where h.outcome = 'completed'"));
    }

    @Test
    void aParkedMemberHoldsItsGroupOpen(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover l = started(layover(db, seg, asm));
        List<Segment> members = new ArrayList<>(segments("doc-p", 4));
        members.add(new Segment("doc-p", -1));
        EnqueuedGroup g = l.enqueueGroup(GroupOptions.callback(asm, new Assemble("doc-p")), seg, members);
        Await.equal(WAIT, "parked members", 1L, () -> (Long) db.value(
                "select parked from layover.job_groups where group_id = ?", g.groupId()));
        Await.equal(WAIT, "done members", 4L, () -> (Long) db.value(
                "select done from layover.job_groups where group_id = ?", g.groupId()));
        assertEquals("waiting", db.value("select callback_state from layover.job_groups where group_id = ?",
                g.groupId()));
        assertEquals(1L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'assemble' "
                + "and task_instance = ? and execution_time > now() + interval '100 years'", g.groupId()),
                "the callback still waits");
        assertFalse(callbacks.containsKey(g.groupId()));
    }

    @Test
    void anOpenGroupTakesMembersUntilSealedAndItsCallbackWaitsForTheSeal(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover l = started(layover(db, seg, asm));
        EnqueuedGroup g = l.enqueueGroup(GroupOptions.callback(asm, new Assemble("doc-o")).open().withKey("grp-o"), seg,
                segments("doc-o", 2));
        assertEquals("grp-o", g.groupId());
        Await.equal(WAIT, "done members", 2L, () -> (Long) db.value(
                "select done from layover.job_groups where group_id = 'grp-o'"));
        List<Enqueued> more = l.addToGroup(null, "grp-o", seg, segments("doc-o2", 3), s -> EnqueueOptions.now());
        assertEquals(3, more.size());
        Await.equal(WAIT, "done members", 5L, () -> (Long) db.value(
                "select done from layover.job_groups where group_id = 'grp-o'"));
        assertEquals("waiting", db.value("select callback_state from layover.job_groups where group_id = 'grp-o'"),
                "not sealed: the callback waits although every member is done");

        assertTrue(l.sealGroup(null, "grp-o"));
        assertFalse(l.sealGroup(null, "grp-o"), "sealing twice does nothing");
        Await.equal(WAIT, "the callback's runs", 1, () -> callbacks.containsKey("grp-o") ? callbacks.get("grp-o").get() : 0);
        assertEquals(5, seen.get("grp-o").size());

        GroupException sealed = assertThrows(GroupException.class,
                () -> l.addToGroup(null, "grp-o", seg, segments("late", 1), s -> EnqueueOptions.now()));
        assertTrue(sealed.getMessage().contains("sealed"), sealed.getMessage());
        GroupException unknown = assertThrows(GroupException.class, () -> l.sealGroup(null, "nope"));
        assertTrue(unknown.getMessage().contains("no group has the id 'nope'"), unknown.getMessage());
        assertEquals(0L, db.count("select count(*) from layover.group_members where job_id in "
                + "(select task_instance from layover.scheduled_tasks where task_data::text like '%late%')"));
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where convert_from(task_data, 'UTF8') "
                + "like '%\"late\"%'"), "a refused add writes nothing");
    }

    @Test
    void aGroupWithTheSameKeyIsNotMadeTwiceAndAnEmptySealedGroupIsReleasedAtOnce(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover l = layover(db, seg, asm);
        EnqueuedGroup first = l.enqueueGroup(GroupOptions.callback(asm, new Assemble("k")).withKey("grp-k"), seg,
                List.of());
        EnqueuedGroup again = l.enqueueGroup(GroupOptions.callback(asm, new Assemble("k")).withKey("grp-k"), seg,
                segments("k", 2));
        assertTrue(first.created());
        assertFalse(again.created());
        assertTrue(again.members().isEmpty());
        assertEquals(0L, db.count("select count(*) from layover.group_members where group_id = 'grp-k'"));
        started(l);
        Await.equal(WAIT, "the callback's runs", 1, () -> callbacks.containsKey("grp-k") ? callbacks.get("grp-k").get() : 0);
        assertEquals(0, seen.get("grp-k").size());
    }

    @Test
    void badInputIsRefusedAtTheCallWithNothingWritten(TestDatabase db) throws Exception {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        JobType<Assemble> unregistered = JobType.builder("not-here", Assemble.class).handler((a, c) -> Outcome.done())
                .build();
        Layover l = layover(db, seg, asm);
        UnknownJobTypeException e = assertThrows(UnknownJobTypeException.class,
                () -> l.enqueueGroup(GroupOptions.callback(unregistered, new Assemble("x")), seg, segments("x", 2)));
        assertTrue(e.getMessage().contains("not-here"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> GroupOptions.callback(asm, new Assemble("x")).withKey(""));
        // a job of the callback's type holds the group's id already
        l.enqueue(asm, new Assemble("taken"), EnqueueOptions.key("grp-taken"));
        GroupException taken = assertThrows(GroupException.class, () -> l.enqueueGroup(
                GroupOptions.callback(asm, new Assemble("x")).withKey("grp-taken"), seg, segments("x", 2)));
        assertTrue(taken.getMessage().contains("grp-taken"), taken.getMessage());
        assertEquals(0L, db.count("select count(*) from layover.groups"));
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'segment'"));

        // in the caller's transaction: a rollback leaves nothing
        DataSource ds = db.newDataSource(2);
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            EnqueuedGroup g = l.enqueueGroup(c, GroupOptions.callback(asm, new Assemble("tx")), seg, segments("tx", 3),
                    s -> EnqueueOptions.now());
            assertTrue(g.created());
            c.rollback();
        }
        assertEquals(0L, db.count("select count(*) from layover.groups"));
        assertEquals(0L, db.count("select count(*) from layover.group_members"));
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'segment'"));

        // a stricter isolation would read a stale snapshot in the settle: refused
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            LayoverException rr = assertThrows(LayoverException.class, () -> l.enqueueGroup(c,
                    GroupOptions.callback(asm, new Assemble("rr")), seg, segments("rr", 1), s -> EnqueueOptions.now()));
            assertTrue(rr.getMessage().contains("READ COMMITTED"), rr.getMessage());
            c.rollback();
        }
    }

    @Test
    void theQueriesOfCompositionMdRunAndFindTheGroup(TestDatabase db) throws Exception {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover l = layover(db, seg, asm);
        l.enqueueGroup(GroupOptions.callback(asm, new Assemble("doc-q")).open().withKey("grp-doc"), seg,
                segments("doc-q", 2));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("```sql\\n(.*?)```", java.util.regex.Pattern.DOTALL)
                .matcher(java.nio.file.Files.readString(java.nio.file.Path.of("..", "docs", "composition.md")));
        List<String> queries = new ArrayList<>();
        while (m.find()) {
            for (String q : m.group(1).split(";")) {
                if (!q.strip().isEmpty()) {
                    queries.add(q.strip().replace("$1", "'grp-doc'"));
                }
            }
        }
        assertEquals(4, queries.size(), "composition.md documents four queries");
        Map<String, Object> group = db.rows(queries.get(0)).get(0);
        assertEquals("grp-doc", group.get("group_id"));
        assertEquals(2L, group.get("pending"));
        assertEquals("waiting", group.get("callback_state"));
        assertEquals(2, db.rows(queries.get(1)).size(), "the open members");
        Enqueued first = l.enqueue(seg, new Segment("doc-q", 9));
        Enqueued after = l.enqueue(seg, new Segment("doc-q", 10), EnqueueOptions.now().withAfter(first));
        Map<String, Object> waiting = db.rows(queries.get(2)).get(0);
        assertEquals(after.id(), waiting.get("job_id"));
        assertEquals("live", waiting.get("after_state"));
        assertEquals(false, db.rows(queries.get(3)).get(0).get("signal"), "no publish job waits for a signal");
    }

    @Test
    void aGroupsCallbackCanBeAMemberOfAnOpenParentGroup(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover l = layover(db, seg, asm);
        l.enqueueGroup(GroupOptions.callback(asm, new Assemble("book")).open().withKey("book"), seg, segments("preface", 1));
        l.enqueueGroup(GroupOptions.callback(asm, new Assemble("chapter-1")).withKey("chapter-1").inGroup("book"), seg,
                segments("chapter-1", 3));
        l.enqueueGroup(GroupOptions.callback(asm, new Assemble("chapter-2")).withKey("chapter-2").inGroup("book"), seg,
                segments("chapter-2", 2));
        assertTrue(l.sealGroup(null, "book"));
        assertEquals(3L, db.value("select size from layover.job_groups where group_id = 'book'"),
                "the preface and the two chapters' callbacks");
        started(l);
        Await.equal(WAIT, "the book's callback runs", 1, () -> callbacks.containsKey("book") ? callbacks.get("book").get() : 0);
        assertEquals(1, callbacks.get("chapter-1").get());
        assertEquals(1, callbacks.get("chapter-2").get());
        GroupResult book = seen.get("book");
        assertEquals(3, book.done());
        assertTrue(book.members().stream().anyMatch(m -> m.jobType().equals("assemble") && m.jobId().equals("chapter-2")));
        GroupException sealed = assertThrows(GroupException.class, () -> l.enqueueGroup(
                GroupOptions.callback(asm, new Assemble("late")).inGroup("book"), seg, segments("late", 1)));
        assertTrue(sealed.getMessage().contains("sealed"), sealed.getMessage());
    }

    @Test
    void aReleasedCallbackIsDueAsOfItsGroupsCreationAheadOfLaterWork(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = assemble();
        Layover l = layover(db, seg, asm);
        EnqueuedGroup g = l.enqueueGroup(null, GroupOptions.callback(asm, new Assemble("doc-1")).open(), seg, List.of(),
                a -> EnqueueOptions.now());
        Enqueued later = l.enqueue(seg, new Segment("doc-2", 1)); // work enqueued after the group
        assertTrue(l.sealGroup(null, g.groupId()), "no member: the seal releases the callback");
        Map<String, Object> due = db.row("select (select execution_time from layover.scheduled_tasks where "
                + "task_instance = ?) as callback, (select execution_time from layover.scheduled_tasks where "
                + "task_instance = ?) as later, (select created_at from layover.groups where id = ?) as created",
                g.groupId(), later.id(), g.groupId());
        assertEquals(due.get("created"), due.get("callback"), "the callback is due as of its group's creation");
        assertTrue(((java.sql.Timestamp) due.get("callback")).before((java.sql.Timestamp) due.get("later")),
                "so it is picked before work enqueued after its group: " + due);
    }

    @Test
    void theSettleTakesATestClocksTimeAndDatesTheCallbackBackAtMostHalfItsMaxDeferral(TestDatabase db) {
        JobType<Segment> seg = segment();
        JobType<Assemble> asm = JobType.builder("assemble", Assemble.class).handler((a, ctx) -> Outcome.done())
                .policy(JobPolicy.defaults().withMaxDeferral(Duration.ofMinutes(10))).build();
        java.time.Instant start = ((java.sql.Timestamp) db.value("select now()")).toInstant().plus(Duration.ofHours(2));
        dev.layover.testing.TestClock clock = new dev.layover.testing.TestClock(start);
        Layover l = Layover.builder(db.newDataSource(4)).register(seg, asm).clock(clock).build();
        EnqueuedGroup g = l.enqueueGroup(null, GroupOptions.callback(asm, new Assemble("doc-1")).open(), seg, List.of(),
                a -> EnqueueOptions.now());
        assertTrue(l.sealGroup(null, g.groupId()));
        // the group was made an hour and more before the test clock's now: its callback is dated 5 minutes back
        assertEquals(java.sql.Timestamp.from(start.minus(Duration.ofMinutes(5))), db.value(
                "select execution_time from layover.scheduled_tasks where task_instance = ?", g.groupId()));
    }

    @Test
    void membersRunAfterEarlierMembersAndJobsOutsideTheGroupAndTheCallbackAfterThemAll(TestDatabase db) {
        List<String> order = new java.util.concurrent.CopyOnWriteArrayList<>();
        JobType<Segment> seg = JobType.builder("segment", Segment.class).handler((a, ctx) -> {
            order.add(a.doc() + "/" + a.n());
            return Outcome.done(a.n());
        }).build();
        JobType<Assemble> asm = JobType.builder("assemble", Assemble.class).handler((a, ctx) -> {
            order.add("assemble");
            return Outcome.done();
        }).build();
        Layover l = layover(db, seg, asm);
        Enqueued glossary = l.enqueue(seg, new Segment("glossary", 0));
        EnqueuedGroup g = l.enqueueGroup(null, GroupOptions.callback(asm, new Assemble("doc-1")), seg,
                segments("doc-1", 3), s -> switch (s.n()) {
                    case 0 -> EnqueueOptions.key("outline").withAfter(glossary);
                    case 1 -> EnqueueOptions.now().withAfter(new JobRef("segment", "outline"));
                    default -> EnqueueOptions.now();
                });
        assertEquals(3L, db.count("select count(*) from layover.group_members where group_id = ? and state = 'pending'",
                g.groupId()));
        assertEquals(2L, db.count("select count(*) from layover.waiting_dependents"));
        started(l);
        Await.equal(WAIT, "jobs run", 5, order::size);
        assertTrue(order.indexOf("doc-1/0") > order.indexOf("glossary/0"), "" + order);
        assertTrue(order.indexOf("doc-1/1") > order.indexOf("doc-1/0"), "" + order);
        assertEquals("assemble", order.get(4), "the callback after every member: " + order);
    }
}
