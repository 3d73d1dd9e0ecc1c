package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.layover.core.outcome.Outcome;
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

/** docs/enqueue-from-sql.md: every SQL block runs, in order, against a worker's registered type. */
@DatabaseTest
class EnqueueFromSqlDocTest {

    record Translate(String docId, String text, String tenant, String model) {}

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyDocumentedQueryRuns(TestDatabase db) throws Exception {
        JobType<Translate> translate = JobType.builder("translate", Translate.class)
                .providerKey(t -> "openai:" + t.model())
                .fairnessKey(t -> "tenant:" + t.tenant())
                .handler((t, ctx) -> Outcome.done())
                .build();
        Layover.builder(db.dataSource()).register(translate).start().stop(); // its worker registers the type

        List<String> queries = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(Files.readString(Path.of("..", "docs", "enqueue-from-sql.md")));
        while (m.find()) {
            queries.add(m.group(1).strip());
        }
        assertEquals(4, queries.size(), "the documented queries");
        List<List<Map<String, Object>>> results = new ArrayList<>();
        for (String q : queries) {
            List<Map<String, Object>> rows = db.rows(q);
            assertFalse(rows.isEmpty(), "the documented query answers:\n" + q);
            results.add(rows);
        }
        assertEquals(true, results.get(0).get(0).get("created"));
        assertEquals("translate", results.get(1).get(0).get("job_type"));
        assertEquals(true, results.get(1).get(0).get("provider_key_from_args"));
        assertEquals("doc-43", results.get(2).get(0).get("job_id"));
        Map<String, Object> job = results.get(3).get(0);
        assertEquals("scheduled", job.get("state"));
        assertEquals("openai:gpt-4o", job.get("provider_key"));
        assertEquals("{800,400}", db.value("select token_estimate[2:3]::text from layover.scheduled_tasks "
                + "where task_instance = 'doc-43'"));
    }
}
