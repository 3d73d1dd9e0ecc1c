package dev.layover.core.internal.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.SystemClock;
import com.github.kagkarlsson.scheduler.TaskResolver;
import com.github.kagkarlsson.scheduler.event.SchedulerListeners;
import com.github.kagkarlsson.scheduler.jdbc.JdbcTaskRepository;
import com.github.kagkarlsson.scheduler.task.Execution;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Pins {@link HeartbeatRewrite} to the statements db-scheduler really prepares: its repository
 * runs against a real database through a data source that rewrites (and records) them, so a
 * db-scheduler upgrade that changes either statement fails here instead of silently turning the
 * rewrite off.
 */
@DatabaseTest
class HeartbeatRewriteTest {

    private final Map<String, String> rewritten = new ConcurrentHashMap<>();

    private DataSource rewriting(DataSource raw) {
        return RewritingDataSource.of(raw, HeartbeatRewrite::rewrite, rewritten);
    }

    private JdbcTaskRepository repository(TestDatabase db) {
        OneTimeTask<Void> task = Tasks.oneTime("hb").execute((i, c) -> {});
        TaskResolver resolver = new TaskResolver(SchedulerListeners.NOOP, new SystemClock(), List.of(task));
        return new JdbcTaskRepository(rewriting(db.dataSource()), false, "layover.scheduled_tasks", resolver,
                new SchedulerName.Fixed("hb-test"), false, new SystemClock());
    }

    private static Instant dbTime(TestDatabase db, String expression) {
        return ((Timestamp) db.value("SELECT " + expression)).toInstant();
    }

    @Test
    void theDeadExecutionQueryCountsHeartbeatsFromTheDatabasesReturnPlusTenSeconds(TestDatabase db) {
        Instant start = dbTime(db, "pg_postmaster_start_time()");
        db.update("INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by, "
                + "last_heartbeat, version) VALUES ('hb', '1', ?, true, 'ghost', ?, 1)",
                Timestamp.from(start.minusSeconds(3600)), Timestamp.from(start.minusSeconds(60)));
        JdbcTaskRepository repo = repository(db);

        // a cutoff 11 s after the server's start, nothing recorded: the old heartbeat is dead
        assertEquals(1, repo.getDeadExecutions(start.plusSeconds(11)).size(), "dead by its heartbeat");
        // a cutoff within 10 s of the server's start: nothing is dead yet
        assertEquals(0, repo.getDeadExecutions(start.plusSeconds(9)).size(), "the server had just started");

        db.value("SELECT layover.database_returned()");
        Instant returned = ((Timestamp) db.value("SELECT returned_at FROM layover.database_returns")).toInstant();
        assertEquals(0, repo.getDeadExecutions(returned.plusSeconds(9)).size(),
                "within 10 s of the return nothing is dead: the ghost's pool may still be reconnecting");
        assertEquals(1, repo.getDeadExecutions(returned.plusSeconds(11)).size(), "dead again once the allowance passed");

        assertEquals(1, rewritten.size(), "db-scheduler's dead-execution query was rewritten: " + rewritten);
        String query = rewritten.values().iterator().next();
        assertTrue(query.contains("last_heartbeat <= layover.dead_heartbeat_cutoff(?)"), query);
    }

    @Test
    void aHeartbeatNeverMovesBack(TestDatabase db) {
        Instant now = dbTime(db, "now()");
        db.update("INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by, "
                + "last_heartbeat, version) VALUES ('hb', '1', ?, true, 'hb-test', ?, 1)",
                Timestamp.from(now.minusSeconds(60)), Timestamp.from(now));
        JdbcTaskRepository repo = repository(db);
        Execution held = repo.getExecution("hb", "1").orElseThrow();

        assertTrue(repo.updateHeartbeat(held, now.minusSeconds(30)), "the statement matched the row");
        assertEquals(Timestamp.from(now), db.value("SELECT last_heartbeat FROM layover.scheduled_tasks"),
                "a heartbeat taken before an outage does not overwrite a newer one");
        assertTrue(repo.updateHeartbeat(held, now.plusSeconds(5)));
        assertEquals(Timestamp.from(now.plusSeconds(5)), db.value("SELECT last_heartbeat FROM layover.scheduled_tasks"));

        String update = rewritten.values().stream().filter(s -> s.contains("update")).findFirst().orElseThrow();
        assertNotEquals(-1, update.indexOf("last_heartbeat = greatest(last_heartbeat, ?)"), update);
    }
}
