package dev.layover.samples;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/** Layover in a plain JVM app: a data source, a job type, enqueue, watch it finish. */
public final class QuickStart {

    /** The job's arguments: any record Jackson can write and read. */
    public record SendReceipt(String orderId, String email) {}

    /**
     * Runs three jobs and waits for them.
     *
     * @param dataSource any Postgres data source
     * @return how many jobs ran
     * @throws InterruptedException if interrupted while waiting
     */
    public static int run(DataSource dataSource) throws InterruptedException {
        CountDownLatch done = new CountDownLatch(3);
        JobType<SendReceipt> sendReceipt = JobType.of("send-receipt", SendReceipt.class, (args, ctx) -> {
            System.out.printf("sending the receipt of order %s to %s (job %s)%n", args.orderId(), args.email(), ctx.jobId());
            done.countDown();
            return Outcome.done();
        });

        try (Layover layover = Layover.builder(dataSource).register(sendReceipt).threads(4).start()) {
            for (int i = 1; i <= 3; i++) {
                layover.enqueue(sendReceipt, new SendReceipt("order-" + i, "customer" + i + "@example.com"));
            }
            boolean finished = done.await(30, TimeUnit.SECONDS);
            layover.awaitCompletions(Duration.ofSeconds(5));
            return finished ? 3 : 3 - (int) done.getCount();
        }
    }

    /**
     * @param args {@code --jdbc-url URL} to use a running Postgres; default: an embedded one
     * @throws Exception if it fails
     */
    public static void main(String[] args) throws Exception {
        try (SampleDatabase db = SampleDatabase.open(args, 8)) {
            System.out.println("ran " + run(db.dataSource()) + " jobs on " + db.description());
        }
    }
}
