package dev.layover.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The samples are runnable examples; these tests run them and check what they report. */
@ExtendWith(LayoverPostgresExtension.class)
class SamplesTest {

    @Test
    void theQuickStartRunsItsThreeJobs(TestDatabase db) throws Exception {
        assertEquals(3, QuickStart.run(db.dataSource()));
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void theDemoCompletesReschedulesRetriesAndParksAsItSays(TestDatabase db) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Demo.Report r = Demo.run(db.dataSource(), new PrintStream(out, true, StandardCharsets.UTF_8));
        assertEquals(25, r.completed(), out.toString(StandardCharsets.UTF_8));
        assertEquals(20, r.rateLimited());
        assertEquals(0, r.attemptsSpentOnRateLimits());
        assertEquals(10, r.retried());
        assertEquals(Map.of("job_error", 2L, "rejected", 2L), r.parkedByFailureType());
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        assertEquals(2, db.count("select count(*) from layover.dead_letters where failure_type = 'job_error' and attempts = 3"));
    }
}
