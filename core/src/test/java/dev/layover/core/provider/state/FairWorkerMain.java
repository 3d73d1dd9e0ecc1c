package dev.layover.core.provider.state;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.time.Duration;

/**
 * A Layover worker in its own JVM for {@link FairnessTwoJvmTest}: runs job type {@code fair-work}
 * (fairness key {@code tenant:<tenant>}) under a 20/s bucket of the test's key, history on; with
 * a third argument {@code slots}, job type {@code fair-slot-work} (calls of 100 ms) under a
 * concurrency limit of 2 of another key instead. Runs until killed.
 *
 * <p>Arguments: JDBC URL, worker name, optionally {@code slots}.
 */
public final class FairWorkerMain {

    /** A job of a tenant. */
    public record Work(String tenant, int n) {}

    static final String KEY = "openai:fair-two-jvms";

    private FairWorkerMain() {}

    /** The job type both processes register. */
    static final JobType<Work> TYPE = JobType.builder("fair-work", Work.class)
            .providerKey(KEY)
            .fairnessKey(w -> "tenant:" + w.tenant())
            .handler((w, ctx) -> Outcome.done())
            .build();

    static final String SLOT_KEY = "anthropic:fair-two-jvms";

    /** The job type of the concurrency case: each call takes 100 ms. */
    static final JobType<Work> SLOT_TYPE = JobType.builder("fair-slot-work", Work.class)
            .providerKey(SLOT_KEY)
            .fairnessKey(w -> "tenant:" + w.tenant())
            .handler((w, ctx) -> {
                Thread.sleep(100); // the provider call
                return Outcome.done();
            })
            .build();

    static Layover.Builder slotWorker(javax.sql.DataSource ds, String name) {
        // one thread, none held ahead: the limit of 2 is filled only by both JVMs at once (a worker that frees a
        // slot picks again at once and could otherwise keep both slots to itself)
        return Layover.builder(ds).register(SLOT_TYPE).workerName(name).threads(1).prefetch(1)
                .pollInterval(Duration.ofMillis(50)).shutdownMaxWait(Duration.ofSeconds(5)).historyArgs(true)
                .concurrencyLimit(SLOT_KEY, 2);
    }

    static Layover.Builder worker(javax.sql.DataSource ds, String name) {
        return Layover.builder(ds).register(TYPE).workerName(name).threads(4).pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5)).historyArgs(true).bucket(KEY, BucketSettings.requestsPerSecond(20));
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(10);
        HikariDataSource ds = new HikariDataSource(cfg);
        Layover layover = (args.length > 2 && args[2].equals("slots") ? slotWorker(ds, args[1]) : worker(ds, args[1])).start();
        System.out.println("started " + args[1]);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
