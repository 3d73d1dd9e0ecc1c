package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.Task;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.ApiKeyPool;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * API key pools: keys used in turn; a key on a per-day quota sits out until its reset while the
 * others carry on; all keys cooling down reschedules the job to the earliest comeback; the
 * secrets never reach the database.
 */
@DatabaseTest
class ApiKeyPoolTest {

    private static final String SECRET_A = "sk-test-aaaaaaaaaaaaaaaaaaaa";
    private static final String SECRET_B = "sk-test-bbbbbbbbbbbbbbbbbbbb";

    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    /** What each key answers; null: success. */
    private final AtomicReference<Outcome> answerA = new AtomicReference<>();
    private final AtomicReference<Outcome> answerB = new AtomicReference<>();
    private final List<String> used = new CopyOnWriteArrayList<>();

    private final ApiKeyPool pool = ApiKeyPool.builder("fakeai")
            .key("a", SECRET_A)
            .key("b", SECRET_B)
            .build();

    private Layover start(TestDatabase db) {
        JobType<Task> t = JobType.builder("pooled", Task.class)
                .providerKey("fakeai:model")
                .handler((args, ctx) -> {
                    ApiKeyPool.Result<String> r = pool.call(ctx, key -> {
                        used.add(key.name());
                        assertEquals(key.name().equals("a") ? SECRET_A : SECRET_B, key.secret(), "the handler gets the secret");
                        Outcome o = (key.name().equals("a") ? answerA : answerB).get();
                        if (o != null) {
                            throw o.toException();
                        }
                        return "answer with " + key.name();
                    });
                    assertTrue(r.stateKey().startsWith("fakeai#"));
                    return Outcome.done();
                })
                .build();
        Layover l = Admission.builder(db, "w1").threads(1).prefetch(1).register(t).start();
        instances.add(l);
        return l;
    }

    private void runOne(Layover l, TestDatabase db, String text) {
        @SuppressWarnings("unchecked")
        JobType<Task> t = (JobType<Task>) l.jobType("pooled").orElseThrow();
        String id = l.enqueue(t, new Task(text)).id();
        Await.equal(Admission.WAIT, "job " + text + " done", 0L,
                () -> db.count("select count(*) from layover.jobs where id = ?", id));
    }

    @Test
    void keysAreUsedInTurnAndAKeyOnItsDailyQuotaSitsOutUntilItsReset(TestDatabase db) {
        Layover l = start(db);
        for (int i = 0; i < 4; i++) {
            runOne(l, db, "turn " + i);
        }
        assertEquals(List.of("a", "b", "a", "b"), used, "round-robin");

        used.clear();
        Instant reset = Instant.now().plusSeconds(4);
        answerB.set(Outcome.quotaExhausted(reset, "Rate limit reached for requests per day (RPD) with key " + SECRET_B));
        for (int i = 0; i < 5; i++) {
            runOne(l, db, "quota " + i);
        }
        assertEquals(1, used.stream().filter("b"::equals).count(), "b was called once, then sat out: " + used);
        assertEquals(5, used.stream().filter("a"::equals).count(), "a carried every job: " + used);
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
        assertEquals(0, db.count("select count(*) from layover.job_history where attempts > 0 or reschedules > 0"),
                "the quota cost no job an attempt or a reschedule");
        Instant until = ((Timestamp) db.value("select until from layover.cooldowns where provider_key = 'fakeai#b'")).toInstant();
        assertTrue(!until.isBefore(reset.minusMillis(1)), "b cools down until its reset: " + until);
        assertEquals(0, db.count("select count(*) from layover.cooldowns where provider_key = 'fakeai#a'"));
        String detail = (String) db.value("select detail from layover.cooldowns where provider_key = 'fakeai#b'");
        assertTrue(detail.contains("***") && !detail.contains(SECRET_B), "the secret in the provider's message is masked: "
                + detail);

        Await.until(Duration.ofSeconds(10), "b's reset", () -> Instant.now().isAfter(until));
        answerB.set(null);
        used.clear();
        for (int i = 0; i < 4; i++) {
            runOne(l, db, "after " + i);
        }
        assertEquals(2, used.stream().filter("b"::equals).count(), "b is back in turn after its reset: " + used);
        assertNoSecretStored(db);
    }

    @Test
    void whenEveryKeyCoolsDownTheJobWaitsForTheEarliestOne(TestDatabase db) {
        Layover l = start(db);
        answerA.set(Outcome.rateLimited(Duration.ofSeconds(3), "429 on a"));
        answerB.set(Outcome.quotaExhausted(Instant.now().plusSeconds(30), "daily quota of b"));
        @SuppressWarnings("unchecked")
        JobType<Task> t = (JobType<Task>) l.jobType("pooled").orElseThrow();
        Instant enqueued = Instant.now();
        String id = l.enqueue(t, new Task("x")).id();
        Await.equal(Admission.WAIT, "rescheduled", 1L, () -> db.count(
                "select count(*) from layover.jobs where id = ? and reschedule_reason = 'rate_limited'", id));
        Instant runAt = ((Timestamp) db.value("select run_at from layover.jobs where id = ?", id)).toInstant();
        assertTrue(runAt.isAfter(enqueued.plusMillis(2900)) && runAt.isBefore(enqueued.plusSeconds(10)),
                "rescheduled to when key a comes back (3 s), not b (30 s): " + Duration.between(enqueued, runAt));
        assertEquals(0, db.value("select attempts from layover.jobs where id = ?", id));
        assertTrue(((String) db.value("select reschedule_detail from layover.jobs where id = ?", id))
                .contains("no API key of pool fakeai"));
        String trail = String.valueOf(db.value("select provider_trail from layover.jobs where id = ?", id));
        assertTrue(trail.contains("fakeai#a") && trail.contains("fakeai#b"), trail);
        answerA.set(null);
        Await.equal(Admission.WAIT, "done", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals("a", used.get(used.size() - 1), "a answered once it was back");
        assertNoSecretStored(db);
    }

    @Test
    void theSecretIsNeverShown() {
        ApiKeyPool.Key k = new ApiKeyPool.Key("team-a", SECRET_A);
        assertFalse(k.toString().contains(SECRET_A));
        assertEquals(List.of("a", "b"), pool.keyNames());
        assertEquals("fakeai#a", pool.stateKey("a"));
        assertThrows(IllegalArgumentException.class, () -> ApiKeyPool.builder("p").key("a", "x").key("a", "y"));
        assertThrows(IllegalArgumentException.class, () -> new ApiKeyPool.Key("bad name", "x"));
    }

    private static void assertNoSecretStored(TestDatabase db) {
        for (String table : List.of("scheduled_tasks", "dead_letters", "cooldowns", "breakers", "buckets", "job_history")) {
            long n = db.count("select count(*) from layover." + table + " x where x::text like ? or x::text like ?",
                    "%" + SECRET_A + "%", "%" + SECRET_B + "%");
            assertEquals(0, n, "a secret in layover." + table);
        }
    }
}
