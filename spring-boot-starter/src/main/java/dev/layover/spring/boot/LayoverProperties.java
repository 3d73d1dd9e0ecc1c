package dev.layover.spring.boot;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code layover.*} settings of a Spring Boot application. Every default is Layover's own
 * (the javadoc of {@code Layover.Builder}, {@code BreakerSettings}, {@code CooldownSettings},
 * {@code BucketSettings}, {@code RecoverySweep} and {@code DeadLetterRetention} explains each);
 * a setting Layover refuses stops the application with a message naming the property.
 *
 * <pre>
 * layover.threads=16
 * layover.poll-interval=500ms
 * layover.buckets[openai\:gpt-4o-mini].requests-per-minute=500
 * layover.concurrency-limits[tenant\:*]=2
 * layover.fairness.weights[tenant\:premium-*]=2
 * layover.breakers.open-for=1m
 * layover.console.enabled=true
 * </pre>
 *
 * <p>A key with a {@code :} (every provider key) goes in brackets, and in a
 * {@code .properties} file its {@code :} is escaped as {@code \:} (the format reads an unescaped
 * {@code :} as the end of the name); in YAML, quote it: {@code "[openai:gpt-4o-mini]":}.
 *
 * <p>Database: {@link #isMigrate() migrate} (default true) applies Layover's migrations to
 * schema {@code layover} when the application starts; buckets and concurrency limits are written
 * to {@code layover.buckets} and {@code layover.concurrency_limits} when the workers meet their
 * keys; fairness weights to {@code layover.fairness_weights} when the workers start. Everything
 * else only configures this JVM.
 */
@ConfigurationProperties(prefix = "layover")
public class LayoverProperties {

    /** Whether Layover is configured at all. */
    private boolean enabled = true;

    /**
     * Whether this application runs jobs. False: an enqueue-only client (no worker threads, no
     * plugins), for applications that only enqueue.
     */
    private boolean runJobs = true;

    /** Worker threads: how many jobs this JVM runs at once (platform threads, or virtual ones with virtual-threads). */
    private int threads = 10;

    /**
     * Whether handlers run on virtual threads, at most layover.threads at once (Java 21 or newer; before
     * it the application fails to start with Layover's ConfigurationException).
     */
    private boolean virtualThreads;

    /** How often workers look for due jobs when nothing wakes them. */
    private Duration pollInterval = Duration.ofSeconds(1);

    /**
     * Jobs a worker holds at a time, as a fixed multiple of the threads (1 to 10). Unset (the
     * default): adaptive, following the observed handler durations, 6 for jobs of 10 ms or less
     * down to 1 for jobs of 1 s or more (see {@code Layover.Builder#prefetch}).
     */
    private Double prefetch;

    /** How long stopping lets running jobs finish. */
    private Duration shutdownMaxWait = Duration.ofSeconds(30);

    /**
     * How long a job picked ahead may wait unstarted while every thread is busy before it goes back
     * to the fleet (no attempt spent); 0 turns that off.
     */
    private Duration giveBackAfter = Duration.ofSeconds(2);

    /**
     * Whether workers listen for new jobs and provider state changes with LISTEN/NOTIFY; false
     * behind a pooler in transaction mode (PgBouncer), where polling alone finds work.
     */
    private boolean notifications = true;

    /** This worker's name in picked_by, at most 50 characters; default host#pid. */
    private String workerName;

    /** The largest job arguments accepted, as JSON bytes (default 256 KiB). */
    private int maxArgsBytes = 262144;

    /** Whether Layover's migrations (schema layover) run when the application starts. */
    private boolean migrate = true;

    /** Whether due jobs run highest priority first instead of oldest first. */
    private boolean priority;

    /**
     * The longest stack trace a failed attempt keeps (masked, in its errors entry); 0 keeps none
     * (default 4000).
     */
    private int stackTraceChars = dev.layover.core.Layover.Builder.DEFAULT_STACK_TRACE_CHARS;

    private final Heartbeat heartbeat = new Heartbeat();
    private final History history = new History();
    private final TimeSeries timeSeries = new TimeSeries();
    private final Breakers breakers = new Breakers();
    private final Cooldowns cooldowns = new Cooldowns();

    /**
     * Fleet-wide admission limits per provider key, limit key, API key pool key or
     * {@code prefix*} pattern (bracket the key, and escape its colon in a .properties file:
     * {@code layover.buckets[openai\:gpt-4o].requests-per-minute=500}).
     * Each has requests-per-minute and/or tokens-per-minute (and input, output tokens per minute),
     * burst (default 1s) and token-burst (default 1m).
     */
    private final Map<String, Bucket> buckets = new LinkedHashMap<>();

    /**
     * Fleet-wide concurrency limits: at most this many jobs of the key (or of each key matching a
     * {@code prefix*} pattern) run at once across every JVM.
     */
    private final Map<String, Integer> concurrencyLimits = new LinkedHashMap<>();

    private final Fairness fairness = new Fairness();
    private final Interactive interactive = new Interactive();
    private final DeadLetters dlq = new DeadLetters();
    private final Console console = new Console();

    /**
     * Whether a run puts its job into the SLF4J MDC (layover.job_type, layover.job_id,
     * layover.attempt, layover.provider_key; trace_id and span_id with tracing).
     */
    private boolean mdc = true;

    /**
     * Token prices per model (Prices), for layover.token_costs and the console: bracket the model
     * ({@code layover.prices[gpt-4o-mini].input=0.15}); prices per million tokens. Layover ships none.
     */
    private final Map<String, Price> prices = new LinkedHashMap<>();

    private final Tracing tracing = new Tracing();

    /**
     * Recurring jobs defined in configuration, by name ({@code layover.schedules.nightly.job-type=digest},
     * {@code .cron=30 2 * * *}, {@code .zone=Europe/Berlin}, {@code .args={"day":"yesterday"}}); each a
     * code schedule of tenant "" (docs/recurring.md), beside the {@code Schedule} beans.
     */
    private final Map<String, ScheduleEntry> schedules = new LinkedHashMap<>();

    /** How often the scheduler loop looks for due schedules (an interval schedule may not be shorter). */
    private Duration schedulePollInterval = Duration.ofSeconds(1);

    /**
     * The generation of this application's code schedules: a start writes a code schedule only when its
     * generation is at least the row's (rolling deploys: a growing build number).
     */
    private long scheduleGeneration;

    /** @return the schedules defined in configuration, by name */
    public Map<String, ScheduleEntry> getSchedules() {
        return schedules;
    }

    /** @return the scheduler loop's poll interval */
    public Duration getSchedulePollInterval() {
        return schedulePollInterval;
    }

    /** @param schedulePollInterval the scheduler loop's poll interval */
    public void setSchedulePollInterval(Duration schedulePollInterval) {
        this.schedulePollInterval = schedulePollInterval;
    }

    /** @return the code schedules' generation */
    public long getScheduleGeneration() {
        return scheduleGeneration;
    }

    /** @param scheduleGeneration the code schedules' generation */
    public void setScheduleGeneration(long scheduleGeneration) {
        this.scheduleGeneration = scheduleGeneration;
    }

    /** One schedule of {@code layover.schedules.<name>.*}: a cron expression and zone, or an interval. */
    public static class ScheduleEntry {

        /** The job type of its occurrences (a registered JobType bean's name). */
        private String jobType;

        /** A cron expression of 5 or 6 fields; give it or every. */
        private String cron;

        /** The zone the cron expression is read in. */
        private String zone = "UTC";

        /** A fixed interval; give it or cron. */
        private Duration every;

        /** Every occurrence's args, as JSON. */
        private String args = "{}";

        /** What runs of missed occurrences: skip, run-last or catch-up. */
        private String missedRuns = "skip";

        /** The grace period of skip (default 1 minute) or the window of catch-up (required). */
        private Duration missedWindow;

        /** An occurrence due while the previous one is still queued: skip, queue or allow. */
        private String overlap = "skip";

        /** Each occurrence's job runs up to this much after its instant. */
        private Duration jitter = Duration.ZERO;

        /** The priority of each occurrence's job. */
        private int priority;

        /** Whether the schedule is registered (false: it is removed at the next start). */
        private boolean enabled = true;

        /** @return the job type */
        public String getJobType() {
            return jobType;
        }

        /** @param jobType the job type */
        public void setJobType(String jobType) {
            this.jobType = jobType;
        }

        /** @return the cron expression */
        public String getCron() {
            return cron;
        }

        /** @param cron the cron expression */
        public void setCron(String cron) {
            this.cron = cron;
        }

        /** @return the zone */
        public String getZone() {
            return zone;
        }

        /** @param zone the zone */
        public void setZone(String zone) {
            this.zone = zone;
        }

        /** @return the interval */
        public Duration getEvery() {
            return every;
        }

        /** @param every the interval */
        public void setEvery(Duration every) {
            this.every = every;
        }

        /** @return the args as JSON */
        public String getArgs() {
            return args;
        }

        /** @param args the args as JSON */
        public void setArgs(String args) {
            this.args = args;
        }

        /** @return the missed-run policy */
        public String getMissedRuns() {
            return missedRuns;
        }

        /** @param missedRuns the missed-run policy */
        public void setMissedRuns(String missedRuns) {
            this.missedRuns = missedRuns;
        }

        /** @return the grace period or catch-up window */
        public Duration getMissedWindow() {
            return missedWindow;
        }

        /** @param missedWindow the grace period or catch-up window */
        public void setMissedWindow(Duration missedWindow) {
            this.missedWindow = missedWindow;
        }

        /** @return the overlap policy */
        public String getOverlap() {
            return overlap;
        }

        /** @param overlap the overlap policy */
        public void setOverlap(String overlap) {
            this.overlap = overlap;
        }

        /** @return the jitter */
        public Duration getJitter() {
            return jitter;
        }

        /** @param jitter the jitter */
        public void setJitter(Duration jitter) {
            this.jitter = jitter;
        }

        /** @return the priority */
        public int getPriority() {
            return priority;
        }

        /** @param priority the priority */
        public void setPriority(int priority) {
            this.priority = priority;
        }

        /** @return whether it is registered */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether it is registered */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** @return whether Layover is configured */
    public boolean isEnabled() {
        return enabled;
    }

    /** @param enabled whether Layover is configured */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** @return whether this application runs jobs */
    public boolean isRunJobs() {
        return runJobs;
    }

    /** @param runJobs whether this application runs jobs */
    public void setRunJobs(boolean runJobs) {
        this.runJobs = runJobs;
    }

    /** @return worker threads */
    public int getThreads() {
        return threads;
    }

    /** @param threads worker threads */
    public void setThreads(int threads) {
        this.threads = threads;
    }

    /** @return whether handlers run on virtual threads */
    public boolean isVirtualThreads() {
        return virtualThreads;
    }

    /** @param virtualThreads whether handlers run on virtual threads (Java 21+) */
    public void setVirtualThreads(boolean virtualThreads) {
        this.virtualThreads = virtualThreads;
    }

    /** @return the poll interval */
    public Duration getPollInterval() {
        return pollInterval;
    }

    /** @param pollInterval the poll interval */
    public void setPollInterval(Duration pollInterval) {
        this.pollInterval = pollInterval;
    }

    /** @return how long a job picked ahead may wait unstarted behind busy threads */
    public Duration getGiveBackAfter() {
        return giveBackAfter;
    }

    /** @param giveBackAfter how long a job picked ahead may wait unstarted behind busy threads */
    public void setGiveBackAfter(Duration giveBackAfter) {
        this.giveBackAfter = giveBackAfter;
    }

    /** @return whether workers use LISTEN/NOTIFY */
    public boolean isNotifications() {
        return notifications;
    }

    /** @param notifications whether workers use LISTEN/NOTIFY */
    public void setNotifications(boolean notifications) {
        this.notifications = notifications;
    }

    /** @return the fixed prefetch factor, or null for the adaptive default */
    public Double getPrefetch() {
        return prefetch;
    }

    /** @param prefetch the fixed prefetch factor, or null for the adaptive default */
    public void setPrefetch(Double prefetch) {
        this.prefetch = prefetch;
    }

    /** @return how long stopping lets running jobs finish */
    public Duration getShutdownMaxWait() {
        return shutdownMaxWait;
    }

    /** @param shutdownMaxWait how long stopping lets running jobs finish */
    public void setShutdownMaxWait(Duration shutdownMaxWait) {
        this.shutdownMaxWait = shutdownMaxWait;
    }

    /** @return the worker name, or null for host#pid */
    public String getWorkerName() {
        return workerName;
    }

    /** @param workerName the worker name */
    public void setWorkerName(String workerName) {
        this.workerName = workerName;
    }

    /** @return the largest args accepted, in bytes */
    public int getMaxArgsBytes() {
        return maxArgsBytes;
    }

    /** @param maxArgsBytes the largest args accepted, in bytes */
    public void setMaxArgsBytes(int maxArgsBytes) {
        this.maxArgsBytes = maxArgsBytes;
    }

    /** @return whether migrations run at start */
    public boolean isMigrate() {
        return migrate;
    }

    /** @param migrate whether migrations run at start */
    public void setMigrate(boolean migrate) {
        this.migrate = migrate;
    }

    /** @return whether due jobs run by priority */
    public boolean isPriority() {
        return priority;
    }

    /** @param priority whether due jobs run by priority */
    public void setPriority(boolean priority) {
        this.priority = priority;
    }

    /** @return the heartbeat settings */
    public Heartbeat getHeartbeat() {
        return heartbeat;
    }

    /** @return the job history settings */
    public History getHistory() {
        return history;
    }

    /** @return the longest stored stack trace */
    public int getStackTraceChars() {
        return stackTraceChars;
    }

    /** @param stackTraceChars the longest stored stack trace; 0 for none */
    public void setStackTraceChars(int stackTraceChars) {
        this.stackTraceChars = stackTraceChars;
    }

    /** @return the time series settings */
    public TimeSeries getTimeSeries() {
        return timeSeries;
    }

    /** @return the default circuit breaker settings */
    public Breakers getBreakers() {
        return breakers;
    }

    /** @return the cooldown settings */
    public Cooldowns getCooldowns() {
        return cooldowns;
    }

    /** @return the buckets by key */
    public Map<String, Bucket> getBuckets() {
        return buckets;
    }

    /** @return the concurrency limits by key */
    public Map<String, Integer> getConcurrencyLimits() {
        return concurrencyLimits;
    }

    /** @return the fair share settings (FairnessSettings); all unset by default */
    public Fairness getFairness() {
        return fairness;
    }

    /** @return how background jobs share keys with interactive calls (InteractiveSettings); unset by default */
    public Interactive getInteractive() {
        return interactive;
    }

    /** @return the dead-letter settings (used when layover-dlq is on the classpath) */
    public DeadLetters getDlq() {
        return dlq;
    }

    /** @return the replay console settings (used when layover-replay-console is on the classpath) */
    public Console getConsole() {
        return console;
    }

    /** @return whether runs put their job into the MDC */
    public boolean isMdc() {
        return mdc;
    }

    /** @param mdc whether runs put their job into the MDC */
    public void setMdc(boolean mdc) {
        this.mdc = mdc;
    }

    /** @return token prices by model */
    public Map<String, Price> getPrices() {
        return prices;
    }

    /** @return the tracing settings */
    public Tracing getTracing() {
        return tracing;
    }

    /** Traces through the application's OpenTelemetry bean (docs/observability.md#traces). */
    public static class Tracing {
        /** Whether Layover traces through the application's OpenTelemetry bean, when it has one. */
        private boolean enabled = true;

        /** @return whether tracing is on */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether tracing is on */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** One model's token prices (ModelPrice), per million tokens. */
    public static class Price {
        /** ISO 4217 currency code. */
        private String currency = "USD";
        /** Price of a million input tokens. */
        private Double input;
        /** Price of a million input tokens read from a prompt cache; unset: the input price. */
        private Double cachedInput;
        /** Price of a million output tokens. */
        private Double output;
        /** Provider keys or prefix* patterns billed as this model (beside keys whose text after ':' is its name). */
        private java.util.List<String> providerKeys = new java.util.ArrayList<>();

        /** @return the currency */
        public String getCurrency() {
            return currency;
        }

        /** @param currency the currency */
        public void setCurrency(String currency) {
            this.currency = currency;
        }

        /** @return the input price */
        public Double getInput() {
            return input;
        }

        /** @param input the input price */
        public void setInput(Double input) {
            this.input = input;
        }

        /** @return the cached input price, or null */
        public Double getCachedInput() {
            return cachedInput;
        }

        /** @param cachedInput the cached input price */
        public void setCachedInput(Double cachedInput) {
            this.cachedInput = cachedInput;
        }

        /** @return the output price */
        public Double getOutput() {
            return output;
        }

        /** @param output the output price */
        public void setOutput(Double output) {
            this.output = output;
        }

        /** @return the provider keys billed as this model */
        public java.util.List<String> getProviderKeys() {
            return providerKeys;
        }

        /** @param providerKeys the provider keys billed as this model */
        public void setProviderKeys(java.util.List<String> providerKeys) {
            this.providerKeys = providerKeys;
        }
    }

    /** Heartbeats of running jobs. */
    public static class Heartbeat {
        /** How often a running job's heartbeat is written. */
        private Duration interval = Duration.ofSeconds(5);
        /** Heartbeats missed before a job is declared dead and run again elsewhere (at least 4). */
        private int missed = 8;

        /** @return the heartbeat interval */
        public Duration getInterval() {
            return interval;
        }

        /** @param interval the heartbeat interval */
        public void setInterval(Duration interval) {
            this.interval = interval;
        }

        /** @return heartbeats missed before dead */
        public int getMissed() {
            return missed;
        }

        /** @param missed heartbeats missed before dead */
        public void setMissed(int missed) {
            this.missed = missed;
        }
    }

    /** The record of finished jobs, layover.job_history. */
    public static class History {
        /** Whether every finished job gets a row in layover.job_history. */
        private boolean enabled = true;
        /** Whether history rows keep the job's args. */
        private boolean args;
        /** How long history rows are kept; 0 keeps them forever. */
        private Duration retention = Duration.ofDays(7);

        /** @return whether history is written */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether history is written */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return whether history rows keep args */
        public boolean isArgs() {
            return args;
        }

        /** @param args whether history rows keep args */
        public void setArgs(boolean args) {
            this.args = args;
        }

        /** @return how long rows are kept */
        public Duration getRetention() {
            return retention;
        }

        /** @param retention how long rows are kept */
        public void setRetention(Duration retention) {
            this.retention = retention;
        }
    }

    /** The time series of layover.time_series (counts per 10 s and per minute). */
    public static class TimeSeries {
        /** Whether this application's workers count and write the time series. */
        private boolean enabled = true;
        /** How often the counts are written (one statement per flush; at least 100ms). */
        private Duration flushInterval = dev.layover.core.Layover.Builder.DEFAULT_TIME_SERIES_FLUSH;
        /** How long 10-second rows are kept. */
        private Duration tenSecondRetention = dev.layover.core.Layover.Builder.DEFAULT_TIME_SERIES_KEEP_TEN_SECOND;
        /** How long one-minute and one-hour rows are kept. */
        private Duration minuteRetention = dev.layover.core.Layover.Builder.DEFAULT_TIME_SERIES_KEEP_MINUTE;

        /** @return whether the time series is written */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether the time series is written */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return how often counts are written */
        public Duration getFlushInterval() {
            return flushInterval;
        }

        /** @param flushInterval how often counts are written */
        public void setFlushInterval(Duration flushInterval) {
            this.flushInterval = flushInterval;
        }

        /** @return how long 10-second rows are kept */
        public Duration getTenSecondRetention() {
            return tenSecondRetention;
        }

        /** @param tenSecondRetention how long 10-second rows are kept */
        public void setTenSecondRetention(Duration tenSecondRetention) {
            this.tenSecondRetention = tenSecondRetention;
        }

        /** @return how long minute rows are kept */
        public Duration getMinuteRetention() {
            return minuteRetention;
        }

        /** @param minuteRetention how long minute rows are kept */
        public void setMinuteRetention(Duration minuteRetention) {
            this.minuteRetention = minuteRetention;
        }
    }

    /** Circuit breaker settings of every provider key without its own (BreakerSettings). */
    public static class Breakers {
        /** The counting window of a closed breaker. */
        private Duration window = Duration.ofSeconds(60);
        /** Calls in the window before the breaker may open. */
        private int minimumCalls = 10;
        /** Failures in the window before the breaker may open. */
        private int failureThreshold = 5;
        /** The share of failures among calls that opens it, in (0, 1]. */
        private double failureRatio = 0.5;
        /** How long the first opening lasts. */
        private Duration openFor = Duration.ofSeconds(30);
        /** The longest opening after repeated failed trials. */
        private Duration maxOpenFor = Duration.ofMinutes(10);
        /** How long a claimed trial call may take before another worker may claim it. */
        private Duration trialTimeout = Duration.ofMinutes(2);
        /** Failures in a row, with no success reported between them, that open the breaker. */
        private int consecutiveFailures = 10;

        /** @return the window */
        public Duration getWindow() {
            return window;
        }

        /** @param window the window */
        public void setWindow(Duration window) {
            this.window = window;
        }

        /** @return the minimum calls */
        public int getMinimumCalls() {
            return minimumCalls;
        }

        /** @param minimumCalls the minimum calls */
        public void setMinimumCalls(int minimumCalls) {
            this.minimumCalls = minimumCalls;
        }

        /** @return the failure threshold */
        public int getFailureThreshold() {
            return failureThreshold;
        }

        /** @param failureThreshold the failure threshold */
        public void setFailureThreshold(int failureThreshold) {
            this.failureThreshold = failureThreshold;
        }

        /** @return the failure ratio */
        public double getFailureRatio() {
            return failureRatio;
        }

        /** @param failureRatio the failure ratio */
        public void setFailureRatio(double failureRatio) {
            this.failureRatio = failureRatio;
        }

        /** @return the first opening */
        public Duration getOpenFor() {
            return openFor;
        }

        /** @param openFor the first opening */
        public void setOpenFor(Duration openFor) {
            this.openFor = openFor;
        }

        /** @return the longest opening */
        public Duration getMaxOpenFor() {
            return maxOpenFor;
        }

        /** @param maxOpenFor the longest opening */
        public void setMaxOpenFor(Duration maxOpenFor) {
            this.maxOpenFor = maxOpenFor;
        }

        /** @return the trial timeout */
        public Duration getTrialTimeout() {
            return trialTimeout;
        }

        /** @param trialTimeout the trial timeout */
        public void setTrialTimeout(Duration trialTimeout) {
            this.trialTimeout = trialTimeout;
        }

        /** @return the failures in a row that open the breaker */
        public int getConsecutiveFailures() {
            return consecutiveFailures;
        }

        /** @param consecutiveFailures the failures in a row that open the breaker */
        public void setConsecutiveFailures(int consecutiveFailures) {
            this.consecutiveFailures = consecutiveFailures;
        }
    }

    /** How long provider keys cool down when the provider named no wait (CooldownSettings). */
    public static class Cooldowns {
        /** The first wait after a 429 without retry-after. */
        private Duration rateLimitBase = Duration.ofSeconds(1);
        /** The longest such wait. */
        private Duration rateLimitCap = Duration.ofSeconds(60);
        /** The first cooldown after an overloaded answer (503, 529). */
        private Duration overloadBase = Duration.ofSeconds(1);
        /** The longest overload cooldown. */
        private Duration overloadCap = Duration.ofSeconds(30);
        /** How soon after the previous cooldown a new one counts as back-to-back. */
        private Duration strikeMemory = Duration.ofSeconds(60);
        /**
         * How long a pace learned from a 429 that states the key's limit lasts; 0: never learn one.
         */
        private Duration learnedPaceFor = Duration.ofMinutes(10);
        /** The share of a stated limit a learned pace allows, in (0, 1]. */
        private double learnedPaceShare = 0.95;

        /** @return the first rate-limit wait */
        public Duration getRateLimitBase() {
            return rateLimitBase;
        }

        /** @param rateLimitBase the first rate-limit wait */
        public void setRateLimitBase(Duration rateLimitBase) {
            this.rateLimitBase = rateLimitBase;
        }

        /** @return the longest rate-limit wait */
        public Duration getRateLimitCap() {
            return rateLimitCap;
        }

        /** @param rateLimitCap the longest rate-limit wait */
        public void setRateLimitCap(Duration rateLimitCap) {
            this.rateLimitCap = rateLimitCap;
        }

        /** @return the first overload cooldown */
        public Duration getOverloadBase() {
            return overloadBase;
        }

        /** @param overloadBase the first overload cooldown */
        public void setOverloadBase(Duration overloadBase) {
            this.overloadBase = overloadBase;
        }

        /** @return the longest overload cooldown */
        public Duration getOverloadCap() {
            return overloadCap;
        }

        /** @param overloadCap the longest overload cooldown */
        public void setOverloadCap(Duration overloadCap) {
            this.overloadCap = overloadCap;
        }

        /** @return the strike memory */
        public Duration getStrikeMemory() {
            return strikeMemory;
        }

        /** @param strikeMemory the strike memory */
        public void setStrikeMemory(Duration strikeMemory) {
            this.strikeMemory = strikeMemory;
        }

        /** @return how long a learned pace lasts */
        public Duration getLearnedPaceFor() {
            return learnedPaceFor;
        }

        /** @param learnedPaceFor how long a learned pace lasts */
        public void setLearnedPaceFor(Duration learnedPaceFor) {
            this.learnedPaceFor = learnedPaceFor;
        }

        /** @return the learned pace's share of the stated limit */
        public double getLearnedPaceShare() {
            return learnedPaceShare;
        }

        /** @param learnedPaceShare the learned pace's share of the stated limit */
        public void setLearnedPaceShare(double learnedPaceShare) {
            this.learnedPaceShare = learnedPaceShare;
        }
    }

    /** An admission limit for one key (BucketSettings); give a request or a token limit. */
    public static class Bucket {
        /** Requests per minute; 0 for none. */
        private double requestsPerMinute;
        /** Tokens per minute; 0 for none. */
        private double tokensPerMinute;
        /** How much of the rate may be spent at once. */
        private Duration burst = Duration.ofSeconds(1);
        /** The most request permits a worker takes per round trip. */
        /** Input tokens per minute; 0 for none. */
        private double inputTokensPerMinute;
        /** Output tokens per minute; 0 for none. */
        private double outputTokensPerMinute;
        /** How much of each token rate may be spent at once (token capacity = rate x this). */
        private Duration tokenBurst = Duration.ofMinutes(1);

        /** @return input tokens per minute */
        public double getInputTokensPerMinute() {
            return inputTokensPerMinute;
        }

        /** @param inputTokensPerMinute input tokens per minute */
        public void setInputTokensPerMinute(double inputTokensPerMinute) {
            this.inputTokensPerMinute = inputTokensPerMinute;
        }

        /** @return output tokens per minute */
        public double getOutputTokensPerMinute() {
            return outputTokensPerMinute;
        }

        /** @param outputTokensPerMinute output tokens per minute */
        public void setOutputTokensPerMinute(double outputTokensPerMinute) {
            this.outputTokensPerMinute = outputTokensPerMinute;
        }

        /** @return the token burst */
        public Duration getTokenBurst() {
            return tokenBurst;
        }

        /** @param tokenBurst the token burst */
        public void setTokenBurst(Duration tokenBurst) {
            this.tokenBurst = tokenBurst;
        }

        /** @return requests per minute */
        public double getRequestsPerMinute() {
            return requestsPerMinute;
        }

        /** @param requestsPerMinute requests per minute */
        public void setRequestsPerMinute(double requestsPerMinute) {
            this.requestsPerMinute = requestsPerMinute;
        }

        /** @return tokens per minute */
        public double getTokensPerMinute() {
            return tokensPerMinute;
        }

        /** @param tokensPerMinute tokens per minute */
        public void setTokensPerMinute(double tokensPerMinute) {
            this.tokensPerMinute = tokensPerMinute;
        }

        /** @return the burst */
        public Duration getBurst() {
            return burst;
        }

        /** @param burst the burst */
        public void setBurst(Duration burst) {
            this.burst = burst;
        }

    }

    /**
     * Fair share of a provider key's admissions among the fairness keys of its jobs
     * ({@code FairnessSettings}, {@code docs/fairness.md}). While none of these is set the builder's
     * fairness is left as it is (Layover's defaults); once one is, the others keep Layover's
     * defaults. Database: the weights are written to {@code layover.fairness_weights} when the
     * workers start (an operator's weight set at run time is kept).
     */
    public static class Fairness {
        /**
         * The share of each key's admissions reserved for jobs below the highest priority waiting,
         * in [0, 1); 0 is strict priority (unset: Layover's 0.1).
         */
        private Double lowPriorityShare;
        /**
         * Weights by fairness key, or by pattern with * for any text (the longest matching pattern
         * wins), each in (0, 1000000]; a key without one weighs 1. Bracket the key, and escape its
         * colon in a .properties file: {@code layover.fairness.weights[tenant\:premium-*]=2}.
         */
        private final Map<String, Double> weights = new LinkedHashMap<>();

        /** @return the share reserved for lower priorities, or null for Layover's default (0.1) */
        public Double getLowPriorityShare() {
            return lowPriorityShare;
        }

        /** @param lowPriorityShare the share reserved for lower priorities, in [0, 1); null for Layover's default */
        public void setLowPriorityShare(Double lowPriorityShare) {
            this.lowPriorityShare = lowPriorityShare;
        }

        /** @return the weights by fairness key or pattern (empty: every fairness key weighs 1) */
        public Map<String, Double> getWeights() {
            return weights;
        }
    }

    /**
     * How background jobs share provider keys with interactive calls ({@code InteractiveSettings},
     * {@code docs/interactive.md}): while a key's interactive calls arrive, the pick leaves this
     * share of its bucket free for them. Unset: Layover's defaults (0.25, 1 s).
     */
    public static class Interactive {
        /** The share of each bucket dimension left free for interactive calls, in [0, 1) (unset: 0.25). */
        private Double share;
        /** How long after an interactive call the share stays reserved (unset: 1s). */
        private java.time.Duration window;

        /** @return the share, or null for Layover's default (0.25) */
        public Double getShare() {
            return share;
        }

        /** @param share the share, in [0, 1); null for Layover's default */
        public void setShare(Double share) {
            this.share = share;
        }

        /** @return the window, or null for Layover's default (1 s) */
        public java.time.Duration getWindow() {
            return window;
        }

        /** @param window how long the share stays reserved after an interactive call; null for Layover's default */
        public void setWindow(java.time.Duration window) {
            this.window = window;
        }
    }

    /** The dead-letter store, the recovery sweep and dead-letter retention (layover-dlq). */
    public static class DeadLetters {
        private final Sweep recoverySweep = new Sweep();
        private final Retention retention = new Retention();

        /** @return the recovery sweep settings */
        public Sweep getRecoverySweep() {
            return recoverySweep;
        }

        /** @return the retention settings */
        public Retention getRetention() {
            return retention;
        }
    }

    /** The recovery sweep and recovery trial (RecoverySweep). */
    public static class Sweep {
        /** Whether parked jobs are replayed by themselves when their provider's breaker closes. */
        private boolean enabled = true;
        /** How often the sweep looks at breakers and parked jobs. */
        private Duration checkEvery = Duration.ofSeconds(5);
        /** Replays in the first batch after a close. */
        private int firstBatch = 10;
        /** How much a batch grows when the previous ones went well. */
        private double growthFactor = 2.0;
        /** The largest batch. */
        private int maxBatch = 500;
        /** The window a batch's replays are spread over. */
        private Duration spread = Duration.ofSeconds(10);
        /** Automatic replays of one dead letter before it goes to review. */
        private int replayBudget = 3;
        /** Dead letters parked up to this long after a close are still swept. */
        private Duration closeGrace = Duration.ofMinutes(1);
        /** Whether one parked job is replayed as the trial call of an open breaker without traffic. */
        private boolean trials = true;

        /** @return whether the sweep runs */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether the sweep runs */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return the check interval */
        public Duration getCheckEvery() {
            return checkEvery;
        }

        /** @param checkEvery the check interval */
        public void setCheckEvery(Duration checkEvery) {
            this.checkEvery = checkEvery;
        }

        /** @return the first batch size */
        public int getFirstBatch() {
            return firstBatch;
        }

        /** @param firstBatch the first batch size */
        public void setFirstBatch(int firstBatch) {
            this.firstBatch = firstBatch;
        }

        /** @return the growth factor */
        public double getGrowthFactor() {
            return growthFactor;
        }

        /** @param growthFactor the growth factor */
        public void setGrowthFactor(double growthFactor) {
            this.growthFactor = growthFactor;
        }

        /** @return the largest batch */
        public int getMaxBatch() {
            return maxBatch;
        }

        /** @param maxBatch the largest batch */
        public void setMaxBatch(int maxBatch) {
            this.maxBatch = maxBatch;
        }

        /** @return the spread window */
        public Duration getSpread() {
            return spread;
        }

        /** @param spread the spread window */
        public void setSpread(Duration spread) {
            this.spread = spread;
        }

        /** @return the replay budget */
        public int getReplayBudget() {
            return replayBudget;
        }

        /** @param replayBudget the replay budget */
        public void setReplayBudget(int replayBudget) {
            this.replayBudget = replayBudget;
        }

        /** @return the close grace */
        public Duration getCloseGrace() {
            return closeGrace;
        }

        /** @param closeGrace the close grace */
        public void setCloseGrace(Duration closeGrace) {
            this.closeGrace = closeGrace;
        }

        /** @return whether trials run */
        public boolean isTrials() {
            return trials;
        }

        /** @param trials whether trials run */
        public void setTrials(boolean trials) {
            this.trials = trials;
        }
    }

    /** Retention of replayed and discarded dead letters (DeadLetterRetention). */
    public static class Retention {
        /** Whether replayed and discarded dead letters are deleted after keep. */
        private boolean enabled = true;
        /** How long replayed and discarded dead letters are kept (parked ones are never deleted). */
        private Duration keep = Duration.ofDays(30);
        /** How often retention runs. */
        private Duration every = Duration.ofHours(1);
        /** Rows per DELETE. */
        private int batchSize = 10000;

        /** @return whether retention runs */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether retention runs */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return the retention period */
        public Duration getKeep() {
            return keep;
        }

        /** @param keep the retention period */
        public void setKeep(Duration keep) {
            this.keep = keep;
        }

        /** @return the interval */
        public Duration getEvery() {
            return every;
        }

        /** @param every the interval */
        public void setEvery(Duration every) {
            this.every = every;
        }

        /** @return rows per DELETE */
        public int getBatchSize() {
            return batchSize;
        }

        /** @param batchSize rows per DELETE */
        public void setBatchSize(int batchSize) {
            this.batchSize = batchSize;
        }
    }

    /** The replay console (layover-replay-console). */
    public static class Console {
        /** Whether the replay console is served. */
        private boolean enabled;
        /**
         * servlet: mounted in the application under path, behind the application's own security;
         * standalone: on a port of its own, with its own access token.
         */
        private ConsoleMode mode = ConsoleMode.SERVLET;
        /** Where the console is mounted in servlet mode. */
        private String path = "/layover";
        /** Standalone mode: the port (0: any free port). */
        private int port = 7070;
        /** Standalone mode: the address to listen on. */
        private String bind = "127.0.0.1";
        /** Standalone mode: the access token (at least 16 characters); default: a random one, logged. */
        private String token;
        /**
         * Whether the console refuses every state-changing request. Unset: read-only for requests
         * without a signed-in user (allow-anonymous), read-write for signed-in users and for the
         * standalone console's token holders.
         */
        private Boolean readOnly;
        /**
         * Servlet mode: let requests without a signed-in user in (read-only unless read-only=false).
         * Needed to mount the console in an application without Spring Security; false: such a
         * request gets 401, and the application fails to start when no Spring Security
         * SecurityFilterChain protects it.
         */
        private boolean allowAnonymous;
        /** Standalone mode: the URL browsers use, when behind a reverse proxy. */
        private String publicUrl;

        /** @return whether the console is served */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether the console is served */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return how the console is served */
        public ConsoleMode getMode() {
            return mode;
        }

        /** @param mode how the console is served */
        public void setMode(ConsoleMode mode) {
            this.mode = mode;
        }

        /** @return the servlet path */
        public String getPath() {
            return path;
        }

        /** @param path the servlet path */
        public void setPath(String path) {
            this.path = path;
        }

        /** @return the standalone port */
        public int getPort() {
            return port;
        }

        /** @param port the standalone port */
        public void setPort(int port) {
            this.port = port;
        }

        /** @return the standalone bind address */
        public String getBind() {
            return bind;
        }

        /** @param bind the standalone bind address */
        public void setBind(String bind) {
            this.bind = bind;
        }

        /** @return the standalone token, or null for a random one */
        public String getToken() {
            return token;
        }

        /** @param token the standalone token */
        public void setToken(String token) {
            this.token = token;
        }

        /** @return whether the console is read-only; {@code null} when unset (see the field) */
        public Boolean getReadOnly() {
            return readOnly;
        }

        /** @param readOnly whether the console is read-only; {@code null} to leave it unset */
        public void setReadOnly(Boolean readOnly) {
            this.readOnly = readOnly;
        }

        /** @return whether requests without a signed-in user are let in (servlet mode) */
        public boolean isAllowAnonymous() {
            return allowAnonymous;
        }

        /** @param allowAnonymous whether requests without a signed-in user are let in (servlet mode) */
        public void setAllowAnonymous(boolean allowAnonymous) {
            this.allowAnonymous = allowAnonymous;
        }

        /** @return the public URL, or null */
        public String getPublicUrl() {
            return publicUrl;
        }

        /** @param publicUrl the public URL */
        public void setPublicUrl(String publicUrl) {
            this.publicUrl = publicUrl;
        }
    }

    /** How the replay console is served. */
    public enum ConsoleMode {
        /** Mounted in the application's servlet container under {@code layover.console.path}. */
        SERVLET,
        /** On a port of its own ({@code layover.console.port}), with its own access token. */
        STANDALONE
    }
}
