package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Dependencies (docs/composition.md) on a real Postgres: a job enqueued after others waits, visibly,
 * until all of them completed; a chain runs in order; two instances completing a dependent's two
 * prerequisites at once release it once; a parked prerequisite holds its dependents; bad input is
 * refused at the call with nothing written.
 */
@DatabaseTest
class DependenciesTest {

    record Step(String name, boolean fail) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    private final List<Layover> instances = new ArrayList<>();
    private final List<String> order = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private final JobType<Step> step = JobType.builder("step", Step.class).handler((s, ctx) -> {
        order.add(s.name());
        runs.computeIfAbsent(s.name(), k -> new AtomicInteger()).incrementAndGet();
        return s.fail() ? Outcome.rejected("step " + s.name() + " is refused") : Outcome.done(s.name());
    }).build();

    private Layover layover(TestDatabase db) {
        Layover l = Layover.builder(db.newDataSource(6)).register(step).threads(3).pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5)).build();
        instances.add(l);
        return l;
    }

    private int runs(String name) {
        AtomicInteger n = runs.get(name);
        return n == null ? 0 : n.get();
    }

    @Test
    void aChainRunsInOrderAndAWaitingDependentSaysWhatItWaitsFor(TestDatabase db) {
        Layover l = layover(db);
        Enqueued a = l.enqueue(step, new Step("a", false));
        Enqueued b = l.enqueue(step, new Step("b", false), EnqueueOptions.now().withAfter(a));
        Enqueued c = l.enqueue(step, new Step("c", false), EnqueueOptions.now().withAfter(b));
        Enqueued d = l.enqueue(step, new Step("d", false), EnqueueOptions.now().withAfter(a, c));

        Map<String, Object> waiting = db.row("select * from layover.waiting_dependents where job_id = ?", b.id());
        assertEquals(a.id(), waiting.get("after_id"));
        assertEquals("live", waiting.get("after_state"));
        assertEquals("dependencies", db.value("select reschedule_reason from layover.jobs where id = ?", b.id()));
        assertEquals(2L, db.count("select count(*) from layover.waiting_dependents where job_id = ?", d.id()));

        l.start();
        Await.equal(WAIT, "jobs run", 4, order::size);
        assertEquals(List.of("a", "b", "c", "d"), order, "each after the jobs it names");
        assertTrue(l.awaitCompletions(WAIT));
        assertEquals(0L, db.count("select count(*) from layover.waiting_dependents"));
        assertEquals(4L, db.count("select count(*) from layover.job_dependencies where state = 'completed'"));
    }

    @Test
    void twoInstancesCompletingTheLastTwoPrerequisitesAtOnceReleaseEachDependentOnce(TestDatabase db) {
        Layover x = layover(db);
        Layover y = layover(db);
        for (int i = 0; i < 60; i++) {
            Enqueued p = x.enqueue(step, new Step("p" + i, false));
            Enqueued q = x.enqueue(step, new Step("q" + i, false));
            x.enqueue(step, new Step("after-" + i, false), EnqueueOptions.now().withAfter(p, q));
        }
        x.start();
        y.start();
        Await.equal(WAIT, "jobs run", 180, order::size);
        for (int i = 0; i < 60; i++) {
            assertEquals(1, runs("after-" + i));
            int at = order.indexOf("after-" + i);
            assertTrue(at > order.indexOf("p" + i) && at > order.indexOf("q" + i), "after-" + i + " ran after p and q");
        }
    }

    @Test
    void aParkedPrerequisiteHoldsItsDependents(TestDatabase db) {
        Layover l = layover(db);
        Enqueued bad = l.enqueue(step, new Step("bad", true));
        Enqueued next = l.enqueue(step, new Step("next", false), EnqueueOptions.now().withAfter(bad));
        l.start();
        Await.equal(WAIT, "the prerequisite's state", "parked", () -> db.value(
                "select after_state from layover.waiting_dependents where job_id = ?", next.id()));
        assertEquals(0, runs("next"));
        assertEquals(1L, db.count("select count(*) from layover.jobs where id = ?", next.id()), "it still waits");

        // and a job can run after a parked one
        Enqueued later = l.enqueue(step, new Step("later", false), EnqueueOptions.now().withAfter(bad));
        assertEquals("parked", db.value("select after_state from layover.waiting_dependents where job_id = ?",
                later.id()));
    }

    @Test
    void aJobCompletedWithinTheHistorysRetentionIsAlreadySatisfied(TestDatabase db) {
        Layover l = layover(db);
        Enqueued a = l.enqueue(step, new Step("early", false));
        l.start();
        Await.equal(WAIT, "completed", 1L, () -> db.count(
                "select count(*) from layover.job_history where job_id = ? and outcome = 'completed'", a.id()));
        l.enqueue(step, new Step("late", false), EnqueueOptions.now().withAfter(a));
        Await.equal(WAIT, "late's runs", 1, () -> runs("late"));
    }

    @Test
    void badDependenciesAreRefusedAtTheCallWithNothingWritten(TestDatabase db) {
        Layover l = layover(db);
        Enqueued a = l.enqueue(step, new Step("a", false));
        DependencyException unknown = assertThrows(DependencyException.class, () -> l.enqueue(step,
                new Step("x", false), EnqueueOptions.now().withAfter(JobRef.of(a), new JobRef("step", "gone"))));
        assertTrue(unknown.getMessage().contains("no step job with the id 'gone'"), unknown.getMessage());
        DependencyException self = assertThrows(DependencyException.class, () -> l.enqueue(step, new Step("y", false),
                EnqueueOptions.key("me").withAfter(new JobRef("step", "me"))));
        assertTrue(self.getMessage().contains("after itself"), self.getMessage());
        // a batch's job can name only jobs before it in the batch (no cycle), the whole batch refused
        DependencyException batch = assertThrows(DependencyException.class, () -> l.enqueueBatch(step,
                List.of(new Step("z1", false), new Step("z2", false), new Step("z3", false)),
                s -> switch (s.name()) {
                    case "z1" -> EnqueueOptions.key("z1").withAfter(a);
                    case "z2" -> EnqueueOptions.key("z2").withAfter(new JobRef("step", "z3"));
                    default -> EnqueueOptions.key("z3");
                }));
        assertTrue(batch.getMessage().contains("only after jobs before it in the batch"), batch.getMessage());
        // a group's member as well: the group, its callback and its members are gone with it
        DependencyException member = assertThrows(DependencyException.class, () -> l.enqueueGroup(null,
                GroupOptions.callback(step, new Step("cb", false)), step, List.of(new Step("m", false)),
                s -> EnqueueOptions.now().withAfter(JobRef.of(a), new JobRef("step", "gone"))));
        assertTrue(member.getMessage().contains("no step job with the id 'gone'"), member.getMessage());
        assertEquals(0L, db.count("select count(*) from layover.groups"));
        assertEquals(1L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'step'"),
                "only the first job");
        assertEquals(0L, db.count("select count(*) from layover.job_dependencies"));
        assertEquals(false, db.value("select has_dependents from layover.scheduled_tasks where task_instance = ?",
                a.id()), "the refused enqueue's mark was rolled back");
    }

    @Test
    void aBatchsJobsRunAfterEarlierJobsOfTheBatchAndJobsOutsideIt(TestDatabase db) {
        Layover l = layover(db);
        Enqueued outside = l.enqueue(step, new Step("outside", false));
        List<Enqueued> batch = l.enqueueBatch(step, List.of(new Step("b1", false), new Step("b2", false),
                new Step("b3", false), new Step("b4", false)), s -> switch (s.name()) {
                    case "b1" -> EnqueueOptions.key("b1");
                    case "b2" -> EnqueueOptions.key("b2").withAfter(new JobRef("step", "b1"), JobRef.of(outside));
                    case "b3" -> EnqueueOptions.key("b3").withAfter(new JobRef("step", "b2"));
                    default -> EnqueueOptions.now();
                });
        assertEquals(List.of(true, true, true, true), batch.stream().map(Enqueued::created).toList());
        assertEquals(2L, db.count("select count(*) from layover.waiting_dependents where job_id = 'b2'"));
        assertEquals(1L, db.count("select count(*) from layover.waiting_dependents where job_id = 'b3' "
                + "and after_id = 'b2' and after_state = 'live'"));
        assertEquals("dependencies", db.value("select reschedule_reason from layover.jobs where id = 'b3'"));
        assertEquals(true, db.value("select has_dependents from layover.scheduled_tasks where task_instance = 'b1'"),
                "an earlier job of the batch is marked, as a job enqueued before is");
        assertEquals(0L, db.count("select count(*) from layover.job_dependencies where job_id = ?", batch.get(3).id()),
                "a job of the batch without dependencies has no edge");

        l.start();
        Await.equal(WAIT, "jobs run", 5, order::size);
        assertTrue(order.indexOf("b2") > order.indexOf("b1") && order.indexOf("b2") > order.indexOf("outside"), "" + order);
        assertTrue(order.indexOf("b3") > order.indexOf("b2"), "" + order);
        assertTrue(l.awaitCompletions(WAIT));
        assertEquals(3L, db.count("select count(*) from layover.job_dependencies where state = 'completed'"));
    }
}
