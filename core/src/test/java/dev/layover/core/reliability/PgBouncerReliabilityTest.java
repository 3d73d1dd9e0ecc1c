package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.migrations.LayoverMigrations;
import dev.layover.testing.Await;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.PgBouncer;
import dev.layover.testing.PgBouncer.PoolMode;
import dev.layover.testing.PostgresServer;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Scenario 4: Layover behind PgBouncer in transaction pooling (each test starts its own
 * {@link PgBouncer} in front of the test's database). What works and what does not, each found by
 * a probe at the JDBC level, and Layover itself running jobs through it with the documented
 * settings: {@code Layover.builder(..).notifications(false)} and pgjdbc's {@code prepareThreshold=0}
 * (docs/operations.md, "Poolers").
 */
@ProcessTest
class PgBouncerReliabilityTest {

    /** pgjdbc's named server-side statements off: every statement is parsed in its own round trip. */
    private static final String NO_SERVER_PREPARE = "&prepareThreshold=0";

    @BeforeEach
    void requirePgBouncer() {
        Reliability.requireTool(PgBouncer.unavailable());
    }

    private static PgBouncer bouncer(TestDatabase db, PoolMode mode, int poolSize) {
        return builder(db, mode, poolSize).start();
    }

    private static PgBouncer.Builder builder(TestDatabase db, PoolMode mode, int poolSize) {
        PostgresServer server = db.server();
        Map<String, String> credentials = credentials(db.jdbcUrl());
        return PgBouncer.in(mode).server(server.host(), server.port(), credentials.get("user"), credentials.get("password"))
                .poolSize(poolSize);
    }

    /** The user and password of the test server's URL (the user PgBouncer logs in as). */
    private static Map<String, String> credentials(String url) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String kv : url.substring(url.indexOf('?') + 1).split("&")) {
            int eq = kv.indexOf('=');
            out.put(kv.substring(0, eq), java.net.URLDecoder.decode(kv.substring(eq + 1), java.nio.charset.StandardCharsets.UTF_8));
        }
        return out;
    }

    private static Connection connect(String url) throws SQLException {
        return DriverManager.getConnection(url);
    }

    private static String one(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    /**
     * LISTEN does not survive transaction pooling: the LISTEN runs on whichever server connection
     * the statement got, which goes back to the pool at once; a NOTIFY then reaches that idle
     * server connection and PgBouncer drops it ("got packet 'A' from server when not linked"). In
     * session pooling, the control, the listener hears it.
     */
    @Test
    void listenHearsNothingThroughTransactionPoolingButDoesThroughSessionPooling(TestDatabase db) throws Exception {
        try (PgBouncer tx = bouncer(db, PoolMode.TRANSACTION, 2);
                Connection listener = connect(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE);
                Connection direct = db.dataSource().getConnection()) {
            try (Statement st = listener.createStatement()) {
                st.execute("LISTEN layover_probe");
            }
            try (Statement st = direct.createStatement()) {
                st.execute("NOTIFY layover_probe, 'hello'");
            }
            Await.until(Duration.ofSeconds(10), "PgBouncer dropping the notification of an idle server connection",
                    () -> tx.log().contains("got packet 'A' from server when not linked"));
            one(listener, "select 1");
            PGNotification[] heard = listener.unwrap(PGConnection.class).getNotifications(200);
            assertTrue(heard == null || heard.length == 0, "nothing heard through transaction pooling");
        }
        try (PgBouncer session = bouncer(db, PoolMode.SESSION, 2);
                Connection listener = connect(session.jdbcUrl(db.name()));
                Connection direct = db.dataSource().getConnection()) {
            try (Statement st = listener.createStatement()) {
                st.execute("LISTEN layover_probe");
            }
            try (Statement st = direct.createStatement()) {
                st.execute("NOTIFY layover_probe, 'hello'");
            }
            List<String> heard = new ArrayList<>();
            Await.until(Duration.ofSeconds(10), "the notification heard through session pooling", () -> {
                try {
                    PGNotification[] n = listener.unwrap(PGConnection.class).getNotifications(100);
                    if (n != null) {
                        for (PGNotification x : n) {
                            heard.add(x.getParameter());
                        }
                    }
                    return !heard.isEmpty();
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertEquals(List.of("hello"), heard);
        }
    }

    /**
     * pgjdbc's server-side prepared statements (named {@code S_1}, {@code S_2}, .. from the fifth
     * execution of a statement on a connection, {@code prepareThreshold=5}) belong to one server
     * connection; behind transaction pooling the next transaction of the same client may run on
     * another server connection (statement missing), and another client's {@code S_1} may already be
     * there (statement exists). PgBouncer before 1.21 does not track them at all (1.21 and newer
     * do with {@code max_prepared_statements} above 0; this probe turns that off). With
     * {@code prepareThreshold=0} every statement is unnamed and parsed with its execution: no error.
     */
    @Test
    void serverPreparedStatementsBreakThroughTransactionPoolingAndPrepareThresholdZeroFixesIt(TestDatabase db)
            throws Exception {
        PgBouncer.Builder config = builder(db, PoolMode.TRANSACTION, 1);
        if (PgBouncer.installedAtLeast(1, 21)) {
            config.setting("max_prepared_statements", "0"); // what 1.21 and newer can do is not this probe's question
        }
        try (PgBouncer tx = config.start()) {
            String version = tx.version();
            List<String> states = interleavedPreparedStatements(tx.jdbcUrl(db.name()));
            Reliability.report("scenario 4b: pgjdbc's server-side prepared statements through " + version
                    + ", transaction pooling, 2 clients on 1 server connection, 10 executions each",
                    Map.of("SQL states of the failed executions", states));
            assertFalse(states.isEmpty(), "named statements collide or go missing");
            assertTrue(Set.of("42P05", "26000").containsAll(states),
                    "prepared statement already exists / does not exist: " + states);
            assertEquals(List.of(), interleavedPreparedStatements(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE),
                    "no error with prepareThreshold=0");
        }
    }

    /** Two clients, one server connection: each runs its own prepared statement 10 times, in turn. */
    private static List<String> interleavedPreparedStatements(String url) throws SQLException {
        List<String> states = new ArrayList<>();
        try (Connection a = connect(url); Connection b = connect(url);
                PreparedStatement pa = a.prepareStatement("select ?::int + 1");
                PreparedStatement pb = b.prepareStatement("select ?::int + 2")) {
            for (int i = 0; i < 10; i++) {
                for (PreparedStatement ps : List.of(pa, pb)) {
                    try {
                        ps.setInt(1, i);
                        try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                        }
                    } catch (SQLException e) {
                        states.add(e.getSQLState());
                    }
                }
            }
        }
        return states;
    }

    /**
     * Transaction-level advisory locks work (Layover's pauses take one: {@code pg_advisory_xact_lock}):
     * the lock lives as long as the transaction, which keeps its server connection. What is set
     * for a session leaks to whichever client gets that server connection next: a session advisory
     * lock taken by one client is "held" by another, a {@code SET} of one applies to the other.
     */
    @Test
    void transactionAdvisoryLocksWorkAndSessionStateLeaksBetweenClients(TestDatabase db) throws Exception {
        try (PgBouncer tx = bouncer(db, PoolMode.TRANSACTION, 2);
                Connection a = connect(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE);
                Connection b = connect(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE)) {
            a.setAutoCommit(false);
            b.setAutoCommit(false);
            one(a, "select pg_advisory_xact_lock(4242)");
            assertEquals("f", one(b, "select pg_try_advisory_xact_lock(4242)"), "held by a's transaction");
            b.commit();
            a.commit();
            assertEquals("t", one(b, "select pg_try_advisory_xact_lock(4242)"), "free once a committed");
            b.commit();
        }
        try (PgBouncer tx = bouncer(db, PoolMode.TRANSACTION, 1);
                Connection a = connect(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE);
                Connection b = connect(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE)) {
            one(a, "select pg_advisory_lock(4343)::text");
            assertEquals("t", one(b, "select pg_try_advisory_lock(4343)"),
                    "b 'takes' the session lock a holds: both run on the one server connection");
            try (Statement st = a.createStatement()) {
                st.execute("SET statement_timeout = '4321ms'");
            }
            assertEquals("4321ms", one(b, "show statement_timeout"), "a's SET applies to b");
            one(b, "select pg_advisory_unlock_all()::text");
        }
    }

    /**
     * Switching autocommit off and on works: pgjdbc sends {@code BEGIN} with the first statement,
     * and the transaction keeps its server connection until commit or rollback, whatever other
     * clients do meanwhile.
     */
    @Test
    void autocommitTogglingKeepsTransactionsWhole(TestDatabase db) throws Exception {
        db.execute("CREATE TABLE public.probe (who text NOT NULL)");
        try (PgBouncer tx = bouncer(db, PoolMode.TRANSACTION, 2);
                Connection a = connect(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE);
                Connection b = connect(tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE)) {
            a.setAutoCommit(false);
            insert(a, "a rolled back");
            insert(b, "b autocommitted");
            assertEquals("1", one(a, "select count(*) from public.probe where who = 'a rolled back'"), "a sees its own row");
            a.rollback();
            a.setAutoCommit(true);
            insert(a, "a autocommitted");
            a.setAutoCommit(false);
            insert(a, "a committed");
            insert(b, "b autocommitted");
            a.commit();
            a.setAutoCommit(true);
        }
        assertEquals(List.of("a autocommitted", "a committed", "b autocommitted", "b autocommitted"),
                db.rows("select who from public.probe order by who").stream().map(r -> (String) r.get("who")).toList());
    }

    private static void insert(Connection c, String who) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO public.probe (who) VALUES (?)")) {
            ps.setString(1, who);
            ps.executeUpdate();
        }
    }

    /** Layover's migrations (Flyway, which locks with a transaction-level advisory lock) run through it. */
    @Test
    void migrationsRunThroughTransactionPooling() {
        try (TestDatabase empty = LayoverPostgresExtension.emptyDatabase();
                PgBouncer tx = bouncer(empty, PoolMode.TRANSACTION, 4)) {
            org.postgresql.ds.PGSimpleDataSource ds = new org.postgresql.ds.PGSimpleDataSource();
            ds.setURL(tx.jdbcUrl(empty.name()) + NO_SERVER_PREPARE);
            int applied = LayoverMigrations.migrate(ds);
            assertEquals(0, LayoverMigrations.migrate(ds), "a second run through the pooler applies nothing");
            assertEquals(0L, empty.count("select count(*) from layover.jobs"));
            assertTrue(applied >= 1, "the baseline applied");
            assertTrue(LayoverMigrations.isUpToDate(ds), "every migration applied");
            assertEquals(0L, empty.count("select count(*) from layover.flyway_schema_history where not success"));
        }
    }

    private static JobType<WorkerMain.Item> plainJob(Map<String, Integer> runs, Map<String, String> ranOn, String worker) {
        return JobType.of("plain", WorkerMain.Item.class, (a, c) -> {
            runs.merge(c.jobId(), 1, Integer::sum);
            ranOn.put(c.jobId(), worker);
            return Outcome.done();
        });
    }

    /** Rate limited (300 ms) on its first run, done on the next. */
    private static JobType<WorkerMain.Item> limitedJob(Map<String, Integer> runs) {
        return JobType.builder("limited", WorkerMain.Item.class).providerKey(a -> "bounced:provider").handler((a, c) -> {
            int n = runs.merge(c.jobId(), 1, Integer::sum);
            return n == 1 ? Outcome.rateLimited(Duration.ofMillis(300)) : Outcome.done();
        }).build();
    }

    /**
     * Two Layover instances (a pool of their own each) and an enqueuing client, all through one
     * transaction-pooling PgBouncer with the documented settings, run 2,000 jobs: each runs once,
     * none is left or parked. A job rate limited on its first run is rescheduled without spending
     * an attempt, and its provider key's cooldown is written: the fleet-wide provider state works
     * through the pooler.
     */
    @Test
    void jobsRunOnceThroughTransactionPoolingWithNotificationsOff(TestDatabase db) throws Exception {
        int jobs = 2000;
        try (PgBouncer tx = bouncer(db, PoolMode.TRANSACTION, 10)) {
            String url = tx.jdbcUrl(db.name()) + NO_SERVER_PREPARE;
            Map<String, Integer> runs = new ConcurrentHashMap<>();
            Map<String, String> ranOn = new ConcurrentHashMap<>();
            List<HikariDataSource> pools = new ArrayList<>();
            List<Layover> workers = new ArrayList<>();
            try {
                for (String name : List.of("bounced-a", "bounced-b", "bounced-client")) {
                    HikariConfig cfg = new HikariConfig();
                    cfg.setJdbcUrl(url);
                    cfg.setMaximumPoolSize(14);
                    cfg.setPoolName(name);
                    pools.add(new HikariDataSource(cfg));
                }
                for (int i = 0; i < 2; i++) {
                    String worker = i == 0 ? "bounced-a" : "bounced-b";
                    workers.add(Layover.builder(pools.get(i)).register(plainJob(runs, ranOn, worker), limitedJob(runs))
                            .migrate(false).workerName(worker).threads(4).pollInterval(Duration.ofMillis(50))
                            .notifications(false).start());
                }
                JobType<WorkerMain.Item> plain = plainJob(runs, ranOn, "client");
                JobType<WorkerMain.Item> limited = limitedJob(runs);
                Layover client = Layover.builder(pools.get(2)).register(plain, limited).migrate(false)
                        .notifications(false).build();
                List<WorkerMain.Item> items = new ArrayList<>();
                for (int i = 0; i < jobs; i++) {
                    items.add(new WorkerMain.Item(i));
                }
                client.enqueueBatch(plain, items.subList(0, jobs / 2));
                for (WorkerMain.Item item : items.subList(jobs / 2, jobs)) {
                    client.enqueue(plain, item);
                }
                String limitedId = client.enqueue(limited, new WorkerMain.Item(-1)).id();

                Await.equal(Duration.ofSeconds(120), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
                long ranTwice = runs.entrySet().stream().filter(e -> !e.getKey().equals(limitedId) && e.getValue() > 1).count();
                Map<String, Object> history = db.row("select attempts, reschedules, outcome from layover.job_history"
                        + " where job_id = ?", limitedId);
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("pgbouncer", tx.version() + ", pool_mode = transaction, default_pool_size = 10");
                f.put("jobs", jobs + " + 1 rate limited once");
                f.put("distinct jobs run", runs.size());
                f.put("jobs run more than once", ranTwice);
                f.put("runs per worker", Map.of("bounced-a", ranOn.values().stream().filter("bounced-a"::equals).count(),
                        "bounced-b", ranOn.values().stream().filter("bounced-b"::equals).count()));
                f.put("rate-limited job: runs, history", runs.get(limitedId) + ", " + history);
                f.put("cooldown of its key", db.rows("select provider_key, reason from layover.cooldowns"));
                f.put("dead letters", db.count("select count(*) from layover.dead_letters"));
                Reliability.report("scenario 4: behind PgBouncer, transaction pooling, notifications off", f);

                assertEquals(jobs + 1, runs.size(), "every job ran");
                assertEquals(0, ranTwice, "none ran twice");
                assertEquals(0, db.count("select count(*) from layover.dead_letters"), "nothing parked");
                assertEquals(2, runs.get(limitedId), "the rate-limited job ran again");
                assertEquals(0, ((Number) history.get("attempts")).intValue(), "no attempt spent on the rate limit");
                assertEquals(1, ((Number) history.get("reschedules")).intValue(), "rescheduled once");
                assertEquals("completed", history.get("outcome"));
                assertNotNull(db.rows("select 1 from layover.cooldowns where provider_key = 'bounced:provider'"
                        + " and reason = 'rate_limited'").stream().findFirst().orElse(null), "the key's cooldown was written");
                assertTrue(ranOn.containsValue("bounced-a") && ranOn.containsValue("bounced-b"), "both workers ran jobs");
            } finally {
                workers.forEach(Layover::stop);
                pools.forEach(HikariDataSource::close);
            }
        }
    }
}
