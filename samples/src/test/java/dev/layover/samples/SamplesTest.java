package dev.layover.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import org.junit.jupiter.api.Test;

/** The quick start is a runnable example; this test runs it and checks what it reports. */
@DatabaseTest
class SamplesTest {

    @Test
    void theQuickStartRunsItsThreeJobs(TestDatabase db) throws Exception {
        assertEquals(3, QuickStart.run(db.dataSource()));
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }
}
