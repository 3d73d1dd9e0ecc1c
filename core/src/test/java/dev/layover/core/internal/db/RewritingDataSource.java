package dev.layover.core.internal.db;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.Map;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;

/**
 * A data source whose connections pass every prepared statement through a rewrite, as
 * {@link GatedDataSource} does, and record what they changed: for the tests that pin a rewrite to
 * the statements db-scheduler really prepares.
 */
final class RewritingDataSource {

    private RewritingDataSource() {}

    /**
     * @param raw the real data source
     * @param rewrite the rewrite under test
     * @param rewritten receives each statement changed, original to rewritten
     * @return the rewriting data source
     */
    static DataSource of(DataSource raw, UnaryOperator<String> rewrite, Map<String, String> rewritten) {
        ClassLoader loader = RewritingDataSource.class.getClassLoader();
        return (DataSource) Proxy.newProxyInstance(loader, new Class<?>[] {DataSource.class}, (p, m, a) -> {
            Object r = invoke(raw, m, a);
            if (r instanceof Connection c) {
                return Proxy.newProxyInstance(loader, new Class<?>[] {Connection.class}, (p2, m2, a2) -> {
                    if (a2 != null && a2.length > 0 && a2[0] instanceof String sql && m2.getName().startsWith("prepare")) {
                        String to = rewrite.apply(sql);
                        if (!to.equals(sql)) {
                            rewritten.put(sql, to);
                        }
                        a2[0] = to;
                    }
                    return invoke(c, m2, a2);
                });
            }
            return r;
        });
    }

    private static Object invoke(Object target, java.lang.reflect.Method m, Object[] a) throws Throwable {
        try {
            return m.invoke(target, a);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
