package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Steps (docs/steps.md) on a real Postgres, their provider calls through openai-java (retries off)
 * against the fake provider: finished steps are reused on every later run, whatever ended the run
 * before; a keyed step is admitted by its own key and a 429 there reschedules the job without an
 * attempt; bad input gets its documented outcome; a durable sleep ends the run without an attempt.
 */
@DatabaseTest
class StepsTest {

    record Work(String text) {}

    record Quote(String text, int cents) {}

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String PRIMARY = "fake:primary";
    private static final String SECONDARY = "fake:secondary";

    private final FakeProvider fake = FakeProvider.start();
    private final OpenAIClient primary = client(fake.primary());
    private final OpenAIClient secondary = client(fake.secondary());
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private final List<String> results = new CopyOnWriteArrayList<>();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
        fake.close();
    }

    private static OpenAIClient client(FakeProvider.Endpoint ep) {
        return OpenAIOkHttpClient.builder().apiKey("sk-fake").baseUrl(ep.base() + "/v1").maxRetries(0)
                .timeout(Duration.ofSeconds(5)).build();
    }

    private static String chat(OpenAIClient client, String prompt, JobContext ctx) {
        ChatCompletion c = client.chat().completions().create(ChatCompletionCreateParams.builder()
                .model("gpt-4o-mini").addUserMessage(prompt).build());
        ctx.reportUsage(c);
        return c.choices().get(0).message().content().orElse("");
    }

    private int run(String name) {
        return runs.computeIfAbsent(name, n -> new AtomicInteger()).incrementAndGet();
    }

    private JobType<Work> start(TestDatabase db, JobType.Builder<Work> type) {
        JobType<Work> t = type.build();
        layover = TestLayovers.builder(db).register(t).start();
        return t;
    }

    private static Map<String, Object> history(TestDatabase db, String id) {
        Await.equal(WAIT, "history rows of " + id, 1L,
                () -> db.count("select count(*) from layover.job_history where job_id = ?", id));
        return db.row("select * from layover.job_history where job_id = ?", id);
    }

    private static Map<String, Object> deadLetter(TestDatabase db, String id) {
        Await.equal(WAIT, "dead letters of " + id, 1L,
                () -> db.count("select count(*) from layover.dead_letters where job_id = ?", id));
        return db.row("select * from layover.dead_letters where job_id = ?", id);
    }

    @Test
    void aRateLimitedKeyedStepReschedulesTheJobWithoutAnAttemptAndItsRunResumesThere(TestDatabase db) {
        fake.secondary().throttledRetryAfter(Duration.ofSeconds(1)).throttleFirst(1);
        JobType<Work> type = start(db, JobType.builder("translate", Work.class).handler((args, ctx) -> {
            run("handler");
            String a = ctx.step(StepOptions.named("segment-1").providerKey(PRIMARY), String.class,
                    () -> chat(primary, args.text() + " one", ctx));
            String b = ctx.step(StepOptions.named("segment-2").providerKey(SECONDARY), String.class,
                    () -> chat(secondary, args.text() + " two", ctx));
            String c = ctx.step(StepOptions.named("segment-3").providerKey(PRIMARY), String.class,
                    () -> chat(primary, args.text() + " three", ctx));
            results.add(a + " | " + b + " | " + c);
            return Outcome.done();
        }));
        String id = layover.enqueue(type, new Work("hello")).id();

        Await.equal(WAIT, "the job's reschedules", 1, () -> (Integer) db.value(
                "select reschedules from layover.jobs where id = ?", id));
        Map<String, Object> waiting = db.row("select * from layover.jobs where id = ?", id);
        assertEquals(0, waiting.get("attempts"), "a 429 spends no attempt");
        assertEquals("rate_limited", waiting.get("reschedule_reason"));
        assertTrue(String.valueOf(waiting.get("reschedule_detail")).startsWith("step 'segment-2': "),
                "the job says which step it stopped at: " + waiting.get("reschedule_detail"));
        Map<String, Object> stored = db.row("select * from layover.steps where job_id = ?", id);
        assertEquals("segment-1", stored.get("step"), "only the finished step is stored");
        assertEquals(PRIMARY, stored.get("provider_key"));
        assertEquals("finished", stored.get("outcome"));
        assertEquals("live", stored.get("job_state"));
        assertTrue(((Long) stored.get("input_tokens")) > 0, "the usage reported inside the step: " + stored);
        assertEquals("rate_limited", db.value("select reason from layover.cooldowns where provider_key = ?", SECONDARY));
        assertEquals(0L, db.count("select count(*) from layover.cooldowns where provider_key = ? and until > now()",
                PRIMARY), "the step's key learnt the 429, not the other key");

        Map<String, Object> h = history(db, id);
        assertEquals("completed", h.get("outcome"));
        assertEquals(0, h.get("attempts"));
        assertEquals(1, h.get("reschedules"));
        assertEquals(List.of("<ECHO> hello one | <ECHO> hello two | <ECHO> hello three"), results);
        assertEquals(2, fake.primary().calls(), "segment-1 was called once, segment-3 once");
        assertEquals(2, fake.secondary().calls(), "segment-2: its 429, then its answer");
        assertEquals(2, runs.get("handler").get());
        assertEquals(0L, db.count("select count(*) from layover.job_steps where job_id = ?", id),
                "a finished job's steps are removed with it");
        assertEquals(0, ((Number) db.value("select failures from layover.breakers where provider_key = ?", SECONDARY))
                .intValue(), "a 429 is never a breaker failure");

        layover.stop(); // flushes the time series
        layover = null;
        String sum = "select coalesce(sum(amount), 0) from layover.time_series where bucket_seconds = 60 "
                + "and job_type = 'translate' and counter = 'steps' and detail = ?";
        assertEquals(3L, db.count(sum, "completed"));
        assertEquals(1L, db.count(sum, "reused"), "segment-1, on the second run");
    }

    @Test
    void eachKeyedStepReservesItsTokensAndItsReportedUsageSettlesThem(TestDatabase db) {
        JobType<Work> type = JobType.builder("tokens", Work.class).handler((args, ctx) -> {
            for (int i = 0; i < 2; i++) {
                int n = i;
                ctx.step(StepOptions.named("call-" + i).providerKey(SECONDARY)
                        .tokens(dev.layover.core.tokens.TokenEstimate.total(20_000)), String.class,
                        () -> chat(secondary, "call " + n, ctx));
            }
            return Outcome.done();
        }).build();
        layover = TestLayovers.builder(db).register(type)
                .bucket(SECONDARY, dev.layover.core.provider.state.BucketSettings.tokensPerMinute(60_000)).start();
        String id = layover.enqueue(type, new Work("x")).id();
        Map<String, Object> h = history(db, id);
        assertEquals(2, fake.secondary().successes());
        assertEquals(fake.secondary().inputTokens(), ((Number) h.get("input_tokens")).longValue(),
                "the steps' reported usage is the run's");
        double free = ((Number) db.value("select free_now from layover.token_buckets where provider_key = ?", SECONDARY))
                .doubleValue();
        // unsettled, the two reservations of 20,000 would leave about 20,000 free (plus a few seconds' refill)
        assertTrue(free > 50_000, "each step's usage replaced its reservation: free " + free);
    }

    @Test
    void aStepThatThrowsAfterItsCallIsNotStoredAndRunsAgainWhileFinishedStepsAreReused(TestDatabase db) {
        List<String> keys = new CopyOnWriteArrayList<>();
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        JobType<Work> type = JobType.builder("retrying", Work.class)
                .policy(TestLayovers.fastRetries(3))
                .handler((args, ctx) -> {
                    String a = ctx.step("first", String.class, () -> chat(primary, "first", ctx));
                    String b = ctx.step("second", String.class, () -> {
                        keys.add(ctx.stepKey());
                        String answer = chat(primary, "second", ctx);
                        if (run("second") == 1) {
                            throw new IllegalStateException("a bug after the call succeeded");
                        }
                        return answer;
                    });
                    results.add(a + " | " + b);
                    return Outcome.done();
                }).build();
        layover = TestLayovers.builder(db).register(type)
                .metrics(dev.layover.core.metrics.MicrometerMetrics.builder(registry).withoutGauges().build()).start();
        String id = layover.enqueue(type, new Work("x")).id();
        Map<String, Object> h = history(db, id);
        assertEquals("completed", h.get("outcome"));
        assertEquals(1, h.get("attempts"), "the bug spent one attempt");
        // first run: "first" completed; second run: "first" reused, "second" completed
        assertEquals(2.0, registry.counter("layover.steps", "job_type", "retrying", "outcome", "completed").count());
        assertEquals(1.0, registry.counter("layover.steps", "job_type", "retrying", "outcome", "reused").count());
        assertEquals(List.of("<ECHO> first | <ECHO> second"), results);
        assertEquals(3, fake.primary().calls(), "first once; second twice (its first result was not stored)");
        assertEquals(2, keys.size());
        assertEquals(keys.get(0), keys.get(1), "the step key is stable across runs");
        assertTrue(keys.get(0).matches("layover-[0-9a-f]{40}"), keys.get(0));
    }

    @Test
    void aParkedJobKeepsItsStepsWithItsDeadLetter(TestDatabase db) throws Exception {
        JobType<Work> type = start(db, JobType.builder("parking", Work.class)
                .policy(TestLayovers.fastRetries(1))
                .handler((args, ctx) -> {
                    ctx.step("kept", Quote.class, () -> new Quote("kept", 42));
                    ctx.step("failing", String.class, () -> {
                        throw new IllegalStateException("always");
                    });
                    return Outcome.done();
                }));
        String id = layover.enqueue(type, new Work("x")).id();
        Map<String, Object> d = deadLetter(db, id);
        assertEquals("job_error", d.get("failure_type"));
        assertTrue(String.valueOf(d.get("error_message")).startsWith("step 'failing': "),
                "the dead letter says which step it stopped at: " + d.get("error_message"));
        assertEquals("step 'failing': always", db.value(
                "select errors -> -1 ->> 'message' from layover.dead_letters where job_id = ?", id));
        Map<String, Object> s = db.row("select * from layover.steps where job_id = ?", id);
        assertEquals("kept", s.get("step"));
        assertEquals("parked", s.get("job_state"));
        assertEquals(Quote.class.getName(), s.get("result_type"));
        assertEquals("{\"text\": \"kept\", \"cents\": 42}", String.valueOf(s.get("result")));

        // every query of docs/steps.md runs against this state
        List<String> queries = new java.util.ArrayList<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("```sql\\n(.*?)```", java.util.regex.Pattern.DOTALL)
                .matcher(java.nio.file.Files.readString(java.nio.file.Path.of("..", "docs", "steps.md")));
        while (m.find()) {
            queries.add(m.group(1).strip().replaceAll(";$", ""));
        }
        assertEquals(3, queries.size(), "the documented queries");
        List<Map<String, Object>> stopped = db.rows(queries.get(0));
        assertEquals(1, stopped.size());
        assertEquals(1L, stopped.get(0).get("finished_steps"));
        assertTrue(String.valueOf(stopped.get(0).get("error_message")).startsWith("step 'failing'"));
        List<Map<String, Object>> steps = db.rows(queries.get(1));
        assertEquals(List.of("kept"), steps.stream().map(r -> r.get("step")).toList());
        db.rows(queries.get(2)); // the time series' counts: flushed later, the query runs
    }

    @Test
    void aKeyedStepWhoseBreakerIsOpenMakesTheJobWaitWithoutCalling(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("breaker", Work.class).handler((args, ctx) -> {
            ctx.step("before", String.class, () -> chat(primary, "before", ctx));
            ctx.step(StepOptions.named("guarded").providerKey(SECONDARY), String.class,
                    () -> chat(secondary, "guarded", ctx));
            return Outcome.done();
        }));
        layover.providerStates().forceOpen(SECONDARY, Duration.ofMinutes(5), "test");
        String id = layover.enqueue(type, new Work("x")).id();
        Await.equal(WAIT, "the job's reschedules", 1, () -> (Integer) db.value(
                "select reschedules from layover.jobs where id = ?", id));
        Map<String, Object> job = db.row("select * from layover.jobs where id = ?", id);
        assertEquals(0, job.get("attempts"));
        assertTrue(String.valueOf(job.get("reschedule_detail")).contains("step 'guarded' waits for fake:secondary"),
                String.valueOf(job.get("reschedule_detail")));
        assertEquals(0, fake.secondary().calls());
        assertEquals(1L, db.count("select count(*) from layover.job_steps where job_id = ?", id));
    }

    @Test
    void twoStepsOfOneNameInOneRunParkTheJobAtOnce(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("twice", Work.class).handler((args, ctx) -> {
            for (int i = 0; i < 2; i++) {
                ctx.step("segment", String.class, () -> "same name");
            }
            return Outcome.done();
        }));
        String id = layover.enqueue(type, new Work("x")).id();
        Map<String, Object> d = deadLetter(db, id);
        assertEquals("handler_parked", d.get("failure_type"));
        assertEquals(0, d.get("attempts"));
        assertTrue(String.valueOf(d.get("error_message")).contains("two steps named 'segment' in one run"),
                String.valueOf(d.get("error_message")));
        assertEquals(1L, db.count("select count(*) from layover.job_steps where job_id = ?", id),
                "the first one finished and is kept for the replay");
    }

    @Test
    void aStepNestedInAStepParksTheJob(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("nested", Work.class).handler((args, ctx) -> {
            ctx.step("outer", String.class, () -> ctx.step("inner", String.class, () -> "x"));
            return Outcome.done();
        }));
        String id = layover.enqueue(type, new Work("x")).id();
        Map<String, Object> d = deadLetter(db, id);
        assertEquals("handler_parked", d.get("failure_type"));
        assertTrue(String.valueOf(d.get("error_message")).contains("steps do not nest"), String.valueOf(d.get("error_message")));
    }

    @Test
    void aResultOverTheCapIsNotStoredAndParksTheJob(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("big", Work.class).maxStepResultBytes(100)
                .handler((args, ctx) -> {
                    ctx.step("small", String.class, () -> "fits");
                    ctx.step("large", String.class, () -> "x".repeat(200));
                    return Outcome.done();
                }));
        String id = layover.enqueue(type, new Work("x")).id();
        Map<String, Object> d = deadLetter(db, id);
        assertEquals("handler_parked", d.get("failure_type"));
        String msg = String.valueOf(d.get("error_message"));
        assertTrue(msg.contains("is 202 bytes of JSON, more than the job type's maxStepResultBytes (100)"), msg);
        assertEquals(List.of("small"), db.rows("select step from layover.steps where job_id = ?", id).stream()
                .map(r -> r.get("step")).toList());
    }

    @Test
    void aStepAskedAsAnotherTypeThanStoredIsTheJobsOwnErrorAndSpendsAnAttempt(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("retyped", Work.class)
                .policy(TestLayovers.fastRetries(2))
                .handler((args, ctx) -> {
                    if (run("retyped") == 1) {
                        ctx.step("value", String.class, () -> "a string");
                        throw new IllegalStateException("first run fails after storing the step");
                    }
                    ctx.step("value", Integer.class, () -> 7); // a new version of the handler changed the type
                    return Outcome.done();
                }));
        String id = layover.enqueue(type, new Work("x")).id();
        Map<String, Object> d = deadLetter(db, id);
        assertEquals("job_error", d.get("failure_type"));
        assertEquals(2, d.get("attempts"));
        String msg = String.valueOf(d.get("error_message"));
        assertTrue(msg.contains("was stored as java.lang.String, asked as java.lang.Integer"), msg);
        assertEquals("a string", String.valueOf(db.value(
                "select result #>> '{}' from layover.job_steps where job_id = ?", id)), "the stored step is kept");
    }

    @Test
    void aStoredResultThatNoLongerReadsRunsTheStepAgain(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("stale", Work.class).handler((args, ctx) -> {
            Quote q = ctx.step("quote", Quote.class, () -> new Quote("run " + run("quote"), 100));
            if (run("handler") == 1) {
                return new Outcome.Snooze(Duration.ofHours(1), "wait for the test");
            }
            results.add(q.text());
            return Outcome.done();
        }));
        String id = layover.enqueue(type, new Work("x")).id();
        Await.equal(WAIT, "the job's reschedules", 1, () -> (Integer) db.value(
                "select reschedules from layover.jobs where id = ?", id));
        // an earlier version of the code stored something Quote no longer reads
        assertEquals(1, db.update("update layover.job_steps set result = '[1, 2]' where job_id = ?", id));
        assertEquals(1, db.update("update layover.scheduled_tasks set execution_time = now() where task_instance = ?", id));
        history(db, id);
        assertEquals(List.of("run 2"), results, "the step ran again and its new result was used");
    }

    @Test
    void anExpiredStepRunsAgainAndAValidOneIsReused(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("expiring", Work.class).handler((args, ctx) -> {
            Quote q = ctx.step(StepOptions.named("quote").validFor(Duration.ofMinutes(10)), Quote.class,
                    () -> new Quote("quote " + run("quote"), 100));
            Quote r = ctx.step(StepOptions.named("rate").validFor(Duration.ofMinutes(10)), Quote.class,
                    () -> new Quote("rate " + run("rate"), 1));
            if (run("handler") == 1) {
                return new Outcome.Snooze(Duration.ofHours(1), "wait for the test");
            }
            results.add(q.text() + " | " + r.text());
            return Outcome.done();
        }));
        String id = layover.enqueue(type, new Work("x")).id();
        Await.equal(WAIT, "the job's reschedules", 1, () -> (Integer) db.value(
                "select reschedules from layover.jobs where id = ?", id));
        assertEquals(1, db.update("update layover.job_steps set expires_at = now() - interval '1 second' "
                + "where job_id = ? and name = 'quote'", id));
        assertEquals("expired", db.value("select outcome from layover.steps where job_id = ? and step = 'quote'", id));
        assertEquals(1, db.update("update layover.scheduled_tasks set execution_time = now() where task_instance = ?", id));
        history(db, id);
        assertEquals(List.of("quote 2 | rate 1"), results);
    }

    @Test
    void aDurableSleepEndsTheRunWithoutAnAttemptAndTheResumedRunPassesIt(TestDatabase db) {
        JobType<Work> type = start(db, JobType.builder("sleeper", Work.class).handler((args, ctx) -> {
            run("handler");
            String a = ctx.step("before", String.class, () -> "before " + run("before"));
            ctx.sleep("cool-off", Duration.ofSeconds(2));
            String b = ctx.step("after", String.class, () -> "after " + run("after"));
            results.add(a + " | " + b);
            return Outcome.done();
        }));
        String id = layover.enqueue(type, new Work("x")).id();
        Await.until(WAIT, "the job sleeps", () -> "sleep".equals(db.value(
                "select reschedule_reason from layover.jobs where id = ?", id)));
        Map<String, Object> job = db.row("select * from layover.jobs where id = ?", id);
        assertEquals(0, job.get("attempts"));
        assertEquals(0, job.get("reschedules"), "a sleep is not counted as a reschedule");
        assertTrue(String.valueOf(job.get("reschedule_detail")).startsWith("sleep 'cool-off' until"),
                String.valueOf(job.get("reschedule_detail")));
        Map<String, Object> sleep = db.row("select * from layover.steps where job_id = ? and step = 'cool-off'", id);
        assertEquals("sleep", sleep.get("kind"));
        assertEquals("sleeping", sleep.get("outcome"));
        assertNotNull(sleep.get("wake_at"));
        assertTrue((Boolean) db.value("select run_at >= wake_at - interval '1 millisecond' from layover.jobs j "
                + "join layover.job_steps s on s.job_id = j.id where j.id = ? and s.name = 'cool-off'", id),
                "the job waits until the sleep's end");

        Map<String, Object> h = history(db, id);
        assertEquals(0, h.get("attempts"));
        assertEquals(List.of("before 1 | after 1"), results);
        assertEquals(2, runs.get("handler").get());
    }

    @Test
    void aContextLayoverDidNotMakeRunsEveryStep() throws Exception {
        JobContext own = new JobContext() {
            @Override
            public String jobId() {
                return "j";
            }

            @Override
            public String jobType() {
                return "t";
            }

            @Override
            public int attempt() {
                return 1;
            }

            @Override
            public java.time.Instant runAt() {
                return java.time.Instant.EPOCH;
            }

            @Override
            public String providerKey() {
                return null;
            }

            @Override
            public boolean isStopping() {
                return false;
            }
        };
        AtomicInteger calls = new AtomicInteger();
        own.step("a", Integer.class, calls::incrementAndGet);
        own.step("a", Integer.class, calls::incrementAndGet);
        own.sleep("nap", Duration.ofHours(1));
        assertEquals(2, calls.get());
        assertNotEquals(null, own);
    }
}
