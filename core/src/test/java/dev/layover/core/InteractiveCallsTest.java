package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Interactive calls ({@link InteractiveCalls}) through a started Layover instance, with the real
 * openai-java SDK (no retries of its own) against the fake provider: admitted by the key's fleet-wide
 * state, their failures classified and recorded as a job's are, and each bad input of the contract.
 */
@DatabaseTest
class InteractiveCallsTest {

    private static final String KEY = "openai:chat";
    private static final String LIMITED = "openai:limited";
    private final FakeProvider fake = FakeProvider.start();
    private OpenAIClient client;
    private Layover layover;
    private InteractiveCalls calls;

    @BeforeEach
    void start(TestDatabase db) {
        client = OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(fake.primary().base() + "/v1")
                .maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        layover = Layover.builder(db.dataSource()).workerName("web").threads(1)
                .bucket(LIMITED, BucketSettings.requestsPerMinute(60).withTokensPerMinute(60_000))
                .breakers(BreakerSettings.defaults().withTrialTimeout(Duration.ofSeconds(2)))
                .start();
        calls = layover.interactive();
    }

    @AfterEach
    void stop() {
        layover.stop();
        client.close();
        fake.close();
    }

    private ChatCompletion ask(String text) {
        return client.chat().completions().create(ChatCompletionCreateParams.builder()
                .model("gpt-4o-mini").addUserMessage(text).build());
    }

    @Test
    void anAnswerIsAdmittedReturnedAndItsUsageSettlesTheTokenBucket(TestDatabase db) {
        ChatCompletion answer = calls.call(LIMITED, 500, Duration.ofSeconds(1), () -> ask("hello"));
        assertFalse(answer.choices().isEmpty());
        assertEquals(1, fake.primary().calls());
        assertNotNull(db.value("select used_share from layover.token_buckets where provider_key = ? "
                + "and dimension = 'tokens'", LIMITED), "the reported usage replaced the estimate, as a job's run settles");
        assertNotNull(db.value("select interactive_at from layover.buckets where provider_key = ?", LIMITED),
                "the take stamped the key: background leaves it its share");
    }

    @Test
    void a429OfAnInteractiveCallCoolsTheKeyForTheFleetAndTheNextCallIsNotMade(TestDatabase db) {
        fake.primary().throttledRetryAfter(Duration.ofSeconds(20)).phase(FakeProvider.Phase.THROTTLED);
        CallFailedException failed = assertThrows(CallFailedException.class,
                () -> calls.call(KEY, 0, Duration.ZERO, () -> ask("hello")));
        assertEquals(Outcome.Kind.RATE_LIMITED, failed.kind(), "classified as a handler's 429 is");
        assertTrue(failed.getCause() instanceof com.openai.errors.RateLimitException, String.valueOf(failed.getCause()));
        assertTrue(failed instanceof LayoverException);
        Await.equal(Duration.ofSeconds(5), "cooldowns", 1L,
                () -> db.count("select count(*) from layover.cooldowns where provider_key = ? and until > now()", KEY));

        NotAdmittedException refused = assertThrows(NotAdmittedException.class,
                () -> calls.call(KEY, 0, Duration.ofMillis(200), () -> ask("again")));
        assertEquals(NotAdmittedException.Reason.COOLING, refused.reason());
        assertEquals(KEY, refused.providerKey());
        Instant until = ((Timestamp) db.value("select until from layover.cooldowns where provider_key = ?", KEY)).toInstant();
        assertEquals(until, refused.until(), "cooling until T");
        assertTrue(refused instanceof LayoverException);
        assertEquals(1, fake.primary().calls(), "the second call was not made");
    }

    @Test
    void anOpenBreakerRefusesAtOnceWithoutWaiting() {
        layover.providerStates().forceOpen(KEY, Duration.ofMinutes(5), "test");
        long t0 = System.nanoTime();
        NotAdmittedException e = assertThrows(NotAdmittedException.class, () -> calls.admit(KEY, 0, Duration.ofSeconds(30)));
        assertEquals(NotAdmittedException.Reason.BREAKER_OPEN, e.reason());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10), "no wait for an open breaker");
        assertNotNull(e.until());
    }

    @Test
    void aBucketWithoutAPermitWaitsWhenOneComesWithinTheWaitAndAZeroWaitTriesOnce() {
        calls.admit(LIMITED, 0, Duration.ZERO).succeeded(null); // 60/min, burst 1 s: one permit at once
        NotAdmittedException e = assertThrows(NotAdmittedException.class, () -> calls.admit(LIMITED, 0, Duration.ZERO));
        assertEquals(NotAdmittedException.Reason.NO_PERMIT, e.reason(), e.getMessage());
        assertNotNull(e.until());
        InteractiveCalls.Permit p = calls.admit(LIMITED, 0, Duration.ofSeconds(3));
        assertTrue(p.waited().toMillis() >= 200, "waited for the next permit: " + p.waited());
        assertFalse(p.trial());
        assertNull(p.record(Outcome.done(), null));
    }

    @Test
    void anInstanceNeverStartedThatConfiguresNoBucketIsLimitedByTheRowsTheWorkersWrote(TestDatabase db) {
        try (Layover web = Layover.builder(db.dataSource()).workerName("web-only").migrate(false).build()) {
            InteractiveCalls c = web.interactive();
            c.admit(LIMITED, 0, Duration.ZERO).succeeded(null); // the worker's row: one permit at once
            NotAdmittedException e = assertThrows(NotAdmittedException.class, () -> c.admit(LIMITED, 0, Duration.ZERO));
            assertEquals(NotAdmittedException.Reason.NO_PERMIT, e.reason(), e.getMessage());
            assertEquals("ok", c.call("openai:unlimited", 10, Duration.ZERO, () -> "ok"), "a key without a bucket row");
        }
    }

    @Test
    void badInputIsRefusedBeforeAnyStatement() {
        assertThrows(IllegalArgumentException.class, () -> calls.admit(KEY, -1, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> calls.admit(KEY, 0, Duration.ofMillis(-1)));
        assertThrows(NullPointerException.class, () -> calls.admit(null, 0, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> calls.call(KEY, -5, Duration.ZERO, () -> "x"));
        assertEquals(0, fake.primary().calls());
    }

    @Test
    void aKeyWithNoStateIsAdmittedAndItsStateRowsAreCreatedAsForAJob(TestDatabase db) {
        assertEquals(0L, db.count("select count(*) from layover.breakers where provider_key = 'openai:new'"));
        assertEquals("ok", calls.call("openai:new", 100, Duration.ZERO, () -> "ok"));
        assertEquals(1L, db.count("select count(*) from layover.breakers where provider_key = 'openai:new'"),
                "its breaker row, to count on");
    }

    @Test
    void aCallThatHangsHoldsItsSpentPermitAndIsNotInterrupted() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<String> hanging = pool.submit(() -> calls.call(LIMITED, 0, Duration.ZERO, () -> {
                started.countDown();
                release.await(); // not interrupted by Layover
                return "late";
            }));
            assertTrue(started.await(5, TimeUnit.SECONDS));
            NotAdmittedException e = assertThrows(NotAdmittedException.class,
                    () -> calls.admit(LIMITED, 0, Duration.ZERO));
            assertEquals(NotAdmittedException.Reason.NO_PERMIT, e.reason(), "the hanging call's permit is spent");
            release.countDown();
            assertEquals("late", hanging.get(5, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aPermitNeverRecordedLeaksNothingAndItsTrialExpires(TestDatabase db) {
        calls.admit(LIMITED, 0, Duration.ZERO); // never recorded: the permit drains as any spent one
        calls.admit(LIMITED, 0, Duration.ofSeconds(3)).succeeded(null);

        layover.providerStates().forceOpen(KEY, Duration.ofMillis(200), "test");
        Await.until(Duration.ofSeconds(5), "the open period is over", () -> {
            try {
                return calls.admit(KEY, 0, Duration.ZERO).trial(); // the trial, never recorded
            } catch (NotAdmittedException e) {
                return false;
            }
        });
        NotAdmittedException e = assertThrows(NotAdmittedException.class, () -> calls.admit(KEY, 0, Duration.ZERO));
        assertEquals(NotAdmittedException.Reason.BREAKER_TRIAL, e.reason(), e.getMessage());
        InteractiveCalls.Permit next = calls.admit(KEY, 0, Duration.ofSeconds(10));
        assertTrue(next.trial(), "the unrecorded trial expired after the trial timeout (2 s); the next caller has it");
        next.succeeded(null);
        Await.equal(Duration.ofSeconds(5), "breaker", "closed",
                () -> db.value("select state from layover.breakers where provider_key = ?", KEY));
    }

    @Test
    void aSupplierThrowingAnErrorNoRuleKnowsIsTheCallersOwnError() {
        CallFailedException e = assertThrows(CallFailedException.class,
                () -> calls.call(KEY, 0, Duration.ZERO, () -> {
                    throw new IllegalStateException("bug");
                }));
        assertEquals(Outcome.Kind.RETRY, e.kind());
        assertEquals("bug", e.getCause().getMessage());
    }
}
