package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.TenantTask;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Every SQL query of docs/admission-and-control.md runs against the real schema and finds the state it describes. */
@DatabaseTest
class AdmissionDocSqlTest {

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyDocumentedQueryRunsAndFindsTheSeededState(TestDatabase db) throws Exception {
        JobType<TenantTask> chat = JobType.builder("chat", TenantTask.class)
                .providerKey("openai:gpt-4o")
                .limitKeys(a -> List.of("tenant:" + a.tenant()))
                .handler((a, ctx) -> Outcome.done())
                .build();
        Layover layover = Layover.builder(db.dataSource()).register(chat).build(); // runs nothing
        layover.enqueue(chat, new TenantTask("42", "held by a pause"));
        layover.control().pauseKey("tenant:42", "alice", "over budget");
        layover.enqueue(chat, new TenantTask("7", "due soon"), EnqueueOptions.now().withDeadline(Duration.ofMinutes(5)));
        String cancelled = layover.enqueue(chat, new TenantTask("7", "to cancel")).id();
        layover.control().cancel("chat", cancelled, "bob", "duplicate");
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by, "
                + "last_heartbeat, version, consecutive_failures, provider_key, cancel_requested_at, cancel_requested_by) "
                + "values ('chat', 'running', now(), true, 'w1', now(), 2, 0, 'openai:gpt-4o', now(), 'carol')");
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by, "
                + "last_heartbeat, version, consecutive_failures, provider_key) values "
                + "('chat', 'running-too', now(), true, 'w1', now(), 2, 0, 'openai:gpt-4o')");
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version, "
                + "consecutive_failures, provider_key) values ('chat', 'waiting', now(), false, 1, 0, 'openai:gpt-4o')");
        db.execute("select layover.configure_concurrency('openai:gpt-4o', 2, 'w1')");
        db.update("insert into layover.cooldowns (provider_key, until, reason, detail, started_at, updated_at) "
                + "values ('openai#team-a', now() + interval '1 minute', 'quota_exhausted', 'daily limit', now(), now())");

        String doc = Files.readString(Path.of("..", "docs", "admission-and-control.md"));
        List<String> queries = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(doc);
        while (m.find()) {
            queries.add(m.group(1).strip());
        }
        assertEquals(9, queries.size(), "the documented queries");
        for (String q : queries) {
            List<Map<String, Object>> rows = db.rows(q.endsWith(";") ? q.substring(0, q.length() - 1) : q);
            assertFalse(rows.isEmpty(), "no row for:\n" + q);
        }
        assertEquals(2L, db.value("select in_flight from layover.concurrency"));
    }
}
