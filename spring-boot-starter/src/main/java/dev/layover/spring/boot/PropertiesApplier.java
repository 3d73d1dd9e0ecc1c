package dev.layover.spring.boot;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.schedule.MissedRuns;
import dev.layover.core.schedule.Overlap;
import dev.layover.core.schedule.Schedule;
import dev.layover.core.schedule.Timing;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.FairnessSettings;
import dev.layover.core.provider.state.InteractiveSettings;
import dev.layover.core.tokens.ModelPrice;
import dev.layover.core.tokens.Prices;
import java.util.Map;
import java.util.function.Supplier;

/** Applies {@link LayoverProperties} to a builder; a refused value names its property. */
final class PropertiesApplier {

    private PropertiesApplier() {}

    static void apply(LayoverProperties p, Layover.Builder b) {
        set("layover.threads", () -> b.threads(p.getThreads()));
        b.virtualThreads(p.isVirtualThreads()); // refused by build() before Java 21
        set("layover.poll-interval", () -> b.pollInterval(p.getPollInterval()));
        set("layover.heartbeat", () -> b.heartbeat(p.getHeartbeat().getInterval(), p.getHeartbeat().getMissed()));
        if (p.getPrefetch() != null) {
            set("layover.prefetch", () -> b.prefetch(p.getPrefetch()));
        }
        set("layover.shutdown-max-wait", () -> b.shutdownMaxWait(p.getShutdownMaxWait()));
        set("layover.give-back-after", () -> b.giveBackAfter(p.getGiveBackAfter()));
        b.notifications(p.isNotifications());
        if (p.getWorkerName() != null) {
            set("layover.worker-name", () -> b.workerName(p.getWorkerName()));
        }
        set("layover.max-args-bytes", () -> b.maxArgsBytes(p.getMaxArgsBytes()));
        b.migrate(p.isMigrate());
        if (p.isPriority()) {
            b.enablePriority();
        }
        b.history(p.getHistory().isEnabled());
        b.historyArgs(p.getHistory().isArgs());
        set("layover.history.retention", () -> b.historyRetention(p.getHistory().getRetention()));
        set("layover.stack-trace-chars", () -> b.stackTraceChars(p.getStackTraceChars()));
        b.timeSeries(p.getTimeSeries().isEnabled());
        set("layover.time-series.flush-interval", () -> b.timeSeriesFlushInterval(p.getTimeSeries().getFlushInterval()));
        set("layover.time-series", () -> b.timeSeriesRetention(p.getTimeSeries().getTenSecondRetention(),
                p.getTimeSeries().getMinuteRetention()));
        set("layover.breakers", () -> b.breakers(breakers(p.getBreakers())));
        set("layover.cooldowns", () -> b.cooldowns(cooldowns(p.getCooldowns())));
        for (Map.Entry<String, LayoverProperties.Bucket> e : p.getBuckets().entrySet()) {
            set("layover.buckets[" + e.getKey() + "]", () -> b.bucket(e.getKey(), bucket(e.getValue())));
        }
        for (Map.Entry<String, Integer> e : p.getConcurrencyLimits().entrySet()) {
            set("layover.concurrency-limits[" + e.getKey() + "]",
                    () -> b.concurrencyLimit(e.getKey(), e.getValue() == null ? 0 : e.getValue()));
        }
        fairness(p.getFairness(), b);
        interactive(p.getInteractive(), b);
        b.mdc(p.isMdc());
        set("layover.schedule-poll-interval", () -> b.schedulePollInterval(p.getSchedulePollInterval()));
        set("layover.schedule-generation", () -> b.scheduleGeneration(p.getScheduleGeneration()));
        if (!p.getPrices().isEmpty()) {
            set("layover.prices", () -> b.prices(prices(p.getPrices())));
        }
    }

    /** The price table of {@code layover.prices[model].*}; a model without an input or output price is refused. */
    static Prices prices(Map<String, LayoverProperties.Price> prices) {
        Prices.Builder out = Prices.builder();
        for (Map.Entry<String, LayoverProperties.Price> e : prices.entrySet()) {
            LayoverProperties.Price p = e.getValue();
            value("layover.prices[" + e.getKey() + "]", () -> {
                if (p.getInput() == null || p.getOutput() == null) {
                    throw new IllegalArgumentException("model " + e.getKey() + " needs both an input and an output price "
                            + "(per million tokens)");
                }
                ModelPrice price = ModelPrice.perMillion(p.getCurrency(), p.getInput(), p.getOutput());
                if (p.getCachedInput() != null) {
                    price = price.withCachedInput(p.getCachedInput());
                }
                return out.model(e.getKey(), price, p.getProviderKeys().toArray(String[]::new));
            });
        }
        return out.build();
    }

    /**
     * Sets the builder's fairness from {@code layover.fairness.*}: nothing at all while none is set;
     * otherwise Layover's defaults with the properties set over them, replacing the builder's
     * fairness (the auto-configuration applies the properties to a fresh builder, before the
     * customizers).
     */
    static void fairness(LayoverProperties.Fairness f, Layover.Builder b) {
        if (f.getLowPriorityShare() == null && f.getWeights().isEmpty()) {
            return;
        }
        FairnessSettings s = FairnessSettings.defaults();
        if (f.getLowPriorityShare() != null) {
            FairnessSettings base = s;
            s = value("layover.fairness.low-priority-share", () -> base.withLowPriorityShare(f.getLowPriorityShare()));
        }
        for (Map.Entry<String, Double> e : f.getWeights().entrySet()) {
            FairnessSettings base = s;
            s = value("layover.fairness.weights[" + e.getKey() + "]", () -> {
                if (e.getValue() == null) {
                    throw new IllegalArgumentException("the fairness weight of " + e.getKey()
                            + " is missing (a number in (0, 1000000])");
                }
                return base.withWeight(e.getKey(), e.getValue());
            });
        }
        b.fairness(s);
    }

    /** Sets the builder's interactive share from {@code layover.interactive.*}: nothing while neither is set. */
    static void interactive(LayoverProperties.Interactive p, Layover.Builder b) {
        if (p.getShare() == null && p.getWindow() == null) {
            return;
        }
        double share = p.getShare() != null ? p.getShare() : InteractiveSettings.DEFAULT_SHARE;
        java.time.Duration window = p.getWindow() != null ? p.getWindow() : InteractiveSettings.DEFAULT_WINDOW;
        b.interactive(value(p.getShare() != null ? "layover.interactive.share" : "layover.interactive.window",
                () -> InteractiveSettings.of(share, window)));
    }

    static BreakerSettings breakers(LayoverProperties.Breakers p) {
        return new BreakerSettings(p.getWindow(), p.getMinimumCalls(), p.getFailureThreshold(), p.getFailureRatio(),
                p.getOpenFor(), p.getMaxOpenFor(), p.getTrialTimeout(), p.getConsecutiveFailures());
    }

    static CooldownSettings cooldowns(LayoverProperties.Cooldowns p) {
        return new CooldownSettings(p.getRateLimitBase(), p.getRateLimitCap(), p.getOverloadBase(), p.getOverloadCap(),
                p.getStrikeMemory(), p.getLearnedPaceFor(), p.getLearnedPaceShare());
    }

    static BucketSettings bucket(LayoverProperties.Bucket p) {
        return new BucketSettings(p.getRequestsPerMinute(), p.getTokensPerMinute(), p.getBurst(),
                p.getInputTokensPerMinute(), p.getOutputTokensPerMinute(), p.getTokenBurst());
    }

    /**
     * The schedules of {@code layover.schedules.<name>.*}, each built with its job type from
     * {@code jobTypes}; a refused one names its property.
     */
    static java.util.List<Schedule<?>> schedules(Map<String, LayoverProperties.ScheduleEntry> entries,
            Map<String, JobType<?>> jobTypes) {
        java.util.List<Schedule<?>> out = new java.util.ArrayList<>();
        for (Map.Entry<String, LayoverProperties.ScheduleEntry> e : entries.entrySet()) {
            LayoverProperties.ScheduleEntry s = e.getValue();
            if (!s.isEnabled()) {
                continue;
            }
            String prefix = "layover.schedules." + e.getKey();
            JobType<?> type = value(prefix + ".job-type", () -> {
                if (s.getJobType() == null || !jobTypes.containsKey(s.getJobType())) {
                    throw new IllegalArgumentException("names no registered JobType bean: '" + s.getJobType()
                            + "' (registered: " + jobTypes.keySet() + ")");
                }
                return jobTypes.get(s.getJobType());
            });
            Timing timing = value(prefix + (s.getCron() != null ? ".cron" : ".every"), () -> {
                if ((s.getCron() == null) == (s.getEvery() == null)) {
                    throw new IllegalArgumentException("give either cron (with zone) or every, not both nor neither");
                }
                return s.getCron() != null ? Timing.cron(s.getCron(), s.getZone()) : Timing.every(s.getEvery());
            });
            MissedRuns missed = value(prefix + ".missed-runs", () -> MissedRuns.of(MissedRuns.Policy.valueOf(
                    s.getMissedRuns().trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_')), s.getMissedWindow()));
            Overlap overlap = value(prefix + ".overlap", () -> Overlap.valueOf(
                    s.getOverlap().trim().toUpperCase(java.util.Locale.ROOT)));
            out.add(value(prefix, () -> schedule(e.getKey(), type, timing, s, missed, overlap)));
        }
        return out;
    }

    private static <A> Schedule<A> schedule(String name, JobType<A> type, Timing timing,
            LayoverProperties.ScheduleEntry s, MissedRuns missed, Overlap overlap) {
        return Schedule.builder(name, type, timing).argsJson(s.getArgs()).missedRuns(missed).overlap(overlap)
                .jitter(s.getJitter()).priority(s.getPriority()).build();
    }

    /** Computes one setting's value; Layover's refusal becomes an error naming the property. */
    static <T> T value(String property, Supplier<T> setting) {
        try {
            return setting.get();
        } catch (RuntimeException e) {
            throw new InvalidLayoverPropertyException(property, e);
        }
    }

    /** Runs one setting; Layover's refusal (or a missing value) becomes an error naming the property. */
    static void set(String property, Runnable setting) {
        try {
            setting.run();
        } catch (RuntimeException e) {
            throw new InvalidLayoverPropertyException(property, e);
        }
    }
}
