package dev.layover.samples.translate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

/** The demo in fast mode, start to end, and the checks of its report. */
// alone in the fast profile: the demo's phases switch on wall-clock time, so classes running
// beside it change what each phase sees (it failed once with a job_error, three classes at a time)
@Isolated
@DatabaseTest
class TranslationDemoTest {

    @Test
    @Timeout(90)
    void theFastDemoRecoversFromTheOutageWithoutSpendingAttemptsOnRateLimitsOrChargingTwice(TestDatabase db)
            throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        long started = System.nanoTime();
        DemoReport r = TranslationDemo.run(db.dataSource(), new TranslationDemo.Options(true, false, true, false, null, db.jdbcUrl()), out);
        String printed = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(printed);

        assertEquals(List.of(), r.problems(), printed);
        assertTrue(r.enqueued() > 50, printed);
        assertEquals(0, r.unaccounted(), "every job completed or accounted for");
        assertEquals(0, r.stillLive());
        assertEquals(r.enqueued(), r.completed() + r.waitingForAPerson());
        assertEquals(r.waitingForAPerson(), r.waitingForPerson().getOrDefault("handler_parked", 0L),
                "only the jobs of the account without credits wait for a person");
        assertTrue(r.waitingForAPerson() > 0, "the trial account ran out of credits");

        assertTrue(r.rateLimited429s() > 0, "the throttled phase answered 429s");
        assertTrue(r.reschedules() > 0);
        assertEquals(0, r.attemptsSpentOnRateLimits());
        // steps (issue 45): jobs rescheduled, retried or replayed mid-document resumed at their segment
        assertTrue(r.segmentsReused() > 0, "calls a resumed job did not repeat: " + printed);
        assertTrue(printed.contains("calls not repeated"), printed);
        assertTrue(r.answeredBySecondary() > 0, "the chain fell back to the secondary");
        assertTrue(r.fenced() + r.chatty() > 0, "fenced or chatty answers were repaired (JsonRepairTest has every case)");

        assertTrue(r.breakerOpenings() > 0, "the outage opened a breaker");
        assertTrue(r.deadLetters() > r.waitingForAPerson(), "the outage parked jobs");
        assertTrue(r.replaysByKind().getOrDefault("sweep", 0L) > 0, "the recovery sweep replayed the parked jobs");

        assertEquals(0, r.doubleCharges());
        assertEquals(0, r.overdrawnAccounts());
        assertEquals(r.completed(), r.jobsCharged(), "every completed job charged exactly once, nothing else charged");
        assertEquals(r.completed(), db.count("select count(*) from layover_demo.translations"));
        assertEquals(0, db.count("select count(*) from layover_demo.accounts where balance < 0"));

        // the fourth part: one summary per translated document, every one by batch, at half price
        BatchReport b = r.batch();
        assertEquals(r.completed(), b.translated());
        assertEquals(r.completed(), b.done(), "every translated document was summarised");
        assertEquals(b.done(), b.byBatch(), "every summary was done by batch, none called directly");
        assertEquals(0, b.open());
        assertEquals(b.done(), db.count("select count(*) from layover_demo.summaries where route = 'batch'"));
        assertEquals(0, db.count("select count(*) from layover_demo.summaries where route = 'direct'"));
        assertTrue(b.batches() > 0, "the summaries went in batches");
        assertEquals(b.batches(), b.batchesEnded(), "every batch ended");
        assertEquals(b.batches(), b.batchesCreated(), "each batch created once at the provider");
        assertEquals(0, b.linesChargedTwice());
        assertEquals(b.done(), db.count("select coalesce(sum(succeeded), 0) from layover.batch_status"),
                "one succeeded line per summary");
        assertTrue(b.batchTokens() > 0);
        assertEquals(b.providerTokens(), b.batchTokens(), "the batches' tokens are the ones the provider counted");
        assertEquals(0.50, b.relativeCost(), 0.005, "half the price of direct calls");
        assertTrue(printed.contains("Deferrable work went by batch at half price"), printed);
        assertTrue(printed.contains("Replay console: http://127.0.0.1:"), printed);
        assertTrue(printed.contains("Database: " + db.jdbcUrl()), printed);
        assertTrue(printed.contains("psql: " + TranslationDemo.psql(db.jdbcUrl())), printed);
        assertTrue(Duration.ofNanos(System.nanoTime() - started).toSeconds() < 60, "the fast demo takes under a minute");
    }
}
