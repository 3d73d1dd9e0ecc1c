package dev.layover.core.reliability;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A plain Java program with {@code registerShutdownHook()}: enqueues one job that takes 2 s, and
 * exits ({@code System.exit}) while it runs; the hook lets it finish. Arguments: JDBC URL.
 */
public final class ShutdownHookMain {

    private ShutdownHookMain() {}

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(args[0]);
        JobType<WorkerMain.Item> slow = JobType.of("slow", WorkerMain.Item.class, (a, c) -> {
            System.out.println("running " + c.jobId());
            Thread.sleep(2000);
            System.out.println("finishing " + c.jobId());
            return Outcome.done();
        });
        Layover layover = Layover.builder(ds).register(slow).migrate(false).pollInterval(Duration.ofMillis(100))
                .registerShutdownHook().start();
        layover.enqueue(slow, new WorkerMain.Item(1), EnqueueOptions.key("hooked"));
        while (true) {
            Thread.sleep(50);
            if (Boolean.TRUE.equals(layover.lookup("slow", "hooked").map(s -> s.state().name().equals("RUNNING")).orElse(false))) {
                break;
            }
        }
        System.out.println("exiting");
        System.exit(0);
    }
}
