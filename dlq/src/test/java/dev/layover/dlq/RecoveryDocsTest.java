package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The SQL of the "Recovery sweep and trial" section of docs/dead-letters.md, after a real sweep. */
@DatabaseTest
class RecoveryDocsTest {

    private static final Path DOC = Path.of("..", "docs", "dead-letters.md");

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    static List<String> recoveryQueries() throws IOException {
        String doc = Files.readString(DOC);
        int at = doc.indexOf("\n## Recovery sweep and trial");
        assertTrue(at > 0, "the section is in " + DOC);
        int end = doc.indexOf("\n## ", at + 5);
        Matcher m = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL)
                .matcher(end < 0 ? doc.substring(at) : doc.substring(at, end));
        List<String> out = new ArrayList<>();
        while (m.find()) {
            out.add(m.group(1).trim().replaceAll(";$", ""));
        }
        return out;
    }

    @Test
    void theDocumentedQueriesShowWhatTheSweepDid(TestDatabase db) throws IOException {
        JobType<Work> work = Fixtures.work(1, (args, ctx) -> args.n() == 1
                ? Outcome.transientFailure("still broken", null) : null);
        layover = Fixtures.layover(db, work).breakers(RecoveryFixtures.NEVER_OPENS)
                .cooldowns(RecoveryFixtures.TINY_COOLDOWNS).start();
        Instant before = Instant.now().minusSeconds(60);
        for (int n = 1; n <= 6; n++) {
            Fixtures.deadLetter("d-" + n).args("{\"name\":\"d-" + n + "\",\"n\":" + n + "}").parkedAt(before).insert(db);
        }
        Fixtures.deadLetter("r-1").failure("rejected").parkedAt(before).insert(db);
        Fixtures.deadLetter("r-2").failure("rejected").parkedAt(before).insert(db);
        RecoveryFixtures.closedNow(db, "test:provider");
        SweepRunner runner = new SweepRunner(RecoverySweep.builder().spreadOver(Duration.ZERO).firstBatch(2).build(),
                layover);
        long deadline = System.nanoTime() + Fixtures.WAIT.toNanos();
        while (!"idle".equals(db.value("select coalesce((select phase from layover.recovery_state), 'none')"))
                || db.count("select count(*) from layover.dead_letters where state = 'parked' "
                        + "and failure_type = 'provider_unavailable'") > 0) {
            assertTrue(System.nanoTime() < deadline, "the sweep did not finish");
            runner.runOnce();
            RecoveryFixtures.awaitNoJobs(db);
        }
        Await.equal(Fixtures.WAIT, "review", 1L,
                () -> db.count("select count(*) from layover.dead_letters where state = 'review'"));

        List<String> queries = recoveryQueries();
        assertEquals(3, queries.size());
        for (String sql : queries) {
            assertFalse(db.rows(sql).isEmpty(), "no rows from:\n" + sql);
        }
        Map<String, Object> perKey = db.row(queries.get(0));
        assertEquals("test:provider", perKey.get("provider_key"));
        assertEquals(2L, perKey.get("parked"), "the rejected ones stay");
        assertEquals(0L, perKey.get("auto_replayable"));
        assertEquals("closed", perKey.get("breaker"));
        assertEquals("idle", perKey.get("phase"));
        assertEquals(6L, ((Number) perKey.get("replayed")).longValue());

        Map<String, Object> lastHour = db.row(queries.get(1));
        assertTrue(((Number) lastHour.get("batches")).longValue() >= 2, lastHour.toString());
        assertEquals(6L, ((Number) lastHour.get("replayed")).longValue());
        assertEquals(0L, ((Number) lastHour.get("trials")).longValue());

        Map<String, Object> review = db.row(queries.get(2));
        assertEquals(1L, review.get("in_review"));
        assertEquals(1L, review.get("provider_keys"));
    }
}
