package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * A rolling deploy: two versions of a job type's code run at once on one database. Adding a field
 * to the args just works in both directions; a change an old worker cannot read waits for a worker
 * of the new version (rescheduled, no attempt spent) instead of being parked.
 */
@DatabaseTest
class RollingDeployReliabilityTest {

    /** Version 1 of the args. */
    record OrderV1(String id) {}

    /** Version 2: a field added. */
    record OrderV2(String id, String note) {}

    /** Version 1 of another job type's args: a count. */
    record BatchV1(String id, int size) {}

    /** Version 2: the count became a label (a change version 1 cannot read). */
    record BatchV2(String id, String size) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void aFieldAddedByANewVersionJustWorksOnOldWorkersAndOldArgsOnNewOnes(TestDatabase db) {
        Set<String> ranOnV1 = ConcurrentHashMap.newKeySet();
        Set<String> ranOnV2 = ConcurrentHashMap.newKeySet();
        JobType<OrderV1> v1 = JobType.of("order", OrderV1.class, (a, c) -> {
            ranOnV1.add(a.id());
            return Outcome.done();
        });
        JobType<OrderV2> v2 = JobType.of("order", OrderV2.class, (a, c) -> {
            ranOnV2.add(a.id() + (a.note() == null ? ":no note" : ":" + a.note()));
            return Outcome.done();
        });
        int n = 1000;
        try (Layover oldWorker = Reliability.builder(db).register(v1).workerName("old").threads(8).start();
                Layover newApp = Layover.builder(db.dataSource()).register(v2).migrate(false).build()) {
            List<OrderV2> newArgs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                newArgs.add(new OrderV2("new-" + i, "gift wrap"));
            }
            newApp.enqueueBatch(v2, newArgs);
            Await.equal(WAIT, "every job of the new version done", 0L, () -> db.count("select count(*) from layover.jobs"));
        }
        try (Layover oldApp = Layover.builder(db.dataSource()).register(v1).migrate(false).build();
                Layover newWorker = Reliability.builder(db).register(v2).workerName("new").threads(8).start()) {
            oldApp.enqueue(v1, new OrderV1("old-1"));
            Await.equal(WAIT, "the old version's job done", 0L, () -> db.count("select count(*) from layover.jobs"));
        }
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("new-version jobs run by old workers", ranOnV1.size());
        f.put("dead letters", db.count("select count(*) from layover.dead_letters"));
        f.put("old-version job on the new worker", ranOnV2);
        Reliability.report("rolling deploy: a field added", f);
        assertEquals(n, ranOnV1.size(), "an old worker ran every job a new version enqueued");
        assertEquals(0, db.count("select count(*) from layover.dead_letters"), "nothing parked bad_args");
        assertEquals(Set.of("old-1:no note"), ranOnV2, "a new worker reads old args, the new field empty");
    }

    @Test
    void argsAnOldWorkerCannotReadWaitForANewWorkerInsteadOfParking(TestDatabase db) {
        Set<String> ranOnV2 = ConcurrentHashMap.newKeySet();
        JobType<BatchV1> v1 = JobType.of("batch", BatchV1.class, (a, c) -> Outcome.done());
        JobType<BatchV2> v2 = JobType.of("batch", BatchV2.class, (a, c) -> {
            ranOnV2.add(a.id());
            return Outcome.done();
        });
        try (Layover oldWorker = Reliability.builder(db).register(v1).workerName("old").threads(2).start();
                Layover newApp = Layover.builder(db.dataSource()).register(v2).migrate(false).build()) {
            newApp.enqueue(v2, new BatchV2("b-1", "large"), EnqueueOptions.key("b-1"));
            Await.until(WAIT, "the old worker put it back for a newer one",
                    () -> db.count("select count(*) from layover.jobs where reschedule_reason = 'args_newer_version'") == 1);
            assertEquals(0, db.count("select count(*) from layover.dead_letters"), "not parked");
            assertEquals(0, ((Number) db.value("select attempts from layover.jobs where id = 'b-1'")).intValue(), "no attempt spent");
            assertTrue(((String) db.value("select reschedule_detail from layover.jobs where id = 'b-1'"))
                    .contains("written by another version of the job type"));
        }
        db.update("update layover.scheduled_tasks set execution_time = now() where task_instance = 'b-1'");
        try (Layover newWorker = Reliability.builder(db).register(v2).workerName("new").threads(2).start()) {
            Await.equal(WAIT, "the new worker ran it", 0L, () -> db.count("select count(*) from layover.jobs"));
        }
        assertEquals(Set.of("b-1"), ranOnV2);
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
    }

    @Test
    void argsNoVersionCanReadStillParkAtOnce(TestDatabase db) {
        JobType<BatchV1> v1 = JobType.of("batch", BatchV1.class, (a, c) -> Outcome.done());
        try (Layover app = Layover.builder(db.dataSource()).register(v1).migrate(false).build()) {
            app.enqueue(v1, new BatchV1("b-2", 3), EnqueueOptions.key("b-2"));
        }
        // the same version's args, spoiled: no worker of any version reads them
        db.update("update layover.scheduled_tasks set task_data = convert_to('{\"id\": \"b-2\", \"size\": \"x\"}', 'UTF8')"
                + " where task_instance = 'b-2'");
        try (Layover worker = Reliability.builder(db).register(v1).threads(2).start()) {
            Await.equal(WAIT, "parked", 1L,
                    () -> db.count("select count(*) from layover.dead_letters where failure_type = 'bad_args'"));
        }
    }
}
