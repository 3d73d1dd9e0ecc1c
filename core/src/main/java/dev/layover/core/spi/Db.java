package dev.layover.core.spi;

import dev.layover.core.LayoverException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * Connections for Layover's own statements. Works whatever the pool's autocommit default is:
 * single statements run in autocommit, transactions commit or roll back explicitly, and the
 * connection goes back to the pool as it came.
 */
public final class Db {

    private final DataSource dataSource;
    private final List<Consumer<SQLException>> failureListeners = new CopyOnWriteArrayList<>();

    /**
     * @param dataSource the pool
     */
    public Db(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * Hears of every failed statement (for the outage detection of a running engine).
     *
     * @param listener called with the driver's exception, on the failing thread; must not throw
     */
    public void addFailureListener(Consumer<SQLException> listener) {
        failureListeners.add(listener);
    }

    /** @param listener a listener added before */
    public void removeFailureListener(Consumer<SQLException> listener) {
        failureListeners.remove(listener);
    }

    /**
     * Reports a failure met outside {@link #autocommit} and {@link #transaction} (on a connection
     * held for {@code LISTEN}, say), so that a running engine notices a lost database at once.
     *
     * @param e the driver's exception
     */
    public void reportFailure(SQLException e) {
        heard(e);
    }

    private SQLException heard(SQLException e) {
        for (Consumer<SQLException> l : failureListeners) {
            try {
                l.accept(e);
            } catch (RuntimeException ignored) {
                // a listener must not change the error the caller sees
            }
        }
        return e;
    }

    /** @return the pool */
    public DataSource dataSource() {
        return dataSource;
    }

    /**
     * @return the database's {@code now()}: the time to decide on (a JVM's own clock may be off)
     * @throws dev.layover.core.LayoverException when the database fails
     */
    public java.time.Instant now() {
        return autocommit("reading the database's time", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT now()"); java.sql.ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getObject(1, java.time.OffsetDateTime.class).toInstant();
            }
        });
    }

    /** Work on one connection. */
    @FunctionalInterface
    public interface Work<T> {
        /**
         * @param c the connection
         * @return a result
         * @throws SQLException on a database error
         */
        T run(Connection c) throws SQLException;
    }

    /**
     * Runs {@code work} in autocommit mode.
     *
     * @param what a few words for the error message
     * @param work the statements
     * @param <T> the result type
     * @return the work's result
     */
    public <T> T autocommit(String what, Work<T> work) {
        try (Connection c = dataSource.getConnection()) {
            boolean was = c.getAutoCommit();
            if (!was) {
                c.setAutoCommit(true);
            }
            try {
                return work.run(c);
            } finally {
                if (!was) {
                    c.setAutoCommit(false);
                }
            }
        } catch (SQLException e) {
            throw failure(what, heard(e));
        }
    }

    /**
     * Runs {@code work} in one transaction; commits when it returns, rolls back when it throws or
     * calls {@link Rollback#now()}.
     *
     * @param what a few words for the error message
     * @param work the statements
     * @param <T> the result type
     * @return the work's result, or {@code null} after a {@link Rollback}
     */
    public <T> T transaction(String what, Work<T> work) {
        try (Connection c = dataSource.getConnection()) {
            boolean was = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                bounded(c);
                T result = work.run(c);
                c.commit();
                return result;
            } catch (Rollback r) {
                c.rollback();
                return null;
            } catch (SQLException | RuntimeException e) {
                try {
                    c.rollback();
                } catch (SQLException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            } finally {
                c.setAutoCommit(was);
            }
        } catch (SQLException e) {
            throw failure(what, heard(e));
        }
    }

    /**
     * Bounds what a transaction of Layover's may do to others if its JVM stops between two of its
     * statements (a long GC pause, SIGSTOP, a debugger): the server ends it after
     * {@link #IDLE_IN_TRANSACTION_TIMEOUT_MS} idle, releasing its locks, and none of its statements
     * waits longer than {@link #LOCK_TIMEOUT_MS} for another's lock. Both for this transaction only.
     */
    private static void bounded(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT set_config('idle_in_transaction_session_timeout', ?, true), set_config('lock_timeout', ?, true)")) {
            ps.setString(1, String.valueOf(IDLE_IN_TRANSACTION_TIMEOUT_MS));
            ps.setString(2, String.valueOf(LOCK_TIMEOUT_MS));
            ps.execute();
        }
    }

    /** How long a transaction of Layover's may sit idle before the server ends it (ms): 30 s. */
    public static final int IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;

    /** How long a statement of a Layover transaction waits for another's lock at most (ms): 10 s. */
    public static final int LOCK_TIMEOUT_MS = 10_000;

    /** Thrown inside {@link #transaction} to roll back without an error. */
    public static final class Rollback extends RuntimeException {
        private static final long serialVersionUID = 1L;

        private Rollback() {
            super(null, null, false, false);
        }

        /** @return the signal to throw */
        public static Rollback now() {
            return new Rollback();
        }
    }

    /**
     * Binds parameters in order.
     *
     * @param ps the statement
     * @param params the values
     * @throws SQLException on a driver error
     */
    public static void bind(PreparedStatement ps, Object... params) throws SQLException {
        for (int i = 0; i < params.length; i++) {
            ps.setObject(i + 1, params[i]);
        }
    }

    /**
     * A {@link LayoverException} for a failed statement, with the SQL state.
     *
     * @param what what was attempted
     * @param e the driver's exception
     * @return the exception to throw
     */
    public static LayoverException failure(String what, SQLException e) {
        return new LayoverException("database error while " + what + " (SQL state " + e.getSQLState() + "): "
                + e.getMessage(), e);
    }
}
