package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A backlog behind a concurrency limit as wide as the worker's threads drains: jobs that finish in
 * microseconds free their slots only when the completer deletes their rows, after the run has left
 * its thread, so picks meet full slots often; the worker must keep picking until the queue is empty.
 */
@DatabaseTest
class ConcurrencyBacklogDrainTest {

    /** A no-op job's argument. */
    public record Noop(int n) {}

    @Test
    void aBacklogBehindAConcurrencyLimitDrains(TestDatabase db) {
        JobType<Noop> type = JobType.builder("drain", Noop.class).providerKey(n -> "kk:0")
                .handler((a, ctx) -> Outcome.done()).build();
        Layover layover = Layover.builder(db.newDataSource(12)).register(type).threads(4)
                .concurrencyLimit("kk:*", 4).build();
        try {
            insert(db, "w", 1);
            layover.start();
            Await.equal(Duration.ofSeconds(30), "the first job done", 0L, () -> left(db));
            insert(db, "k", 2_000);
            // 2,000 jobs at 4 a poll (1 s) would take 500 s: a freed slot must bring the next pick
            Await.equal(Duration.ofSeconds(60), "the backlog drained", 0L, () -> left(db));
            assertEquals(2_001L, db.count("select count(*) from layover.job_history where job_type = 'drain'"));
        } finally {
            layover.stop();
        }
    }

    private static long left(TestDatabase db) {
        return db.count("select count(*) from layover.scheduled_tasks where task_name = 'drain'");
    }

    /** As a bulk load does it: rows straight into the table, no notification. */
    private static void insert(TestDatabase db, String prefix, int jobs) {
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,"
                + " version, provider_key, first_enqueued_at)"
                + " select 'drain', '" + prefix + "' || g, convert_to('{\"n\":' || g || '}', 'UTF8'), now(), false, 1,"
                + " 'kk:0', now() from generate_series(1, " + jobs + ") g");
    }
}
