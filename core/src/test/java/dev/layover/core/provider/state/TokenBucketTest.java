package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.Model;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Token-true admission end to end: two Layover instances share an Anthropic key limited in input
 * and output tokens per minute, the fake provider enforcing the same limits, calls made through the
 * real anthropic-java SDK, usage read from its {@code Message}.
 */
@DatabaseTest
class TokenBucketTest {

    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketTest.class);
    private static final String KEY = "anthropic:claude-haiku";

    /** A prompt and the output ceiling its request asks for. */
    public record Prompt(String text, int maxTokens) {}

    private final FakeProvider fake = FakeProvider.start();
    private final List<Layover> instances = new ArrayList<>();
    private final AnthropicClient client = AnthropicOkHttpClient.builder().apiKey("k")
            .baseUrl(fake.primary().base().toString()).maxRetries(0).timeout(Duration.ofSeconds(10)).build();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
        client.close();
        fake.close();
    }

    private Message call(Prompt p) {
        return client.messages().create(MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5)
                .maxTokens(p.maxTokens()).addUserMessage(p.text()).build());
    }

    /** The fake counts characters / 4 (rounded up): an estimate that knows its provider's counting. */
    private static TokenEstimate estimate(Prompt p) {
        return TokenEstimate.of((p.text().length() + 3) / 4, p.maxTokens());
    }

    @Test
    void twoInstancesSharingAKeyStayUnderItsInputAndOutputTokenLimits(TestDatabase db) throws Exception {
        int itpm = 9000;
        int otpm = 6000;
        fake.primary().inputTokenLimitPerMinute(itpm).outputTokenLimitPerMinute(otpm).outputShare(0.2, 1.0);
        AtomicInteger calls = new AtomicInteger();
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .tokenEstimate(TokenBucketTest::estimate)
                .handler((p, ctx) -> {
                    calls.incrementAndGet();
                    Message m = call(p);
                    ctx.reportUsage(m);
                    return Outcome.done();
                })
                .build();
        // 3 % under the provider's limits: the provider counts a call when it arrives, the bucket when it admits it
        BucketSettings bucket = BucketSettings.inputTokensPerMinute(itpm * 0.97).withOutputTokensPerMinute(otpm * 0.97);
        for (String name : new String[] {"worker-a", "worker-b"}) {
            instances.add(Workers.builder(db.newDataSource(12), name).register(chat).threads(6).bucket(KEY, bucket).start());
        }
        // input sizes vary 10x (100 to 1,000 tokens), 11,000 in all: more than the 9,000 a minute holds at once
        List<Prompt> prompts = new ArrayList<>();
        long input = 0;
        for (int k = 0; k < 20; k++) {
            int tokens = 100 + (7 * k % 10) * 100;
            prompts.add(new Prompt("p".repeat(4 * tokens), 400));
            input += tokens;
        }
        long started = System.nanoTime();
        instances.get(0).enqueueBatch(chat, prompts.subList(0, 10));
        instances.get(1).enqueueBatch(chat, prompts.subList(10, 20));
        Await.equal(Duration.ofSeconds(90), "finished jobs", 20L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'chat'"));
        double seconds = (System.nanoTime() - started) / 1e9;

        LOG.info("MEASURED two instances, {} input tokens/min and {} output tokens/min: {} calls, {} 429s, {} input and "
                + "{} output tokens in {} s", itpm, otpm, fake.primary().calls(), fake.primary().rateLimited(),
                fake.primary().inputTokens(), fake.primary().outputTokens(), String.format("%.1f", seconds));
        assertEquals(0, fake.primary().rateLimited(), "the provider, enforcing the same token limits, never refused");
        assertEquals(20, fake.primary().successes());
        assertEquals(20, calls.get(), "each job called once");
        assertEquals(input, fake.primary().inputTokens());
        Map<String, Object> h = db.row("select count(*) filter (where outcome = 'completed') as completed, "
                + "sum(input_tokens) as input, sum(output_tokens) as output, sum(cached_input_tokens) as cached, "
                + "sum(estimated_tokens) as estimated from layover.job_history where job_type = 'chat'");
        assertEquals(20L, h.get("completed"));
        assertEquals(java.math.BigDecimal.valueOf(fake.primary().inputTokens()), h.get("input"),
                "history: the input each call reported");
        assertEquals(java.math.BigDecimal.valueOf(fake.primary().outputTokens()), h.get("output"));
        assertEquals(java.math.BigDecimal.ZERO, h.get("cached"));
        assertEquals(java.math.BigDecimal.valueOf(input + 20 * 400), h.get("estimated"), "input estimate + ceiling");
        assertTrue(fake.primary().outputTokens() < 20 * 400, "answers used less than their ceilings");
    }

    @Test
    void theProvidersRemainingTokensCorrectDriftFromCallsLayoverDidNotSee(TestDatabase db) throws Exception {
        fake.primary().inputTokenLimitPerMinute(9000);
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .tokenEstimate(TokenBucketTest::estimate)
                .handler((p, ctx) -> {
                    com.anthropic.core.http.HttpResponseFor<Message> r = client.messages().withRawResponse()
                            .create(MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5).maxTokens(p.maxTokens())
                                    .addUserMessage(p.text()).build());
                    ctx.reportUsage(r.parse());
                    Map<String, List<String>> headers = new java.util.HashMap<>();
                    for (String name : r.headers().names()) {
                        headers.put(name, r.headers().values(name));
                    }
                    dev.layover.core.provider.RateLimitHeaders.read(headers, java.time.Instant.now())
                            .ifPresent(ctx::reportLimits);
                    return Outcome.done();
                })
                .build();
        Layover layover = Workers.builder(db.newDataSource(4), "worker-a").register(chat).threads(1)
                .bucket(KEY, BucketSettings.inputTokensPerMinute(9000)).start();
        instances.add(layover);
        // another application spends 8,000 of the key's input tokens, unseen by the bucket
        call(new Prompt("o".repeat(4 * 8000), 16));
        layover.enqueue(chat, new Prompt("s".repeat(4 * 100), 16));
        Await.equal(Duration.ofSeconds(20), "first job", 1L, () -> db.count("select count(*) from layover.job_history"));
        double free = ((Number) db.value("select free_now from layover.token_buckets where provider_key = ?", KEY))
                .doubleValue();
        // without the correction it would hold about 8,900 free; the provider has refilled 150 a second since
        assertTrue(free < 3000, "the bucket follows the provider's count (8,100 of 9,000 used), free " + free);
        // a call of 3,000 input tokens would be refused by the provider now: the bucket holds it back instead
        layover.enqueue(chat, new Prompt("b".repeat(4 * 3000), 16));
        Await.equal(Duration.ofSeconds(30), "second job", 2L, () -> db.count("select count(*) from layover.job_history"));
        assertEquals(0, fake.primary().rateLimited(), "the provider never refused");
        assertEquals(1L, db.count("select count(*) from layover.job_history where reschedules = 0"
                + " and started_at > enqueued_at + interval '1 second'"),
                "the second job waited for its tokens, without a reschedule");
    }

    /** A call through the SDK whose usage and rate-limit headers are reported. */
    private Message callReporting(Prompt p, dev.layover.core.JobContext ctx) {
        com.anthropic.core.http.HttpResponseFor<Message> r = client.messages().withRawResponse()
                .create(MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5).maxTokens(p.maxTokens())
                        .addUserMessage(p.text()).build());
        Message m = r.parse();
        ctx.reportUsage(m);
        Map<String, List<String>> headers = new java.util.HashMap<>();
        for (String name : r.headers().names()) {
            headers.put(name, r.headers().values(name));
        }
        dev.layover.core.provider.RateLimitHeaders.read(headers, java.time.Instant.now()).ifPresent(ctx::reportLimits);
        return m;
    }

    @Test
    void withoutAConfiguredBucketTheFleetLearnsTheTokenLimitsTheHeadersState(TestDatabase db) throws Exception {
        fake.primary().inputTokenLimitPerMinute(9000);
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .tokenEstimate(TokenBucketTest::estimate)
                .handler((p, ctx) -> {
                    callReporting(p, ctx);
                    return Outcome.done();
                })
                .build();
        Layover layover = Workers.builder(db.newDataSource(4), "worker-a").register(chat).threads(1).start();
        instances.add(layover);
        layover.enqueue(chat, new Prompt("s".repeat(4 * 100), 16));
        Await.equal(Duration.ofSeconds(20), "first job", 1L, () -> db.count("select count(*) from layover.job_history"));
        Map<String, Object> row = db.row("select requests_per_minute, tokens_per_minute, input_tokens_per_minute,"
                + " output_tokens_per_minute, learned_until > now() as learned from layover.buckets where provider_key = ?", KEY);
        assertEquals(9000 * CooldownSettings.DEFAULT_LEARNED_PACE_SHARE, ((Number) row.get("input_tokens_per_minute"))
                .doubleValue(), 1e-6, "the stated 9,000 input tokens/min at the learned pace's share: " + row);
        assertEquals(true, row.get("learned"), "a learned pace, lapsing unless renewed: " + row);
        assertNull(row.get("requests_per_minute"), "no request limit was stated");
        assertNull(row.get("tokens_per_minute"));

        // two calls of 4,600 input tokens: the provider would refuse the second one sent at once
        // (8,900 left after the first call, 4,300 after the second); the learned bucket holds it back
        layover.enqueue(chat, new Prompt("b".repeat(4 * 4600), 16));
        layover.enqueue(chat, new Prompt("c".repeat(4 * 4600), 16));
        Await.equal(Duration.ofSeconds(30), "all three", 3L, () -> db.count("select count(*) from layover.job_history"));
        assertEquals(0, fake.primary().rateLimited(), "the provider never refused");
        assertEquals(1L, db.count("select count(*) from layover.job_history where reschedules = 0"
                + " and started_at > enqueued_at + interval '1 second'"),
                "the third job waited for its input tokens, without a reschedule");
        assertEquals(0L, db.count("select count(*) from layover.job_history where attempts > 0"), "no attempt spent");
    }

    @Test
    void headersNeverOverwriteAConfiguredBucket(TestDatabase db) throws Exception {
        fake.primary().inputTokenLimitPerMinute(9000);
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .tokenEstimate(TokenBucketTest::estimate)
                .handler((p, ctx) -> {
                    callReporting(p, ctx);
                    return Outcome.done();
                })
                .build();
        Layover layover = Workers.builder(db.newDataSource(4), "worker-a").register(chat).threads(1)
                .bucket(KEY, BucketSettings.inputTokensPerMinute(6000)).start();
        instances.add(layover);
        layover.enqueue(chat, new Prompt("s".repeat(4 * 100), 16));
        Await.equal(Duration.ofSeconds(20), "first job", 1L, () -> db.count("select count(*) from layover.job_history"));
        assertEquals(Map.of("input_tokens_per_minute", 6000.0, "configured", true), db.row("select input_tokens_per_minute,"
                + " learned_until is null as configured from layover.buckets where provider_key = ?", KEY),
                "the configured 6,000 stays (learned_until null: configured)");
    }

    @Test
    void aCallLargerThanTheBucketCanEverAdmitParksRejectedWithTheNumbers(TestDatabase db) throws Exception {
        fake.primary().inputTokenLimitPerMinute(9000);
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .tokenEstimate(TokenBucketTest::estimate)
                .handler((p, ctx) -> {
                    ctx.reportUsage(call(p));
                    return Outcome.done();
                })
                .build();
        Layover layover = Workers.builder(db.newDataSource(4), "worker-a").register(chat)
                .bucket(KEY, BucketSettings.inputTokensPerMinute(9000)).start();
        instances.add(layover);
        layover.enqueue(chat, new Prompt("x".repeat(4 * 10_000), 100));
        layover.enqueue(chat, new Prompt("small", 100));
        Await.equal(Duration.ofSeconds(20), "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Await.equal(Duration.ofSeconds(20), "history", 2L, () -> db.count("select count(*) from layover.job_history"));
        Map<String, Object> d = db.row("select failure_type, error_class, error_message, attempts, reschedules "
                + "from layover.dead_letters");
        assertEquals("rejected", d.get("failure_type"));
        assertEquals("TokenEstimateTooLarge", d.get("error_class"));
        assertEquals("the call's token reservation (10000 input + 100 output tokens: 10000 input tokens) is larger than "
                + KEY + "'s bucket can ever admit (input tokens capacity 9000 = 9000/min x token burst 60 s); it would wait "
                + "forever", d.get("error_message"));
        assertEquals(0, d.get("reschedules"), "refused at once, never waiting");
        assertEquals(1, fake.primary().calls(), "only the small one called");
    }

    @Test
    void aCallThatAnsweredAndThenFailedParksWithItsTokens(TestDatabase db) throws Exception {
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .tokenEstimate(TokenBucketTest::estimate)
                .handler((p, ctx) -> {
                    ctx.reportUsage(call(p));
                    return Outcome.rejected("the answer did not validate");
                })
                .build();
        Layover layover = Workers.builder(db.newDataSource(4), "worker-a").register(chat)
                .bucket(KEY, BucketSettings.inputTokensPerMinute(9000)).start();
        instances.add(layover);
        layover.enqueue(chat, new Prompt("a".repeat(400), 100));
        Await.equal(Duration.ofSeconds(20), "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Await.equal(Duration.ofSeconds(20), "history", 1L, () -> db.count("select count(*) from layover.job_history"));
        Map<String, Object> d = db.row("select input_tokens, output_tokens, cached_input_tokens, estimated_tokens "
                + "from layover.dead_letters");
        assertEquals(100L, d.get("input_tokens"), "400 characters, as the fake counts them");
        assertTrue((Long) d.get("output_tokens") > 0, d.toString());
        assertEquals(0L, d.get("cached_input_tokens"));
        assertEquals(200L, d.get("estimated_tokens"), "100 input + 100 ceiling");
        assertEquals(d, db.row("select input_tokens, output_tokens, cached_input_tokens, estimated_tokens "
                + "from layover.job_history"), "the dead letter and the history row say the same");
    }

    @Test
    void theOlderOneNumberTokenCostIsGuardedToo(TestDatabase db) throws Exception {
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .handler((p, ctx) -> {
                    ctx.reportUsage(call(p));
                    return Outcome.done();
                })
                .build();
        Layover layover = Workers.builder(db.newDataSource(4), "worker-a").register(chat)
                .bucket(KEY, BucketSettings.tokensPerMinute(6000))
                .tokenCost(chat, p -> switch (p.text()) {
                    case "negative" -> -1;
                    case "huge" -> Long.MAX_VALUE;
                    default -> p.text().length();
                })
                .start();
        instances.add(layover);
        for (String t : new String[] {"negative", "huge", "fine"}) {
            layover.enqueue(chat, new Prompt(t, 20));
        }
        Await.equal(Duration.ofSeconds(20), "history", 3L, () -> db.count("select count(*) from layover.job_history"));
        assertEquals(Map.of("outcome", "completed", "estimated_tokens", 0L), db.row("select outcome, estimated_tokens "
                + "from layover.job_history where input_tokens = 2"), "a negative cost (\"negative\": 2 tokens) reserves "
                + "nothing, the job runs");
        assertEquals("rejected", db.value("select failure_type from layover.dead_letters"), "above 10^9: too large");
        assertEquals(1L, db.count("select count(*) from layover.job_history where estimated_tokens = 4 and outcome = 'completed'"));
        assertEquals(2, fake.primary().calls());
    }

    @Test
    void aBrokenEstimateOrAResponseWithoutUsageLosesNoJob(TestDatabase db) throws Exception {
        JobType<Prompt> chat = JobType.builder("chat", Prompt.class)
                .providerKey(KEY)
                .tokenEstimate(p -> switch (p.text()) {
                    case "throws" -> throw new IllegalStateException("no tokenizer for this model");
                    case "negative" -> TokenEstimate.of(-5, p.maxTokens());
                    case "null" -> null;
                    default -> estimate(p);
                })
                .handler((p, ctx) -> {
                    Message m = call(p);
                    if (p.text().equals("no usage")) {
                        assertTrue(ctx.reportUsage("a response without usage").isEmpty());
                    } else {
                        assertTrue(ctx.reportUsage(m).isPresent());
                    }
                    return Outcome.done();
                })
                .build();
        Layover layover = Workers.builder(db.newDataSource(4), "worker-a").register(chat)
                .bucket(KEY, BucketSettings.inputTokensPerMinute(6000)).start();
        instances.add(layover);
        for (String t : new String[] {"throws", "negative", "null", "no usage"}) {
            layover.enqueue(chat, new Prompt(t, 50));
        }
        Await.equal(Duration.ofSeconds(20), "completed", 4L,
                () -> db.count("select count(*) from layover.job_history where outcome = 'completed'"));
        assertEquals(0L, db.count("select count(*) from layover.dead_letters"), "no job parked");
        assertEquals(3L, db.count("select count(*) from layover.job_history where estimated_tokens = 0 and input_tokens > 0"),
                "a failed estimate (thrown, negative, null) reserves nothing, the job runs, its reported usage is recorded");
        assertEquals(1L, db.count("select count(*) from layover.job_history where estimated_tokens = 2 + 50 "
                + "and input_tokens is null"), "no usage in the response: nothing recorded, the reservation stands");
    }
}
