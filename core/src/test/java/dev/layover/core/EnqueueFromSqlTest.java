package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.File;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code layover.enqueue}: a job enqueued from SQL (over JDBC with every option, and through
 * {@code psql}) is the row the Java enqueue writes and runs exactly like it; what SQL can check is
 * refused with an error that names the problem, writing nothing (docs/enqueue-from-sql.md).
 */
@DatabaseTest
class EnqueueFromSqlTest {

    record Translate(String docId, String text, String tenant, String model) {}

    record Note(String text) {}

    private static final Duration WAIT = Duration.ofSeconds(20);

    private final Map<String, String> ran = new ConcurrentHashMap<>();

    private final JobType<Translate> translate = JobType.builder("sql-translate", Translate.class)
            .providerKey(a -> "openai:" + a.model())
            .fairnessKey(a -> "tenant:" + a.tenant())
            .limitKeys(a -> List.of("tenant:" + a.tenant()))
            .tokenEstimate(a -> TokenEstimate.of(10, 20))
            .handler((args, ctx) -> {
                ran.put(ctx.jobId(), args + " on " + ctx.providerKey() + " attempt " + ctx.attempt());
                return Outcome.done();
            })
            .build();

    private final JobType<Note> fixed = JobType.builder("sql-fixed", Note.class).providerKey("fixed:key")
            .handler((args, ctx) -> Outcome.done()).build();

    private final JobType<Note> keyless = JobType.builder("sql-keyless", Note.class)
            .handler((args, ctx) -> Outcome.done()).build();

    @SuppressWarnings("rawtypes")
    private final JobType<Map> mapped = JobType.builder("sql-map", Map.class)
            .handler((args, ctx) -> {
                ran.put(ctx.jobId(), String.valueOf(args));
                return Outcome.done();
            }).build();

    private Layover.Builder builder(TestDatabase db) {
        return Layover.builder(db.dataSource()).register(translate, fixed, keyless, mapped).threads(2)
                .pollInterval(Duration.ofMillis(50)).shutdownMaxWait(Duration.ofSeconds(5)).maxArgsBytes(200);
    }

    /** Starts and stops an instance: its workers register their job types. */
    private Layover registered(TestDatabase db) {
        Layover layover = builder(db).start();
        layover.stop();
        return builder(db).build();
    }

    private static final String CALL = """
            SELECT job_id, created FROM layover.enqueue(?, ?::jsonb, run_at => ?, key => ?, priority => ?,
                deadline => ?, provider_key => ?, fairness_key => ?, limit_keys => ?::text[], input_tokens => ?,
                output_tokens => ?, traceparent => ?, tracestate => ?)""";

    private static Object[] sqlEnqueue(TestDatabase db, String sql, Object... params) throws SQLException {
        try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Object[] {rs.getString(1), rs.getBoolean(2)};
            }
        }
    }

    /** Every column of a job row but its id and enqueue time, and its args as jsonb. */
    private static Map<String, Object> row(TestDatabase db, String id) {
        return db.row("select (to_jsonb(t) - 'task_instance' - 'first_enqueued_at' - 'task_data' - 'fair_tag' "
                + "- 'trace_context')::text as cols, layover.args_jsonb(t.task_data)::text as args, "
                + "t.fair_tag, t.trace_context::text as trace from layover.scheduled_tasks t where t.task_instance = ?", id);
    }

    @Test
    void workersRecordTheirJobTypes(TestDatabase db) throws SQLException {
        registered(db).close();
        Map<String, Object> t = db.row("select * from layover.job_types where job_type = 'sql-translate'");
        assertArrayEquals(new String[] {"docId", "model", "tenant", "text"},
                (String[]) ((java.sql.Array) t.get("args_properties")).getArray());
        assertEquals(true, t.get("provider_key_from_args"));
        assertEquals(true, t.get("fairness_key_from_args"));
        assertEquals(true, t.get("limit_keys_from_args"));
        assertEquals(null, t.get("provider_key"));
        assertEquals(200, t.get("max_args_bytes"));
        Map<String, Object> f = db.row("select * from layover.job_types where job_type = 'sql-fixed'");
        assertEquals("fixed:key", f.get("provider_key"));
        assertEquals(false, f.get("provider_key_from_args"));
        assertEquals(false, f.get("fairness_key_from_args"));
    }

    @Test
    void everyOptionWritesTheRowTheJavaEnqueueWritesAndTheJobRunsTheSame(TestDatabase db) throws Exception {
        Instant runAt = Instant.now().plus(1, ChronoUnit.DAYS).truncatedTo(ChronoUnit.MILLIS);
        Instant deadline = runAt.plus(1, ChronoUnit.HOURS);
        Translate args = new Translate("d-1", "Hello", "acme", "gpt-4o");
        try (Layover layover = registered(db)) {
            layover.enqueue(translate, args, EnqueueOptions.at(runAt).withKey("java-1").withPriority(5)
                    .withDeadline(deadline));
            Object[] r = sqlEnqueue(db, CALL, "sql-translate",
                    "{\"docId\": \"d-1\", \"text\": \"Hello\", \"tenant\": \"acme\", \"model\": \"gpt-4o\"}",
                    OffsetDateTime.ofInstant(runAt, ZoneOffset.UTC), "sql-1", 5, OffsetDateTime.ofInstant(deadline,
                            ZoneOffset.UTC), "openai:gpt-4o", "tenant:acme", "{tenant:acme}", 10L, 20L,
                    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=x");
            assertEquals("sql-1", r[0]);
            assertEquals(true, r[1]);
            Map<String, Object> java = row(db, "java-1");
            Map<String, Object> sql = row(db, "sql-1");
            assertEquals(java.get("cols"), sql.get("cols"), "every column a Java enqueue writes");
            assertEquals(java.get("args"), sql.get("args"), "the same args");
            assertEquals(null, java.get("fair_tag"), "not due: no tag");
            assertEquals(null, sql.get("fair_tag"));
            assertEquals("{\"tracestate\": \"vendor=x\", \"traceparent\": \"00-0af7651916cd43dd8448eb211c80319c-"
                    + "b7ad6b7169203331-01\"}", sql.get("trace"));

            // enqueued due now, both get their tag in the tenant's fair queue, one after the other
            layover.enqueue(translate, args, EnqueueOptions.key("java-2"));
            sqlEnqueue(db, "select * from layover.enqueue('sql-translate', ?::jsonb, key => 'sql-2', "
                    + "provider_key => 'openai:gpt-4o', fairness_key => 'tenant:acme', limit_keys => '{tenant:acme}', "
                    + "input_tokens => 10, output_tokens => 20)",
                    "{\"docId\": \"d-1\", \"text\": \"Hello\", \"tenant\": \"acme\", \"model\": \"gpt-4o\"}");
            double javaTag = ((Number) row(db, "java-2").get("fair_tag")).doubleValue();
            double sqlTag = ((Number) row(db, "sql-2").get("fair_tag")).doubleValue();
            assertTrue(sqlTag > javaTag, "the SQL job is tagged after the Java one in the same flow: " + javaTag + " "
                    + sqlTag);
            Object[] again = sqlEnqueue(db, "select * from layover.enqueue('sql-translate', ?::jsonb, key => 'sql-2', "
                    + "provider_key => 'openai:gpt-4o', fairness_key => 'tenant:acme', limit_keys => '{tenant:acme}')",
                    "{\"docId\": \"d-1\"}");
            assertEquals(false, again[1], "the idempotency key names a live job: nothing written");
        }
        try (Layover layover = builder(db).start()) {
            Await.until(WAIT, "both due jobs ran", () -> ran.containsKey("java-2") && ran.containsKey("sql-2"));
            assertEquals(ran.get("java-2"), ran.get("sql-2"), "read and run exactly alike");
            assertEquals("Translate[docId=d-1, text=Hello, tenant=acme, model=gpt-4o] on openai:gpt-4o attempt 1",
                    ran.get("sql-2"));
            Await.equal(WAIT, "history rows", 2L, () -> db.count("select count(*) from layover.job_history "
                    + "where job_id in ('java-2', 'sql-2') and outcome = 'completed' and provider_key = 'openai:gpt-4o'"));
        }
    }

    @Test
    void withoutAKeyTheIdIsATimeOrderedUuidAndTheFixedProviderKeyIsTheTypes(TestDatabase db) throws Exception {
        try (Layover layover = registered(db)) {
            Object[] r = sqlEnqueue(db, "select * from layover.enqueue('sql-fixed', '{\"text\": \"x\"}')");
            String id = (String) r[0];
            assertTrue(id.matches("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"), id);
            long ms = Long.parseLong(id.replace("-", "").substring(0, 12), 16);
            assertTrue(Math.abs(ms - System.currentTimeMillis()) < 60_000, "the UUID's time is the enqueue's: " + ms);
            assertEquals("fixed:key", row(db, id).get("cols").toString().replaceAll(".*\"provider_key\": \"([^\"]*)\".*", "$1"));
            Enqueued java = layover.enqueue(fixed, new Note("x"));
            assertEquals(db.value("select token_estimate::text from layover.scheduled_tasks where task_instance = ?",
                    java.id()), db.value("select token_estimate::text from layover.scheduled_tasks where task_instance = ?",
                    id));
        }
    }

    @Test
    void psqlEnqueuesAJobThatRuns(TestDatabase db) throws Exception {
        String psql = onPath("psql");
        assumeTrue(psql != null || "true".equals(System.getenv("CI")), "psql is not on the PATH");
        assertNotNull(psql, "CI has psql");
        registered(db).close();
        URI u = URI.create(db.jdbcUrl().substring("jdbc:".length()));
        Map<String, String> q = new java.util.HashMap<>();
        for (String kv : u.getQuery().split("&")) {
            q.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        String url = "postgresql://" + q.get("user") + (q.containsKey("password") ? ":" + q.get("password") : "") + "@"
                + u.getHost() + ":" + u.getPort() + u.getPath();
        Process p = new ProcessBuilder(psql, url, "-v", "ON_ERROR_STOP=1", "-tA", "-c",
                "SELECT job_id, created FROM layover.enqueue('sql-translate', '{\"docId\": \"p-1\", \"text\": \"Hi\", "
                        + "\"tenant\": \"t1\", \"model\": \"gpt-4o-mini\"}', key => 'from-psql', "
                        + "provider_key => 'openai:gpt-4o-mini', fairness_key => 'tenant:t1', limit_keys => '{tenant:t1}')")
                .redirectErrorStream(true).start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "psql ended");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, p.exitValue(), out);
        assertEquals("from-psql|t", out);
        try (Layover layover = builder(db).start()) {
            Await.until(WAIT, "the psql job ran", () -> ran.containsKey("from-psql"));
            assertEquals("Translate[docId=p-1, text=Hi, tenant=t1, model=gpt-4o-mini] on openai:gpt-4o-mini attempt 1",
                    ran.get("from-psql"));
        }
    }

    @Test
    void aMapArgsTypeTakesAnyProperty(TestDatabase db) throws Exception {
        registered(db).close();
        assertEquals(null, db.value("select args_properties from layover.job_types where job_type = 'sql-map'"));
        sqlEnqueue(db, "select * from layover.enqueue('sql-map', '{\"anything\": 1}', key => 'm-1')");
        try (Layover layover = builder(db).start()) {
            Await.until(WAIT, "the map job ran", () -> ran.containsKey("m-1"));
            assertEquals("{anything=1}", ran.get("m-1"));
        }
    }

    private static String onPath(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            File f = new File(dir, name);
            if (f.canExecute()) {
                return f.getPath();
            }
        }
        return null;
    }

    /** Each refusal names its problem, and nothing is written. */
    @Test
    void whatSqlCanCheckIsRefusedClearly(TestDatabase db) {
        registered(db).close();
        String doc = "'{\"docId\": \"d\", \"text\": \"t\", \"tenant\": \"a\", \"model\": \"m\"}'";
        String keys = ", provider_key => 'openai:m', fairness_key => 'tenant:a', limit_keys => '{tenant:a}'";
        Map<String, String> refused = new java.util.LinkedHashMap<>();
        refused.put("select * from layover.enqueue('no-such-type', '{}')", "unknown job type 'no-such-type'");
        refused.put("select * from layover.enqueue('sql-translate', '[1, 2]'" + keys + ")", "must be a JSON object, got array");
        refused.put("select * from layover.enqueue('sql-translate', '\"text\"'" + keys + ")", "must be a JSON object, got string");
        refused.put("select * from layover.enqueue('sql-translate', '{\"docid\": \"d\"}'" + keys + ")",
                "name properties its args type does not declare: docid (it declares: docId, model, tenant, text)");
        refused.put("select * from layover.enqueue('sql-translate', " + doc + ")",
                "computes its provider key in Java from its args; pass provider_key");
        refused.put("select * from layover.enqueue('sql-translate', " + doc + ", provider_key => 'openai:m')",
                "computes its fairness key in Java from its args; pass fairness_key");
        refused.put("select * from layover.enqueue('sql-translate', " + doc
                + ", provider_key => 'openai:m', fairness_key => 'tenant:a')",
                "computes its limit keys in Java from its args; pass limit_keys");
        refused.put("select * from layover.enqueue('sql-fixed', '{\"text\": \"x\"}', provider_key => 'other:key')",
                "has the fixed provider key 'fixed:key'; got 'other:key'");
        refused.put("select * from layover.enqueue('sql-keyless', '{\"text\": \"x\"}', provider_key => 'some:key')",
                "has no provider key; got 'some:key'");
        refused.put("select * from layover.enqueue('sql-keyless', '{\"text\": \"x\"}', fairness_key => 'tenant:a')",
                "has no fairness key");
        refused.put("select * from layover.enqueue('sql-keyless', '{\"text\": \"x\"}', tokens => 100)",
                "a token estimate reserves tokens of a provider key's limits");
        refused.put("select * from layover.enqueue('sql-fixed', '{\"text\": \"x\"}', input_tokens => -1)",
                "token counts must be 0 to 10^9");
        refused.put("select * from layover.enqueue('sql-fixed', '{\"text\": \"" + "x".repeat(300) + "\"}')",
                "bytes as JSON, over the cap of 200 bytes");
        refused.put("select * from layover.enqueue('sql-fixed', '{\"text\": \"x\"}', key => '')",
                "an idempotency key must be 1-200 characters");
        refused.put("select * from layover.enqueue('sql-fixed', '{\"text\": \"x\"}', priority => 40000)",
                "priority must fit a smallint");
        refused.put("select * from layover.enqueue('sql-fixed', '{\"text\": \"x\"}', traceparent => '00-abc-def-01')",
                "malformed traceparent '00-abc-def-01'");
        refused.put("select * from layover.enqueue('sql-fixed', '{\"text\": \"x\"}', tracestate => 'a=b')",
                "a tracestate needs its traceparent");
        for (Map.Entry<String, String> e : refused.entrySet()) {
            SQLException ex = assertThrows(SQLException.class, () -> sqlEnqueue(db, e.getKey()), e.getKey());
            assertEquals("22023", ex.getSQLState(), ex.getMessage());
            assertTrue(ex.getMessage().contains(e.getValue()), "expected «" + e.getValue() + "» in: " + ex.getMessage());
        }
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where task_name like 'sql-%'"),
                "nothing was written");
        assertFalse(refused.isEmpty());
    }
}
