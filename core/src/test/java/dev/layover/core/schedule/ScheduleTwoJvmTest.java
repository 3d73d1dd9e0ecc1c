package dev.layover.core.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Two JVMs with the same code schedule (every second, both schedulers polling every 50 ms, on the
 * database's real clock) never enqueue the same occurrence: the occurrences the two schedulers
 * enqueued add up to the distinct occurrences that ran, each of which ran once, with none missing.
 */
@ProcessTest
class ScheduleTwoJvmTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final Pattern ENQUEUED = Pattern.compile("enqueued (\\d+)");

    @Test
    void twoJvmsNeverEnqueueTheSameOccurrence(TestDatabase db) {
        AtomicInteger here = new AtomicInteger();
        try (JvmProcess child = JvmProcess.start(ScheduleWorkerMain.class, "schedule-child", db.jdbcUrl(), "child");
                Layover parent = ScheduleWorkerMain.worker(db.dataSource(), "parent",
                        ScheduleWorkerMain.counting(here, false)).start()) {
            child.awaitOutput("started child", WAIT);
            Await.until(WAIT, "10 occurrences ran", () -> db.count(
                    "select count(*) from layover.job_history where job_type = 'pulse'") >= 10);
            parent.schedules().pause("", "pulse"); // waits for a claim in flight; none after it
            Await.until(WAIT, "the queue empty", () -> db.count("select count(*) from layover.jobs") == 0);
            long ran = db.count("select count(*) from layover.job_history where job_type = 'pulse'");
            Await.equal(WAIT, "the schedulers' counts add up to what ran", ran, () -> here.get() + lastCount(child));

            List<Instant> instants = new ArrayList<>();
            for (Map<String, Object> r : db.rows("select job_id from layover.job_history where job_type = 'pulse' "
                    + "order by job_id")) {
                instants.add(Instant.parse(((String) r.get("job_id")).substring("sched:/pulse@".length())));
            }
            assertEquals(ran, instants.stream().distinct().count(), "each occurrence ran once: " + instants);
            assertEquals(Duration.ofSeconds(instants.size() - 1), Duration.between(instants.get(0),
                    instants.get(instants.size() - 1)), "none missing between the first and the last: " + instants);
            System.out.printf("two JVMs: %d occurrences, %d enqueued by this JVM's scheduler, %d by the child's%n",
                    ran, here.get(), lastCount(child));
            assertTrue(ran >= 10);
        }
    }

    private static long lastCount(JvmProcess child) {
        Matcher m = ENQUEUED.matcher(child.output());
        long last = 0;
        while (m.find()) {
            last = Long.parseLong(m.group(1));
        }
        return last;
    }
}
