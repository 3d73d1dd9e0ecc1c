package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Retention deletes old replayed and discarded dead letters, and nothing else. */
@DatabaseTest
class RetentionTest {

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    /** One dead letter per state, each 40 days old and 1 day old. */
    private static void seed(TestDatabase db) {
        for (String state : List.of("parked", "review", "replayed", "discarded")) {
            for (int days : List.of(40, 1)) {
                long id = Fixtures.deadLetter(state + "-" + days).state(state).insert(db);
                db.update("update layover.dead_letters set state_changed_at = now() - make_interval(days => ?), "
                        + "parked_at = now() - make_interval(days => ?) where id = ?", days, days + 1, id);
            }
        }
    }

    private static List<Object> left(TestDatabase db) {
        return db.rows("select job_id from layover.dead_letters order by job_id").stream()
                .map(r -> r.get("job_id")).toList();
    }

    @Test
    void retentionPurgesOnlyReplayedAndDiscardedOlderThanThePeriod(TestDatabase db) {
        seed(db);
        DeadLetterRetention retention = DeadLetterRetention.builder(db.dataSource()).keep(Duration.ofDays(30))
                .batchSize(1).build();

        assertEquals(2, retention.purgeNow());

        assertEquals(List.of("discarded-1", "parked-1", "parked-40", "replayed-1", "review-1", "review-40"), left(db),
                "parked and review entries are never purged, however old");
        assertEquals(1, db.count("select count(*) from layover.audit_log where action = 'purge' and actor = 'retention' "
                + "and count = 2"));
        assertEquals(0, retention.purgeNow(), "nothing more to purge");
        assertEquals(1, db.count("select count(*) from layover.audit_log"), "an empty purge writes no audit row");
    }

    @Test
    void theDefaultRetentionIsThirtyDays(TestDatabase db) {
        DeadLetterRetention retention = DeadLetterRetention.defaults(db.dataSource());
        assertEquals(Duration.ofDays(30), retention.keep());
        assertEquals(Duration.ofHours(1), retention.every());
        assertThrows(IllegalArgumentException.class, () -> DeadLetterRetention.builder(db.dataSource()).keep(Duration.ZERO));
    }

    @Test
    void retentionRunsAsARecurringTaskOfLayoversScheduler(TestDatabase db) {
        seed(db);
        DeadLetterRetention retention = DeadLetterRetention.builder(db.dataSource()).keep(Duration.ofDays(30))
                .every(Duration.ofHours(1)).build();
        layover = Fixtures.layover(db, Fixtures.work()).addTask(retention.task()).build();
        retention.ensureScheduled();
        retention.ensureScheduled();
        layover.start();

        Await.equal(Fixtures.WAIT, "dead letters left", 6L, () -> db.count("select count(*) from layover.dead_letters"));
        Await.until(Fixtures.WAIT, "the next run is scheduled about an hour later", () -> db.count("""
                select count(*) from layover.scheduled_tasks where task_name = 'layover-dead-letter-retention'
                and not picked and execution_time > now() + interval '50 minutes'""") == 1);
    }
}
