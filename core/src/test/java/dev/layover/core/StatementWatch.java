package dev.layover.core;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * A data source whose connections tell a listener of every statement they execute, by its SQL (a
 * prepared statement's as prepared): for the tests that count what a code path costs the database.
 */
public final class StatementWatch {

    private StatementWatch() {}

    /**
     * @param target the real data source
     * @param onExecute given the SQL of each statement executed, on the thread that executes it
     * @return the watched data source
     */
    public static DataSource of(DataSource target, Consumer<String> onExecute) {
        return proxy(DataSource.class, target, (t, m, a) -> {
            Object r = invoke(t, m, a);
            return r instanceof Connection c ? connection(c, onExecute) : r;
        });
    }

    private static Connection connection(Connection c, Consumer<String> onExecute) {
        return proxy(Connection.class, c, (t, m, a) -> {
            Object r = invoke(t, m, a);
            if (r instanceof Statement s) {
                String prepared = a != null && a.length > 0 && a[0] instanceof String sql ? sql : null;
                Class<? extends Statement> type = r instanceof CallableStatement ? CallableStatement.class
                        : r instanceof PreparedStatement ? PreparedStatement.class : Statement.class;
                return proxy(type, s, (t2, m2, a2) -> {
                    if (m2.getName().startsWith("execute")) {
                        onExecute.accept(prepared != null ? prepared : a2 != null && a2.length > 0 ? String.valueOf(a2[0]) : "");
                    }
                    return invoke(t2, m2, a2);
                });
            }
            return r;
        });
    }

    @SuppressWarnings("unchecked")
    private static <T> T proxy(Class<T> type, Object target, Handler h) {
        InvocationHandler ih = (p, m, a) -> h.handle(target, m, a);
        return (T) Proxy.newProxyInstance(StatementWatch.class.getClassLoader(), new Class<?>[] {type}, ih);
    }

    private static Object invoke(Object t, Method m, Object[] a) throws Throwable {
        try {
            return m.invoke(t, a);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private interface Handler {
        Object handle(Object target, Method m, Object[] args) throws Throwable;
    }
}
