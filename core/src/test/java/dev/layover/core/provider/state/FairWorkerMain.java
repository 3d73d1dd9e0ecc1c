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
 * (fairness key {@code tenant:<tenant>}) under a 20/s bucket of the test's key, history on. Runs
 * until killed.
 *
 * <p>Arguments: JDBC URL, worker name.
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
        Layover layover = worker(ds, args[1]).start();
        System.out.println("started " + args[1]);
        Thread.sleep(Long.MAX_VALUE);
        layover.stop();
    }
}
