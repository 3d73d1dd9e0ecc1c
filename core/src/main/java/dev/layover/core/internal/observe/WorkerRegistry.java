package dev.layover.core.internal.observe;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.core.spi.Db;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.sql.PreparedStatement;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This instance's row in {@code layover.workers}: written when it starts, every
 * {@link #HEARTBEAT_MILLIS} after that, and within a second when the operators' limits it applies
 * change (so the console can say when each worker applied a limit set at run time); deleted when it
 * stops. One statement per write, on its own daemon thread (a look in memory every second); a write
 * that fails (the database away) is tried again at the next beat. Nothing decides on the table.
 */
public final class WorkerRegistry {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerRegistry.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** How often the row is written when nothing changed. */
    static final long HEARTBEAT_MILLIS = 5_000;
    /** How often the limits applied are looked at (in memory). */
    private static final long LOOK_MILLIS = 1_000;

    private final Db db;
    private final String name;
    private final int threads;
    private final Supplier<Map<String, LimitOverride>> limits;
    private final String host = hostName();
    private ScheduledExecutorService timer;
    // the timer thread's own: what was written last and when, and whether writes are failing
    private boolean first = true;
    private String written;
    private long writtenAt;
    private boolean failing;

    /**
     * @param db the database
     * @param name the worker name (the jobs' {@code picked_by})
     * @param threads the worker threads
     * @param limits the operators' limits this instance applies now, by key (read in memory)
     */
    public WorkerRegistry(Db db, String name, int threads, Supplier<Map<String, LimitOverride>> limits) {
        this.db = db;
        this.name = name;
        this.threads = threads;
        this.limits = limits;
    }

    /** Writes the row and starts the heartbeat thread. */
    public synchronized void start() {
        if (timer != null) {
            return;
        }
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "layover-worker-row-" + name);
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(this::beat, 0, LOOK_MILLIS, TimeUnit.MILLISECONDS);
    }

    /**
     * Stops the heartbeat and deletes the row (best effort: with the database away the row stays,
     * its heartbeat ageing, until any worker's heartbeat deletes it an hour later).
     *
     * @param deleteRow whether to delete the row (not while the database is away)
     */
    public synchronized void stop(boolean deleteRow) {
        if (timer == null) {
            return;
        }
        timer.shutdownNow();
        try {
            timer.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        timer = null;
        if (deleteRow) {
            try {
                db.autocommit("deleting this worker's row", c -> {
                    try (PreparedStatement ps = c.prepareStatement(WorkerSql.DELETE)) {
                        ps.setString(1, name);
                        return ps.executeUpdate();
                    }
                });
            } catch (RuntimeException e) {
                LOG.debug("Layover: could not delete worker row {}", name, e);
            }
        }
    }

    /** Every second: the row is written when the limits applied changed, or a heartbeat is due. */
    private void beat() {
        String now = limitsJson();
        if (!first && now.equals(written) && System.nanoTime() - writtenAt < HEARTBEAT_MILLIS * 1_000_000) {
            return;
        }
        try {
            write(now, first);
            first = false;
            written = now;
            if (failing) {
                LOG.info("Layover: this worker's row in layover.workers is written again");
                failing = false;
            }
        } catch (RuntimeException e) {
            if (!failing) { // INFO: nothing decides on the row, and a database away has its own WARN
                LOG.info("Layover: cannot write this worker's row in layover.workers (tried again every {} s): {}",
                        HEARTBEAT_MILLIS / 1000, e.getMessage());
                failing = true;
            }
        }
        writtenAt = System.nanoTime(); // a failed write waits a beat too
    }

    private void write(String limitsJson, boolean started) {
        db.autocommit("writing this worker's row", c -> {
            try (PreparedStatement ps = c.prepareStatement(WorkerSql.HEARTBEAT)) {
                ps.setString(1, name);
                ps.setString(2, host);
                ps.setInt(3, threads);
                ps.setString(4, VERSION);
                ps.setString(5, limitsJson);
                ps.setBoolean(6, started);
                ps.execute();
                return null;
            }
        });
    }

    /** The limits applied, as the row stores them: {key: {requests_per_minute, ...}}, keys sorted. */
    String limitsJson() {
        ObjectNode out = JSON.createObjectNode();
        Map<String, LimitOverride> applied = new TreeMap<>(limits.get());
        applied.forEach((key, o) -> {
            ObjectNode n = out.putObject(key);
            put(n, "requests_per_minute", o.requestsPerMinute());
            put(n, "tokens_per_minute", o.tokensPerMinute());
            put(n, "input_tokens_per_minute", o.inputTokensPerMinute());
            put(n, "output_tokens_per_minute", o.outputTokensPerMinute());
            if (o.maxInFlight() != null) {
                n.put("max_in_flight", o.maxInFlight());
            }
        });
        return out.toString();
    }

    private static void put(ObjectNode n, String field, Double v) {
        if (v != null) {
            n.put(field, v);
        }
    }

    /** Layover's version, from the resource the build filters; null when unknown (a source tree without a build). */
    static final String VERSION = version();

    private static String version() {
        try (InputStream in = WorkerRegistry.class.getResourceAsStream("/dev/layover/core/version.properties")) {
            if (in == null) {
                return null;
            }
            Properties p = new Properties();
            p.load(in);
            String v = p.getProperty("version");
            return v == null || v.startsWith("${") ? null : v;
        } catch (IOException e) {
            return null;
        }
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }
}
