package dev.layover.core.internal.db;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.slf4j.LoggerFactory;
import dev.layover.core.spi.Db;

/**
 * Notices that the database went away and turns the flood of errors that would follow (every
 * poll, heartbeat and outcome write, until it is back) into one line when it goes and one when it
 * is back. A connection error (SQL state class {@code 08}, {@code 57P01}-{@code 57P03}) from Layover
 * ({@link Db}) or db-scheduler ({@link #gate}) makes it suspect an outage; a check ({@code
 * isValid}) decides within {@value #CHECK_WAIT_MS} ms, so one broken pooled connection is not one.
 * While the database is away, db-scheduler is paused and its threads wait in the {@link #gate
 * gated} data source, outcome writes wait ({@link #awaitWritable}: a job that finished is neither
 * lost nor run again), and a check runs every {@value #PROBE_INTERVAL_MS} ms. When one succeeds,
 * {@link Listener#onBack} runs first (the engine renews its jobs' heartbeats), outcome writes go
 * on, and db-scheduler's threads follow {@code resumeDelay} later: time for the rest of the fleet
 * to renew theirs.
 */
public final class DatabaseOutage implements AutoCloseable {

    private static final org.slf4j.Logger LOG = LoggerFactory.getLogger(DatabaseOutage.class);
    static final long CHECK_WAIT_MS = 2000;
    static final long PROBE_INTERVAL_MS = 1000;

    /** What the engine does when the database goes and comes back. */
    public interface Listener {
        /** The database is away: stop polling. */
        void onDown();

        /** The database answers again; runs before anything waiting is let through. */
        void onBack();

        /** db-scheduler's threads are let through again: resume polling. */
        void onResumed();
    }

    private enum State { UP, SUSPECT, DOWN, RESUMING, CLOSED }

    private final DataSource dataSource;
    private final String name;
    private final Duration resumeDelay;
    private final Listener listener;
    private final Object lock = new Object();
    private State state = State.UP;
    private boolean closedWhileDown;
    private long downSinceNanos;
    private volatile String firstError;
    private int outages;
    private Thread prober;
    private volatile ExecutorService checker;

    /**
     * @param dataSource the raw pool (checks use it, never the gated one)
     * @param name the worker name, for thread names
     * @param resumeDelay how long db-scheduler's threads wait after the database is back
     * @param listener the engine's hooks
     */
    public DatabaseOutage(DataSource dataSource, String name, Duration resumeDelay, Listener listener) {
        this.dataSource = dataSource;
        this.name = name;
        this.resumeDelay = resumeDelay;
        this.listener = listener;
    }

    // ---- classification -----------------------------------------------------------------

    /**
     * @param t an error
     * @return whether it, or a cause, is a lost or refused connection rather than an error of the
     *     statement: SQL state class {@code 08}, or {@code 57P01}, {@code 57P02}, {@code 57P03}
     */
    public static boolean isConnectionFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SQLException s && isConnectionState(s.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    private static boolean isConnectionState(String state) {
        return state != null && (state.startsWith("08") || state.equals("57P01") || state.equals("57P02")
                || state.equals("57P03"));
    }

    // ---- signals --------------------------------------------------------------------------

    /**
     * A statement failed. A connection failure makes the database suspect (a check decides);
     * any other error is ignored.
     *
     * @param e the error
     */
    public void failed(Throwable e) {
        if (!isConnectionFailure(e)) {
            return;
        }
        synchronized (lock) {
            if (state != State.UP) {
                return;
            }
            state = State.SUSPECT;
            downSinceNanos = System.nanoTime();
            firstError = e.getMessage();
            ensureProber();
            lock.notifyAll();
        }
    }

    /** @return true while the database is suspect or known to be away */
    public boolean isDown() {
        synchronized (lock) {
            return state == State.SUSPECT || state == State.DOWN;
        }
    }

    /** @return how many outages were seen since start (for tests and logs) */
    public int outages() {
        synchronized (lock) {
            return outages;
        }
    }

    /**
     * Waits while the database is suspect or away (an outcome write about to be retried).
     *
     * @param max the longest wait
     * @return true when it is (believed) reachable; false when {@code max} passed, or the engine
     *     stopped while it was away
     * @throws InterruptedException when interrupted (the worker is stopping)
     */
    public boolean awaitWritable(Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        synchronized (lock) {
            while (state == State.SUSPECT || state == State.DOWN) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(lock, left);
            }
            return !(state == State.CLOSED && closedWhileDown);
        }
    }

    /** db-scheduler's threads: wait until the database is back and the resume delay passed. */
    void awaitGate() throws SQLException {
        synchronized (lock) {
            while (state != State.UP && state != State.CLOSED) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SQLTransientConnectionException("Layover: interrupted while waiting for the database");
                }
            }
        }
    }

    /** Stops the checks and lets every waiting thread go (the engine stops). */
    @Override
    public void close() {
        Thread p;
        synchronized (lock) {
            closedWhileDown = state == State.SUSPECT || state == State.DOWN;
            state = State.CLOSED;
            lock.notifyAll();
            p = prober;
            prober = null;
        }
        if (p != null) {
            p.interrupt();
        }
        ExecutorService c = checker;
        if (c != null) {
            c.shutdownNow();
        }
    }

    // ---- the prober ---------------------------------------------------------------------------

    private void ensureProber() {
        if (prober == null && state != State.CLOSED) {
            prober = new Thread(this::probeLoop, "layover-db-check-" + name);
            prober.setDaemon(true);
            prober.start();
        }
    }

    private void probeLoop() {
        Future<Throwable> pending = null;
        while (true) {
            State s;
            synchronized (lock) {
                while (state == State.UP || state == State.RESUMING) {
                    try {
                        lock.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                s = state;
            }
            if (s == State.CLOSED) {
                return;
            }
            if (pending == null) {
                pending = submitCheck();
            }
            Throwable result;
            try {
                result = pending.get(s == State.SUSPECT ? CHECK_WAIT_MS : PROBE_INTERVAL_MS, TimeUnit.MILLISECONDS);
                pending = null;
            } catch (TimeoutException stillWaiting) {
                result = stillWaiting; // the pool is still trying to connect
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                pending = null;
                result = e;
            }
            if (result == null) {
                back(s);
                continue;
            }
            if (s == State.SUSPECT) {
                if (!(result instanceof TimeoutException) && !isConnectionFailure(result)) {
                    // the check failed for another reason (pool exhausted, ...): not an outage
                    backToUp();
                    continue;
                }
                goDown(result);
            }
            if (pending == null && !sleep(PROBE_INTERVAL_MS)) {
                return;
            }
        }
    }

    private Future<Throwable> submitCheck() {
        ExecutorService c = checker;
        if (c == null) {
            c = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "layover-db-probe-" + name);
                t.setDaemon(true);
                return t;
            });
            checker = c;
        }
        return c.submit(() -> {
            try (Connection conn = dataSource.getConnection()) {
                return conn.isValid(5) ? null : new SQLTransientConnectionException("connection not valid", "08006");
            } catch (SQLException | RuntimeException e) {
                return e;
            }
        });
    }

    private void goDown(Throwable check) {
        boolean first;
        synchronized (lock) {
            first = state == State.SUSPECT;
            if (first) {
                state = State.DOWN;
                outages++;
            }
        }
        if (first) {
            LOG.warn("Layover: the database is unreachable ({}); job polling is paused and outcomes wait until it "
                    + "answers again, checked every {} s", firstError != null ? firstError : check.getMessage(),
                    PROBE_INTERVAL_MS / 1000.0);
            try {
                listener.onDown();
            } catch (RuntimeException e) {
                LOG.debug("Layover: pausing after the outage failed", e);
            }
        }
    }

    private void backToUp() {
        synchronized (lock) {
            if (state == State.SUSPECT) {
                state = State.UP;
                lock.notifyAll();
            }
        }
    }

    private void back(State was) {
        if (was == State.SUSPECT) {
            // a single connection failed, the database is fine
            backToUp();
            return;
        }
        try {
            listener.onBack();
        } catch (RuntimeException e) {
            LOG.debug("Layover: the after-outage hook failed", e);
        }
        long downMs;
        synchronized (lock) {
            if (state != State.DOWN) {
                return;
            }
            state = State.RESUMING;
            downMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - downSinceNanos);
            lock.notifyAll(); // outcome writes go on
        }
        sleep(resumeDelay.toMillis());
        synchronized (lock) {
            if (state != State.RESUMING) {
                return;
            }
            state = State.UP;
            lock.notifyAll(); // db-scheduler's threads go on
        }
        LOG.info("Layover: the database answers again after {} s; job polling resumed",
                String.format("%.1f", downMs / 1000.0));
        try {
            listener.onResumed();
        } catch (RuntimeException e) {
            LOG.debug("Layover: resuming after the outage failed", e);
        }
    }

    private static boolean sleep(long ms) {
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * The data source db-scheduler gets: {@code getConnection()} waits while the database is away
     * (instead of failing, which db-scheduler would log at every poll and heartbeat), and a failure
     * to connect is reported to {@link #failed}.
     *
     * @param raw the pool
     * @return the gated data source
     */
    public DataSource gate(DataSource raw) {
        return new GatedDataSource(raw, this);
    }
}
