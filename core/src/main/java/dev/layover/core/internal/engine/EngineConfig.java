package dev.layover.core.internal.engine;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.JobType;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.internal.observe.ObserveSettings;
import dev.layover.core.internal.observe.TimeSeriesSettings;
import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BreakerListener;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.FairnessSettings;
import dev.layover.core.provider.state.InteractiveSettings;
import dev.layover.core.provider.state.CooldownSettings;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import javax.sql.DataSource;

/**
 * Everything a Layover instance is built from, as {@code Layover.Builder} collected it (defaults are
 * documented there). {@link Engine} assembles every part from it, once.
 *
 * @param dataSource the database
 * @param clock the clock every decision of this instance reads; null for the database's time
 * @param workerName this instance's name in {@code picked_by}
 * @param types the job types
 * @param objectMapper the default args mapper
 * @param maxArgsBytes the args size cap
 * @param classifier turns exceptions escaping handlers into outcomes; null for Layover's on the instance's clock
 * @param threads worker threads
 * @param pollInterval polling interval
 * @param heartbeatInterval heartbeat interval
 * @param missedHeartbeats heartbeats missed before a job is dead
 * @param shutdownMaxWait how long a stop lets running jobs finish
 * @param priority whether due jobs run highest priority first
 * @param prefetch jobs held per thread, fixed (1 to 10); 0: adaptive ({@link PickLimit})
 * @param breakers default breaker settings
 * @param perKeyBreakers breaker settings of single keys
 * @param cooldowns cooldown settings
 * @param buckets exact buckets by key
 * @param patternBuckets buckets by {@code prefix*} pattern
 * @param concurrencyLimits concurrency limits by key or pattern
 * @param breakerListeners breaker listeners
 * @param tokenCosts token estimates by job type name
 * @param metrics the application's metrics
 * @param history whether finished jobs get a history row
 * @param historyArgs whether history rows keep args
 * @param stackTraceChars the longest stack trace a failed attempt's error entry keeps; 0: none
 * @param timeSeries how the time series counters are written
 * @param notifications whether to hold connections in {@code LISTEN} for new jobs and provider state
 * @param giveBackAfter how long a picked job may wait unstarted behind busy threads before it is
 *     given back to the other workers; zero: never
 * @param virtualThreads whether handlers run on virtual threads ({@link VirtualThreads}; Java 21+)
 * @param fairness how a key's permits are shared among the fairness keys of its jobs
 * @param batching batch settings by provider key or {@code prefix*} pattern
 * @param observe tracing, MDC and the price table
 * @param interactive the share of interactive calls
 * @param schedules the schedules defined in code
 * @param schedulePollInterval how often the scheduler loop looks for due schedules
 * @param scheduleGeneration the code schedules' generation (a rolling deploy's order)
 */
public record EngineConfig(
        DataSource dataSource,
        Clock clock,
        String workerName,
        List<JobType<?>> types,
        ObjectMapper objectMapper,
        int maxArgsBytes,
        Function<Throwable, Optional<Outcome>> classifier,
        int threads,
        Duration pollInterval,
        Duration heartbeatInterval,
        int missedHeartbeats,
        Duration shutdownMaxWait,
        boolean priority,
        double prefetch,
        BreakerSettings breakers,
        Map<String, BreakerSettings> perKeyBreakers,
        CooldownSettings cooldowns,
        Map<String, BucketSettings> buckets,
        Map<String, BucketSettings> patternBuckets,
        Map<String, Integer> concurrencyLimits,
        List<BreakerListener> breakerListeners,
        Map<String, ToLongFunction<Object>> tokenCosts,
        LayoverMetrics metrics,
        boolean history,
        boolean historyArgs,
        int stackTraceChars,
        TimeSeriesSettings timeSeries,
        boolean notifications,
        Duration giveBackAfter,
        boolean virtualThreads,
        FairnessSettings fairness,
        Map<String, BatchSettings> batching,
        ObserveSettings observe,
        InteractiveSettings interactive,
        List<dev.layover.core.schedule.Schedule<?>> schedules,
        Duration schedulePollInterval,
        long scheduleGeneration) {

    /** Copies the collections. */
    public EngineConfig {
        types = List.copyOf(types);
        perKeyBreakers = Map.copyOf(perKeyBreakers);
        buckets = Map.copyOf(buckets);
        patternBuckets = Map.copyOf(patternBuckets);
        concurrencyLimits = Map.copyOf(concurrencyLimits);
        breakerListeners = List.copyOf(breakerListeners);
        tokenCosts = Map.copyOf(tokenCosts);
        fairness = fairness == null ? FairnessSettings.defaults() : fairness;
        batching = batching == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(batching));
        observe = observe == null ? ObserveSettings.DEFAULTS : observe;
        interactive = interactive == null ? InteractiveSettings.defaults() : interactive;
        schedules = schedules == null ? List.of() : List.copyOf(schedules);
        schedulePollInterval = schedulePollInterval == null ? Duration.ofSeconds(1) : schedulePollInterval;
    }

    /** @return how long a picked job's heartbeat may be stale before it counts as dead */
    public Duration deadAfter() {
        return heartbeatInterval.multipliedBy(missedHeartbeats);
    }
}
