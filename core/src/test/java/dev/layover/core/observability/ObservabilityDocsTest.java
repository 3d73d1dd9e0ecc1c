package dev.layover.core.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docs/observability.md: every SQL query runs and finds the rows it promises; every meter is listed. */
@DatabaseTest
class ObservabilityDocsTest {

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern METER = Pattern.compile("\"(layover\\.[a-z_.]+)\"");

    private static String doc() throws Exception {
        return Files.readString(Path.of("..", "docs", "observability.md"));
    }

    static List<String> queries() throws Exception {
        List<String> out = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(doc());
        while (m.find()) {
            out.add(m.group(1).strip());
        }
        return out;
    }

    @Test
    void everyDocumentedQueryRunsAndFindsTheSeededRows(TestDatabase db) throws Exception {
        Layover.builder(db.dataSource()).build(); // migrates
        String trail = """
                [{"at": "2026-01-01T10:00:00Z", "attempt": 1, "key": "openai:gpt-4o", "result": "rate_limited",
                  "detail": "429", "wait_ms": 20000},
                 {"at": "2026-01-01T10:00:00.1Z", "attempt": 1, "key": "anthropic:claude", "result": "answered",
                  "detail": null, "wait_ms": null}]""";
        db.update("""
                insert into layover.job_history (job_type, job_id, outcome, attempts, reschedules, provider_key, worker,
                    enqueued_at, started_at, finished_at, duration_ms, provider_trail)
                values ('translate', 'doc-42', 'completed', 0, 2, 'openai:gpt-4o', 'host#1',
                        now() - interval '10 minutes', now() - interval '5 minutes', now() - interval '5 minutes',
                        120.5, ?::jsonb)""", trail);
        db.update("""
                insert into layover.job_history (job_type, job_id, outcome, failure_type, detail, attempts, worker,
                    enqueued_at, started_at, finished_at, duration_ms, dead_letter_id)
                values ('translate', 'doc-7', 'parked', 'provider_unavailable', '529 overloaded', 3, 'host#1',
                        now() - interval '20 minutes', now() - interval '2 minutes', now() - interval '2 minutes',
                        40, 1)""");
        db.update("""
                insert into layover.dead_letters (job_type, job_id, args, failure_type, attempts, first_enqueued_at,
                    provider_trail)
                values ('translate', 'doc-7', '{"doc": 7}', 'provider_unavailable', 3, now() - interval '20 minutes',
                        ?::jsonb)""", trail);

        db.update("""
                update layover.dead_letters set errors = '[{"attempt": 1, "kind": "error", "error_class": "X",
                    "message": "m", "stack_trace": "java.lang.IllegalStateException: m\\n\\tat a.B.c(B.java:1)"}]'::jsonb
                where job_id = 'doc-7'""");
        // a flush's counts and its sample of the depth, with the sample's marker
        db.value("SELECT layover.time_series_add(ARRAY['translate', 'translate', 'translate', ''],"
                + " ARRAY['openai:gpt-4o', 'openai:gpt-4o', 'openai:gpt-4o', ''], ARRAY['rate_limited', 'completed', 'due', 'sampled'],"
                + " ARRAY['', '', '', ''], ARRAY[3, 40, 7, 1]::bigint[])");
        // the tokens runs reported, one key priced and one not
        db.value("SELECT layover.time_series_add(ARRAY['translate', 'translate', 'translate', 'translate'],"
                + " ARRAY['openai:gpt-4o', 'openai:gpt-4o', 'openai:gpt-4o', 'openai:gpt-unknown'],"
                + " ARRAY['input_tokens', 'output_tokens', 'cached_input_tokens', 'input_tokens'],"
                + " ARRAY['tenant:42', 'tenant:42', 'tenant:42', ''], ARRAY[1000, 200, 100, 50]::bigint[])");
        db.update("insert into layover.model_prices (model, currency, input_per_million, output_per_million, configured_by)"
                + " values ('gpt-4o', 'USD', 2.5, 10, 'docs')");

        db.update("""
                insert into layover.workers (worker_name, host, threads, version, limits)
                values ('host#1', 'host', 10, '0.1.0',
                        '{"openai:gpt-4o": {"requests_per_minute": 300, "applied_at": "2026-01-01T10:00:01Z"}}')""");

        List<String> queries = queries();
        assertEquals(15, queries.size(), "the documented queries");
        for (String q : queries) {
            assertFalse(db.rows(q).isEmpty(), "the seeded data answers this documented query:\n" + q);
        }
        Map<String, Object> ran = db.rows(queries.get(0)).get(0);
        assertEquals("completed", ran.get("outcome"));
        assertEquals(2, ran.get("reschedules"));
        assertEquals(2, db.rows(queries.get(1)).size(), "completed and parked");
        assertEquals(1, db.rows(queries.get(2)).size());
        List<Map<String, Object>> endpoints = db.rows(queries.get(3));
        assertEquals("anthropic:claude", endpoints.get(0).get("endpoint"));
        assertEquals("answered", endpoints.get(0).get("result"));
        assertEquals("rate_limited", endpoints.get(1).get("result"));
        List<Map<String, Object>> lines = db.rows(queries.get(4));
        assertEquals(2, lines.size());
        assertEquals(20000L, lines.get(0).get("wait_ms"));
        assertTrue(((String) db.rows(queries.get(5)).get(0).get("stack_trace")).startsWith("java.lang.IllegalStateException"));
        assertEquals(3L, ((Number) db.rows(queries.get(6)).get(0).get("rate_limited")).longValue());
        assertEquals(6, db.rows(queries.get(7)).size(),
                "completed, rate_limited and the 4 token counts, not the gauge nor the marker");
        assertEquals(7L, ((Number) db.rows(queries.get(8)).get(0).get("due")).longValue());
        List<Map<String, Object>> depth = db.rows(queries.get(9));
        assertEquals(1, depth.size(), "the last sample's gauges: " + depth);
        assertEquals(7L, ((Number) depth.get(0).get("amount")).longValue());
        assertEquals("2026-01-01T10:00:01Z", db.rows(queries.get(10)).get(0).get("applies_gpt4o_limit_since"), "the workers");
        Map<String, Object> tenant = db.rows(queries.get(11)).get(0);
        assertEquals("tenant:42", tenant.get("tenant"));
        // (1000 - 100) x 2.5 + 100 x 2.5 + 200 x 10, per million
        assertEquals(0, new java.math.BigDecimal("0.0045").compareTo((java.math.BigDecimal) tenant.get("cost")));
        assertEquals(false, db.rows(queries.get(12)).get(0).get("all_priced"), "gpt-unknown has no price");
        assertEquals("gpt-unknown", db.rows(queries.get(13)).get(0).get("model"));
        assertEquals(1000L, ((Number) db.rows(queries.get(14)).get(0).get("input_tokens")).longValue());
    }

    @Test
    void everyMeterIsDocumented() throws Exception {
        String source = Files.readString(Path.of("src", "main", "java", "dev", "layover", "core", "metrics",
                "MicrometerMetrics.java"));
        Set<String> meters = new TreeSet<>();
        Matcher m = METER.matcher(source);
        while (m.find()) {
            meters.add(m.group(1));
        }
        assertTrue(meters.size() >= 17, "meters: " + meters);
        String doc = doc();
        for (String meter : meters) {
            assertTrue(doc.contains("| `" + meter + "` |"), meter + " is in the table of docs/observability.md");
        }
    }
}
