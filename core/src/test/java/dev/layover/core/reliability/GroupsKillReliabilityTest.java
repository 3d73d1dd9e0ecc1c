package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueuedGroup;
import dev.layover.core.GroupOptions;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Groups under a kill -9 (decision 0005): two worker JVMs run 30 groups of 30 members; one is
 * killed while members are running. Every group's callback is released once and completes once
 * (one {@code completed} history row each); a callback runs a second time only when the killed
 * worker had started it (at least once, as every job); none is lost.
 */
@ProcessTest
class GroupsKillReliabilityTest {

    private static final int GROUPS = 30;
    private static final int MEMBERS = 30;

    /** The callback type the test's own (never started) instance enqueues with. */
    private static final dev.layover.core.JobType<GroupWorkerMain.Callback> CALLBACK =
            GroupWorkerMain.callback(null, "client");

    @Test
    void killingAWorkerMidGroupReleasesEveryCallbackOnceAndLosesNone(TestDatabase db) {
        db.execute("create table public.callback_runs (group_id text, worker text, members int, "
                + "at timestamptz default clock_timestamp())");
        Layover client = Layover.builder(db.newDataSource(2))
                .register(GroupWorkerMain.MEMBER, CALLBACK).build();
        List<String> groups = new ArrayList<>();
        for (int g = 0; g < GROUPS; g++) {
            EnqueuedGroup eg = client.enqueueGroup(GroupOptions.callback(CALLBACK,
                    new GroupWorkerMain.Callback("doc-" + g)), GroupWorkerMain.MEMBER,
                    IntStream.range(0, MEMBERS).mapToObj(GroupWorkerMain.Member::new).toList());
            groups.add(eg.groupId());
        }
        String url = db.jdbcUrl();
        try (JvmProcess a = JvmProcess.start(GroupWorkerMain.class, "group-a", url, "group-a");
                JvmProcess b = JvmProcess.start(GroupWorkerMain.class, "group-b", url, "group-b")) {
            a.awaitOutput("started group-a", Duration.ofSeconds(60));
            b.awaitOutput("started group-b", Duration.ofSeconds(60));
            Await.until(Duration.ofSeconds(120), "a third of the members done", () -> db.count(
                    "select count(*) from layover.group_members where state = 'done'") >= GROUPS * MEMBERS / 3);
            Await.until(Duration.ofSeconds(30), "group-a running members", () -> db.count(
                    "select count(*) from layover.scheduled_tasks where picked and picked_by = 'group-a'") > 0);
            a.kill();
            long doneAtKill = db.count("select count(*) from layover.group_members where state = 'done'");
            assertTrue(doneAtKill < GROUPS * MEMBERS, "members were still running at the kill: " + doneAtKill);

            Await.equal(Duration.ofSeconds(180), "groups whose callback finished", (long) GROUPS, () -> db.count(
                    "select count(*) from layover.job_groups where callback_state = 'finished'"));
            for (String g : groups) {
                Map<String, Object> row = db.row("select * from layover.job_groups where group_id = ?", g);
                assertEquals((long) MEMBERS, row.get("done"), "every member of " + g + " done");
                assertEquals(1L, db.count("select count(*) from layover.job_history where job_type = 'g-callback' "
                        + "and job_id = ? and outcome = 'completed'", g), "the callback of " + g + " completed once");
                long runs = db.count("select count(*) from public.callback_runs where group_id = ?", g);
                assertTrue(runs >= 1, "the callback of " + g + " ran");
                if (runs > 1) {
                    assertEquals(1L, db.count("select count(*) from public.callback_runs where group_id = ? "
                            + "and worker = 'group-a'", g), "a callback ran twice only after the killed worker started it");
                }
                assertEquals(MEMBERS, ((Number) db.value("select max(members) from public.callback_runs where group_id = ?",
                        g)).intValue());
            }
            assertEquals(0L, db.count("select count(*) from layover.dead_letters"), "nothing parked");
        }
    }
}
