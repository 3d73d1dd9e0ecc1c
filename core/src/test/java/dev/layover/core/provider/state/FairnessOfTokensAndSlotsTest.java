package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Fair share where the key's limit is not a request rate (docs/fairness.md), with two Layover
 * instances on a real Postgres: a bucket that limits tokens (each tenant gets the key's tokens in
 * proportion to its weight, whatever the size of its calls), and a concurrency limit (the free
 * slots go round the tenants with waiting jobs).
 */
@DatabaseTest
class FairnessOfTokensAndSlotsTest {

    private static final String KEY = "openai:gpt-4o-mini";

    /** A job of a tenant, with the tokens its call takes. */
    public record Call(String tenant, int n, int tokens) {}

    private final List<Layover> instances = new ArrayList<>();
    private final ConcurrentLinkedQueue<Call> started = new ConcurrentLinkedQueue<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger maxInFlight = new AtomicInteger();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private JobType<Call> type(boolean fair, Duration callTakes) {
        JobType.Builder<Call> b = JobType.builder(fair ? "fair-call" : "fifo-call", Call.class)
                .providerKey(KEY)
                .tokenEstimate(c -> TokenEstimate.total(c.tokens()))
                .handler((c, ctx) -> {
                    started.add(c);
                    int now = inFlight.incrementAndGet();
                    maxInFlight.accumulateAndGet(now, Math::max);
                    try {
                        if (!callTakes.isZero()) {
                            Thread.sleep(callTakes.toMillis()); // the provider call
                        }
                    } finally {
                        inFlight.decrementAndGet();
                    }
                    return Outcome.done();
                });
        if (fair) {
            b.fairnessKey(c -> "tenant:" + c.tenant());
        }
        return b.build();
    }

    private static List<Call> calls(String tenant, int n, int tokens) {
        List<Call> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new Call(tenant, i, tokens));
        }
        return out;
    }

    /** Per tenant, the tokens of the first calls started until {@code tokens} were started in all. */
    private Map<String, Integer> tokensOfTheFirst(int tokens) {
        Map<String, Integer> out = new HashMap<>();
        int sum = 0;
        for (Call c : started) {
            if (sum >= tokens) {
                break;
            }
            sum += c.tokens();
            out.merge(c.tenant(), c.tokens(), Integer::sum);
        }
        return out;
    }

    private JobType<Call> tokenInstances(TestDatabase db, boolean fair) {
        JobType<Call> type = type(fair, Duration.ZERO);
        // 6,000 tokens a second, at most one second's worth at once; requests do not bind
        BucketSettings bucket = BucketSettings.tokensPerMinute(360_000).withTokenBurst(Duration.ofSeconds(1));
        for (String name : new String[] {"worker-a", "worker-b"}) {
            instances.add(Workers.builder(db.newDataSource(6), name).register(type).bucket(KEY, bucket).start());
        }
        return type;
    }

    @Test
    void aTokenLimitIsSharedInTokensNotInCalls(TestDatabase db) {
        JobType<Call> type = tokenInstances(db, true);
        List<Call> all = calls("big", 100, 900); // in one statement, the big calls first
        all.addAll(calls("small", 200, 100));
        instances.get(0).enqueueBatch(type, all);
        assertEquals(100L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'fair-call'"
                + " and token_estimate = '{900,900,900}'::float8[]"), "each job is stored with its estimate");
        Await.equal(Duration.ofSeconds(60), "18,000 tokens started", true,
                () -> started.stream().mapToInt(Call::tokens).sum() >= 18_000);

        // while both wait, each tenant gets about half of the tokens (the small one: nine calls for each big one)
        Map<String, Integer> first = tokensOfTheFirst(18_000);
        int big = first.getOrDefault("big", 0);
        int small = first.getOrDefault("small", 0);
        assertTrue(big >= 6_000 && big <= 12_000, "big had " + big + " of the first 18,000 tokens: " + first);
        assertTrue(small >= 6_000 && small <= 12_000, "small had " + small + " of the first 18,000 tokens: " + first);
        assertEquals(0L, db.count("select count(*) from layover.dead_letters"));
        Object picks = db.value("select picks from layover.fair_lines where provider_key = ?", KEY);
        assertTrue(picks != null && ((Number) picks).longValue() > 0, "the key's fair queue admitted them: " + picks);
    }

    @Test
    void withoutAFairnessKeyATokenLimitIsFirstComeFirstServed(TestDatabase db) {
        JobType<Call> type = tokenInstances(db, false);
        List<Call> all = calls("big", 100, 900);
        all.addAll(calls("small", 200, 100));
        instances.get(0).enqueueBatch(type, all);
        Await.equal(Duration.ofSeconds(60), "18,000 tokens started", true,
                () -> started.stream().mapToInt(Call::tokens).sum() >= 18_000);
        Map<String, Integer> first = tokensOfTheFirst(18_000);
        assertTrue(first.getOrDefault("big", 0) >= 15_000, "the big backlog first, in enqueue order: " + first);
    }

    @Test
    void theSlotsOfAConcurrencyLimitGoRoundTheTenants(TestDatabase db) {
        JobType<Call> type = type(true, Duration.ofMillis(40));
        for (String name : new String[] {"worker-a", "worker-b"}) {
            instances.add(Workers.builder(db.newDataSource(6), name).register(type).concurrencyLimit(KEY, 2).start());
        }
        List<Call> all = calls("a", 60, 1); // the biggest backlog first
        all.addAll(calls("b", 20, 1));
        all.addAll(calls("c", 10, 1));
        instances.get(0).enqueueBatch(type, all);
        Await.equal(Duration.ofSeconds(60), "all done", 90L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'fair-call'"));

        Map<String, Integer> first = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (Call c : started) {
            order.add(c.tenant());
        }
        order.subList(0, 30).forEach(t -> first.merge(t, 1, Integer::sum));
        for (String t : List.of("a", "b", "c")) {
            int got = first.getOrDefault(t, 0);
            assertTrue(got >= 6 && got <= 14, "tenant " + t + " had " + got + " of the first 30 slots: " + order);
        }
        assertTrue(maxInFlight.get() <= 2, "at most 2 calls in flight, saw " + maxInFlight.get());
        assertEquals(0L, db.count("select count(*) from layover.job_history where job_type = 'fair-call' and attempts > 0"),
                "no attempt spent waiting");
        assertEquals(0L, db.count("select count(*) from layover.dead_letters"));
        assertEquals(1L, db.count("select count(*) from layover.fair_lines where provider_key = ? and class_clocks <> '{}'", KEY),
                "the key's fair queue moved its clock");
    }
}
