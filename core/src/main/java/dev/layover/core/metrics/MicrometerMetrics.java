package dev.layover.core.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * {@link LayoverMetrics} on a Micrometer {@link MeterRegistry}. Micrometer is an optional
 * dependency of Layover: this is the only class that refers to it, and it is loaded only when the
 * application calls {@link #of(MeterRegistry)} or {@link #builder(MeterRegistry)}.
 *
 * <pre>{@code
 * Layover layover = Layover.builder(dataSource)
 *         .register(translate)
 *         .metrics(MicrometerMetrics.of(meterRegistry))
 *         .start();
 * }</pre>
 *
 * <p>The meters (names follow Micrometer's conventions; a Prometheus registry shows
 * {@code layover.jobs.completed} as {@code layover_jobs_completed_total}):
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@code layover.jobs.completed}</td><td>counter</td><td>job_type</td></tr>
 *   <tr><td>{@code layover.jobs.retried}</td><td>counter</td><td>job_type, reason</td></tr>
 *   <tr><td>{@code layover.jobs.rescheduled}</td><td>counter</td><td>job_type, reason</td></tr>
 *   <tr><td>{@code layover.jobs.parked}</td><td>counter</td><td>job_type, failure_type</td></tr>
 *   <tr><td>{@code layover.jobs.cancelled}</td><td>counter</td><td>job_type</td></tr>
 *   <tr><td>{@code layover.jobs.replayed}</td><td>counter</td><td>job_type, kind</td></tr>
 *   <tr><td>{@code layover.provider.calls}</td><td>counter</td><td>provider_key, outcome</td></tr>
 *   <tr><td>{@code layover.batch.lines}</td><td>counter</td><td>provider_key, kind (gathered, submitted, collected, returned)</td></tr>
 *   <tr><td>{@code layover.schedule.claims}</td><td>counter</td><td>job_type, outcome (enqueued, skipped_overlap, held_overlap, missed, ...)</td></tr>
 *   <tr><td>{@code layover.schedule.enqueued}</td><td>counter</td><td>job_type (occurrence jobs enqueued by the scheduler)</td></tr>
 *   <tr><td>{@code layover.breaker.transitions}</td><td>counter</td><td>provider_key, from, to</td></tr>
 *   <tr><td>{@code layover.jobs.queue.wait}</td><td>timer</td><td>job_type</td></tr>
 *   <tr><td>{@code layover.jobs.duration}</td><td>timer</td><td>job_type, outcome</td></tr>
 *   <tr><td>{@code layover.jobs.waiting}</td><td>gauge</td><td>job_type, state</td></tr>
 *   <tr><td>{@code layover.jobs.running}</td><td>gauge</td><td>job_type</td></tr>
 *   <tr><td>{@code layover.jobs.due}</td><td>gauge</td><td>job_type</td></tr>
 *   <tr><td>{@code layover.dead.letters}</td><td>gauge</td><td>job_type, failure_type, state</td></tr>
 *   <tr><td>{@code layover.breaker.state}</td><td>gauge (1 for the current state, else 0)</td>
 *       <td>provider_key, state</td></tr>
 *   <tr><td>{@code layover.cooldown.remaining}</td><td>time gauge (seconds)</td><td>provider_key</td></tr>
 *   <tr><td>{@code layover.bucket.permits}</td><td>gauge</td><td>provider_key, limit</td></tr>
 * </table>
 *
 * <p>The gauges come from a sample each running instance reads every {@link Builder#gaugeInterval
 * gaugeInterval} (default {@value #DEFAULT_GAUGE_INTERVAL_SECONDS} s): a few cheap queries, not
 * one per scrape. They are fleet-wide: every instance reports the same values. A job type, state
 * or key that had a value and is no longer in a sample reports 0.
 */
public final class MicrometerMetrics implements LayoverMetrics {

    /** Default interval of the gauge sample, in seconds. */
    public static final int DEFAULT_GAUGE_INTERVAL_SECONDS = 15;

    private static final String[] BREAKER_STATES = {"closed", "open", "half_open"};

    private final MeterRegistry registry;
    private final Duration gaugeInterval;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();
    private final Map<String, Value> gauges = new ConcurrentHashMap<>();
    private final Map<String, Cooldown> cooldowns = new ConcurrentHashMap<>();
    private final Object sampleLock = new Object();

    private MicrometerMetrics(Builder b) {
        this.registry = b.registry;
        this.gaugeInterval = b.gaugeInterval;
    }

    /**
     * @param registry the registry to register Layover's meters in
     * @return metrics with every default (gauges read every {@value #DEFAULT_GAUGE_INTERVAL_SECONDS} s)
     */
    public static MicrometerMetrics of(MeterRegistry registry) {
        return builder(registry).build();
    }

    /**
     * @param registry the registry to register Layover's meters in
     * @return a builder
     */
    public static Builder builder(MeterRegistry registry) {
        return new Builder(registry);
    }

    /** @return the registry */
    public MeterRegistry registry() {
        return registry;
    }

    // ---- counters and timers ------------------------------------------------------------------

    @Override
    public void jobCompleted(String jobType) {
        counter("layover.jobs.completed", "job_type", jobType).increment();
    }

    @Override
    public void jobRetried(String jobType, String reason) {
        counter("layover.jobs.retried", "job_type", jobType, "reason", reason).increment();
    }

    @Override
    public void jobRescheduled(String jobType, String reason) {
        counter("layover.jobs.rescheduled", "job_type", jobType, "reason", reason).increment();
    }

    @Override
    public void step(String jobType, String outcome) {
        counter("layover.steps", "job_type", jobType, "outcome", outcome).increment();
    }

    @Override
    public void jobParked(String jobType, String failureType) {
        counter("layover.jobs.parked", "job_type", jobType, "failure_type", failureType).increment();
    }

    @Override
    public void jobCancelled(String jobType) {
        counter("layover.jobs.cancelled", "job_type", jobType).increment();
    }

    @Override
    public void jobsReplayed(String jobType, String kind, long count) {
        if (count > 0) {
            counter("layover.jobs.replayed", "job_type", jobType, "kind", kind).increment(count);
        }
    }

    @Override
    public void providerCall(String providerKey, String outcome) {
        counter("layover.provider.calls", "provider_key", providerKey, "outcome", outcome).increment();
    }

    @Override
    public void tokens(String providerKey, String kind, long tokens) {
        counter("layover.tokens", "provider_key", providerKey, "kind", kind).increment(tokens);
    }

    @Override
    public void batchLines(String providerKey, String kind, long lines) {
        counter("layover.batch.lines", "provider_key", providerKey, "kind", kind).increment(lines);
    }

    @Override
    public void scheduleClaimed(String jobType, String outcome, int enqueued) {
        counter("layover.schedule.claims", "job_type", jobType, "outcome", outcome).increment();
        if (enqueued > 0) {
            counter("layover.schedule.enqueued", "job_type", jobType).increment(enqueued);
        }
    }

    @Override
    public void breakerChanged(String providerKey, String from, String to) {
        counter("layover.breaker.transitions", "provider_key", providerKey, "from", from, "to", to).increment();
    }

    @Override
    public void jobStarted(String jobType, Duration queueWait) {
        timer("layover.jobs.queue.wait", "time from a job's run time (run_at) to the start of its run",
                "job_type", jobType).record(queueWait);
    }

    @Override
    public void jobRan(String jobType, String outcome, Duration duration) {
        timer("layover.jobs.duration", "time a job's handler ran", "job_type", jobType, "outcome", outcome)
                .record(duration);
    }

    private Counter counter(String name, String... tags) {
        return counters.computeIfAbsent(key(name, tags),
                k -> Counter.builder(name).tags(tags(tags)).register(registry));
    }

    private Timer timer(String name, String description, String... tags) {
        return timers.computeIfAbsent(key(name, tags),
                k -> Timer.builder(name).description(description).tags(tags(tags)).register(registry));
    }

    // ---- gauges ---------------------------------------------------------------------------------

    @Override
    public Duration sampleInterval() {
        return gaugeInterval;
    }

    @Override
    public void sampled(StateSample sample) {
        synchronized (sampleLock) {
            Set<String> seen = new HashSet<>();
            Map<String, Double> running = new java.util.HashMap<>();
            Map<String, Double> due = new java.util.HashMap<>();
            for (StateSample.JobCount j : sample.jobs()) {
                if ("running".equals(j.state())) {
                    running.merge(j.jobType(), (double) j.count(), Double::sum);
                } else {
                    set(seen, "layover.jobs.waiting", "live jobs waiting to run, by state", j.count(),
                            "job_type", j.jobType(), "state", j.state());
                }
                due.merge(j.jobType(), (double) j.due(), Double::sum);
            }
            running.forEach((t, n) -> set(seen, "layover.jobs.running", "jobs picked by a worker", n, "job_type", t));
            due.forEach((t, n) -> set(seen, "layover.jobs.due", "jobs whose run time has passed, not running yet", n,
                    "job_type", t));
            for (StateSample.DeadLetterCount d : sample.deadLetters()) {
                set(seen, "layover.dead.letters", "dead letters waiting for a decision (parked, review)", d.count(),
                        "job_type", d.jobType(), "failure_type", d.failureType(), "state", d.state());
            }
            long sampledAt = System.nanoTime();
            for (StateSample.ProviderKeyState k : sample.providerKeys()) {
                for (String s : BREAKER_STATES) {
                    set(seen, "layover.breaker.state", "1 for the breaker's current state, else 0",
                            s.equals(k.breakerState()) ? 1 : 0, "provider_key", k.providerKey(), "state", s);
                }
                long leftNanos = k.cooldownUntil() == null ? 0
                        : Math.max(0, Duration.between(sample.at(), k.cooldownUntil()).toNanos());
                cooldown(k.providerKey()).until = sampledAt + leftNanos;
                if (k.requestPermits() != null) {
                    set(seen, "layover.bucket.permits", "permits of the key's bucket free now (negative: owed after a 429)",
                            k.requestPermits(), "provider_key", k.providerKey(), "limit", "requests");
                }
                if (k.tokenPermits() != null) {
                    set(seen, "layover.bucket.permits", "permits of the key's bucket free now (negative: owed after a 429)",
                            k.tokenPermits(), "provider_key", k.providerKey(), "limit", "tokens");
                }
            }
            for (Map.Entry<String, Value> e : gauges.entrySet()) {
                if (!seen.contains(e.getKey())) {
                    e.getValue().value = 0;
                }
            }
        }
    }

    private void set(Set<String> seen, String name, String description, double value, String... tags) {
        String k = key(name, tags);
        seen.add(k);
        Value v = gauges.get(k);
        if (v == null) {
            Value created = new Value();
            Gauge.builder(name, created, x -> x.value).description(description).tags(tags(tags)).strongReference(true)
                    .register(registry);
            gauges.put(k, created);
            v = created;
        }
        v.value = value;
    }

    private Cooldown cooldown(String providerKey) {
        return cooldowns.computeIfAbsent(providerKey, k -> {
            Cooldown c = new Cooldown();
            TimeGauge.builder("layover.cooldown.remaining", c, TimeUnit.NANOSECONDS, Cooldown::remainingNanos)
                    .description("time until the provider key may be called again (0: no cooldown)")
                    .tags(Tags.of("provider_key", k)).strongReference(true).register(registry);
            return c;
        });
    }

    private static final class Value {
        volatile double value;
    }

    private static final class Cooldown {
        /** {@link System#nanoTime()} at which the cooldown ends. */
        volatile long until = System.nanoTime();

        double remainingNanos() {
            return Math.max(0, until - System.nanoTime());
        }
    }

    // ---- helpers --------------------------------------------------------------------------------

    private static Tags tags(String... kv) {
        String[] safe = kv.clone();
        for (int i = 1; i < safe.length; i += 2) {
            if (safe[i] == null) {
                safe[i] = "none";
            }
        }
        return Tags.of(safe);
    }

    private static String key(String name, String... tags) {
        StringBuilder b = new StringBuilder(name);
        for (int i = 1; i < tags.length; i += 2) {
            b.append('\u0000').append(tags[i]);
        }
        return b.toString();
    }

    @Override
    public String toString() {
        return "MicrometerMetrics[" + registry.getClass().getSimpleName() + "]";
    }

    /** Configures {@link MicrometerMetrics}. */
    public static final class Builder {
        private final MeterRegistry registry;
        private Duration gaugeInterval = Duration.ofSeconds(DEFAULT_GAUGE_INTERVAL_SECONDS);

        private Builder(MeterRegistry registry) {
            this.registry = Objects.requireNonNull(registry, "registry");
        }

        /**
         * How often a running instance reads the queue and the provider state for the gauges (a
         * few cheap queries each time, whatever the scrape rate).
         *
         * @param interval at least 1 s; default {@value #DEFAULT_GAUGE_INTERVAL_SECONDS} s
         * @return this builder
         */
        public Builder gaugeInterval(Duration interval) {
            Objects.requireNonNull(interval, "interval");
            if (interval.compareTo(Duration.ofSeconds(1)) < 0) {
                throw new IllegalArgumentException("gaugeInterval must be at least 1 s, was " + interval);
            }
            this.gaugeInterval = interval;
            return this;
        }

        /**
         * No gauges: the instance runs no sampling query (counters and timers only).
         *
         * @return this builder
         */
        public Builder withoutGauges() {
            this.gaugeInterval = null;
            return this;
        }

        /** @return the metrics */
        public MicrometerMetrics build() {
            return new MicrometerMetrics(this);
        }
    }
}
