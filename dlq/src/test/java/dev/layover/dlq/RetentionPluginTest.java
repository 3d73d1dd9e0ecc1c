package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Retention installed as a plugin: scheduled when Layover starts, without ensureScheduled(). */
@DatabaseTest
class RetentionPluginTest {

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private static void seedOld(TestDatabase db) {
        for (String state : new String[] {"parked", "replayed", "discarded"}) {
            long id = Fixtures.deadLetter(state).state(state).insert(db);
            db.update("update layover.dead_letters set state_changed_at = now() - interval '40 days' where id = ?", id);
        }
    }

    @Test
    void theDefaultPluginPurgesOnStartup(TestDatabase db) {
        seedOld(db);
        layover = Fixtures.layover(db, Fixtures.work()).plugin(DeadLetterRetention.plugin()).start();
        Await.equal(Fixtures.WAIT, "dead letters left", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        assertEquals("parked", db.value("select state from layover.dead_letters"));
        Await.equal(Fixtures.WAIT, "the next run, an hour later", 1L, () -> db.count("""
                select count(*) from layover.scheduled_tasks where task_name = ?
                and execution_time > now() + interval '50 minutes'""", DeadLetterRetention.TASK_NAME));
    }

    @Test
    void aConfiguredRetentionIsAPluginToo(TestDatabase db) {
        seedOld(db);
        DeadLetterRetention retention = DeadLetterRetention.builder(db.dataSource()).keep(Duration.ofDays(60))
                .every(Duration.ofMinutes(5)).build();
        layover = Fixtures.layover(db, Fixtures.work()).plugin(retention).start();
        Await.equal(Fixtures.WAIT, "the next run, five minutes later", 1L, () -> db.count("""
                select count(*) from layover.scheduled_tasks where task_name = ?
                and execution_time between now() + interval '4 minutes' and now() + interval '6 minutes'""",
                DeadLetterRetention.TASK_NAME));
        assertEquals(3, db.count("select count(*) from layover.dead_letters"), "nothing is older than 60 days");
    }
}
