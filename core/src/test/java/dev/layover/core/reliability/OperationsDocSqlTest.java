package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;

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

/** The SQL of docs/operations.md runs against the real schema and finds the state it describes. */
@DatabaseTest
class OperationsDocSqlTest {

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);

    @Test
    void theStuckJobsQueryListsRunningJobsOnly(TestDatabase db) throws Exception {
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by, "
                + "last_heartbeat, version, consecutive_failures) values ('rel', 'stuck', now() - interval '1 hour', true, "
                + "'worker-a', now(), 2, 0), ('rel', 'waiting', now(), false, null, null, 1, 0)");
        String doc = Files.readString(Path.of("..", "docs", "operations.md"));
        List<String> queries = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(doc);
        while (m.find()) {
            queries.add(m.group(1).strip());
        }
        assertEquals(1, queries.size(), "the documented queries");
        String q = queries.get(0);
        List<Map<String, Object>> rows = db.rows(q.substring(0, q.length() - 1));
        assertEquals(1, rows.size(), "one running job");
        assertEquals("stuck", rows.get(0).get("id"));
        assertEquals("worker-a", rows.get(0).get("picked_by"));
    }
}
