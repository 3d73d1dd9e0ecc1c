package dev.layover.core.internal.db;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The data source db-scheduler gets ({@link DatabaseOutage#gate}): {@code getConnection()} waits
 * while the database is away instead of failing, a failure to connect is reported to the outage
 * detection, and two of db-scheduler's statements are rewritten as they are prepared
 * ({@link HeartbeatRewrite}). Its pick is Layover's own ({@code Picker}), issued through
 * db-scheduler's JDBC customization, not through this data source.
 */
final class GatedDataSource implements DataSource {

    private final DataSource raw;
    private final DatabaseOutage outage;

    GatedDataSource(DataSource raw, DatabaseOutage outage) {
        this.raw = raw;
        this.outage = outage;
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

    /** A connection whose statements are rewritten as they are prepared. */
    private static Connection watch(Connection c) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "equals":
                            return proxy == args[0];
                        case "hashCode":
                            return System.identityHashCode(proxy);
                        case "toString":
                            return "gated " + c;
                        default:
                            break;
                    }
                    if (args != null && args.length > 0 && args[0] instanceof String sql
                            && method.getName().startsWith("prepare")) {
                        args[0] = HeartbeatRewrite.rewrite(sql);
                    }
                    try {
                        return method.invoke(c, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
