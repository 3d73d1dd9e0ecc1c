package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Signals (docs/composition.md) on a real Postgres: a handler's awaitSignal ends its run without
 * an attempt and without a thread; Layover#signal or the SQL function makes it due with the
 * payload; a timeout gives the handler a timed-out signal; a signal no job waits for is refused.
 */
@DatabaseTest
class SignalsTest {

    record Approval(String doc, long timeoutMs) {}

    record Decision(String by, boolean ok) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    private final List<String> outcomes = new CopyOnWriteArrayList<>();
    private final AtomicInteger runs = new AtomicInteger();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private final JobType<Approval> approve = JobType.builder("approve", Approval.class).handler((a, ctx) -> {
        runs.incrementAndGet();
        Signal s = ctx.awaitSignal("approved", Duration.ofMillis(a.timeoutMs()));
        outcomes.add(s.received() ? "received " + s.payload(Decision.class) : "timed out");
        return Outcome.done();
    }).build();

    private void start(TestDatabase db) {
        layover = Layover.builder(db.newDataSource(6)).register(approve).threads(2).pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5)).start();
    }

    private void awaitWaiting(TestDatabase db, String id) {
        Await.equal(WAIT, "the job's wait", "signal", () -> db.value(
                "select reschedule_reason from layover.jobs where id = ?", id));
    }

    @Test
    void aSignalMakesTheWaitingJobDueWithItsPayloadAndNoAttemptIsSpent(TestDatabase db) {
        start(db);
        String id = layover.enqueue(approve, new Approval("doc-1", 3_600_000)).id();
        awaitWaiting(db, id);
        Map<String, Object> job = db.row("select * from layover.jobs where id = ?", id);
        assertEquals(0, job.get("attempts"), "waiting spends no attempt");
        assertEquals(0, job.get("reschedules"), "nor a reschedule");
        assertEquals("waiting", db.value("select outcome from layover.steps where job_id = ? and step = 'approved'", id));
        assertEquals(1, runs.get());

        layover.signal("approve", id, "approved", new Decision("alice", true));
        Await.equal(WAIT, "outcomes", List.of("received Decision[by=alice, ok=true]"), () -> List.copyOf(outcomes));
        assertEquals(2, runs.get());
        assertTrue(layover.awaitCompletions(WAIT));
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'approve'"));
    }

    @Test
    void theSqlFunctionSignalsToo(TestDatabase db) {
        start(db);
        String id = layover.enqueue(approve, new Approval("doc-2", 3_600_000)).id();
        awaitWaiting(db, id);
        assertEquals(true, db.value("select layover.signal('approve', ?, 'approved', '{\"by\": \"bob\", \"ok\": false}')",
                id));
        Await.equal(WAIT, "outcomes", List.of("received Decision[by=bob, ok=false]"), () -> List.copyOf(outcomes));
        assertEquals(false, db.value("select layover.signal('approve', ?, 'approved', null)", id),
                "a second signal finds no wait");
    }

    @Test
    void aTimeoutGivesTheHandlerATimedOutSignal(TestDatabase db) {
        start(db);
        String id = layover.enqueue(approve, new Approval("doc-3", 1_000)).id();
        Await.equal(WAIT, "outcomes", List.of("timed out"), () -> List.copyOf(outcomes));
        SignalException late = assertThrows(SignalException.class,
                () -> layover.signal("approve", id, "approved", new Decision("carol", true)));
        assertTrue(late.getMessage().contains("waits for signal 'approved'"), late.getMessage());
    }

    @Test
    void aSignalNoJobWaitsForIsRefusedWithNothingWritten(TestDatabase db) {
        start(db);
        String id = layover.enqueue(approve, new Approval("doc-4", 3_600_000)).id();
        awaitWaiting(db, id);
        SignalException other = assertThrows(SignalException.class,
                () -> layover.signal("approve", id, "rejected", null));
        assertTrue(other.getMessage().contains("no approve job with the id '" + id + "' waits for signal 'rejected'"),
                other.getMessage());
        assertThrows(SignalException.class, () -> layover.signal("approve", "nope", "approved", null));
        InvalidArgsException big = assertThrows(InvalidArgsException.class, () -> layover.signal("approve", id,
                "approved", "x".repeat(Layover.MAX_SIGNAL_PAYLOAD_CHARS)));
        assertTrue(big.getMessage().contains("over the 262144"), big.getMessage());
        assertEquals("waiting", db.value("select outcome from layover.steps where job_id = ? and step = 'approved'", id));
        assertEquals("signal", db.value("select reschedule_reason from layover.jobs where id = ?", id), "still waits");
    }
}
