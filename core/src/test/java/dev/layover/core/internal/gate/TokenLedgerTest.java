package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.internal.jobs.RunTokens;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.spi.Db;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestClock;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The token ledger's statements on a real database, with a clock the test holds still: every
 * dimension taken at once or not at all, reservations settled by reported usage, the debt rule,
 * estimates too large for a bucket, and two gates (two JVMs) sharing one key.
 */
@DatabaseTest
class TokenLedgerTest {

    private static final String KEY = "anthropic:claude-sonnet";
    private final TestClock clock = new TestClock(Instant.now().truncatedTo(ChronoUnit.MILLIS));

    /** 10 requests/s (capacity 10); 6,000 tokens, 3,000 input and 1,200 output tokens a minute, capacity a minute of each. */
    private static final BucketSettings FOUR = BucketSettings.requestsPerSecond(10).withTokensPerMinute(6000)
            .withInputTokensPerMinute(3000).withOutputTokensPerMinute(1200);

    private ProviderGate gate(TestDatabase db, String name, BucketSettings b) {
        ProviderGate g = new ProviderGate(new Db(db.dataSource()), clock, name, new ProviderGate.Config(
                BreakerSettings.defaults(), Map.of(), CooldownSettings.defaults(), Map.of(KEY, b), List.of()));
        g.start();
        return g;
    }

    private Instant tat(TestDatabase db, String column) {
        return ((Timestamp) db.value("select " + column + " from layover.buckets where provider_key = ?", KEY)).toInstant();
    }

    private Map<String, Object> tats(TestDatabase db) {
        return db.row("select request_tat, token_tat, input_tat, output_tat from layover.buckets where provider_key = ?", KEY);
    }

    private static double seconds(Instant from, Instant to) {
        return Duration.between(from, to).toNanos() / 1e9;
    }

    @Test
    void everyDimensionIsTakenInOneStatementAndNothingWhenOneRefuses(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", FOUR);
        try {
            Instant now = clock.instant();
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 0));
            long before = g.inlineStatements();
            ProviderRun a = g.newRun(KEY, "t", "a", 1, TokenEstimate.of(1000, 500), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, a.estimate(), a));
            assertEquals(before + 1, g.inlineStatements(), "requests and three token dimensions: one statement");
            assertEquals(15.0, seconds(now, tat(db, "token_tat")), 1e-3, "1,500 tokens at 100/s");
            assertEquals(20.0, seconds(now, tat(db, "input_tat")), 1e-3, "1,000 input tokens at 50/s");
            assertEquals(25.0, seconds(now, tat(db, "output_tat")), 1e-3, "500 output tokens at 20/s");
            assertEquals(0.2, seconds(now, tat(db, "request_tat")), 1e-3, "two requests at 10/s");

            // output has 700 of 1,200 free: a call needing 800 of each is refused, and takes nothing anywhere
            Map<String, Object> kept = tats(db);
            Admission refused = g.admitEndpoint(KEY, 800);
            assertInstanceOf(Admission.Wait.class, refused);
            assertEquals(kept, tats(db), "nothing taken from requests, tokens or input when output refuses");

            // a call told when every dimension would admit it, holding nothing
            ProviderRun b = g.newRun(KEY, "t", "b", 1, TokenEstimate.of(100, 800), 1);
            Admission.Wait w = (Admission.Wait) g.admitEndpoint(KEY, b.estimate(), b);
            assertEquals("bucket", w.reason());
            assertEquals(now.plusSeconds(5), w.runAt(), "output: 800 fit once 500 + 800 - 1,200 = 100 drained, 5 s");
            assertTrue(w.detail().contains("1200 output tokens/min"), w.detail());
            assertEquals(kept, tats(db), "nothing booked");
        } finally {
            g.stop();
        }
    }

    @Test
    void reportedUsageReplacesTheReservationGivingBackOrCharging(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", FOUR);
        try {
            Instant now = clock.instant();
            ProviderRun a = g.newRun(KEY, "t", "a", 1, TokenEstimate.of(1000, 500), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, a.estimate(), a));
            // Anthropic's convention: input_tokens excludes cache reads (200), which ITPM does not count
            a.reportUsage(new TokenUsage(Provider.ANTHROPIC, 600, 100, 200, 0));
            long before = g.inlineStatements();
            RunTokens t = a.settle();
            assertEquals(before + 1, g.inlineStatements(), "every dimension settled in one statement");
            assertEquals(new RunTokens(800L, 100L, 200L, 1500L), t, "for the history: all input, output, cached, reserved");
            assertEquals(7.0, seconds(now, tat(db, "token_tat")), 1e-3, "700 of 1,500 counted: 800 given back");
            assertEquals(12.0, seconds(now, tat(db, "input_tat")), 1e-3, "600 of 1,000 input counted");
            assertEquals(5.0, seconds(now, tat(db, "output_tat")), 1e-3, "100 of 500 output counted");
            a.settle();
            assertEquals(before + 1, g.inlineStatements(), "settling again changes nothing");

            // an under-estimate is charged
            ProviderRun b = g.newRun(KEY, "t", "b", 1, TokenEstimate.of(100, 100), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, b.estimate(), b));
            Instant output = tat(db, "output_tat");
            b.reportUsage(TokenUsage.of(Provider.ANTHROPIC, 100, 300));
            b.settle();
            // its reservation was the key's share of its need (a's calls used 20 % of their output ceiling: 20 of 100)
            assertEquals(14.0, seconds(output, tat(db, "output_tat")), 1e-3, "280 output tokens over: charged, 14 s at 20/s");

            // a report far over the reservation is charged one minute of each limit at most, and the run goes on
            ProviderRun c = g.newRun(KEY, "t", "c", 1, TokenEstimate.of(10, 10), 1);
            clock.advance(Duration.ofSeconds(60)); // everything so far drained
            Instant later = clock.instant();
            // each take reserves the key's share of its need (the shares a's and b's reports taught)
            Map<String, Object> share = db.row("select token_share, input_share, output_share from layover.buckets"
                    + " where provider_key = ?", KEY);
            double st = (Double) share.get("token_share");
            double si = (Double) share.get("input_share");
            double so = (Double) share.get("output_share");
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, TokenEstimate.of(10, 10), null));
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, c.estimate(), c));
            c.reportUsage(TokenUsage.of(Provider.ANTHROPIC, 100 * 1000, 100 * 1000)); // 10,000x the reservation
            RunTokens big = c.settle();
            assertEquals(100_000L, big.input(), "the history keeps the whole report");
            assertEquals(2 * 10 * so / 20 + 60.0, seconds(later, tat(db, "output_tat")), 2e-2,
                    "output: what the two takes reserved + 1,200 charged");
            assertEquals(2 * 10 * si / 50 + 60.0, seconds(later, tat(db, "input_tat")), 2e-2,
                    "input: what the two takes reserved + 3,000 charged");
            assertEquals(2 * 20 * st / 100 + 60.0, seconds(later, tat(db, "token_tat")), 2e-2,
                    "tokens: what the two takes reserved + 6,000 charged");

            // without a report the reservation stays the call's cost
            ProviderRun d = g.newRun(KEY, "t", "d", 1, TokenEstimate.of(10, 10), 1);
            assertInstanceOf(Admission.Wait.class, g.admitEndpoint(KEY, d.estimate(), d), "the charge holds the key back");
            Map<String, Object> kept = tats(db);
            before = g.inlineStatements();
            assertEquals(new RunTokens(null, null, null, 20L), d.settle());
            assertEquals(before, g.inlineStatements(), "no usage: no statement");
            assertEquals(kept, tats(db));
        } finally {
            g.stop();
        }
    }

    @Test
    void aTakeReservesTheShareOfItsNeedTheKeysCallsUseAndSettlesFromThere(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", FOUR);
        try {
            Instant now = clock.instant();
            // one call whose answer used half its ceiling: the shares start at what it counted / needed
            ProviderRun a = g.newRun(KEY, "t", "a", 1, TokenEstimate.of(1000, 400), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, a.estimate(), a));
            a.reportUsage(new TokenUsage(Provider.OPENAI, 1000, 200, 0, 0));
            a.settle();
            Map<String, Object> shares = db.row("select token_share, input_share, output_share from layover.buckets"
                    + " where provider_key = ?", KEY);
            assertEquals(1200.0 / 1400, (Double) shares.get("token_share"), 1e-9);
            assertEquals(1.0, (Double) shares.get("input_share"), 1e-9);
            assertEquals(0.5, (Double) shares.get("output_share"), 1e-9);
            assertEquals(0.5, ((Number) db.value("select used_share from layover.token_buckets where provider_key = ?"
                    + " and dimension = 'output_tokens'", KEY)).doubleValue(), 1e-9, "the view shows it");

            // output is booked 10 s ahead (200 of 1,200 at 20/s): 1,200 more do not fit now, but the
            // 600 the key's calls use of such a need (output share 0.5) do, so the call goes holding 600
            ProviderRun b = g.newRun(KEY, "t", "b", 1, TokenEstimate.of(100, 1200), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, b.estimate(), b));
            assertEquals(40.0, seconds(now, tat(db, "output_tat")), 1e-3, "10 s + 600 at 20/s");
            b.reportUsage(new TokenUsage(Provider.OPENAI, 100, 600, 0, 0));
            b.settle();
            assertEquals(40.0, seconds(now, tat(db, "output_tat")), 1e-3, "600 booked, 600 counted: nothing moves");

            // the next one's 600 fit at 40 s - (1,200 - 600) / 20 = 10 s: it is told so, holding nothing
            ProviderRun c = g.newRun(KEY, "t", "c", 1, TokenEstimate.of(100, 1200), 1);
            Admission.Wait w = assertInstanceOf(Admission.Wait.class, g.admitEndpoint(KEY, c.estimate(), c));
            assertEquals(now.plusSeconds(10), w.runAt());
            assertEquals(40.0, seconds(now, tat(db, "output_tat")), 1e-3, "nothing booked");

            // at that moment it takes its 600, and settles from there
            clock.set(w.runAt());
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, c.estimate(), c));
            assertEquals(70.0, seconds(now, tat(db, "output_tat")), 1e-3, "its 600 taken");
            c.reportUsage(new TokenUsage(Provider.OPENAI, 100, 300, 0, 0));
            c.settle();
            assertEquals(55.0, seconds(now, tat(db, "output_tat")), 1e-3, "300 of the 600 taken given back");
        } finally {
            g.stop();
        }
    }

    @Test
    void theProvidersRemainingTokensTightenTheBucketAndNeverLoosenIt(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", FOUR);
        try {
            Instant now = clock.instant();
            ProviderRun a = g.newRun(KEY, "t", "a", 1, TokenEstimate.of(100, 100), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, a.estimate(), a));
            assertEquals(2.0, seconds(now, tat(db, "input_tat")), 1e-3);
            // calls made outside Layover: the provider counts 2,000 of its 3,000 input tokens used
            a.reportLimits(dev.layover.core.provider.RateLimitHeaders.read(Map.of(
                    "anthropic-ratelimit-input-tokens-limit", List.of("3000"),
                    "anthropic-ratelimit-input-tokens-remaining", List.of("1000"),
                    "anthropic-ratelimit-output-tokens-remaining", List.of("1190")), now).orElseThrow());
            long before = g.inlineStatements();
            a.settle();
            assertEquals(before + 1, g.inlineStatements(), "one statement corrects every reported dimension");
            assertEquals(40.0, seconds(now, tat(db, "input_tat")), 1e-3, "2,000 used at 50/s");
            assertEquals(5.0, seconds(now, tat(db, "output_tat")), 1e-3, "output kept: 100 booked > 10 the provider counts");
            ProviderRun b = g.newRun(KEY, "t", "b", 1, TokenEstimate.of(100, 100), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, b.estimate(), b));
            b.reportLimits(dev.layover.core.provider.RateLimitHeaders.read(Map.of(
                    "anthropic-ratelimit-input-tokens-remaining", List.of("2990")), now).orElseThrow());
            b.settle();
            assertEquals(42.0, seconds(now, tat(db, "input_tat")), 1e-3, "a provider that counts less never loosens it");
        } finally {
            g.stop();
        }
    }

    @Test
    void reservedUsedAndRefundedTokensAreCounted(TestDatabase db) {
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        ProviderGate g = new ProviderGate(new Db(db.dataSource()), clock, "worker-a", new ProviderGate.Config(
                BreakerSettings.defaults(), Map.of(), CooldownSettings.defaults(), Map.of(KEY, FOUR), List.of()),
                dev.layover.core.metrics.MicrometerMetrics.of(registry));
        g.start();
        try {
            ProviderRun a = g.newRun(KEY, "t", "a", 1, TokenEstimate.of(1000, 500), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, a.estimate(), a));
            a.reportUsage(TokenUsage.of(Provider.ANTHROPIC, 900, 100));
            a.settle();
            ProviderRun b = g.newRun(KEY, "t", "b", 1, TokenEstimate.of(10, 10), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, b.estimate(), b));
            b.reportUsage(TokenUsage.of(Provider.ANTHROPIC, 50, 30));
            b.settle();
            java.util.function.Function<String, Double> c = kind -> registry.find("layover.tokens")
                    .tags("provider_key", KEY, "kind", kind).counter().count();
            // b's reservation is the key's share of its need after a's report: 20 x (1,000 / 1,500) = 13
            assertEquals(1513.0, c.apply("reserved"));
            assertEquals(1080.0, c.apply("used"));
            assertEquals(500.0, c.apply("refunded"));
            assertEquals(67.0, c.apply("charged"), "b used 80 of its 13");
        } finally {
            g.stop();
        }
    }

    @Test
    void aRefinedEstimateMovesTheReservationAtOnce(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", FOUR);
        try {
            Instant now = clock.instant();
            ProviderRun a = g.newRun(KEY, "t", "a", 1, TokenEstimate.of(1000, 500), 1);
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, a.estimate(), a));
            a.refine(TokenEstimate.of(400, 300));
            assertEquals(7.0, seconds(now, tat(db, "token_tat")), 1e-3);
            assertEquals(8.0, seconds(now, tat(db, "input_tat")), 1e-3);
            assertEquals(15.0, seconds(now, tat(db, "output_tat")), 1e-3);
            a.reportUsage(TokenUsage.of(Provider.ANTHROPIC, 400, 100));
            a.settle();
            assertEquals(5.0, seconds(now, tat(db, "output_tat")), 1e-3, "settled against the refined reservation");
            OutcomeException e = assertThrows(OutcomeException.class, () -> a.refine(TokenEstimate.of(5000, 10)));
            assertEquals(Outcome.Kind.REJECTED, e.outcome().kind());
            assertTrue(e.outcome().reason().contains("5000 input tokens") && e.outcome().reason().contains("capacity 3000"),
                    e.outcome().reason());
        } finally {
            g.stop();
        }
    }

    @Test
    void aReservationLargerThanTheCapacityIsTooLargeAndTakesNothing(TestDatabase db) {
        ProviderGate g = gate(db, "worker-a", FOUR);
        try {
            assertInstanceOf(Admission.Go.class, g.admitEndpoint(KEY, 0));
            Map<String, Object> kept = tats(db);
            Admission a = g.admitEndpoint(KEY, TokenEstimate.of(2000, 1500), null);
            Admission.TooLarge t = assertInstanceOf(Admission.TooLarge.class, a);
            assertEquals("the call's token reservation (2000 input + 1500 output tokens: 1500 output tokens) is larger "
                    + "than " + KEY + "'s bucket can ever admit (output tokens capacity 1200 = 1200/min x token burst 60 s); "
                    + "it would wait forever", t.detail());
            assertEquals(kept, tats(db));
            assertInstanceOf(Admission.TooLarge.class, g.admitEndpoint(KEY, TokenUsage.MAX_COUNT), "an absurd estimate too");
        } finally {
            g.stop();
        }
    }

    @Test
    void twoGatesOnOneKeyNeverTogetherAdmitMoreThanTheCapacity(TestDatabase db) throws Exception {
        BucketSettings b = BucketSettings.inputTokensPerMinute(6000).withOutputTokensPerMinute(3000);
        ProviderGate ga = gate(db, "worker-a", b);
        ProviderGate gb = gate(db, "worker-b", b);
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            AtomicLong input = new AtomicLong();
            AtomicLong output = new AtomicLong();
            AtomicLong reservedInput = new AtomicLong();
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Future<Integer>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                ProviderGate g = t % 2 == 0 ? ga : gb;
                int seed = t;
                done.add(pool.submit(() -> {
                    Random r = new Random(seed);
                    start.await();
                    int admitted = 0;
                    for (int i = 0; i < 40; i++) {
                        TokenEstimate e = TokenEstimate.of(50 + r.nextInt(450), 20 + r.nextInt(180));
                        Admission a = g.admitEndpoint(KEY, e, null);
                        if (a instanceof Admission.Go) {
                            reservedInput.addAndGet(e.inputTokens());
                            input.addAndGet(e.inputTokens());
                            output.addAndGet(e.outputCeiling());
                            admitted++;
                        } else {
                            assertInstanceOf(Admission.Wait.class, a);
                        }
                    }
                    return admitted;
                }));
            }
            int admitted = 0;
            for (Future<Integer> f : done) {
                admitted += f.get();
            }
            // the clock stands still: what is admitted now must fit the capacities
            assertTrue(input.get() <= 6000, "input admitted by both together " + input + " <= capacity 6000");
            assertTrue(output.get() <= 3000, "output ceilings admitted together " + output + " <= capacity 3000");
            assertTrue(input.get() > 6000 - 500 || output.get() > 3000 - 200,
                    "work-conserving: one dimension was filled (input " + input + ", output " + output + ")");
            assertTrue(admitted < threads * 40, "most calls wait");
            assertEquals(reservedInput.get() / 100.0, seconds(clock.instant(), tat(db, "input_tat")), 1e-3,
                    "the bucket holds exactly the reservations handed out, none lost between the two");
        } finally {
            pool.shutdownNow();
            ga.stop();
            gb.stop();
        }
    }
}
