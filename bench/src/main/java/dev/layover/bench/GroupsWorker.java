package dev.layover.bench;

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
 * One worker JVM of {@link GroupsBench}'s kill arm: runs group members ({@code bench-member}: a
 * fixed time standing for a call, then {@code Outcome.done()}) and callbacks ({@code bench-callback}:
 * each run recorded in {@code public.bench_callback_runs} with this worker's name, so the parent
 * counts handler runs per group). Heartbeat every 500 ms, dead after 4 missed, so a killed
 * worker's jobs run again within about 2 s.
 *
 * <p>Arguments: JDBC URL, worker name, threads, a member's time in ms. Prints {@code ready} once
 * started; runs until killed or its parent exits.
 */
public final class GroupsWorker {

    private GroupsWorker() {}

    /**
     * @param memberMs a member's time in ms (0: none)
     * @return the member type; the parent registers it with no time to enqueue
     */
    static JobType<GroupsBench.Member> member(long memberMs) {
        return JobType.of("bench-member", GroupsBench.Member.class, (m, ctx) -> {
            if (memberMs > 0) {
                Thread.sleep(memberMs); // stands for a provider call's latency
            }
            return Outcome.done();
        });
    }

    /**
     * @param ds where to record a run (null: the parent's type, never run)
     * @param worker this worker's name
     * @return the callback type
     */
    static JobType<GroupsBench.Assemble> callback(DataSource ds, String worker) {
        return JobType.of("bench-callback", GroupsBench.Assemble.class, (a, ctx) -> {
            try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "insert into public.bench_callback_runs (group_no, worker) values (?, ?)")) {
                ps.setInt(1, a.group());
                ps.setString(2, worker);
                ps.executeUpdate();
            }
            return Outcome.done();
        });
    }

    /**
     * @param args see the class description
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        int threads = Integer.parseInt(args[2]);
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(threads + 6);
        cfg.setPoolName(args[1]);
        HikariDataSource ds = new HikariDataSource(cfg);
        Layover layover = Layover.builder(ds).register(member(Long.parseLong(args[3]))).register(callback(ds, args[1]))
                .threads(threads).workerName(args[1]).migrate(false).historyArgs(true)
                .heartbeat(Duration.ofMillis(500), 4).start();
        System.out.println("ready");
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
