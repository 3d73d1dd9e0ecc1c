package dev.layover.core.reliability;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * A Layover worker in its own JVM for the crash and outage tests. Runs job type {@code rel}, whose
 * handler records its run (in {@code public.exec_log}, or as a line {@code id worker epochMillis}
 * appended to a file, which survives a database outage and a kill -9 alike) and sleeps a little.
 * Prints {@code started <worker>} once polling, then runs until killed.
 *
 * <p>Arguments: JDBC URL, worker name, threads, handler sleep in ms, exec log ({@code db} or a
 * file path). A job with a negative {@code n} sleeps {@code rel.longMs} (default 25 s) instead. System properties: {@code rel.connectionTimeoutMs} (HikariCP's, default its own 30
 * s), {@code rel.heartbeatMs} and {@code rel.missed} (default Layover's 5 s and 8).
 */
public final class WorkerMain {

    /** The args of a {@code rel} job. */
    public record Item(int n) {}

    private WorkerMain() {}

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        String url = args[0];
        String worker = args[1];
        int threads = Integer.parseInt(args[2]);
        long sleepMs = Long.parseLong(args[3]);
        String execLog = args[4];
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setMaximumPoolSize(threads * 2 + 6);
        cfg.setPoolName("pool-" + worker);
        String timeout = System.getProperty("rel.connectionTimeoutMs");
        if (timeout != null) {
            cfg.setConnectionTimeout(Long.parseLong(timeout));
        }
        HikariDataSource ds = new HikariDataSource(cfg);
        FileChannel file = execLog.equals("db") ? null
                : FileChannel.open(Path.of(execLog), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                        StandardOpenOption.APPEND);
        // a provider key, so that the fleet-wide provider state (its refresher, its NOTIFY listener,
        // the breaker's success counts) takes part in the crash and the outage
        JobType<Item> rel = JobType.builder("rel", Item.class).providerKey(a -> "rel:provider").handler((a, ctx) -> {
            if (file == null) {
                Reliability.logExecution(ds, ctx.jobId(), worker);
            } else {
                append(file, ctx.jobId() + " " + worker + " " + System.currentTimeMillis() + "\n");
            }
            if (a.n() < 0) {
                Thread.sleep(Long.getLong("rel.longMs", 25_000)); // a long job, running across an outage
            } else if (sleepMs > 0) {
                Thread.sleep(sleepMs);
            }
            return Outcome.done();
        }).build();
        Layover layover = Layover.builder(ds)
                .register(rel)
                .workerName(worker)
                .threads(threads)
                .migrate(false)
                .pollInterval(Duration.ofMillis(100))
                .heartbeat(Duration.ofMillis(Long.getLong("rel.heartbeatMs", 5000)), Integer.getInteger("rel.missed", 8))
                .start();
        System.out.println("started " + worker);
        JvmProcess.runUntilKilled();
        layover.stop();
    }

    private static void append(FileChannel file, String line) {
        try {
            ByteBuffer b = ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8));
            synchronized (file) {
                while (b.hasRemaining()) {
                    file.write(b);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
