package dev.layover.testing;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Gives a test a migrated, isolated, real Postgres database: declare a {@link TestDatabase}
 * parameter on a test method, a {@code @BeforeEach}/{@code @AfterEach} method (same database as the
 * test), or a static {@code @BeforeAll} method (one database for the class).
 *
 * <pre>{@code
 * @ExtendWith(LayoverPostgresExtension.class)
 * class MyTest {
 *     @Test
 *     void runs(TestDatabase db) {
 *         assertEquals(0, db.count("select count(*) from layover.jobs"));
 *     }
 * }
 * }</pre>
 *
 * <p>The server is the one {@link PostgresServer} picks: {@code LAYOVER_TEST_JDBC_URL}, else
 * Testcontainers when Docker answers, else an embedded Postgres. Never a mock.
 */
public final class LayoverPostgresExtension implements ParameterResolver {

    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(LayoverPostgresExtension.class);

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext)
            throws ParameterResolutionException {
        return parameterContext.getParameter().getType() == TestDatabase.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext)
            throws ParameterResolutionException {
        return extensionContext.getStore(NS).getOrComputeIfAbsent("db", k -> open(), Holder.class).db;
    }

    private static Holder open() {
        PostgresServer server = PostgresServer.get();
        return new Holder(new TestDatabase(server, server.createDatabase()));
    }

    /** Closes the database when its store (test method or class) is closed. */
    private record Holder(TestDatabase db) implements AutoCloseable {
        @Override
        public void close() {
            db.close();
        }
    }

    /**
     * A database with no Layover schema, for tests of the migrations themselves; the caller closes
     * it.
     *
     * @return a fresh, empty database
     */
    public static TestDatabase emptyDatabase() {
        PostgresServer server = PostgresServer.get();
        return new TestDatabase(server, server.createEmptyDatabase());
    }
}
