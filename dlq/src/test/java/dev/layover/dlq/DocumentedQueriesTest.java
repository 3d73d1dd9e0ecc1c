package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Every SQL example of docs/dead-letters.md runs, and the headline one answers correctly. */
@DatabaseTest
class DocumentedQueriesTest {

    private static final Path DOC = Path.of("..", "docs", "dead-letters.md");

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    static List<String> sqlBlocks() throws IOException {
        Matcher m = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL).matcher(Files.readString(DOC));
        List<String> out = new ArrayList<>();
        while (m.find()) {
            out.add(m.group(1).trim().replaceAll(";$", ""));
        }
        return out;
    }

    @Test
    void everyDocumentedQueryRunsOnARealDatabaseWithData(TestDatabase db) throws IOException {
        JobType<Work> work = Fixtures.work();
        layover = Fixtures.layover(db, work).build();
        DeadLetters store = DeadLetters.create(layover);
        Fixtures.insertMany(db, 20, "a", "openai:gpt-4o", "provider_unavailable", "parked");
        Fixtures.insertMany(db, 5, "b", "anthropic:claude", "rejected", "parked");
        long id = Fixtures.deadLetter("c").state("review").insert(db);
        store.replay(id, ReplayOptions.by("alice").runAt(java.time.Instant.now().plusSeconds(3600)));
        db.update("update layover.dead_letters set park_count = 2 where id = ?", id);
        store.discard(Selection.matching(DeadLetterFilter.all().withFailureTypes("rejected")), ActionOptions.by("bob"));

        List<String> queries = sqlBlocks();
        assertTrue(queries.size() >= 7, "found " + queries.size() + " queries in " + DOC);
        for (String sql : queries) {
            List<Map<String, Object>> rows = db.rows(sql);
            assertFalse(rows.isEmpty(), "no rows from:\n" + sql);
        }

        List<Map<String, Object>> lastHour = db.rows(queries.get(0));
        assertEquals(1, lastHour.size());
        assertEquals("provider_unavailable", lastHour.get(0).get("failure_type"));
        assertEquals(20L, lastHour.get(0).get("parked"));
    }
}
