package dev.layover.core.observability;

import static dev.layover.core.observability.ObservabilityFixtures.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.ConfigurationException;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.history.JobHistoryRetention;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/** Retention deletes the history rows past the period, and only those. */
// alone in the fast profile: it reads the JVM's threads for the retention thread of a worker name other classes use too
@Isolated
@DatabaseTest
class JobHistoryRetentionTest {

    record Work(String text) {}

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    /** Rows finished {@code hoursAgo} hours ago, one per id. */
    private static void seed(TestDatabase db, String prefix, int n, double hoursAgo) {
        db.update("""
                insert into layover.job_history (job_type, job_id, outcome, enqueued_at, finished_at)
                select 'work', ? || g, 'completed', now() - make_interval(hours => ?::int + 1),
                       now() - make_interval(secs => ? * 3600)
                from generate_series(1, ?) g""", prefix, (int) Math.ceil(hoursAgo), hoursAgo, n);
    }

    @Test
    void deletesOnlyRowsPastTheRetentionPeriodInBatches(TestDatabase db) {
        Layover.builder(db.dataSource()).build(); // migrates
        seed(db, "old-", 25, 49);
        seed(db, "edge-", 3, 47.9);
        seed(db, "new-", 5, 1);
        JobHistoryRetention retention = JobHistoryRetention.builder(db.dataSource()).keep(Duration.ofHours(48))
                .batchSize(10).build();
        assertEquals(25, retention.purgeNow(), "three batches of at most 10");
        assertEquals(0, db.count("select count(*) from layover.job_history where job_id like 'old-%'"));
        assertEquals(8, db.count("select count(*) from layover.job_history"), "younger rows stay");
        assertEquals(0, retention.purgeNow(), "nothing more to delete");
    }

    @Test
    void defaultsAreDocumented() {
        assertEquals(Duration.ofDays(7), JobHistoryRetention.DEFAULT_KEEP);
        assertEquals(Duration.ofMinutes(10), JobHistoryRetention.DEFAULT_EVERY);
        assertThrows(IllegalArgumentException.class,
                () -> JobHistoryRetention.builder(new org.postgresql.ds.PGSimpleDataSource()).keep(Duration.ZERO));
        assertThrows(ConfigurationException.class,
                () -> Layover.builder(new org.postgresql.ds.PGSimpleDataSource()).historyRetention(Duration.ofDays(-1)));
    }

    @Test
    void aRunningInstanceRunsTheRetentionWithItsPeriodWithoutARowInTheJobTable(TestDatabase db) {
        JobType<Work> type = JobType.builder("work", Work.class).handler((a, c) -> Outcome.done()).build();
        layover = ObservabilityFixtures.builder(db).register(type).historyRetention(Duration.ofHours(1)).build();
        seed(db, "old-", 4, 2);
        seed(db, "new-", 2, 0.5);
        layover.start();
        // the retention runs on a background thread when the workers start
        Await.equal(WAIT, "old rows purged", 0L,
                () -> db.count("select count(*) from layover.job_history where job_id like 'old-%'"));
        assertEquals(2, db.count("select count(*) from layover.job_history where job_id like 'new-%'"));
        assertEquals(0, db.count("select count(*) from layover.scheduled_tasks"), "no task row of its own");
        assertTrue(threads().contains("layover-history-retention-" + ObservabilityFixtures.WORKER), threads().toString());
        layover.stop();
        assertFalse(threads().contains("layover-history-retention-" + ObservabilityFixtures.WORKER), "stopped with it");
    }

    @Test
    void retentionZeroKeepsEverything(TestDatabase db) throws Exception {
        JobType<Work> type = JobType.builder("work", Work.class).handler((a, c) -> Outcome.done()).build();
        layover = ObservabilityFixtures.builder(db).register(type).historyRetention(Duration.ZERO).build();
        seed(db, "old-", 3, 24 * 30);
        layover.start();
        Thread.sleep(500);
        assertEquals(3, db.count("select count(*) from layover.job_history"));
        assertFalse(threads().contains("layover-history-retention-" + ObservabilityFixtures.WORKER));
    }

    @Test
    void instancesRunningTheRetentionAtOnceShareTheWork(TestDatabase db) throws Exception {
        Layover.builder(db.dataSource()).build(); // migrates
        seed(db, "old-", 3000, 49);
        JobHistoryRetention a = JobHistoryRetention.builder(db.dataSource()).keep(Duration.ofHours(48)).batchSize(100).build();
        JobHistoryRetention b = JobHistoryRetention.builder(db.dataSource()).keep(Duration.ofHours(48)).batchSize(100).build();
        var pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            var fa = pool.submit(a::purgeNow);
            var fb = pool.submit(b::purgeNow);
            long deleted = fa.get() + fb.get();
            deleted += a.purgeNow(); // one of them may stop early on a short batch the other one left
            assertEquals(3000, deleted, "each row deleted once");
        } finally {
            pool.shutdown();
        }
        assertEquals(0, db.count("select count(*) from layover.job_history"));
    }

    private static java.util.Set<String> threads() {
        java.util.Set<String> names = new java.util.HashSet<>();
        Thread.getAllStackTraces().keySet().forEach(t -> names.add(t.getName()));
        return names;
    }

    @Test
    void settledGroupsWhoseCallbackFinishedAndEndedDependenciesGoWithTheHistory(TestDatabase db) {
        Layover.builder(db.dataSource()).build(); // migrates
        db.execute("""
                insert into layover.groups (id, callback_type, sealed_at, callback_state, settled_at)
                values ('old', 'cb', now() - interval '3 days', 'released', now() - interval '3 days'),
                       ('old-parked', 'cb', now() - interval '3 days', 'released', now() - interval '3 days'),
                       ('waiting', 'cb', null, 'waiting', null),
                       ('young', 'cb', now(), 'released', now());
                insert into layover.group_members (group_id, job_type, job_id, state) values ('old', 'm', '1', 'done');
                insert into layover.dead_letters (job_type, job_id, args, failure_type, attempts, first_enqueued_at)
                values ('cb', 'old-parked', '{}', 'job_error', 1, now());
                insert into layover.job_dependencies (job_type, job_id, after_type, after_id, state, ended_at)
                values ('d', '1', 'p', '1', 'completed', now() - interval '3 days'),
                       ('d', '2', 'p', '2', 'waiting', null);
                """);
        JobHistoryRetention.builder(db.dataSource()).keep(Duration.ofHours(48)).build().purgeNow();
        assertEquals(List.of("old-parked", "waiting", "young"), db.rows("select id from layover.groups order by id")
                .stream().map(r -> r.get("id")).toList(), "a parked callback keeps its group");
        assertEquals(0, db.count("select count(*) from layover.group_members"), "the members went with their group");
        assertEquals(1, db.count("select count(*) from layover.job_dependencies where state = 'waiting'"));
        assertEquals(1, db.count("select count(*) from layover.job_dependencies"));
    }
}
