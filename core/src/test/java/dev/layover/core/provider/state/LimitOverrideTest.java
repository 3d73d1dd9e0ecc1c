package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.ConfigurationException;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An operator's limits at run time ({@link ProviderStates#setLimit},
 * {@code layover.limit_overrides}), set from a handle of another "process" (what a standalone
 * console uses) while two workers run: both follow it, and its revert gives the configured
 * limits back.
 */
@DatabaseTest
class LimitOverrideTest {

    private static final String KEY = "openai:gpt-4o-mini";

    /** A job. */
    public record Call(int n) {}

    private final List<Layover> instances = new ArrayList<>();
    private final ConcurrentLinkedQueue<Instant> starts = new ConcurrentLinkedQueue<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger maxInFlight = new AtomicInteger();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private JobType<Call> type(Duration callTakes) {
        return JobType.builder("call", Call.class)
                .providerKey(KEY)
                .handler((c, ctx) -> {
                    starts.add(Instant.now());
                    maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                    try {
                        Thread.sleep(callTakes.toMillis()); // the provider call
                    } finally {
                        inFlight.decrementAndGet();
                    }
                    return Outcome.done();
                })
                .build();
    }

    private static List<Call> calls(int n) {
        List<Call> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new Call(i));
        }
        return out;
    }

    @Test
    void aRequestRateSetAtRunTimePacesEveryWorkerUntilReverted(TestDatabase db) {
        JobType<Call> type = type(Duration.ZERO);
        for (String name : new String[] {"worker-a", "worker-b"}) {
            instances.add(Workers.builder(db.newDataSource(6), name).register(type)
                    .bucket(KEY, BucketSettings.requestsPerSecond(1000)).start());
        }
        ProviderStates operator = ProviderStates.create(db.dataSource());
        assertNull(operator.setLimit(KEY, LimitOverride.requestsPerMinute(600), "the provider lowered our tier"));
        assertEquals(LimitOverride.requestsPerMinute(600), operator.limitOverride(KEY));
        awaitApplied(db);

        instances.get(0).enqueueBatch(type, calls(40));
        Await.equal(Duration.ofSeconds(60), "all done", 0L, () -> db.count("select count(*) from layover.jobs"));
        List<Instant> s = starts.stream().sorted().toList();
        double span = Duration.between(s.get(0), s.get(s.size() - 1)).toNanos() / 1e9;
        // 10/s with one second of burst: after the first 10, one every 0.1 s (not 1,000/s as configured)
        assertTrue(span >= 2.5, "40 calls at 10/s spread over " + span + " s, at least 2.5");

        assertEquals(LimitOverride.requestsPerMinute(600), operator.revertLimit(KEY), "the override removed");
        assertNull(operator.revertLimit(KEY), "nothing left to revert");
        assertNull(operator.limitOverride(KEY));
        assertEquals(0L, db.count("select count(*) from layover.limit_overrides"));
    }

    @Test
    void aConcurrencyLimitSetAtRunTimeHoldsUntilReverted(TestDatabase db) {
        JobType<Call> type = type(Duration.ofMillis(30));
        for (String name : new String[] {"worker-a", "worker-b"}) {
            instances.add(Workers.builder(db.newDataSource(6), name).register(type).concurrencyLimit(KEY, 6).start());
        }
        ProviderStates operator = ProviderStates.create(db.dataSource());
        operator.setLimit(KEY, LimitOverride.maxInFlight(1), null);
        awaitApplied(db);
        instances.get(0).enqueueBatch(type, calls(20));
        Await.equal(Duration.ofSeconds(60), "all done", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(1, maxInFlight.get(), "one call at a time under the override");

        operator.revertLimit(KEY);
        awaitApplied(db);
        instances.get(0).enqueueBatch(type, calls(40));
        Await.equal(Duration.ofSeconds(60), "all done again", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertTrue(maxInFlight.get() > 1, "the configured limit of 6 again: " + maxInFlight.get() + " at most in flight");
        assertTrue(maxInFlight.get() <= 6, "never above the configured limit: " + maxInFlight.get());
    }

    @Test
    void badOverridesAreRefusedWithAClearError(TestDatabase db) {
        ProviderStates operator = ProviderStates.create(db.dataSource());
        assertThrows(ConfigurationException.class, () -> new LimitOverride(null, null, null, null, null));
        assertThrows(ConfigurationException.class, () -> LimitOverride.requestsPerMinute(0));
        assertThrows(ConfigurationException.class, () -> LimitOverride.requestsPerMinute(Double.NaN));
        assertThrows(ConfigurationException.class, () -> LimitOverride.maxInFlight(0));
        assertThrows(ConfigurationException.class, () -> operator.setLimit("a\u0000b", LimitOverride.maxInFlight(1), null));
        assertThrows(ConfigurationException.class, () -> operator.setLimit("", LimitOverride.maxInFlight(1), null));
        assertEquals(0L, db.count("select count(*) from layover.limit_overrides"), "nothing written");
    }

    /**
     * Every worker reads the overrides at its next refresh (at most a second, sooner by NOTIFY):
     * waits for two seconds of the database's time to pass after the change.
     */
    private static void awaitApplied(TestDatabase db) {
        double at = ((Number) db.value("select extract(epoch from clock_timestamp()) + 2")).doubleValue();
        Await.until(Duration.ofSeconds(10), "two refreshes of every worker",
                () -> ((Number) db.value("select extract(epoch from clock_timestamp())")).doubleValue() >= at);
    }
}
