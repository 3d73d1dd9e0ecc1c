package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.core.outcome.FailureType;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Filters, keyset pages and facet counts. */
@DatabaseTest
class FindTest {

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private DeadLetters store(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        return DeadLetters.create(layover);
    }

    private static List<String> jobIds(DeadLetterPage page) {
        return page.items().stream().map(DeadLetterSummary::jobId).toList();
    }

    @Test
    void filtersFedSqlInjectionLookingTextReturnOrdinaryResults(TestDatabase db) {
        DeadLetters store = store(db);
        Fixtures.deadLetter("plain").error("java.io.IOException", "connection reset").insert(db);
        Fixtures.deadLetter("quote").error("X", "it said ' OR 1=1 -- and left").insert(db);
        Fixtures.deadLetter("percent").error("X", "disk 100% full").insert(db);
        Fixtures.deadLetter("underscore").error("X", "bad field user_id").insert(db);
        Fixtures.deadLetter("backslash").error("X", "path C:\\temp not found").insert(db);
        DeadLetterFilter all = DeadLetterFilter.all();

        for (String evil : List.of("' OR 1=1 --", "%", "_", "\\", "work' --", "'; DROP TABLE layover.dead_letters; --")) {
            assertEquals(List.of(), jobIds(store.find(all.withJobTypes(evil), 100)), "job type " + evil);
            assertEquals(List.of(), jobIds(store.find(all.withProviderKeys(evil), 100)), "provider " + evil);
            assertEquals(List.of(), jobIds(store.find(all.withFailureTypes(evil), 100)), "failure type " + evil);
            assertEquals(0, store.count(all.withJobTypes("work", evil).withProviderKeys(evil)));
        }
        assertEquals(List.of("quote"), jobIds(store.find(all.withText("' OR 1=1 --"), 100)));
        assertEquals(List.of("percent"), jobIds(store.find(all.withText("%"), 100)), "% is literal");
        assertEquals(List.of("underscore"), jobIds(store.find(all.withText("_"), 100)), "_ is literal");
        assertEquals(List.of("backslash"), jobIds(store.find(all.withText("\\"), 100)), "\\ is literal");
        assertEquals(List.of("backslash"), jobIds(store.find(all.withText("c:\\TEMP"), 100)), "case-insensitive");
        assertEquals(List.of("plain"), jobIds(store.find(all.withText("ioexception"), 100)), "error class too");
        assertEquals(5, db.count("select count(*) from layover.dead_letters"), "the table is intact");
        assertEquals(5, store.counts(all.withText("")).total(), "blank text is no filter");
    }

    @Test
    void filtersCombineJobTypeProviderFailureTypeStateAndParkTime(TestDatabase db) {
        DeadLetters store = store(db);
        Instant now = Instant.now();
        Fixtures.deadLetter("a").provider("openai:gpt-4o").failure("provider_unavailable").parkedAt(now.minusSeconds(10))
                .insert(db);
        Fixtures.deadLetter("b").provider("openai:gpt-4o").failure("rejected").parkedAt(now.minusSeconds(20)).insert(db);
        Fixtures.deadLetter("c").provider("anthropic:claude").failure("provider_unavailable").state("review")
                .parkedAt(now.minusSeconds(7200)).insert(db);
        Fixtures.deadLetter("d").type("other").provider("openai:gpt-4o").failure("provider_unavailable")
                .parkedAt(now.minusSeconds(30)).insert(db);
        DeadLetterFilter all = DeadLetterFilter.all();

        assertEquals(List.of("a", "b", "d", "c"), jobIds(store.find(all, 10)), "newest park first");
        assertEquals(List.of("a", "b", "c"), jobIds(store.find(all.withJobTypes("work"), 10)));
        assertEquals(List.of("a", "b", "d"), jobIds(store.find(all.withProviderKeys("openai:gpt-4o"), 10)));
        assertEquals(List.of("a", "d", "c"),
                jobIds(store.find(all.withFailureTypes(FailureType.PROVIDER_UNAVAILABLE), 10)));
        assertEquals(List.of("c"), jobIds(store.find(all.withStates(DeadLetterState.REVIEW), 10)));
        assertEquals(List.of("a", "b", "d", "c"),
                jobIds(store.find(all.withStates(DeadLetterState.PARKED, DeadLetterState.REVIEW), 10)));
        assertEquals(List.of("a", "b", "d"),
                jobIds(store.find(all.withParkedBetween(now.minus(Duration.ofHours(1)), null), 10)), "last hour");
        assertEquals(List.of("b", "d"),
                jobIds(store.find(all.withParkedBetween(now.minusSeconds(35), now.minusSeconds(15)), 10)));
        assertEquals(List.of("a"), jobIds(store.find(all.withJobTypes("work").withProviderKeys("openai:gpt-4o")
                .withFailureTypes("provider_unavailable").withStates(DeadLetterState.PARKED), 10)));
        assertEquals(List.of("b", "c"),
                jobIds(store.find(all.withFailureTypes("rejected").withProviderKeys("openai:gpt-4o")
                        .withFailureTypes("rejected", "provider_unavailable").withProviderKeys("openai:gpt-4o",
                                "anthropic:claude").withJobTypes("work").withParkedBetween(null, now.minusSeconds(15)),
                        10)));
    }

    @Test
    void keysetPagesWalkEveryEntryExactlyOnceEvenWithEqualParkTimes(TestDatabase db) {
        DeadLetters store = store(db);
        // 1,000 rows sharing 10 park times: order must fall back on the id
        db.update("""
                INSERT INTO layover.dead_letters (job_type, job_id, args, failure_type, first_enqueued_at, parked_at, state)
                SELECT 'work', 'k-' || g, '{}'::jsonb, 'job_error', now(),
                       timestamp '2025-01-01 12:00:00.123456' + (g % 10) * interval '1 second',
                       CASE WHEN g % 3 = 0 THEN 'replayed' ELSE 'parked' END
                FROM generate_series(1, 1000) g""");

        for (DeadLetterFilter f : List.of(DeadLetterFilter.all(), DeadLetterFilter.all().withStates(DeadLetterState.PARKED))) {
            List<DeadLetterSummary> seen = new ArrayList<>();
            String cursor = null;
            int pages = 0;
            do {
                DeadLetterPage page = store.find(f, 37, cursor);
                seen.addAll(page.items());
                cursor = page.nextCursor();
                pages++;
            } while (cursor != null);
            long expected = store.count(f);
            assertEquals(expected, seen.size(), "every entry of " + f);
            Set<Long> ids = new HashSet<>();
            seen.forEach(s -> ids.add(s.id()));
            assertEquals(expected, ids.size(), "no entry twice");
            assertEquals((expected + 36) / 37, pages);
            for (int i = 1; i < seen.size(); i++) {
                DeadLetterSummary a = seen.get(i - 1);
                DeadLetterSummary b = seen.get(i);
                assertTrue(a.parkedAt().isAfter(b.parkedAt()) || (a.parkedAt().equals(b.parkedAt()) && a.id() > b.id()),
                        "ordered by parked_at desc, id desc at " + i);
            }
        }
        assertEquals(0, store.find(DeadLetterFilter.all(), 1000).next().map(c -> 1).orElse(0),
                "a page holding everything has no next page");
        assertThrows(IllegalArgumentException.class, () -> store.find(DeadLetterFilter.all(), 10, "' OR 1=1 --"));
        assertThrows(IllegalArgumentException.class, () -> store.find(DeadLetterFilter.all(), 0));
    }

    @Test
    void countsPerFacetFollowTheFilter(TestDatabase db) {
        DeadLetters store = store(db);
        Fixtures.insertMany(db, 30, "p", "openai:gpt-4o", "provider_unavailable", "parked");
        Fixtures.insertMany(db, 20, "q", "openai:gpt-4o", "rate_limit_exhausted", "review");
        Fixtures.insertMany(db, 10, "r", "anthropic:claude", "provider_unavailable", "replayed");
        Fixtures.deadLetter("none").provider(null).failure("job_error").type("other").insert(db);

        FacetCounts all = store.counts(DeadLetterFilter.all());
        assertEquals(61, all.total());
        assertEquals(List.of("parked", "review", "replayed"), List.copyOf(all.byState().keySet()),
                "largest first: parked 31, review 20, replayed 10");
        assertEquals(31L, all.byState().get("parked"));
        assertEquals(40L, all.byFailureType().get("provider_unavailable"));
        assertEquals(20L, all.byFailureType().get("rate_limit_exhausted"));
        assertEquals(1L, all.byFailureType().get("job_error"));
        assertEquals(60L, all.byJobType().get("work"));
        assertEquals(1L, all.byJobType().get("other"));
        assertEquals(50L, all.byProviderKey().get("openai:gpt-4o"));
        assertEquals(10L, all.byProviderKey().get("anthropic:claude"));
        assertEquals(1L, all.byProviderKey().get(null), "no provider key counts under null");

        FacetCounts openai = store.counts(DeadLetterFilter.all().withProviderKeys("openai:gpt-4o"));
        assertEquals(50, openai.total());
        assertEquals(30L, openai.byState().get("parked"));
        assertEquals(20L, openai.byState().get("review"));
        assertFalse(openai.byState().containsKey("replayed"));
        assertEquals(1, openai.byProviderKey().size());

        FacetCounts nothing = store.counts(DeadLetterFilter.all().withJobTypes("missing"));
        assertEquals(0, nothing.total());
        assertTrue(nothing.byState().isEmpty());
    }

    @Test
    void aDeadLetterReadsWithArgsEveryAttemptsErrorAndReplayHistory(TestDatabase db) {
        DeadLetters store = store(db);
        long id = Fixtures.deadLetter("full").args("{\"name\":\"full\",\"n\":9}").insert(db);
        db.update("""
                update layover.dead_letters set errors = errors || '[{"attempt":2,"at":"2025-01-01T00:00:00Z",
                    "kind":"overloaded","error_class":"Overloaded","message":"529"}]'::jsonb, attempts = 2 where id = ?""",
                id);
        store.replay(id, ReplayOptions.by("bob"));

        DeadLetter dl = store.get(id).orElseThrow();
        assertEquals("full", dl.jobId());
        assertEquals("{\"n\": 9, \"name\": \"full\"}", dl.args());
        assertEquals(2, dl.errors().size());
        assertEquals("connection reset", dl.errors().get(0).message());
        assertEquals(Integer.valueOf(2), dl.errors().get(1).attempt());
        assertEquals("overloaded", dl.errors().get(1).kind());
        assertEquals(Instant.parse("2025-01-01T00:00:00Z"), dl.errors().get(1).at());
        assertEquals(1, dl.replays().size());
        assertEquals("bob", dl.replays().get(0).by());
        assertTrue(dl.jobTypeRegistered());
        assertTrue(store.get(id + 1000).isEmpty());
    }
}
