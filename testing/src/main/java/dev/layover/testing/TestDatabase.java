package dev.layover.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/**
 * A migrated database of its own for one test, on the JVM's {@link PostgresServer}, with small SQL
 * helpers for assertions. Dropped when the test ends.
 *
 * <p>Its pools ({@link #dataSource()}, {@link #newDataSource(int)}) are HikariCP pools: HikariCP is
 * an optional dependency of layover-testing, so a test that uses them declares
 * {@code com.zaxxer:HikariCP} itself. {@link #jdbcUrl()} needs nothing more.
 */
public final class TestDatabase implements AutoCloseable {

    private final PostgresServer server;
    private final String name;
    private final List<HikariDataSource> pools = new CopyOnWriteArrayList<>();
    private volatile HikariDataSource dataSource;

    TestDatabase(PostgresServer server, String name) {
        this.server = server;
        this.name = name;
    }

    /** @return the database name */
    public String name() {
        return name;
    }

    /** @return the server this database lives on */
    public PostgresServer server() {
        return server;
    }

    /** @return a JDBC URL for this database, with user (and password) as query parameters */
    public String jdbcUrl() {
        return server.jdbcUrl(name);
    }

    /** @return the test's pooled data source (HikariCP, 24 connections), created on first use */
    public DataSource dataSource() {
        HikariDataSource ds = dataSource;
        if (ds == null) {
            synchronized (this) {
                ds = dataSource;
                if (ds == null) {
                    ds = newDataSource(24);
                    dataSource = ds;
                }
            }
        }
        return ds;
    }

    /**
     * A further pool on this database, closed with the test.
     *
     * @param maxConnections pool size
     * @return the pool
     */
    public HikariDataSource newDataSource(int maxConnections) {
        requireHikari();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(jdbcUrl());
        cfg.setMaximumPoolSize(maxConnections);
        cfg.setMinimumIdle(0);
        cfg.setPoolName("test-" + name);
        HikariDataSource ds = new HikariDataSource(cfg);
        pools.add(ds);
        return ds;
    }

    private static void requireHikari() {
        try {
            Class.forName("com.zaxxer.hikari.HikariDataSource", false, TestDatabase.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalStateException("TestDatabase's pools are HikariCP pools: add com.zaxxer:HikariCP to the "
                    + "test classpath (layover-testing declares it optional), or connect with jdbcUrl()");
        }
    }

    /**
     * Runs an update.
     *
     * @param sql the statement, with {@code ?} parameters
     * @param params their values
     * @return the row count
     */
    public int update(String sql, Object... params) {
        try (Connection c = dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, params);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e.getMessage() + " in: " + sql, e);
        }
    }

    /**
     * Runs one or more statements with no parameters.
     *
     * @param sql the statements
     */
    public void execute(String sql) {
        try (Connection c = dataSource().getConnection(); var st = c.createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(e.getMessage() + " in: " + sql, e);
        }
    }

    /**
     * @param sql a query, with {@code ?} parameters
     * @param params their values
     * @return its rows, each a column-name to value map in column order
     */
    public List<Map<String, Object>> rows(String sql, Object... params) {
        try (Connection c = dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, params);
            try (ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData md = rs.getMetaData();
                List<Map<String, Object>> out = new ArrayList<>();
                while (rs.next()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        Object v = rs.getObject(i);
                        if (v instanceof org.postgresql.util.PGobject pg) {
                            v = pg.getValue();
                        }
                        row.put(md.getColumnLabel(i), v);
                    }
                    out.add(row);
                }
                return out;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e.getMessage() + " in: " + sql, e);
        }
    }

    /**
     * @param sql a query, with {@code ?} parameters
     * @param params their values
     * @return its single row; fails when there is not exactly one
     */
    public Map<String, Object> row(String sql, Object... params) {
        List<Map<String, Object>> rows = rows(sql, params);
        if (rows.size() != 1) {
            throw new AssertionError("expected exactly one row, got " + rows.size() + " for: " + sql);
        }
        return rows.get(0);
    }

    /**
     * @param sql a query of one row, with {@code ?} parameters
     * @param params their values
     * @return its first column as a long (counts)
     */
    public long count(String sql, Object... params) {
        Object v = row(sql, params).values().iterator().next();
        return v == null ? 0 : ((Number) v).longValue();
    }

    /**
     * @param sql a query of one row, with {@code ?} parameters
     * @param params their values
     * @return its first column
     */
    public Object value(String sql, Object... params) {
        return row(sql, params).values().iterator().next();
    }

    private static void bind(PreparedStatement ps, Object[] params) throws SQLException {
        for (int i = 0; i < params.length; i++) {
            ps.setObject(i + 1, params[i]);
        }
    }

    @Override
    public void close() {
        for (HikariDataSource ds : pools) {
            ds.close();
        }
        server.dropDatabase(name);
    }
}
