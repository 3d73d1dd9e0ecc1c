package dev.layover.core.reliability;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * An application JVM that only enqueues, for the clock tests: enqueues one {@code rel} job to run
 * now with the key given, prints {@code enqueued <key> <its Instant.now()>} and exits.
 *
 * <p>Arguments: JDBC URL, idempotency key.
 */
public final class EnqueueMain {

    private EnqueueMain() {}

    public static void main(String[] args) {
        JvmProcess.exitWhenParentDies();
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(args[0]);
        JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> Outcome.done());
        try (Layover client = Layover.builder(ds).register(rel).migrate(false).build()) {
            client.enqueue(rel, new WorkerMain.Item(1), EnqueueOptions.key(args[1]));
            System.out.println("enqueued " + args[1] + " " + java.time.Instant.now());
        }
        System.exit(0);
    }
}
