package dev.layover.core.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.TenantTask;
import dev.layover.core.spi.Db;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.internal.gate.Admission.Go;
import dev.layover.core.internal.gate.Admission.Wait;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.internal.gate.Limits;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A job subject to a provider-wide key and a tenant key runs only when both admit it, waits for the
 * stricter, and takes nothing from the other while it waits.
 */
@DatabaseTest
class MultipleLimitsTest {

    private static final String PROVIDER = "openai:gpt-4o";
    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private static JobType<TenantTask> chat(JobHandlerBody body) {
        return JobType.builder("chat", TenantTask.class)
                .providerKey(PROVIDER)
                .limitKeys(a -> List.of("tenant:" + a.tenant()))
                .handler((a, ctx) -> {
                    body.run(a);
                    return Outcome.done();
                })
                .build();
    }

    interface JobHandlerBody {
        void run(TenantTask a) throws Exception;
    }

    private static long inFlight(TestDatabase db, String key) {
        Object v = db.value("select coalesce((select in_flight from layover.concurrency where limit_key = ?), 0)", key);
        return ((Number) v).longValue();
    }

    @Test
    void aTenantLimitHoldsItsJobsWithoutTakingTheProvidersSlots(TestDatabase db) throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> max = new ConcurrentHashMap<>();
        AtomicInteger all = new AtomicInteger();
        AtomicInteger allMax = new AtomicInteger();
        JobType<TenantTask> t = chat(a -> {
            int n = running.computeIfAbsent(a.tenant(), k -> new AtomicInteger()).incrementAndGet();
            max.computeIfAbsent(a.tenant(), k -> new AtomicInteger()).accumulateAndGet(n, Math::max);
            allMax.accumulateAndGet(all.incrementAndGet(), Math::max);
            try {
                release.await(30, TimeUnit.SECONDS);
            } finally {
                all.decrementAndGet();
                running.get(a.tenant()).decrementAndGet();
            }
        });
        Layover layover = Admission.builder(db, "w1").threads(8).register(t)
                .concurrencyLimit(PROVIDER, 3)
                .concurrencyLimit("tenant:*", 1)
                .start();
        instances.add(layover);
        for (int i = 0; i < 3; i++) {
            layover.enqueue(t, new TenantTask("a", "a" + i));
        }
        Await.until(Admission.WAIT, "one of tenant a runs, two wait", () -> all.get() == 1 && db.count(
                "select count(*) from layover.jobs where state = 'scheduled' and reschedules = 0") == 2);
        Admission.sleep(1000);
        assertEquals(1, all.get(), "the stricter limit (tenant:a, 1) decides");
        assertEquals(1, inFlight(db, PROVIDER), "the waiting jobs took none of the provider's 3 slots");
        assertEquals(1, inFlight(db, "tenant:a"));
        assertEquals(2L, db.count("select count(*) from layover.scheduled_tasks where not picked and version = 1"),
                "the waiting jobs were not written");

        layover.enqueue(t, new TenantTask("b", "b0"));
        layover.enqueue(t, new TenantTask("c", "c0"));
        Await.equal(Admission.WAIT, "tenants b and c run beside a", 3, all::get);
        assertEquals(3, inFlight(db, PROVIDER));
        layover.enqueue(t, new TenantTask("d", "d0"));
        Admission.sleep(1500);
        assertEquals(3, all.get(), "the provider's limit holds tenant d now");
        assertEquals(0, inFlight(db, "tenant:d"), "and d's job took nothing from its tenant limit while it waits");

        release.countDown();
        Await.equal(Admission.WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertTrue(max.values().stream().allMatch(m -> m.get() == 1), "one job per tenant at a time: " + max);
        assertEquals(3, allMax.get(), "three at a time in all");
        assertEquals(0, db.count("select count(*) from layover.dead_letters"));
    }
}
