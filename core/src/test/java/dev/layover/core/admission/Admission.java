package dev.layover.core.admission;

import dev.layover.core.JobPolicy;
import dev.layover.core.Layover;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import javax.sql.DataSource;

/** Layover instances for the admission and control tests: fast polling, a short heartbeat, a short stop. */
final class Admission {

    /** The args of most jobs here. */
    public record Task(String text) {}

    /** Args with a tenant, for limit keys. */
    public record TenantTask(String tenant, String text) {}

    static final Duration WAIT = Duration.ofSeconds(30);

    private Admission() {}

    static Layover.Builder builder(DataSource ds, String worker) {
        return Layover.builder(ds)
                .workerName(worker)
                .threads(4)
                .pollInterval(Duration.ofMillis(50))
                .heartbeat(Duration.ofMillis(500), 4)
                .shutdownMaxWait(Duration.ofSeconds(5));
    }

    static Layover.Builder builder(TestDatabase db, String worker) {
        return builder(db.dataSource(), worker);
    }

    static JobPolicy fastRetries(int maxAttempts) {
        return JobPolicy.defaults().withMaxAttempts(maxAttempts).withBackoff(Duration.ofMillis(1), Duration.ofMillis(5));
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
