package dev.layover.core.schedule;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.testing.JvmProcess;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Layover worker in its own JVM for {@link ScheduleTwoJvmTest}: the code schedule {@code pulse}
 * (every second, catch-up, overlap allowed) of job type {@code pulse}, its scheduler polling every
 * 50 ms; prints {@code enqueued <n>} (the occurrences its scheduler enqueued so far) after each
 * claim. Runs until killed.
 *
 * <p>Arguments: JDBC URL, worker name.
 */
public final class ScheduleWorkerMain {

    /** The args of a pulse. */
    public record Pulse(String note) {}

    private ScheduleWorkerMain() {}

    static final JobType<Pulse> TYPE = JobType.of("pulse", Pulse.class, (a, ctx) -> null);

    static Layover.Builder worker(javax.sql.DataSource ds, String name, LayoverMetrics metrics) {
        return Layover.builder(ds).register(TYPE).workerName(name).threads(2).pollInterval(Duration.ofMillis(50))
                .schedulePollInterval(Duration.ofMillis(50)).shutdownMaxWait(Duration.ofSeconds(5)).metrics(metrics)
                .schedule(Schedule.builder("pulse", TYPE, Timing.every(Duration.ofSeconds(1))).args(new Pulse("p"))
                        .missedRuns(MissedRuns.catchUp(Duration.ofMinutes(1))).overlap(Overlap.ALLOW).build());
    }

    /** Counts the occurrences a scheduler enqueued. */
    static LayoverMetrics counting(AtomicInteger enqueued, boolean print) {
        return new LayoverMetrics() {
            @Override
            public void scheduleClaimed(String jobType, String outcome, int n) {
                int total = enqueued.addAndGet(n);
                if (print) {
                    System.out.println("enqueued " + total);
                }
            }
        };
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(8);
        HikariDataSource ds = new HikariDataSource(cfg);
        Layover layover = worker(ds, args[1], counting(new AtomicInteger(), true)).start();
        System.out.println("started " + args[1]);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
