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
import dev.layover.testing.LayoverPostgresExtension;
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
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A job subject to a provider-wide key and a tenant key runs only when both admit it, waits for the
 * stricter, and takes nothing from the other while it waits.
 */
@ExtendWith(LayoverPostgresExtension.class)
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
        Await.until(Admission.WAIT, "one of tenant a runs, two are held", () -> all.get() == 1 && db.count(
                "select count(*) from layover.jobs where reschedule_reason = 'concurrency'") == 2);
        Admission.sleep(1000);
        assertEquals(1, all.get(), "the stricter limit (tenant:a, 1) decides");
        assertEquals(1, inFlight(db, PROVIDER), "the held jobs took none of the provider's 3 slots");
        assertEquals(1, inFlight(db, "tenant:a"));
        assertTrue(((String) db.value("select reschedule_detail from layover.jobs where reschedule_reason = 'concurrency' "
                + "limit 1")).contains("tenant:a"));

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

    /** All or nothing, read from the limit rows themselves: a refusal by one limit leaves the others untouched. */
    @Test
    void aRefusedClaimTakesNothingFromTheOtherLimits(TestDatabase db) {
        Db d = new Db(db.dataSource());
        Clock clock = Clock.systemUTC();
        ProviderGate gate = new ProviderGate(d, clock, "w1", new ProviderGate.Config(BreakerSettings.defaults(), Map.of(),
                CooldownSettings.defaults(), Map.of(PROVIDER, BucketSettings.requestsPerMinute(600)), List.of()));
        Limits limits = new Limits(d, clock, "w1", new Limits.Config(Map.of("tenant:*", 1, PROVIDER, 5),
                Map.of(PROVIDER, BucketSettings.requestsPerMinute(600), "quota:*", BucketSettings.requestsPerMinute(1)),
                Duration.ofSeconds(40)));
        gate.start();
        try {
            for (int i = 1; i <= 4; i++) { // four picked jobs, as db-scheduler leaves them
                db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by, "
                        + "last_heartbeat, version, consecutive_failures) values ('chat', ?, now(), true, 'w1', now(), 1, 0)",
                        "j" + i);
            }
            assertInstanceOf(Go.class, limits.admit(gate, gate.newRun(PROVIDER, "chat", "j1", 1, 0, 1), List.of("tenant:a")));
            Object tat = db.value("select request_tat from layover.buckets where provider_key = ?", PROVIDER);
            assertEquals(1, inFlight(db, PROVIDER));

            Wait w = assertInstanceOf(Wait.class,
                    limits.admit(gate, gate.newRun(PROVIDER, "chat", "j2", 1, 0, 1), List.of("tenant:a")));
            assertEquals(Limits.CONCURRENCY, w.reason());
            assertEquals(tat, db.value("select request_tat from layover.buckets where provider_key = ?", PROVIDER),
                    "the provider's bucket gave no permit to the refused job");
            assertEquals(1, inFlight(db, PROVIDER), "nor a slot");
            assertEquals(0, db.count("select count(*) from layover.concurrency_slots where holder_id = 'j2'"));

            assertInstanceOf(Go.class, limits.admit(gate, gate.newRun(PROVIDER, "chat", "j3", 1, 0, 1),
                    List.of("tenant:b", "quota:b")));
            Object tat3 = db.value("select request_tat from layover.buckets where provider_key = ?", PROVIDER);
            Wait b = assertInstanceOf(Wait.class, limits.admit(gate, gate.newRun(PROVIDER, "chat", "j4", 1, 0, 1),
                    List.of("tenant:c", "quota:b")));
            assertEquals("bucket", b.reason(), "quota:b's bucket (1 a minute) is empty");
            assertTrue(b.runAt().isAfter(clock.instant().plusSeconds(50)), "the job waits for that bucket's next permit");
            assertTrue(b.detail().contains("quota:b"), b.detail());
            assertEquals(tat3, db.value("select request_tat from layover.buckets where provider_key = ?", PROVIDER));
            assertEquals(0, inFlight(db, "tenant:c"), "tenant c's slot was not claimed");
            assertEquals(2, inFlight(db, PROVIDER));

            db.update("update layover.scheduled_tasks set version = 2, picked = false where task_instance = 'j1'");
            assertInstanceOf(Go.class, limits.admit(gate, gate.newRun(PROVIDER, "chat", "j2", 1, 0, 1), List.of("tenant:a")),
                    "j1's run ended (its row moved on): its slots are free, without a release statement");
            assertEquals(0, db.count("select count(*) from layover.concurrency_slots where holder_id = 'j1'"),
                    "j2 took over the slots j1 no longer held (the lowest free slot first)");
        } finally {
            gate.stop();
        }
    }

    /** A job with limit keys of its own is admitted by layover.admit_tokens: its provider key's learned pace applies there too. */
    @Test
    void aPaceLearnedForTheProviderKeyAlsoPacesJobsWithLimitKeys(TestDatabase db) {
        Db d = new Db(db.dataSource());
        Clock clock = Clock.systemUTC();
        ProviderGate gate = new ProviderGate(d, clock, "w1", new ProviderGate.Config(BreakerSettings.defaults(), Map.of(),
                CooldownSettings.defaults(), Map.of(), List.of()));
        Limits limits = new Limits(d, clock, "w1", new Limits.Config(Map.of("tenant:*", 100), Map.of(),
                Duration.ofSeconds(40)));
        gate.start();
        try {
            gate.afterCall(PROVIDER, null, new Outcome.RateLimited(Duration.ofMillis(1), "429", 2.0));
            assertEquals(114.0, (Double) db.value("select requests_per_minute from layover.buckets where provider_key = ? "
                    + "and learned_until is not null", PROVIDER), 1e-9, "95 % of 2/s");
            Admission.sleep(50); // the 1 ms cooldown is over
            int go = 0;
            Wait waited = null;
            for (int i = 1; i <= 5 && waited == null; i++) {
                db.update("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by, "
                        + "last_heartbeat, version, consecutive_failures) values ('chat', ?, now(), true, 'w1', now(), 1, 0)",
                        "j" + i);
                var a = limits.admit(gate, gate.newRun(PROVIDER, "chat", "j" + i, 1, 0, 1), List.of("tenant:" + i));
                if (a instanceof Go) {
                    go++;
                } else {
                    waited = assertInstanceOf(Wait.class, a);
                }
            }
            assertTrue(waited != null && waited.reason().equals("bucket") && waited.detail().contains(PROVIDER),
                    "the learned pace of 1.9/s refused a call within the first second: " + waited + " after " + go);
            assertTrue(go <= 1, "no burst right after the 429: " + go + " let through");
            assertEquals(true, db.value("select learned_until is not null from layover.buckets where provider_key = ?", PROVIDER),
                    "the limits path did not turn the learned row into a configured one");
        } finally {
            gate.stop();
        }
    }
}
