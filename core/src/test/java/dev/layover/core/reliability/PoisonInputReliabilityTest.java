package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Scenario 3: poison input. Args written by an older deployment that no longer read (a renamed
 * field, a changed type, not JSON at all) are parked {@code bad_args} while the rest of the queue
 * flows; jobs of a type no worker registers any more stay in the table, visible and not picked,
 * and run when a worker with that type comes back.
 */
@DatabaseTest
class PoisonInputReliabilityTest {

    record Work(String name, int n) {}

    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void onePercentOfArgsThatNoLongerReadAreParkedAndTheOtherNinetyNineComplete(TestDatabase db) {
        int good = 1980;
        int bad = 20;
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        JobType<Work> work = JobType.of("work", Work.class, (args, ctx) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return Outcome.done();
        });
        // the poison is in the table before the workers start, spread among the good jobs by run time
        String[] poison = {
            "{\"title\": \"renamed field\", \"n\": 1}",   // field renamed from name to title
            "{\"name\": \"changed type\", \"n\": \"seven\"}", // int became text
            "{\"name\": {\"first\": \"a\"}, \"n\": 1}",    // text became an object
            "{\"name\": \"truncated\", \"n\": ",           // cut JSON
            "\u0000\u0001 not json",                        // not JSON at all
        };
        for (int i = 0; i < bad; i++) {
            db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time,"
                    + " picked, version) values ('work', ?, convert_to(?, 'UTF8'), now() - (? * interval '1 millisecond'),"
                    + " false, 1)", "poison-" + i, poison[i % poison.length].replace("\u0000", ""), i * 50);
        }
        Layover layover = Reliability.builder(db).register(work).threads(8).build();
        List<Work> items = new ArrayList<>();
        for (int i = 0; i < good; i++) {
            items.add(new Work("good-" + i, i));
        }
        layover.enqueueBatch(work, items);
        long started = System.nanoTime();
        layover.start();
        try {
            Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            long ms = (System.nanoTime() - started) / 1_000_000;
            long parked = db.count("select count(*) from layover.dead_letters where failure_type = 'bad_args'");
            long ranOnce = runs.values().stream().filter(n -> n.get() == 1).count();
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("jobs", good + bad);
            f.put("poison (bad args)", bad);
            f.put("parked bad_args", parked);
            f.put("good jobs completed", runs.size());
            f.put("good jobs run exactly once", ranOnce);
            f.put("dead letters of other failure types", db.count("select count(*) from layover.dead_letters where failure_type <> 'bad_args'"));
            f.put("poison handler runs", runs.keySet().stream().filter(k -> k.startsWith("poison")).count());
            f.put("time (ms)", ms);
            Reliability.report("scenario 3a: poison args", f);
            assertEquals(bad, parked, "every poison job is parked bad_args");
            assertEquals(good, runs.size(), "every good job ran");
            assertEquals(good, ranOnce, "each good job ran exactly once");
            assertEquals(0, db.count("select count(*) from layover.dead_letters where failure_type <> 'bad_args'"));
            assertEquals(0, db.count("select count(*) from layover.dead_letters where attempts <> 0"),
                    "bad args spend no attempt");
            assertEquals(bad, db.count("select count(*) from layover.dead_letters where error_message like 'stored args do not read as%'"));
        } finally {
            layover.stop();
        }
    }

    @Test
    void jobsOfATypeNoWorkerRegistersStayVisibleUnpickedAndRunWhenTheTypeComesBack(TestDatabase db) throws Exception {
        int retired = 60;
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version)"
                + " select 'retired', 'r-' || g, convert_to('{\"name\":\"r\",\"n\":' || g || '}', 'UTF8'),"
                + " now() - interval '1 second', false, 1 from generate_series(1, ?) g", retired - 1);
        // one enqueued for a run time long past (db-scheduler counts "unresolved since" from it)
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version)"
                + " values ('retired', 'r-ancient', convert_to('{\"name\":\"r\",\"n\":0}', 'UTF8'), '1900-01-01', false, 1)");
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        JobType<Work> work = JobType.of("work", Work.class, (args, ctx) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return Outcome.done();
        });
        Layover layover = Reliability.builder(db).register(work).threads(8).heartbeat(Duration.ofMillis(250), 4).start();
        List<Work> items = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            items.add(new Work("w" + i, i));
        }
        long runningRetired;
        long scheduledRetired;
        try {
            layover.enqueueBatch(work, items);
            Await.equal(WAIT, "work rows", 0L, () -> db.count("select count(*) from layover.jobs where job_type = 'work'"));
            // retired jobs enqueued while the workers run (by an old deployment still enqueueing)
            db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version)"
                    + " values ('retired', 'late', convert_to('{\"name\":\"late\",\"n\":0}', 'UTF8'), now(), false, 1)");
            layover.enqueueBatch(work, List.of(new Work("after", 1), new Work("after", 2)));
            Await.equal(WAIT, "work rows", 0L, () -> db.count("select count(*) from layover.jobs where job_type = 'work'"));
            // the unpick of a picked unknown row happens in the background, give it a moment
            Await.equal(Duration.ofSeconds(10), "retired jobs shown running", 0L,
                    () -> db.count("select count(*) from layover.jobs where job_type = 'retired' and state = 'running'"));
            Thread.sleep(1500); // several dead-execution checks (every 2 heartbeats), where db-scheduler deletes unresolved jobs
            runningRetired = db.count("select count(*) from layover.jobs where job_type = 'retired' and state = 'running'");
            scheduledRetired = db.count("select count(*) from layover.jobs where job_type = 'retired' and state = 'scheduled'");
            assertEquals(retired + 1, db.count("select count(*) from layover.jobs where job_type = 'retired'"),
                    "jobs of a type no worker registers are kept");
            assertEquals(0, db.count("select count(*) from layover.scheduled_tasks where task_name = 'retired' and picked"),
                    "none is left picked");
            assertEquals(0, db.count("select count(*) from layover.dead_letters"), "none is parked");
            assertEquals(502, runs.size(), "the other jobs kept flowing");
            assertTrue(layover.isRunning());
        } finally {
            layover.stop();
        }
        // the type comes back (a rollback): they run, and no attempt was spent while they waited
        Map<String, Integer> attempts = new ConcurrentHashMap<>();
        JobType<Work> back = JobType.of("retired", Work.class, (args, ctx) -> {
            attempts.put(ctx.jobId(), ctx.attempt());
            return Outcome.done();
        });
        Layover again = Reliability.builder(db).register(back).start();
        try {
            Await.equal(WAIT, "retired rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("jobs of the retired type", retired + 1);
            f.put("other jobs completed meanwhile", runs.size());
            f.put("retired jobs shown running / scheduled while unknown", runningRetired + " / " + scheduledRetired);
            f.put("retired jobs run after the type came back", attempts.size());
            f.put("their attempt numbers", new java.util.TreeSet<>(attempts.values()));
            Reliability.report("scenario 3b: job type removed from the code", f);
            assertEquals(retired + 1, attempts.size());
            assertTrue(attempts.values().stream().allMatch(a -> a == 1), "first attempt for all: " + attempts.values());
        } finally {
            again.stop();
        }
    }
}
