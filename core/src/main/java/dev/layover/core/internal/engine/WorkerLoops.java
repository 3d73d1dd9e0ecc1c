package dev.layover.core.internal.engine;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.spi.Db;
import dev.layover.core.internal.jobs.JobStore;

/**
 * Two background loops of a running worker:
 *
 * <ul>
 *   <li>the wake-up listener: one pooled connection in {@code LISTEN layover_jobs}; a job inserted
 *       anywhere (another JVM, a replay, a committed transaction) makes this worker look for due
 *       jobs at once instead of at its next poll;
 *   <li>the bulk heartbeat: every heartbeat interval, one {@code UPDATE} marks every job picked by
 *       this worker alive, including jobs picked ahead of a free thread, which db-scheduler's own
 *       per-execution heartbeat does not cover.
 * </ul>
 *
 * Each logs one line when the database goes away and one when it is back.
 */
final class WorkerLoops {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerLoops.class);
    static final String CHANNEL = "layover_jobs";

    private final JobStore store;
    private final Db db;
    private final Clock clock;
    private final String workerName;
    private final Duration heartbeatInterval;
    private final Runnable wakeUp;
    private final Thread listener;
    private final Thread heartbeat;
    private volatile boolean running = true;

    private final boolean listen;

    /** @param listen whether to run the wake-up listener (off: jobs enqueued elsewhere start at the next poll) */
    WorkerLoops(JobStore store, Clock clock, String workerName, Duration heartbeatInterval, Runnable wakeUp,
            boolean listen) {
        this.listen = listen;
        this.store = store;
        this.db = store.db();
        this.clock = clock;
        this.workerName = workerName;
        this.heartbeatInterval = heartbeatInterval;
        this.wakeUp = wakeUp;
        this.listener = new Thread(this::listen, "layover-wakeup-" + workerName);
        this.listener.setDaemon(true);
        this.heartbeat = new Thread(this::beat, "layover-heartbeat-" + workerName);
        this.heartbeat.setDaemon(true);
    }

    void start() {
        if (listen) {
            listener.start();
        }
        heartbeat.start();
    }

    void stop() {
        running = false;
        heartbeat.interrupt();
        try {
            listener.join(2000);
            heartbeat.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void listen() {
        long backoffMs = 250;
        boolean failing = false;
        while (running) {
            try (Connection c = db.dataSource().getConnection()) {
                PGConnection pg;
                try {
                    pg = c.unwrap(PGConnection.class);
                } catch (SQLException notPostgres) {
                    LOG.info("Layover: the data source gives no Postgres connection to LISTEN on; "
                            + "jobs enqueued elsewhere start at the next poll");
                    return;
                }
                if (!c.getAutoCommit()) {
                    c.setAutoCommit(true);
                }
                try (Statement st = c.createStatement()) {
                    st.execute("LISTEN " + CHANNEL);
                }
                if (failing) {
                    LOG.info("Layover: listening for new jobs again");
                    failing = false;
                }
                backoffMs = 250;
                wakeUp.run(); // jobs inserted while nobody listened
                while (running) {
                    PGNotification[] ns = pg.getNotifications(250);
                    if (ns != null && ns.length > 0) {
                        wakeUp.run();
                    }
                }
            } catch (SQLException | RuntimeException e) {
                if (!running) {
                    return;
                }
                if (e instanceof SQLException sql) {
                    db.reportFailure(sql); // a server shutdown shows here first (57P01)
                }
                if (!failing) {
                    LOG.warn("Layover: lost the new-job NOTIFY connection, reconnecting (polling goes on meanwhile): {}",
                            e.getMessage());
                    failing = true;
                }
                if (!sleep(backoffMs)) {
                    return;
                }
                backoffMs = Math.min(5000, backoffMs * 2);
            }
        }
    }

    private void beat() {
        boolean failing = false;
        while (running) {
            if (!sleep(heartbeatInterval.toMillis())) {
                return;
            }
            try {
                store.heartbeatPicked(clock.instant(), workerName);
                if (failing) {
                    LOG.info("Layover: heartbeats written again");
                    failing = false;
                }
            } catch (RuntimeException e) {
                if (!running) {
                    return;
                }
                if (!failing) {
                    LOG.warn("Layover: cannot write heartbeats, retrying every {} ms: {}", heartbeatInterval.toMillis(),
                            e.getMessage());
                    failing = true;
                }
            }
        }
    }

    private static boolean sleep(long ms) {
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            return false;
        }
    }
}
