package dev.layover.core.reliability;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * A Layover worker in its own JVM for {@link GroupsKillReliabilityTest}: runs group members
 * ({@code g-member}: 30 ms, then {@code Outcome.done(n)}) and callbacks ({@code g-callback}: records
 * each run in {@code public.callback_runs} with this worker's name). Heartbeat every 500 ms, dead
 * after 4 missed. Runs until killed.
 *
 * <p>Arguments: JDBC URL, worker name.
 */
public final class GroupWorkerMain {

    /** A member's args. */
    public record Member(int n) {}

    /** A callback's args. */
    public record Callback(String doc) {}

    private GroupWorkerMain() {}

    static final JobType<Member> MEMBER = JobType.builder("g-member", Member.class).handler((m, ctx) -> {
        Thread.sleep(30); // the provider call's latency (stands for one; not a wait)
        return Outcome.done(m.n());
    }).build();

    static JobType<Callback> callback(DataSource ds, String worker) {
        return JobType.builder("g-callback", Callback.class).handler((c, ctx) -> {
            int members = ctx.group().orElseThrow().size();
            try (Connection conn = ds.getConnection();
                    PreparedStatement ps = conn.prepareStatement(
                            "insert into public.callback_runs (group_id, worker, members) values (?, ?, ?)")) {
                ps.setString(1, ctx.jobId());
                ps.setString(2, worker);
                ps.setInt(3, members);
                ps.executeUpdate();
            }
            return Outcome.done();
        }).build();
    }

    static Layover.Builder worker(DataSource ds, String name) {
        return Layover.builder(ds).register(MEMBER, callback(ds, name)).workerName(name).threads(4)
                .pollInterval(Duration.ofMillis(50)).heartbeat(Duration.ofMillis(500), 4)
                .shutdownMaxWait(Duration.ofSeconds(5));
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(6);
        HikariDataSource ds = new HikariDataSource(cfg);
        Layover layover = worker(ds, args[1]).start();
        System.out.println("started " + args[1]);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
