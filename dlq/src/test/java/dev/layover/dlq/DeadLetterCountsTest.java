package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code layover.dead_letter_counts}, kept by triggers on {@code layover.dead_letters},
 * equals a count of the dead letters after every kind of write: parks by the engine, replays,
 * discards, review and move back, retention's deletes, a row moving between keys, TRUNCATE; and the
 * store's counts, facets and bounded count read it.
 */
@DatabaseTest
class DeadLetterCountsTest {

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    /** The maintained counts minus a fresh count of the dead letters, per key: empty when they agree. */
    private static List<Map<String, Object>> differences(TestDatabase db) {
        return db.rows("""
                WITH actual AS (
                    SELECT state, failure_type, job_type, coalesce(provider_key, '') AS provider_key, count(*) AS n
                    FROM layover.dead_letters GROUP BY 1, 2, 3, 4
                ), kept AS (
                    SELECT state, failure_type, job_type, provider_key, n FROM layover.dead_letter_counts WHERE n <> 0
                )
                SELECT coalesce(a.state, k.state) AS state, coalesce(a.failure_type, k.failure_type) AS failure_type,
                       coalesce(a.job_type, k.job_type) AS job_type, coalesce(a.provider_key, k.provider_key) AS key,
                       a.n AS actual, k.n AS kept
                FROM actual a FULL JOIN kept k USING (state, failure_type, job_type, provider_key)
                WHERE a.n IS DISTINCT FROM k.n""");
    }

    private static void assertCountsTrue(TestDatabase db, String after) {
        assertEquals(List.of(), differences(db), "counts differ from count(*) after " + after);
    }

    @Test
    void theCountsEqualACountOfTheDeadLettersAfterEveryKindOfWrite(TestDatabase db) {
        JobType<Work> failing = Fixtures.work(1, (args, ctx) -> {
            throw new IllegalStateException("down");
        });
        layover = Fixtures.layover(db, failing).start();
        DeadLetters store = DeadLetters.create(layover);

        // parks by the engine (job_park.sql)
        for (int i = 0; i < 5; i++) {
            layover.enqueue(failing, new Work("p" + i, i), EnqueueOptions.key("p" + i));
        }
        Await.equal(Fixtures.WAIT, "parked", 5L,
                () -> db.count("select count(*) from layover.dead_letters where state = 'parked'"));
        assertCountsTrue(db, "parks");
        assertEquals(5, store.count(DeadLetterFilter.all().withStates(DeadLetterState.PARKED)));

        // rows written straight into the table, many at once, and one without a provider key
        Fixtures.insertMany(db, 1200, "bulk", "openai:gpt-4o", "rate_limit_exhausted", "parked");
        Fixtures.insertMany(db, 30, "rev", "anthropic:claude", "provider_unavailable", "review");
        long keyless = Fixtures.deadLetter("keyless").provider(null).failure("bad_args").insert(db);
        assertCountsTrue(db, "inserts");

        // a replay of one, then a bulk replay in batches (parked -> replayed); the replayed jobs park again
        long one = ((Number) db.value("select min(id) from layover.dead_letters where job_id like 'p%'")).longValue();
        store.replay(one, ReplayOptions.by("alice"));
        assertCountsTrue(db, "a replay");
        BulkResult replayed = store.replay(Selection.matching(DeadLetterFilter.all().withProviderKeys("openai:gpt-4o")),
                ReplayOptions.by("alice"));
        assertEquals(1200, replayed.changed());
        assertCountsTrue(db, "a bulk replay");
        Await.equal(Fixtures.WAIT, "every replayed job parked again", 1205L,
                () -> db.count("select count(*) from layover.dead_letters where state = 'parked' "
                        + "and (job_id like 'p%' or job_id like 'bulk-%')"));
        assertCountsTrue(db, "replayed jobs parked again (an UPDATE of the same dead letter)");

        // discard, move back from review (review -> parked), sweep's review of spent budgets (parked -> review)
        store.discard(Selection.ids(keyless), ActionOptions.by("bob"));
        assertEquals(1200, store.discard(Selection.matching(DeadLetterFilter.all().withProviderKeys("openai:gpt-4o")),
                ActionOptions.by("bob")).changed());
        store.moveBackToParked(Selection.matching(DeadLetterFilter.all().withProviderKeys("anthropic:claude")),
                ActionOptions.by("bob"));
        assertCountsTrue(db, "discard and move back");
        assertEquals(10, db.update("update layover.dead_letters set state = 'review' where id in "
                + "(select id from layover.dead_letters where job_id like 'rev-%' order by id limit 10)"));
        assertCountsTrue(db, "a review");

        // an update that changes no counted column writes nothing; one that moves rows between keys moves counts
        long before = db.count("select coalesce(sum(n), 0) from layover.dead_letter_counts");
        db.update("update layover.dead_letters set error_message = 'edited' where job_id like 'rev-%'");
        assertCountsTrue(db, "an update of other columns");
        assertEquals(before, db.count("select coalesce(sum(n), 0) from layover.dead_letter_counts"));
        db.update("update layover.dead_letters set provider_key = 'mistral:large', job_type = 'other', "
                + "failure_type = 'job_error' where job_id like 'rev-%' and id % 2 = 0");
        db.update("update layover.dead_letters set provider_key = null where job_id like 'rev-%' and id % 3 = 0");
        assertCountsTrue(db, "rows moving between keys");

        // retention's deletes
        db.update("update layover.dead_letters set state_changed_at = now() - interval '40 days' "
                + "where state in ('replayed', 'discarded')");
        long purged = DeadLetterRetention.builder(db.dataSource()).keep(Duration.ofDays(30)).batchSize(100).build()
                .purgeNow();
        assertTrue(purged >= 1201, "purged " + purged);
        assertCountsTrue(db, "retention's deletes");
        assertEquals(0, store.count(DeadLetterFilter.all().withStates(DeadLetterState.DISCARDED)));

        // the store's reads agree with a scan of the rows
        DeadLetterFilter parked = DeadLetterFilter.all().withStates(DeadLetterState.PARKED);
        FacetCounts f = store.counts(parked);
        assertEquals(db.count("select count(*) from layover.dead_letters where state = 'parked'"), f.total());
        assertEquals(db.count("select count(*) from layover.dead_letters where state = 'parked' "
                + "and provider_key = 'anthropic:claude'"), f.byProviderKey().get("anthropic:claude"));
        FacetCounts scanned = store.counts(parked.withText("edited"));
        assertEquals(db.count("select count(*) from layover.dead_letters where state = 'parked' "
                + "and error_message = 'edited'"), scanned.total(), "a text filter counts the rows themselves");
        assertTrue(scanned.total() > 0 && scanned.total() < f.total(), scanned.total() + " of " + f.total());

        // TRUNCATE fires no DELETE trigger: its own trigger empties the counts
        db.execute("truncate layover.dead_letters");
        assertEquals(0, db.count("select coalesce(sum(n), 0) from layover.dead_letter_counts"));
        assertCountsTrue(db, "truncate");
    }

    @Test
    void aBoundedCountStopsAtTheBoundPlusOneWhateverTheFilter(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        Fixtures.insertMany(db, 250, "many", "openai:gpt-4o", "provider_unavailable", "parked");
        DeadLetterFilter byKey = DeadLetterFilter.all().withProviderKeys("openai:gpt-4o");

        assertEquals(101, store.countAtMost(byKey, 100), "read from the counts, cut at the bound plus one all the same");
        assertEquals(250, store.countAtMost(byKey, 1000));
        DeadLetterFilter byText = byKey.withText("failed");
        assertEquals(250, store.count(byText));
        assertEquals(101, store.countAtMost(byText, 100), "more than the bound: the bound plus one");
        assertEquals(250, store.countAtMost(byText, 250), "exactly the bound");
        assertEquals(250, store.countAtMost(byText, 10_000));
        assertEquals(0, store.countAtMost(byText.withText("no such error"), 100));
    }
}
