package dev.layover.core.internal.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.SystemClock;
import com.github.kagkarlsson.scheduler.TaskResolver;
import com.github.kagkarlsson.scheduler.event.SchedulerListeners;
import com.github.kagkarlsson.scheduler.jdbc.JdbcTaskRepository;
import com.github.kagkarlsson.scheduler.jdbc.PostgreSqlJdbcCustomization;
import com.github.kagkarlsson.scheduler.task.Execution;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Pins {@link PickRewrite} to the lock-and-fetch statement db-scheduler really prepares (its
 * repository with its Postgres customization, through a data source that rewrites and records
 * them): a db-scheduler upgrade that changes the statement fails here instead of silently turning
 * the rewrite off. And what it is for: a due job holding its permit is picked before older due jobs
 * (not one whose permit lapsed).
 */
@ExtendWith(LayoverPostgresExtension.class)
class PickRewriteTest {

    private final Map<String, String> rewritten = new ConcurrentHashMap<>();
    private final PickRewrite rewrite = new PickRewrite(List.of("pick"), java.time.Duration.ofSeconds(2));

    private DataSource rewriting(DataSource raw) {
        return RewritingDataSource.of(raw, rewrite::rewrite, rewritten);
    }

    private JdbcTaskRepository repository(TestDatabase db, boolean priority) {
        OneTimeTask<Void> task = Tasks.oneTime("pick").execute((i, c) -> {});
        TaskResolver resolver = new TaskResolver(SchedulerListeners.NOOP, new SystemClock(), List.of(task));
        return new JdbcTaskRepository(rewriting(db.dataSource()), false, new PostgreSqlJdbcCustomization(false, false),
                "layover.scheduled_tasks", resolver, new SchedulerName.Fixed("pick-test"), priority, new SystemClock());
    }

    private static void insert(TestDatabase db, String id, Instant runAt, Instant permitAt) {
        insert(db, id, runAt, permitAt, permitAt == null ? null : "bucket");
    }

    private static void insert(TestDatabase db, String id, Instant runAt, Instant permitAt, String reason) {
        db.update("INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version, permit_at,"
                + " last_reschedule_reason) VALUES ('pick', ?, ?, false, 1, ?, ?)", id, Timestamp.from(runAt),
                permitAt == null ? null : Timestamp.from(permitAt), reason);
    }

    @Test
    void aDueJobHoldingItsPermitIsPickedBeforeOlderDueJobs(TestDatabase db) {
        Instant now = ((Timestamp) db.value("SELECT now()")).toInstant();
        for (int i = 0; i < 5; i++) {
            insert(db, "old-" + i, now.minusSeconds(3600 + i), null); // a backlog due for an hour, holding nothing
        }
        insert(db, "held", now.minusMillis(200), now.minusMillis(200)); // its booked permit has just come due
        insert(db, "later", now.plusSeconds(60), now.plusSeconds(60)); // booked, not due yet
        insert(db, "retried", now.minusMillis(100), now.minusSeconds(30)); // a spent permit: run time moved on
        insert(db, "lapsed", now.minusSeconds(10), now.minusSeconds(10)); // a permit past the 2 s grace: due like any job
        insert(db, "placed", now.minusMillis(300), null, "bucket"); // its place in the key's line has just come due
        insert(db, "left", now.minusSeconds(20), null, "bucket"); // a place past the grace: due like any job

        for (boolean priority : new boolean[] {false, true}) {
            db.update("UPDATE layover.scheduled_tasks SET picked = false, picked_by = NULL, version = 1");
            List<Execution> first = repository(db, priority).lockAndGetDue(now, 3);
            assertEquals(java.util.Set.of("held", "placed", "old-4"), first.stream().map(e -> e.taskInstance.getId())
                    .collect(java.util.stream.Collectors.toSet()),
                    "the permit holder and the place first, then db-scheduler's order (priority " + priority + ")");
            List<Execution> rest = repository(db, priority).lockAndGetDue(now, 10);
            assertEquals(List.of("old-3", "old-2", "old-1", "old-0", "left", "lapsed", "retried"),
                    rest.stream().map(e -> e.taskInstance.getId()).toList(), "the rest in run-time order, none twice");
        }
        assertTrue(rewritten.size() >= 1, "db-scheduler's lock-and-fetch was rewritten: " + rewritten.keySet());
        String sql = rewritten.values().iterator().next();
        assertTrue(sql.contains("st0.execution_time = st0.permit_at") && sql.contains("UNION ALL"), sql);
    }

    /**
     * A pick planned while the queue was empty (a generic plan: PostgreSQL's choice for a statement
     * prepared on the server once it ran five times) may join the job table to the pick's
     * subquery with a nested loop that runs the subquery again for every row; each run of a
     * {@code SKIP LOCKED} subquery then locks further rows. db-scheduler's own statement, planned
     * so, took every due row of a 20,000-job burst in one pick (half a minute, one worker holding
     * them all); the rewrite chooses its rows once, in a materialized CTE.
     */
    @Test
    void aPickPlannedOnAnEmptyQueueStillTakesNoMoreThanItsLimit(TestDatabase db) {
        String url = db.jdbcUrl() + (db.jdbcUrl().contains("?") ? "&" : "?")
                + "prepareThreshold=1&options=-c%20plan_cache_mode%3Dforce_generic_plan";
        com.zaxxer.hikari.HikariConfig cfg = new com.zaxxer.hikari.HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setMaximumPoolSize(1);
        try (com.zaxxer.hikari.HikariDataSource generic = new com.zaxxer.hikari.HikariDataSource(cfg)) {
            OneTimeTask<Void> task = Tasks.oneTime("pick").execute((i, c) -> {});
            TaskResolver resolver = new TaskResolver(SchedulerListeners.NOOP, new SystemClock(), List.of(task));
            JdbcTaskRepository repo = new JdbcTaskRepository(rewriting(generic), false,
                    new PostgreSqlJdbcCustomization(false, false), "layover.scheduled_tasks", resolver,
                    new SchedulerName.Fixed("pick-test"), false, new SystemClock());
            Instant now = ((Timestamp) db.value("SELECT now()")).toInstant();
            db.execute("VACUUM ANALYZE layover.scheduled_tasks"); // known to be empty: the planner's smallest plans
            for (int i = 0; i < 3; i++) {
                assertEquals(0, repo.lockAndGetDue(now, 10).size(), "the queue is empty: planned on it");
            }
            db.update("INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version)"
                    + " SELECT 'pick', 'burst-' || g, now() - interval '1 second', false, 1 FROM generate_series(1, 300) g");
            assertEquals(10, repo.lockAndGetDue(now, 10).size());
            assertEquals(10L, db.count("SELECT count(*) FROM layover.scheduled_tasks WHERE picked"),
                    "one pick locks at most its limit");
        }
    }

    @Test
    void otherStatementsAreLeftAlone() {
        String dead = "select * from layover.scheduled_tasks where picked = ? and last_heartbeat <= ? order by last_heartbeat asc";
        assertEquals(dead, rewrite.rewrite(dead));
    }
}
