package dev.layover.core.observability;

import static dev.layover.core.observability.ObservabilityFixtures.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.metrics.MicrometerMetrics;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * One scenario with every kind of outcome, observed through Micrometer's {@link
 * SimpleMeterRegistry}: the counters of jobs and provider calls, the timers, and the gauges read
 * from the database.
 */
// alone in the fast profile: it asserts that no layover-metrics- thread exists in the JVM
@Isolated
@DatabaseTest
class MicrometerMetricsTest {

    /** A job: its provider key is {@code fake:<script>}; the script decides each run's outcome. */
    record Work(String script) {}

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private Outcome script(String script, int run) throws InterruptedException {
        switch (script) {
            case "ok":
                Thread.sleep(30); // the provider call's latency (stands for one; not a wait)
                return Outcome.done();
            case "limited-once":
                return run == 1 ? Outcome.rateLimited(Duration.ofMillis(200), "429 Too Many Requests") : Outcome.done();
            case "transient-once":
                return run == 1 ? Outcome.transientFailure("502 Bad Gateway", null) : Outcome.done();
            case "rejected":
                return Outcome.rejected("400 context length exceeded");
            case "cooling":
                return Outcome.rateLimited(Duration.ofSeconds(60), "429 retry-after: 60");
            default:
                return Outcome.done();
        }
    }

    private JobType<Work> start(TestDatabase db) {
        JobType<Work> type = JobType.builder("work", Work.class)
                .policy(ObservabilityFixtures.fastRetries(3))
                .providerKey(w -> "fake:" + w.script())
                .handler((args, ctx) -> script(args.script(),
                        runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet()))
                .build();
        layover = ObservabilityFixtures.builder(db)
                .register(type)
                .bucket("fake:bucketed", BucketSettings.requestsPerMinute(600))
                .metrics(MicrometerMetrics.builder(registry).gaugeInterval(Duration.ofSeconds(1)).build())
                .start();
        return type;
    }

    private double count(String name, String... tags) {
        Counter c = registry.find(name).tags(tags).counter();
        return c == null ? 0 : c.count();
    }

    private Double gauge(String name, String... tags) {
        Gauge g = registry.find(name).tags(tags).gauge();
        return g == null ? null : g.value();
    }

    @Test
    void countersTimersAndGaugesFollowWhatTheJobsDo(TestDatabase db) {
        JobType<Work> type = start(db);
        layover.providerStates().forceOpen("fake:open", null, "maintenance");
        for (String s : new String[] {"ok", "ok", "limited-once", "transient-once", "rejected", "cooling", "open",
                "bucketed"}) {
            layover.enqueue(type, new Work(s));
        }
        layover.enqueue(type, new Work("later"), EnqueueOptions.after(Duration.ofHours(1)));

        // counters of jobs
        Await.equal(WAIT, "completed", 5.0, () -> count("layover.jobs.completed", "job_type", "work"));
        Await.equal(WAIT, "parked rejected", 1.0,
                () -> count("layover.jobs.parked", "job_type", "work", "failure_type", "rejected"));
        Await.equal(WAIT, "parked breaker_open", 1.0,
                () -> count("layover.jobs.parked", "job_type", "work", "failure_type", "breaker_open"));
        Await.equal(WAIT, "rescheduled for rate limits", 2.0,
                () -> count("layover.jobs.rescheduled", "job_type", "work", "reason", "rate_limited"));
        assertEquals(1.0, count("layover.jobs.retried", "job_type", "work", "reason", "transient"));
        assertEquals(0.0, count("layover.jobs.retried", "job_type", "work", "reason", "error"));

        // provider calls, by key and outcome: every 429 is counted
        assertEquals(2.0, count("layover.provider.calls", "provider_key", "fake:ok", "outcome", "ok"));
        assertEquals(1.0, count("layover.provider.calls", "provider_key", "fake:limited-once", "outcome", "rate_limited"));
        assertEquals(1.0, count("layover.provider.calls", "provider_key", "fake:limited-once", "outcome", "ok"));
        assertEquals(1.0, count("layover.provider.calls", "provider_key", "fake:transient-once", "outcome", "transient"));
        assertEquals(1.0, count("layover.provider.calls", "provider_key", "fake:rejected", "outcome", "rejected"));
        assertEquals(1.0, count("layover.provider.calls", "provider_key", "fake:cooling", "outcome", "rate_limited"));
        assertEquals(2.0, registry.find("layover.provider.calls").tag("outcome", "rate_limited").counters().stream()
                .mapToDouble(Counter::count).sum(), "every 429 among the calls");
        assertEquals(0.0, count("layover.provider.calls", "provider_key", "fake:open"), "an open breaker: no call");
        assertEquals(1.0, count("layover.breaker.transitions", "provider_key", "fake:open", "from", "closed", "to", "open"));

        // timers
        Timer done = registry.find("layover.jobs.duration").tags("job_type", "work", "outcome", "done").timer();
        assertNotNull(done);
        assertEquals(5, done.count());
        assertTrue(done.max(TimeUnit.MILLISECONDS) >= 25, "the ok jobs sleep 30 ms: " + done.max(TimeUnit.MILLISECONDS));
        assertEquals(1, registry.find("layover.jobs.duration").tags("outcome", "rejected").timer().count());
        Timer wait = registry.find("layover.jobs.queue.wait").tags("job_type", "work").timer();
        assertNotNull(wait);
        assertTrue(wait.count() >= 10, "one per run started: " + wait.count());

        // gauges, read from the database every second
        Await.equal(WAIT, "breaker state open", 1.0, () -> gauge("layover.breaker.state", "provider_key", "fake:open",
                "state", "open"));
        assertEquals(0.0, gauge("layover.breaker.state", "provider_key", "fake:open", "state", "closed"));
        // a key whose calls all succeeded gets its breaker row from the background refresh (every second)
        Await.equal(WAIT, "breaker state closed", 1.0, () -> gauge("layover.breaker.state", "provider_key", "fake:ok",
                "state", "closed"));
        Await.until(WAIT, "cooldown of fake:cooling", () -> {
            TimeGauge g = registry.find("layover.cooldown.remaining").tag("provider_key", "fake:cooling").timeGauge();
            return g != null && g.value(TimeUnit.SECONDS) > 50 && g.value(TimeUnit.SECONDS) <= 60;
        });
        assertEquals(0.0, registry.find("layover.cooldown.remaining").tag("provider_key", "fake:ok").timeGauge()
                .value(TimeUnit.SECONDS));
        Await.until(WAIT, "waiting jobs", () -> Double.valueOf(1.0).equals(
                gauge("layover.jobs.waiting", "job_type", "work", "state", "scheduled"))
                && Double.valueOf(1.0).equals(gauge("layover.jobs.waiting", "job_type", "work", "state", "rescheduled")));
        assertEquals(0.0, gauge("layover.jobs.due", "job_type", "work"), "nothing is due: one later, one cooling");
        Await.equal(WAIT, "parked dead letters", 1.0, () -> gauge("layover.dead.letters", "job_type", "work",
                "failure_type", "rejected", "state", "parked"));
        assertEquals(1.0, gauge("layover.dead.letters", "job_type", "work", "failure_type", "breaker_open",
                "state", "parked"));
        Double permits = gauge("layover.bucket.permits", "provider_key", "fake:bucketed", "limit", "requests");
        assertNotNull(permits, "the bucket's permits");
        assertTrue(permits <= 10.0, "capacity is 10 requests/s x 1 s burst: " + permits);
        assertNull(gauge("layover.bucket.permits", "provider_key", "fake:ok", "limit", "requests"), "no bucket");

        // a gauge whose rows are gone reads 0
        db.execute("delete from layover.dead_letters where failure_type = 'rejected'");
        Await.equal(WAIT, "dead letters gone", 0.0, () -> gauge("layover.dead.letters", "job_type", "work",
                "failure_type", "rejected", "state", "parked"));
    }

    @Test
    void withoutGaugesNoSamplingQueryRuns(TestDatabase db) {
        JobType<Work> type = JobType.builder("work", Work.class).handler((a, c) -> Outcome.done()).build();
        layover = ObservabilityFixtures.builder(db).register(type)
                .metrics(MicrometerMetrics.builder(registry).withoutGauges().build()).start();
        layover.enqueue(type, new Work("ok"));
        Await.equal(WAIT, "completed", 1.0, () -> count("layover.jobs.completed", "job_type", "work"));
        assertTrue(registry.find("layover.jobs.waiting").gauges().isEmpty());
        assertTrue(registry.find("layover.breaker.state").gauges().isEmpty());
        assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().startsWith("layover-metrics-")),
                "no sampling thread");
    }
}
