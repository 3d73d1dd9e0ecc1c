package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.Enqueued;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Dependencies and the dead-letter store (docs/composition.md): a parked prerequisite's replay
 * that completes lets its dependents run; its discard parks them {@code dependency_failed}, and
 * their own dependents then wait for them.
 */
@DatabaseTest
class DependenciesDeadLetterTest {

    private final AtomicBoolean broken = new AtomicBoolean(true);
    private final List<String> ran = new CopyOnWriteArrayList<>();
    private Layover layover;
    private JobType<Work> work;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private DeadLetters start(TestDatabase db) {
        work = JobType.builder("work", Work.class).handler((a, ctx) -> {
            if (a.n() == 0 && broken.get()) {
                return Outcome.rejected("refused " + a.name());
            }
            ran.add(a.name());
            return Outcome.done();
        }).build();
        layover = Layover.builder(db.newDataSource(6)).register(work).threads(3).pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5)).start();
        return DeadLetters.create(layover);
    }

    private long parkedPrerequisite(TestDatabase db, Enqueued bad) {
        Await.equal(Fixtures.WAIT, "the prerequisite's dead letter", 1L, () -> db.count(
                "select count(*) from layover.dead_letters where job_id = ? and state = 'parked'", bad.id()));
        return (Long) db.value("select id from layover.dead_letters where job_id = ?", bad.id());
    }

    @Test
    void aReplayedPrerequisiteThatCompletesLetsItsDependentsRun(TestDatabase db) {
        DeadLetters store = start(db);
        Enqueued bad = layover.enqueue(work, new Work("bad", 0));
        Enqueued next = layover.enqueue(work, new Work("next", 1), EnqueueOptions.now().withAfter(bad));
        long dl = parkedPrerequisite(db, bad);
        broken.set(false);
        store.replay(dl, ReplayOptions.by("alice"));
        Await.equal(Fixtures.WAIT, "jobs run", List.of("bad", "next"), () -> List.copyOf(ran));
        assertEquals(0L, db.count("select count(*) from layover.waiting_dependents where job_id = ?", next.id()));
    }

    @Test
    void aDiscardedPrerequisiteParksItsDependentsDependencyFailed(TestDatabase db) {
        DeadLetters store = start(db);
        Enqueued bad = layover.enqueue(work, new Work("bad", 0));
        Enqueued next = layover.enqueue(work, new Work("next", 1), EnqueueOptions.now().withAfter(bad));
        Enqueued last = layover.enqueue(work, new Work("last", 1), EnqueueOptions.now().withAfter(next));
        long dl = parkedPrerequisite(db, bad);
        store.discard(Selection.one(dl), ActionOptions.by("alice"));
        assertEquals("dependency_failed", db.value("select failure_type from layover.dead_letters where job_id = ?",
                next.id()));
        String message = (String) db.value("select error_message from layover.dead_letters where job_id = ?", next.id());
        assertTrue(message.contains(bad.id()), message);
        assertEquals("parked", db.value("select after_state from layover.waiting_dependents where job_id = ?",
                last.id()), "the next one waits for the parked dependent");
        assertTrue(ran.isEmpty());
    }
}
