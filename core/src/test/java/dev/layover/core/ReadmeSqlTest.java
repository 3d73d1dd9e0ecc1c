package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Every SQL query in the README runs against the real schema and finds the rows it promises. */
@DatabaseTest
class ReadmeSqlTest {

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);

    static List<String> readmeQueries() throws Exception {
        Path readme = Path.of("..", "README.md");
        List<String> out = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(Files.readString(readme));
        while (m.find()) {
            out.add(m.group(1).strip());
        }
        return out;
    }

    @Test
    void everyReadmeQueryRunsAndFindsTheSeededRows(TestDatabase db) throws Exception {
        // one job for each state the queries look for, and a fresh dead letter
        db.execute("""
                insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,
                    version, consecutive_failures, provider_key, reschedules, last_reschedule_reason,
                    last_reschedule_detail, last_rescheduled_at)
                values ('translate', 'waiting-on-openai', convert_to('{"doc":1}', 'UTF8'), now() + interval '20 seconds',
                        false, 3, 0, 'openai:gpt-4o-mini', 2, 'rate_limited', '429 retry-after: 20', now());
                insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,
                    version, consecutive_failures, provider_key, last_failure, errors)
                values ('translate', 'failing', convert_to('{"doc":2}', 'UTF8'), now() + interval '5 seconds', false, 2, 1,
                        'openai:gpt-4o-mini', now(),
                        '[{"attempt":1,"at":"2026-01-01T00:00:00Z","kind":"transient","error_class":"java.net.SocketTimeoutException","message":"Read timed out"}]');
                insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,
                    picked_by, last_heartbeat, version)
                values ('translate', 'stuck', convert_to('{"doc":3}', 'UTF8'), now() - interval '2 minutes', true,
                        'dead-worker#1', now() - interval '1 minute', 4);
                insert into layover.dead_letters (job_type, job_id, args, failure_type, attempts, first_enqueued_at)
                values ('translate', 'parked-1', '{"doc":4}', 'provider_unavailable', 10, now() - interval '1 day');
                insert into layover.workers (worker_name, host, threads, version) values ('dead-worker#1', 'host-1', 8, '0.1.0');
                """);
        List<String> queries = readmeQueries();
        assertTrue(queries.size() >= 5, "the README documents its queries: " + queries.size());
        for (String q : queries) {
            List<Map<String, Object>> rows = db.rows(q);
            assertFalse(rows.isEmpty(), "the seeded data answers this README query:\n" + q);
        }
        assertEquals(List.of("failing", "waiting-on-openai"),
                db.rows(queries.get(0)).stream().map(r -> r.get("id")).toList(), "ordered by run_at");
        assertEquals("rate_limited", db.rows(queries.get(0)).get(1).get("reschedule_reason"));
        assertEquals("failing", db.rows(queries.get(2)).get(0).get("id"));
        assertEquals("Read timed out", db.rows(queries.get(2)).get(0).get("message"));
        assertEquals("provider_unavailable", db.rows(queries.get(3)).get(0).get("failure_type"));
        assertEquals("stuck", db.rows(queries.get(4)).get(0).get("id"));
        assertEquals(1L, ((Number) db.rows(queries.get(5)).get(0).get("running")).longValue(), "the worker's running job");
    }
}
