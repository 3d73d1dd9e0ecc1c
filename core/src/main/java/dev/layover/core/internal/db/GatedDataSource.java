package dev.layover.core.internal.db;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The data source db-scheduler gets ({@link DatabaseOutage#gate}): {@code getConnection()} waits
 * while the database is away instead of failing, every failed statement of its connections is
 * reported to the outage detection, its heartbeat statement is made monotonic
 * ({@link HeartbeatRewrite}), and its pick takes due permit holders first ({@link PickRewrite}).
 */
final class GatedDataSource implements DataSource {

    private final DataSource raw;
    private final DatabaseOutage outage;
    private final java.util.function.UnaryOperator<String> rewrite;

    GatedDataSource(DataSource raw, DatabaseOutage outage, java.util.function.UnaryOperator<String> rewrite) {
        this.raw = raw;
        this.outage = outage;
        this.rewrite = rewrite;
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
                new Watcher(c));
    }

    private final class Watcher implements InvocationHandler {
        private final Object target;

        Watcher(Object target) {
            this.target = target;
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
            if (args != null && args.length > 0 && args[0] instanceof String sql && method.getName().startsWith("prepare")) {
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
                return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {type}, new Watcher(result));
            }
            return result;
        }
    }
}
