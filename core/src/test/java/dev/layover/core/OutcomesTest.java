package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Every row of the outcome table (DESIGN section 3) that needs no provider state, checked in the
 * tables with SQL.
 */
@DatabaseTest
class OutcomesTest {

    record Work(String name) {}

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration WAIT = Duration.ofSeconds(20);

    private Layover layover;
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    /** Starts Layover with one job type whose handler answers with {@code script(args, attempt)}. */
    private JobType<Work> start(TestDatabase db, JobPolicy policy, Function<Integer, Outcome> script) {
        JobType<Work> type = JobType.builder("work", Work.class)
                .policy(policy)
                .handler((args, ctx) -> {
                    runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
                    Outcome o = script.apply(runs.get(ctx.jobId()).get());
                    if (o instanceof Outcome.Retry r && r.cause() instanceof RuntimeException e) {
                        throw e;
                    }
                    return o;
                })
                .build();
        layover = TestLayovers.builder(db).register(type).start();
        return type;
    }

    private int runsOf(String id) {
        AtomicInteger n = runs.get(id);
        return n == null ? 0 : n.get();
    }

    private Map<String, Object> job(TestDatabase db, String id) {
        return db.row("select * from layover.jobs where id = ?", id);
    }

    private Map<String, Object> deadLetter(TestDatabase db, String id) {
        return db.row("select * from layover.dead_letters where job_id = ?", id);
    }

    private static long secondsUntil(Object timestamp) {
        return Duration.between(Instant.now(), ((Timestamp) timestamp).toInstant()).toSeconds();
    }

    @Test
    void doneDeletesTheRow(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.done());
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(1, runsOf(id));
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
    }

    @Test
    void aHandlerReturningNullIsDone(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> null);
        layover.enqueue(type, new Work("a"));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
    }

    @Test
    void rateLimitedReschedulesWithoutSpendingAnAttempt(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(),
                n -> Outcome.rateLimited(Duration.ofSeconds(30), "429 from openai"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "reschedules", 1, () -> job(db, id).get("reschedules"));
        Map<String, Object> row = job(db, id);
        assertEquals(0, row.get("attempts"), "a rate limit never spends an attempt");
        assertEquals("rescheduled", row.get("state"));
        assertEquals("rate_limited", row.get("reschedule_reason"));
        assertEquals("429 from openai", row.get("reschedule_detail"));
        long wait = secondsUntil(row.get("run_at"));
        assertTrue(wait >= 28 && wait <= 38, "run_at is now + 30 s + up to 7.5 s jitter, was +" + wait + " s");
        assertEquals(0, db.count("select consecutive_failures from layover.scheduled_tasks where task_instance = ?", id));
        assertEquals("[]", db.value("select errors::text from layover.jobs where id = ?", id));
    }

    @Test
    void rateLimitedPastTheRescheduleCapParks(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults().withMaxReschedules(2),
                n -> Outcome.rateLimited(Duration.ZERO, "429"));
        String id = layover.enqueue(type, new Work("capped")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("rate_limit_exhausted", dl.get("failure_type"));
        assertEquals(2, dl.get("reschedules"));
        assertEquals(0, dl.get("attempts"));
        assertEquals(3, runsOf(id));
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void rateLimitedLongerThanMaxDeferralParksAtOnce(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults().withMaxDeferral(Duration.ofMinutes(5)),
                n -> Outcome.rateLimited(Duration.ofHours(2), "retry-after: 7200"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("rate_limit_exhausted", dl.get("failure_type"));
        assertTrue(((String) dl.get("error_message")).contains("longer than maxDeferral"), (String) dl.get("error_message"));
        assertEquals(1, runsOf(id));
    }

    @Test
    void rateLimitedWithoutRetryAfterWaitsAnEscalatingDefault(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.rateLimited(null));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "reschedules", 1, () -> job(db, id).get("reschedules"));
        long wait = Duration.between(Instant.now(), ((Timestamp) job(db, id).get("run_at")).toInstant()).toMillis();
        assertTrue(wait > -200 && wait <= 1300, "first default wait is 1 s plus jitter, was " + wait + " ms");
    }

    @Test
    void snoozeMovesRunAtExactlyAndKeepsAttempts(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.snooze(Duration.ofMinutes(10)));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "reschedules", 1, () -> job(db, id).get("reschedules"));
        Map<String, Object> row = job(db, id);
        assertEquals(0, row.get("attempts"));
        assertEquals("snooze", row.get("reschedule_reason"));
        long wait = secondsUntil(row.get("run_at"));
        assertTrue(wait >= 595 && wait <= 600, "snooze is exact, was +" + wait + " s");
    }

    @Test
    void quotaWithAResetWithinMaxDeferralWaitsForTheReset(TestDatabase db) {
        Instant reset = Instant.now().plus(Duration.ofMinutes(20));
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.quotaExhausted(reset, "RPD limit"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "reschedules", 1, () -> job(db, id).get("reschedules"));
        Map<String, Object> row = job(db, id);
        assertEquals(0, row.get("attempts"));
        assertEquals("quota_exhausted", row.get("reschedule_reason"));
        Instant runAt = ((Timestamp) row.get("run_at")).toInstant();
        assertFalse(runAt.isBefore(reset), "run_at " + runAt + " is not before the reset " + reset);
        assertTrue(runAt.isBefore(reset.plusSeconds(31)), "jitter is at most 30 s");
    }

    @Test
    void quotaWithoutAKnownResetParks(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.quotaExhausted(null, "insufficient_quota"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("quota_exhausted", dl.get("failure_type"));
        assertEquals(0, dl.get("attempts"));
    }

    @Test
    void aFailureSpendsAnAttemptAndRecordsTheError(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults().withBackoff(Duration.ofMinutes(1), Duration.ofMinutes(5)),
                n -> Outcome.retry(new IllegalStateException("boom " + n)));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "attempts", 1, () -> job(db, id).get("attempts"));
        Map<String, Object> row = job(db, id);
        assertEquals("retrying", row.get("state"));
        assertEquals(0, row.get("reschedules"));
        long wait = secondsUntil(row.get("run_at"));
        assertTrue(wait >= -1 && wait <= 120, "full jitter: uniform(0, min(5 min, 1 min * 2^1)), was +" + wait + " s");
        JsonNode err = json(row.get("last_error"));
        assertEquals("java.lang.IllegalStateException", err.get("error_class").asText());
        assertEquals("boom 1", err.get("message").asText());
        assertEquals(1, err.get("attempt").asInt());
        assertEquals("error", err.get("kind").asText());
    }

    @Test
    void exhaustedAttemptsParkAsJobErrorWithEveryAttemptsError(TestDatabase db) {
        JobType<Work> type = start(db, TestLayovers.fastRetries(3), n -> Outcome.retry(new RuntimeException("fail " + n)));
        String id = layover.enqueue(type, new Work("keep me")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("job_error", dl.get("failure_type"));
        assertEquals(3, dl.get("attempts"));
        assertEquals("java.lang.RuntimeException", dl.get("error_class"));
        assertTrue(((String) dl.get("error_message")).startsWith("fail 3"), (String) dl.get("error_message"));
        assertEquals("parked", dl.get("state"));
        assertEquals("{\"name\": \"keep me\"}", dl.get("args"));
        JsonNode errors = json(dl.get("errors"));
        assertEquals(3, errors.size());
        for (int i = 0; i < 3; i++) {
            assertEquals(i + 1, errors.get(i).get("attempt").asInt());
            assertEquals("fail " + (i + 1), errors.get(i).get("message").asText());
        }
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        assertEquals(3, runsOf(id));
    }

    @Test
    void overloadedAndTransientRetryThenParkAsProviderUnavailable(TestDatabase db) {
        JobType<Work> type = start(db, TestLayovers.fastRetries(4), n -> n % 2 == 1
                ? Outcome.overloaded(null, "529 overloaded_error")
                : Outcome.transientFailure("read timed out", new java.net.SocketTimeoutException("Read timed out")));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("provider_unavailable", dl.get("failure_type"));
        assertEquals(4, dl.get("attempts"));
        JsonNode errors = json(dl.get("errors"));
        assertEquals("overloaded", errors.get(0).get("kind").asText());
        assertEquals("transient", errors.get(1).get("kind").asText());
        assertEquals("java.net.SocketTimeoutException", errors.get(1).get("error_class").asText());
    }

    @Test
    void overloadedRetryAfterIsAFloorUnderTheBackoff(TestDatabase db) {
        JobType<Work> type = start(db, TestLayovers.fastRetries(5),
                n -> Outcome.overloaded(Duration.ofSeconds(60), "503 retry-after: 60"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "attempts", 1, () -> job(db, id).get("attempts"));
        long wait = secondsUntil(job(db, id).get("run_at"));
        assertTrue(wait >= 58 && wait <= 60, "retry-after 60 s floors a backoff of a few ms, was +" + wait + " s");
    }

    @Test
    void authRefusedParksAtOnceWithoutSpendingAnAttempt(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.authRefused("401 invalid_api_key"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("auth_refused", dl.get("failure_type"));
        assertEquals(0, dl.get("attempts"));
        assertEquals("401 invalid_api_key", dl.get("error_message"));
        assertEquals(1, runsOf(id));
    }

    @Test
    void rejectedParksAtOnce(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.rejected("400 context_length_exceeded"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        assertEquals("rejected", deadLetter(db, id).get("failure_type"));
        assertEquals(1, runsOf(id));
    }

    @Test
    void parkParksAtOnceWithTheHandlersReason(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.park("customer deleted"));
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("handler_parked", dl.get("failure_type"));
        assertEquals("customer deleted", dl.get("error_message"));
    }

    @Test
    void anOutcomeThrownActsLikeOneReturned(TestDatabase db) {
        JobType<Work> type = JobType.of("thrower", Work.class, (args, ctx) -> {
            throw Outcome.rateLimited(Duration.ofSeconds(45), "thrown").toException();
        });
        layover = TestLayovers.builder(db).register(type).start();
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "reschedules", 1, () -> job(db, id).get("reschedules"));
        assertEquals(0, job(db, id).get("attempts"));
        assertEquals("thrown", job(db, id).get("reschedule_detail"));
    }

    @Test
    void anUnclassifiedExceptionIsRetriedAsTheJobsOwnError(TestDatabase db) {
        JobType<Work> type = JobType.builder("npe", Work.class)
                .policy(TestLayovers.fastRetries(2))
                .handler((args, ctx) -> {
                    throw new NullPointerException("bug");
                })
                .build();
        layover = TestLayovers.builder(db).register(type).start();
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Map<String, Object> dl = deadLetter(db, id);
        assertEquals("job_error", dl.get("failure_type"));
        assertEquals("java.lang.NullPointerException", dl.get("error_class"));
        assertEquals(2, dl.get("attempts"));
    }

    @Test
    void aRetryThatSucceedsLaterDeletesTheRow(TestDatabase db) {
        JobType<Work> type = start(db, TestLayovers.fastRetries(5),
                n -> n < 3 ? Outcome.retry(new RuntimeException("flaky")) : Outcome.done());
        String id = layover.enqueue(type, new Work("a")).id();
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(3, runsOf(id));
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
    }

    @Test
    void theAttemptNumberSeenByTheHandlerCountsOnlyFailures(TestDatabase db) {
        Map<Integer, Integer> seen = new ConcurrentHashMap<>();
        JobType<Work> type = JobType.builder("counting", Work.class)
                .policy(TestLayovers.fastRetries(5))
                .handler((args, ctx) -> {
                    int run = seen.size() + 1;
                    seen.put(run, ctx.attempt());
                    return switch (run) {
                        case 1 -> Outcome.rateLimited(Duration.ZERO);
                        case 2 -> Outcome.retry("fail");
                        case 3 -> Outcome.snooze(Duration.ZERO);
                        default -> Outcome.done();
                    };
                })
                .build();
        layover = TestLayovers.builder(db).register(type).start();
        layover.enqueue(type, new Work("a"));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(Map.of(1, 1, 2, 1, 3, 2, 4, 2), seen);
    }

    @Test
    void argsThatNoLongerReadParkAsBadArgsWhileTheQueueKeepsFlowing(TestDatabase db) {
        JobType<Work> type = start(db, JobPolicy.defaults(), n -> Outcome.done());
        // a renamed field and a changed type, as an older deployment might have written them
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version)"
                + " values ('work', 'renamed', convert_to('{\"title\": \"x\"}', 'UTF8'), now(), false, 1),"
                + "        ('work', 'retyped', convert_to('{\"name\": {\"nested\": true}}', 'UTF8'), now(), false, 1),"
                + "        ('work', 'not-json', convert_to('not json at all', 'UTF8'), now(), false, 1)");
        for (int i = 0; i < 20; i++) {
            layover.enqueue(type, new Work("good " + i));
        }
        Await.equal(WAIT, "dead letters", 3L, () -> db.count("select count(*) from layover.dead_letters"));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(20, runs.size());
        Map<String, Object> renamed = deadLetter(db, "renamed");
        assertEquals("bad_args", renamed.get("failure_type"));
        assertEquals("{\"title\": \"x\"}", renamed.get("args"), "the args are kept exactly, for an edit and replay");
        assertTrue(((String) renamed.get("error_message")).contains("title"), (String) renamed.get("error_message"));
        Map<String, Object> notJson = deadLetter(db, "not-json");
        assertNull(notJson.get("args"));
        assertEquals("not json at all", new String((byte[]) notJson.get("args_raw"), java.nio.charset.StandardCharsets.UTF_8));
    }

    private static JsonNode json(Object text) {
        try {
            return JSON.readTree((String) text);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
