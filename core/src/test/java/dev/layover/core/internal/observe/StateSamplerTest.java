package dev.layover.core.internal.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.metrics.StateSample;
import dev.layover.core.spi.Db;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The gauges' sample of the queue: the job table's scan is spaced by the table's size, the rest is read every time. */
@DatabaseTest
class StateSamplerTest {

    private static final String JOBS = "INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time,"
            + " picked, version) SELECT 'sampled', 'job-' || i, now() + interval '1 day', false, 1"
            + " FROM generate_series(?, ?) i";

    @Test
    void behindADeepBacklogTheJobCountsAreReadEveryTwentySecondsPerTwoHundredThousandJobs(TestDatabase db) {
        StateSampler sampler = new StateSampler(new Db(db.dataSource()), SafeMetrics.of(new LayoverMetrics() {
            @Override
            public Duration sampleInterval() {
                return Duration.ofSeconds(5);
            }
        }), "test");
        db.update(JOBS, 1, 1);
        assertEquals(1, waiting(sampler.sample()));
        db.update(JOBS, 2, 2);
        assertEquals(2, waiting(sampler.sample()), "a small table is counted at every sample");

        db.update(JOBS, 3, 250_000);
        db.execute("ANALYZE layover.scheduled_tasks");
        // 250,000 rows estimated: counted every 20 s, every 4th sample of 5 s
        assertEquals(2, waiting(sampler.sample()), "carried");
        db.update("INSERT INTO layover.dead_letters (job_type, job_id, failure_type, first_enqueued_at)"
                + " VALUES ('sampled', 'x', 'rejected', now())");
        StateSample second = sampler.sample();
        assertEquals(2, waiting(second), "carried");
        assertEquals(1, second.deadLetters().size(), "the dead letters are read at every sample");
        assertEquals(2, waiting(sampler.sample()), "carried");
        assertEquals(250_000, waiting(sampler.sample()), "the 4th sample counts the table again");
        assertEquals(250_000, waiting(sampler.sample()), "and the next carries that");
    }

    private static long waiting(StateSample sample) {
        return sample.jobs().stream().filter(j -> j.jobType().equals("sampled")).mapToLong(StateSample.JobCount::count).sum();
    }
}
