package dev.layover.bench;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import javax.sql.DataSource;

/**
 * Times the worker's picks as it sends them: a {@link DataSource} whose prepared statements that
 * are db-scheduler's lock-and-fetch ({@code WITH locked_executions AS (UPDATE ... SET picked = ?,
 * picked_by = ? ... FOR UPDATE SKIP LOCKED ...)}, as Layover rewrites it) record how long each execution took, from
 * the call to its return (the statement's round trip and its commit in autocommit are not
 * separated: db-scheduler commits the pick by itself).
 */
final class PickTimer {

    /** One pick: when it was sent (epoch ms) and how long it took (ns). */
    record Pick(long startedAtMillis, long nanos) {}

    private final List<Pick> picks = Collections.synchronizedList(new ArrayList<>());

    /** @return {@code ds} with every pick timed */
    DataSource wrap(DataSource ds) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, m, args) -> {
                    Object r = invoke(ds, m, args);
                    return r instanceof Connection c ? connection(c) : r;
                });
    }

    /** @return the picks' durations, ms, sorted */
    double[] millis() {
        synchronized (picks) {
            return picks.stream().mapToLong(Pick::nanos).sorted().mapToDouble(n -> n / 1e6).toArray();
        }
    }

    /** @return the q-quantile (0..1) of the picks' durations, ms; NaN without a pick */
    double quantile(double q) {
        double[] ms = millis();
        return ms.length == 0 ? Double.NaN : ms[Math.min(ms.length - 1, (int) Math.ceil(q * ms.length) - 1)];
    }

    /** @return picks timed */
    int count() {
        return picks.size();
    }

    /** @return the picks at or above the q-quantile (0..1), in the order they were sent */
    List<Pick> atOrAbove(double q) {
        double limitMs = quantile(q);
        synchronized (picks) {
            return picks.stream().filter(p -> p.nanos() / 1e6 >= limitMs)
                    .sorted(java.util.Comparator.comparingLong(Pick::startedAtMillis)).toList();
        }
    }

    private Connection connection(Connection c) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, m, args) -> {
                    Object r = invoke(c, m, args);
                    if (r instanceof PreparedStatement ps && m.getName().equals("prepareStatement") && args != null
                            && args[0] instanceof String sql && isPick(sql)) {
                        return timed(ps);
                    }
                    return r;
                });
    }

    /** Layover's pick, the admission: {@code SELECT p.* FROM layover.pick(...)} (core's {@code sql/pick.sql}). */
    static boolean isPick(String sql) {
        return sql.contains("layover.pick(");
    }

    private PreparedStatement timed(PreparedStatement ps) {
        InvocationHandler h = (proxy, m, args) -> {
            if (!m.getName().startsWith("execute")) {
                return invoke(ps, m, args);
            }
            long at = System.currentTimeMillis();
            long t = System.nanoTime();
            try {
                return invoke(ps, m, args);
            } finally {
                picks.add(new Pick(at, System.nanoTime() - t));
            }
        };
        return (PreparedStatement) Proxy.newProxyInstance(PreparedStatement.class.getClassLoader(),
                new Class<?>[] {PreparedStatement.class}, h);
    }

    private static Object invoke(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
