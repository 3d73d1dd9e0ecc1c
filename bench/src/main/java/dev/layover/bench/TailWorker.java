package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Instant;
import javax.sql.DataSource;

/**
 * A worker JVM of the tail-latency benchmark ({@link TailBench}): one Layover instance of
 * {@code threads} threads with the prefetch under test. Its {@code tail-call} handler records its
 * start (a row of {@code bench_tail.runs}: job, worker, enqueued and started in microseconds since
 * the epoch), sleeps the call's duration (a multi-second provider call), and records its end; its
 * {@code tail-noop} handler does nothing (the short jobs run before the second burst).
 *
 * <p>Prints {@code ready} once started; stops when the stop file exists. Arguments: JDBC URL,
 * worker name, threads, prefetch ({@code adaptive} for the default, else the fixed factor), stop
 * file.
 */
public final class TailWorker {

    /** A call's args: its number, when the enqueue began (µs since the epoch), how long it takes. */
    public record Call(int n, long enqueuedMicros, long millis) {}

    /** A short job's args. */
    public record NoOp(int n) {}

    /** The slow job type's name. */
    static final String CALL = "tail-call";
    /** The short job type's name. */
    static final String NOOP = "tail-noop";

    private TailWorker() {}

    /**
     * @param ds where the runs are recorded, or null for an enqueue-only client
     * @param worker this worker's name in the recorded runs
     * @return the slow job type
     */
    static JobType<Call> call(DataSource ds, String worker) {
        return JobType.of(CALL, Call.class, (a, c) -> {
            long started = LatencyBench.micros(Instant.now());
            try (Connection con = ds.getConnection(); PreparedStatement ps = con.prepareStatement(
                    "insert into bench_tail.runs (job, worker, enqueued_us, started_us) values (?, ?, ?, ?)")) {
                ps.setInt(1, a.n());
                ps.setString(2, worker);
                ps.setLong(3, a.enqueuedMicros());
                ps.setLong(4, started);
                ps.executeUpdate();
            }
            Thread.sleep(a.millis());
            try (Connection con = ds.getConnection(); PreparedStatement ps = con.prepareStatement(
                    "update bench_tail.runs set ended_us = ? where job = ? and worker = ? and started_us = ?")) {
                ps.setLong(1, LatencyBench.micros(Instant.now()));
                ps.setInt(2, a.n());
                ps.setString(3, worker);
                ps.setLong(4, started);
                ps.executeUpdate();
            }
            return Outcome.done();
        });
    }

    /** @return the short job type */
    static JobType<NoOp> noop() {
        return JobType.of(NOOP, NoOp.class, (a, c) -> Outcome.done());
    }

    /**
     * @param args JDBC URL, worker name, threads, prefetch ({@code adaptive} or a factor), stop file
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        String worker = args[1];
        int threads = Integer.parseInt(args[2]);
        Path stop = Path.of(args[4]);
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(threads + 8);
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            Layover.Builder b = Layover.builder(ds).register(call(ds, worker)).register(noop()).threads(threads)
                    .migrate(false).workerName(worker);
            if (!args[3].equals("adaptive")) {
                b.prefetch(Double.parseDouble(args[3]));
            }
            Layover layover = b.start();
            System.out.println("ready " + worker);
            while (!Files.exists(stop)) {
                Thread.sleep(20);
            }
            layover.stop();
        }
        System.exit(0);
    }
}
