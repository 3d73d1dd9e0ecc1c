package dev.layover.core.internal.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The database's time, read from this JVM: the JVM's clock corrected by its measured offset from
 * the database's {@code clock_timestamp()}. Every worker of a fleet decides ownership (heartbeats,
 * dead workers) and due-ness (run times, backoffs, cooldowns, bucket slots) on it, so a JVM whose
 * clock is off does not run a healthy worker's jobs again, nor enqueue "now" into the future.
 *
 * <p>The offset is measured with a few {@code SELECT clock_timestamp()} round trips (the one with
 * the shortest round trip wins; its midpoint is taken as the moment the database read its clock),
 * on first use and then every {@link #REMEASURE_EVERY} by a daemon thread. Its error is at most half
 * the round trip (well under a millisecond on a local network). While the database cannot be
 * reached the last offset stays (none at first: the JVM's own clock). An offset beyond
 * {@link #SKEW_WARNING} is logged at WARN once per change, as the JVM's clock is then wrong.
 */
public final class DatabaseClock extends Clock implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(DatabaseClock.class);

    /** How often the offset is measured again. */
    public static final Duration REMEASURE_EVERY = Duration.ofSeconds(30);

    /** An offset this large is logged at WARN: the JVM's clock is off. */
    public static final Duration SKEW_WARNING = Duration.ofSeconds(1);

    /** How long {@link #close()} waits for a measurement in flight to end. */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

    private static final int SAMPLES = 3;

    private final DataSource dataSource;
    private final Clock local;
    private final String name;
    private volatile long offsetNanos;
    private volatile boolean measured;
    private volatile long warnedOffsetSeconds;
    private volatile boolean failing;
    private Thread thread;
    private volatile boolean closed;

    /**
     * @param dataSource the database whose time this is
     * @param local the JVM's clock (the system clock, or a test's)
     * @param name names the measuring thread
     */
    public DatabaseClock(DataSource dataSource, Clock local, String name) {
        this.dataSource = dataSource;
        this.local = local;
        this.name = name;
    }

    @Override
    public Instant instant() {
        if (!measured) {
            firstMeasure();
        }
        return local.instant().plusNanos(offsetNanos);
    }

    /** @return the database's clock minus this JVM's, as last measured (zero until measured) */
    public Duration offset() {
        return Duration.ofNanos(offsetNanos);
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }

    private synchronized void firstMeasure() {
        if (measured || closed) {
            return;
        }
        measure();
        measured = true;
        thread = new Thread(this::loop, "layover-db-clock-" + name);
        thread.setDaemon(true);
        thread.start();
    }

    /** Measures the offset now; keeps the last one when the database cannot be reached. */
    public void measure() {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT clock_timestamp()")) {
            long bestRtt = Long.MAX_VALUE;
            long bestOffset = 0;
            for (int i = 0; i < SAMPLES; i++) {
                long n0 = System.nanoTime();
                Instant before = local.instant();
                OffsetDateTime db;
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    db = rs.getObject(1, OffsetDateTime.class);
                }
                long rtt = System.nanoTime() - n0;
                if (rtt < bestRtt) {
                    bestRtt = rtt;
                    Instant mid = before.plusNanos(rtt / 2);
                    bestOffset = Duration.between(mid, db.toInstant()).toNanos();
                }
            }
            offsetNanos = bestOffset;
            if (failing) {
                failing = false;
                LOG.info("Layover: the database's clock can be read again");
            }
            warnOnSkew(bestOffset);
        } catch (SQLException | RuntimeException e) {
            if (!failing) {
                failing = true;
                LOG.debug("Layover: could not read the database's clock (keeping the last offset, {} ms): {}",
                        offsetNanos / 1_000_000, e.toString());
            }
        }
    }

    private void warnOnSkew(long offset) {
        long seconds = Math.round(offset / 1e9);
        if (Math.abs(offset) < SKEW_WARNING.toNanos()) {
            warnedOffsetSeconds = 0;
            return;
        }
        if (seconds != warnedOffsetSeconds) {
            warnedOffsetSeconds = seconds;
            LOG.warn("Layover: this JVM's clock is {} s {} the database's; Layover decides every time on the "
                    + "database's clock (see docs/operations.md, clocks), but fix the JVM host's clock (NTP)",
                    String.format("%.1f", Math.abs(offset) / 1e9), offset > 0 ? "behind" : "ahead of");
        }
    }

    private void loop() {
        while (!closed) {
            try {
                Thread.sleep(REMEASURE_EVERY.toMillis());
            } catch (InterruptedException e) {
                return;
            }
            if (!closed) {
                measure();
            }
        }
    }

    /**
     * Stops measuring and waits (at most {@link #CLOSE_WAIT}) for the measuring thread to end, so a
     * stopped instance leaves no thread behind.
     */
    @Override
    public void close() {
        Thread running;
        synchronized (this) {
            closed = true;
            running = thread;
        }
        if (running == null || running == Thread.currentThread()) {
            return;
        }
        running.interrupt();
        try {
            running.join(CLOSE_WAIT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
