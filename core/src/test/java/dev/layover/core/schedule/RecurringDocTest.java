package dev.layover.core.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Every SQL query of docs/recurring.md runs against the real schema and finds the rows it promises. */
@DatabaseTest
class RecurringDocTest {

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyQueryOfTheRecurringPageRunsAndFindsItsRows(TestDatabase db) throws Exception {
        db.execute("""
                insert into layover.schedules (tenant, name, job_type, cron, zone, args, next_at, due_at, source,
                    last_at, last_job_id, last_outcome)
                values ('', 'nightly-digest', 'digest', '30 2 * * *', 'Europe/Berlin', '{}',
                        now() + interval '10 minutes', now() + interval '10 minutes', 'code',
                        now() - interval '1 day', 'sched:/nightly-digest@2026-12-06T01:30:00Z', 'enqueued');
                insert into layover.schedules (tenant, name, job_type, every_ms, args, next_at, due_at, source,
                    last_outcome)
                values ('acme', 'sync', 'sync', 60000, '{}', now() + interval '2 hours', now() + interval '2 hours',
                        'api', 'skipped_overlap');
                insert into layover.dead_letters (job_type, job_id, args, failure_type, first_enqueued_at)
                values ('digest', 'sched:/nightly-digest@2026-12-06T01:30:00Z', '{}', 'provider_unavailable', now());
                insert into layover.job_history (job_type, job_id, outcome, enqueued_at)
                values ('digest', 'sched:/nightly-digest@2026-12-05T01:30:00Z', 'completed', now() - interval '2 days');
                """);
        List<String> queries = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(Files.readString(Path.of("..", "docs", "recurring.md")));
        while (m.find()) {
            queries.add(m.group(1).strip());
        }
        assertEquals(3, queries.size(), "the page's queries");
        for (String q : queries) {
            assertFalse(db.rows(q).isEmpty(), "no rows for:\n" + q);
        }
        assertEquals(List.of("nightly-digest"), db.rows(queries.get(0)).stream().map(r -> r.get("name")).toList());
        assertEquals(2, db.rows(queries.get(1)).size(), "the parked last occurrence and the skipped one");
        assertEquals("parked", db.value("select last_job_state from layover.schedules_view where name = 'nightly-digest'"));
    }
}
