package dev.layover.core;

import dev.layover.testing.TestDatabase;
import java.time.Duration;

/** Layover instances tuned for tests: small thread pool, fast polling. */
final class TestLayovers {

    private TestLayovers() {}

    static Layover.Builder builder(TestDatabase db) {
        return Layover.builder(db.dataSource())
                .threads(4)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5));
    }

    /** A policy whose retries come back within milliseconds. */
    static JobPolicy fastRetries(int maxAttempts) {
        return JobPolicy.defaults().withMaxAttempts(maxAttempts).withBackoff(Duration.ofMillis(1), Duration.ofMillis(5));
    }
}
