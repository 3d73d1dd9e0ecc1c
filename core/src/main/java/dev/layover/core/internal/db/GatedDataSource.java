package dev.layover.core.internal.db;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The data source db-scheduler gets ({@link DatabaseOutage#gate}): {@code getConnection()} waits
 * while the database is away instead of failing, every failed statement of its connections is
 * reported to the outage detection, its heartbeat statement is made monotonic
 * ({@link HeartbeatRewrite}), and its pick takes due permit holders first ({@link PickRewrite}).
 *
 * <p>The rows of each pick are read as db-scheduler reads them ({@link PickedJob}) and handed to
 * {@code onPick} once the pick's connection is closed: after its commit, before db-scheduler hands
 * the jobs to its threads, on the thread that picked, holding no connection.
 */
final class GatedDataSource implements DataSource {

    private final DataSource raw;
    private final DatabaseOutage outage;
    private final java.util.function.UnaryOperator<String> rewrite;
    private final Consumer<List<PickedJob>> onPick;

    GatedDataSource(DataSource raw, DatabaseOutage outage, java.util.function.UnaryOperator<String> rewrite,
            Consumer<List<PickedJob>> onPick) {
        this.raw = raw;
        this.outage = outage;
        this.rewrite = rewrite;
        this.onPick = onPick;
    }

    @Override
    public Connection getConnection() throws SQLException {
        outage.awaitGate();
        try {
            return watch(raw.getConnection());
        } catch (SQLException e) {
            outage.failed(e);
            throw e;
        }
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
        outage.awaitGate();
        try {
            return watch(raw.getConnection(user, password));
        } catch (SQLException e) {
            outage.failed(e);
            throw e;
        }
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
        return raw.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
        raw.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
        raw.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
        return raw.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        return raw.getParentLogger();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        return iface.isInstance(this) ? iface.cast(this) : raw.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
        return iface.isInstance(this) || raw.isWrapperFor(iface);
    }

    /** A connection whose failures, and those of its statements, are reported. */
    private Connection watch(Connection c) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                new Watcher(c, new Picked(), false));
    }

    /** The rows a connection's pick returned, handed on when the connection closes. */
    private static final class Picked {
        private List<PickedJob> rows;

        synchronized void add(PickedJob row) {
            if (rows == null) {
                rows = new ArrayList<>();
            }
            rows.add(row);
        }

        synchronized List<PickedJob> take() {
            List<PickedJob> r = rows;
            rows = null;
            return r;
        }
    }

    private static PickedJob row(ResultSet rs) throws SQLException {
        java.time.OffsetDateTime permitAt = rs.getObject("permit_at", java.time.OffsetDateTime.class);
        java.time.OffsetDateTime runAt = rs.getObject("execution_time", java.time.OffsetDateTime.class);
        return new PickedJob(rs.getString("task_name"), rs.getString("task_instance"), rs.getLong("version"),
                rs.getString("provider_key"), permitAt != null && permitAt.isEqual(runAt) ? permitAt.toInstant() : null,
                permitAt == null && "bucket".equals(rs.getString("last_reschedule_reason")) ? runAt.toInstant() : null,
                rs.getString("fairness_key") != null);
    }

    private final class Watcher implements InvocationHandler {
        private final Object target;
        private final Picked picked;
        /** A pick statement, or its result set. */
        private final boolean pick;

        Watcher(Object target, Picked picked, boolean pick) {
            this.target = target;
            this.picked = picked;
            this.pick = pick;
        }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            switch (method.getName()) {
                case "equals":
                    return proxy == args[0];
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "toString":
                    return "watched " + target;
                default:
                    break;
            }
            boolean prepPick = false;
            if (args != null && args.length > 0 && args[0] instanceof String sql && method.getName().startsWith("prepare")) {
                prepPick = onPick != null && PickRewrite.isPick(sql);
                args[0] = rewrite.apply(HeartbeatRewrite.rewrite(sql));
            }
            Object result;
            try {
                result = method.invoke(target, args);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof SQLException) {
                    outage.failed(cause);
                }
                throw cause;
            }
            Class<?> type = method.getReturnType();
            if (result != null && (type == Statement.class || type == PreparedStatement.class || type == CallableStatement.class)) {
                return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {type},
                        new Watcher(result, picked, prepPick));
            }
            if (pick && result != null && type == ResultSet.class) {
                return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {ResultSet.class},
                        new Watcher(result, picked, true));
            }
            if (pick && target instanceof ResultSet rs && "next".equals(method.getName()) && Boolean.TRUE.equals(result)) {
                try {
                    picked.add(row(rs));
                } catch (SQLException | RuntimeException e) {
                    // a row it cannot read is admitted as it runs, like any other
                }
            }
            if (target instanceof Connection && "close".equals(method.getName())) {
                List<PickedJob> rows = picked.take();
                if (rows != null) {
                    try {
                        onPick.accept(rows);
                    } catch (RuntimeException e) {
                        // what a pick is given ahead is an optimisation: its jobs are admitted as they run
                    }
                }
            }
            return result;
        }
    }
}
