package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The workflow builder (docs/composition.md) on a real Postgres: named jobs of several types run
 * after the jobs their edges name, enqueued in one transaction (the caller's: a rollback leaves
 * nothing); a duplicate name, an unknown name and a cycle are refused when built; an unregistered
 * type or an unknown job outside the workflow is refused at the call with nothing written.
 */
@DatabaseTest
class WorkflowTest {

    record Doc(String name) {}

    record Report(String name) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    private final List<String> order = new CopyOnWriteArrayList<>();
    private Layover layover;

    private final JobType<Doc> doc = JobType.builder("doc", Doc.class).handler((d, ctx) -> {
        order.add(d.name());
        return Outcome.done();
    }).build();

    private final JobType<Report> report = JobType.builder("report", Report.class).handler((r, ctx) -> {
        order.add(r.name());
        return Outcome.done();
    }).build();

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private Layover layover(TestDatabase db) {
        layover = Layover.builder(db.newDataSource(6)).register(doc, report).threads(3)
                .pollInterval(Duration.ofMillis(50)).shutdownMaxWait(Duration.ofSeconds(5)).build();
        return layover;
    }

    private Workflow diamond() {
        return Workflow.builder()
                .job("report", report, new Report("report"))
                .job("extract", doc, new Doc("extract"))
                .job("glossary", doc, new Doc("glossary"), EnqueueOptions.key("glossary-acme"))
                .job("translate", doc, new Doc("translate"))
                .after("translate", "extract", "glossary")
                .after("report", "translate")
                .build();
    }

    @Test
    void eachJobRunsAfterTheJobsItsEdgesName(TestDatabase db) {
        Layover l = layover(db);
        Workflow w = diamond();
        assertEquals(List.of("extract", "glossary", "translate", "report"),
                w.jobs().stream().map(Workflow.Job::name).toList(), "each job after the jobs it runs after");
        Map<String, Enqueued> jobs = l.enqueueWorkflow(null, w);
        assertEquals(List.of("extract", "glossary", "translate", "report"), List.copyOf(jobs.keySet()));
        assertEquals("glossary-acme", jobs.get("glossary").id(), "a job's key is its id");
        assertEquals(2L, db.count("select count(*) from layover.waiting_dependents where job_id = ?",
                jobs.get("translate").id()));
        assertEquals(1L, db.count("select count(*) from layover.waiting_dependents where job_type = 'report' "
                + "and after_id = ?", jobs.get("translate").id()));

        l.start();
        Await.equal(WAIT, "jobs run", 4, order::size);
        assertEquals("translate", order.get(2), "translate after extract and glossary: " + order);
        assertEquals("report", order.get(3));
    }

    @Test
    void inTheCallersTransactionARollbackLeavesNothing(TestDatabase db) throws Exception {
        Layover l = layover(db);
        try (Connection c = db.newDataSource(1).getConnection()) {
            c.setAutoCommit(false);
            Map<String, Enqueued> jobs = l.enqueueWorkflow(c, diamond());
            assertEquals(4, jobs.size());
            assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks"), "not committed yet");
            c.rollback();
        }
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks"));
        assertEquals(0L, db.count("select count(*) from layover.job_dependencies"));
    }

    @Test
    void aDuplicateNameAnUnknownNameAndACycleAreRefusedWhenBuilt() {
        WorkflowException dup = assertThrows(WorkflowException.class, () -> Workflow.builder()
                .job("a", doc, new Doc("a")).job("a", report, new Report("a")));
        assertTrue(dup.getMessage().contains("has a job named 'a' already"), dup.getMessage());

        WorkflowException unknown = assertThrows(WorkflowException.class, () -> Workflow.builder()
                .job("a", doc, new Doc("a")).after("a", "b").build());
        assertTrue(unknown.getMessage().contains("runs after 'b', which is no job of the workflow"),
                unknown.getMessage());

        WorkflowException cycle = assertThrows(WorkflowException.class, () -> Workflow.builder()
                .job("start", doc, new Doc("start"))
                .job("a", doc, new Doc("a")).job("b", doc, new Doc("b")).job("c", doc, new Doc("c"))
                .after("a", "start", "c").after("b", "a").after("c", "b").build());
        assertTrue(cycle.getMessage().contains("a → b → c → a") || cycle.getMessage().contains("b → c → a → b")
                || cycle.getMessage().contains("c → a → b → c"), cycle.getMessage());

        WorkflowException self = assertThrows(WorkflowException.class, () -> Workflow.builder()
                .job("a", doc, new Doc("a")).after("a", "a").build());
        assertTrue(self.getMessage().contains("cannot run after itself"), self.getMessage());
        assertTrue(cycle instanceof DependencyException, "a workflow's refusal is a DependencyException");
    }

    @Test
    void anUnregisteredTypeOrAnUnknownJobOutsideTheWorkflowIsRefusedWithNothingWritten(TestDatabase db) {
        Layover l = layover(db);
        JobType<Doc> other = JobType.builder("other", Doc.class).handler((d, ctx) -> Outcome.done()).build();
        assertThrows(UnknownJobTypeException.class, () -> l.enqueueWorkflow(null, Workflow.builder()
                .job("a", doc, new Doc("a")).job("b", other, new Doc("b")).after("b", "a").build()));
        DependencyException gone = assertThrows(DependencyException.class, () -> l.enqueueWorkflow(null,
                Workflow.builder().job("a", doc, new Doc("a"))
                        .job("b", doc, new Doc("b"), EnqueueOptions.now().withAfter(new JobRef("doc", "gone")))
                        .after("b", "a").build()));
        assertTrue(gone.getMessage().contains("no doc job with the id 'gone'"), gone.getMessage());
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks"), "nothing written");
    }
}
