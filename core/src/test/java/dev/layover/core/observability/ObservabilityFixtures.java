package dev.layover.core.observability;

import dev.layover.core.JobPolicy;
import dev.layover.core.Layover;
import dev.layover.testing.TestDatabase;
import java.time.Duration;

/** Layover instances tuned for the observability tests: small pool, fast polling. */
final class ObservabilityFixtures {

    static final Duration WAIT = Duration.ofSeconds(20);
    static final String WORKER = "obs-worker";

    private ObservabilityFixtures() {}

    static Layover.Builder builder(TestDatabase db) {
        return Layover.builder(db.dataSource())
                .threads(4)
                .workerName(WORKER)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5));
    }

    /** A policy whose retries come back within milliseconds. */
    static JobPolicy fastRetries(int maxAttempts) {
        return JobPolicy.defaults().withMaxAttempts(maxAttempts).withBackoff(Duration.ofMillis(1), Duration.ofMillis(5));
    }
}
