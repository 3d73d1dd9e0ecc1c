package dev.layover.dlq;

import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.Schedules;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.LayoverPlugin;
import dev.layover.core.outcome.FailureType;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The recovery sweep and the recovery trial: parked jobs come back by themselves when their
 * provider recovers. A {@link LayoverPlugin}:
 *
 * <pre>{@code
 * Layover layover = Layover.builder(dataSource)
 *         .register(translate)
 *         .plugin(RecoverySweep.plugin())                       // every default
 *         .start();
 *
 * Layover tuned = Layover.builder(dataSource)
 *         .register(translate, embed)
 *         .plugin(RecoverySweep.builder()
 *                 .firstBatch(20).maxBatch(200).spreadOver(Duration.ofSeconds(30))
 *                 .autoReplay("embed", FailureType.PROVIDER_UNAVAILABLE, FailureType.BREAKER_OPEN)
 *                 .build())
 *         .start();
 * }</pre>
 *
 * <p>One db-scheduler recurring task ({@value #TASK_NAME}), run by one worker of the cluster at a
 * time. It reads each key's breaker, cooldown and {@code layover.recovery_state}. The sweep: after
 * a breaker closes, the key's auto-replayable dead letters are replayed ({@link ReplayKind#SWEEP})
 * in batches that grow while replays succeed and shrink when they park again; rate-limit and quota
 * entries come back when the key's cooldown ends. The trial: while a breaker stays open, one dead
 * letter at a time is replayed ({@link ReplayKind#TRIAL}) to make the half-open call. It must not
 * loop: a sweep replay spends the dead letter's {@link Builder#replayBudget(int) replayBudget}, and
 * one that parks again goes to {@code review}. Never replayed by it: dead letters without a
 * provider key or with a live job, failure types not auto-replayable for their job type, job types
 * this instance does not register, entries not {@code parked}. It writes the replays ({@link
 * DeadLetters}, a transaction per batch), an audit row per batch and trial, and the key's {@code
 * recovery_state} row. Details: docs/dead-letters.md, "Recovery sweep and trial". Immutable and
 * thread-safe; one instance may serve several Layover instances.
 */
public final class RecoverySweep implements LayoverPlugin {

    /** The db-scheduler task name ({@code task_name} of its row in {@code layover.scheduled_tasks}). */
    public static final String TASK_NAME = "layover-recovery-sweep";
    /** The actor of the sweep's and trial's replays, in dead letters' history and the audit log. */
    public static final String ACTOR = "recovery-sweep";

    /** Default interval between runs: 5 s. */
    public static final Duration DEFAULT_CHECK_EVERY = Duration.ofSeconds(5);
    /** Default size of the first batch after a close: 10. */
    public static final int DEFAULT_FIRST_BATCH = 10;
    /** Default growth of the batch size after a batch without failures: 2. */
    public static final double DEFAULT_GROWTH_FACTOR = 2.0;
    /** Default largest batch: 500. */
    public static final int DEFAULT_MAX_BATCH = 500;
    /** Default window a batch's run times are spread over (and the time between batches): 10 s. */
    public static final Duration DEFAULT_SPREAD = Duration.ofSeconds(10);
    /** Default automatic replay budget of a dead letter: 3. */
    public static final int DEFAULT_REPLAY_BUDGET = ReplayOptions.DEFAULT_REPLAY_BUDGET;
    /** Default time after a close during which parked entries still belong to that close's sweep: 1 min. */
    public static final Duration DEFAULT_CLOSE_GRACE = Duration.ofMinutes(1);
    /** Default age before a {@code rate_limit_exhausted} entry comes back without a breaker close: 5 min. */
    public static final Duration DEFAULT_RATE_LIMIT_MIN_AGE = Duration.ofMinutes(5);
    /** Default age before a {@code quota_exhausted} entry comes back without a breaker close: 1 h. */
    public static final Duration DEFAULT_QUOTA_MIN_AGE = Duration.ofHours(1);
    /** Default time between the first trials of an outage: 1 min. */
    public static final Duration DEFAULT_TRIAL_EVERY = Duration.ofMinutes(1);
    /** Default longest time between trials: 9 min. */
    public static final Duration DEFAULT_MAX_TRIAL_EVERY = Duration.ofMinutes(9);
    /** Default growth of the time between trials: 3 (1, 3, 9 minutes). */
    public static final double DEFAULT_TRIAL_BACKOFF = 3.0;

    /** The failure types every job type replays automatically unless configured otherwise. */
    public static final Set<FailureType> DEFAULT_AUTO_REPLAY = Collections.unmodifiableSet(EnumSet.of(
            FailureType.PROVIDER_UNAVAILABLE, FailureType.BREAKER_OPEN, FailureType.RATE_LIMIT_EXHAUSTED,
            FailureType.QUOTA_EXHAUSTED));

    /** The sweep's first replays are due no sooner than this after the close (every worker's cache has it). */
    static final Duration SETTLE = Duration.ofSeconds(1);
    /** A trial is due this long after {@code open_until}, so that it finds the open period over. */
    static final Duration TRIAL_MARGIN = Duration.ofMillis(100);
    /** Failures of at least this share of the last batch halve the batch size. */
    static final double SLOW_DOWN_RATIO = 0.2;

    private final Duration checkEvery;
    private final int firstBatch;
    private final double growthFactor;
    private final int maxBatch;
    private final Duration spread;
    private final int replayBudget;
    private final Duration closeGrace;
    private final Duration rateLimitMinAge;
    private final Duration quotaMinAge;
    private final boolean trials;
    private final Duration trialEvery;
    private final Duration maxTrialEvery;
    private final double trialBackoff;
    private final boolean listen;
    private final Set<FailureType> autoReplay;
    private final Map<String, Set<FailureType>> autoReplayByJobType;

    private RecoverySweep(Builder b) {
        this.checkEvery = b.checkEvery;
        this.firstBatch = b.firstBatch;
        this.growthFactor = b.growthFactor;
        this.maxBatch = b.maxBatch;
        this.spread = b.spread;
        this.replayBudget = b.replayBudget;
        this.closeGrace = b.closeGrace;
        this.rateLimitMinAge = b.rateLimitMinAge;
        this.quotaMinAge = b.quotaMinAge;
        this.trials = b.trials;
        this.trialEvery = b.trialEvery;
        this.maxTrialEvery = b.maxTrialEvery;
        this.trialBackoff = b.trialBackoff;
        this.listen = b.listen;
        this.autoReplay = Collections.unmodifiableSet(EnumSet.copyOf(b.autoReplay));
        Map<String, Set<FailureType>> byType = new LinkedHashMap<>();
        b.autoReplayByJobType.forEach((k, v) -> byType.put(k, Collections.unmodifiableSet(
                v.isEmpty() ? EnumSet.noneOf(FailureType.class) : EnumSet.copyOf(v))));
        this.autoReplayByJobType = Collections.unmodifiableMap(byType);
        if (firstBatch > maxBatch) {
            throw new IllegalArgumentException("firstBatch (" + firstBatch + ") must not exceed maxBatch (" + maxBatch
                    + ")");
        }
        if (maxTrialEvery.compareTo(trialEvery) < 0) {
            throw new IllegalArgumentException("the longest time between trials (" + maxTrialEvery
                    + ") must not be less than the first (" + trialEvery + ")");
        }
    }

    /** @return the sweep with every default, as a plugin for {@code Layover.Builder#plugin} */
    public static RecoverySweep plugin() {
        return builder().build();
    }

    /** @return a builder with every default */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Installs the sweep in a starting Layover instance: its recurring task (scheduled on startup,
     * run on one worker of the cluster at a time) and, unless turned off, a breaker listener that
     * brings the next run forward when a close is heard.
     *
     * @param layover the instance being started
     * @return the sweep's recurring task
     */
    @Override
    public List<Task<?>> tasks(Layover layover) {
        SweepRunner runner = new SweepRunner(this, layover);
        if (listen) {
            runner.listen();
        }
        return List.of(Tasks.recurring(TASK_NAME, Schedules.fixedDelay(checkEvery))
                .execute((instance, ctx) -> runner.runOnce()));
    }

    /**
     * @param jobType a job type name
     * @return the failure types the sweep replays automatically for it
     */
    public Set<FailureType> autoReplayable(String jobType) {
        Set<FailureType> own = autoReplayByJobType.get(jobType);
        return own != null ? own : autoReplay;
    }

    /** @return the interval between runs */
    public Duration checkEvery() {
        return checkEvery;
    }

    /** @return the size of the first batch after a close */
    public int firstBatch() {
        return firstBatch;
    }

    /** @return the growth of the batch size after a batch without failures */
    public double growthFactor() {
        return growthFactor;
    }

    /** @return the largest batch */
    public int maxBatch() {
        return maxBatch;
    }

    /** @return the window a batch's run times are spread over, and the time between batches */
    public Duration spread() {
        return spread;
    }

    /** @return the automatic replay budget of a dead letter */
    public int replayBudget() {
        return replayBudget;
    }

    /** @return how long after a close parked entries still belong to that close's sweep */
    public Duration closeGrace() {
        return closeGrace;
    }

    /** @return the age before a rate-limit entry comes back without a close */
    public Duration rateLimitMinAge() {
        return rateLimitMinAge;
    }

    /** @return the age before a quota entry comes back without a close */
    public Duration quotaMinAge() {
        return quotaMinAge;
    }

    /** @return whether recovery trials are made */
    public boolean trials() {
        return trials;
    }

    /** @return the time between the first trials of an outage */
    public Duration trialEvery() {
        return trialEvery;
    }

    /** @return the longest time between trials */
    public Duration maxTrialEvery() {
        return maxTrialEvery;
    }

    /** @return the growth of the time between trials */
    public double trialBackoff() {
        return trialBackoff;
    }

    /** @return whether the sweep listens for breaker closes to run at once */
    public boolean listens() {
        return listen;
    }

    /**
     * The time between trial number {@code made} (from 0) and the next.
     *
     * @param made trials made before
     * @return the interval
     */
    Duration trialInterval(int made) {
        double millis = trialEvery.toMillis() * Math.pow(trialBackoff, Math.min(made, 64));
        return millis >= maxTrialEvery.toMillis() ? maxTrialEvery : Duration.ofMillis((long) millis);
    }

    /**
     * The next batch size after a batch without failures.
     *
     * @param size the last batch's size
     * @return the grown size
     */
    int grow(int size) {
        return (int) Math.min(maxBatch, Math.max(size + 1L, (long) Math.ceil(size * growthFactor)));
    }

    @Override
    public String toString() {
        return "RecoverySweep[every " + checkEvery + ", batches " + firstBatch + " x" + growthFactor + " up to "
                + maxBatch + " over " + spread + ", budget " + replayBudget + ", trials "
                + (trials ? trialEvery + " x" + trialBackoff + " up to " + maxTrialEvery : "off") + "]";
    }

    /**
     * Configures a {@link RecoverySweep}. Every setting has a default.
     *
     * <table>
     *   <caption>Settings and defaults</caption>
     *   <tr><th>setting</th><th>default</th></tr>
     *   <tr><td>{@link #checkEvery(Duration)}</td><td>5 s</td></tr>
     *   <tr><td>{@link #firstBatch(int)}</td><td>10</td></tr>
     *   <tr><td>{@link #growthFactor(double)}</td><td>2</td></tr>
     *   <tr><td>{@link #maxBatch(int)}</td><td>500</td></tr>
     *   <tr><td>{@link #spreadOver(Duration)}</td><td>10 s</td></tr>
     *   <tr><td>{@link #replayBudget(int)}</td><td>3</td></tr>
     *   <tr><td>{@link #autoReplay(FailureType...)}</td><td>provider_unavailable, breaker_open,
     *       rate_limit_exhausted, quota_exhausted</td></tr>
     *   <tr><td>{@link #autoReplay(String, FailureType...)}</td><td>none: every job type uses the above</td></tr>
     *   <tr><td>{@link #closeGrace(Duration)}</td><td>1 min</td></tr>
     *   <tr><td>{@link #rateLimitMinAge(Duration)}</td><td>5 min</td></tr>
     *   <tr><td>{@link #quotaMinAge(Duration)}</td><td>1 h</td></tr>
     *   <tr><td>{@link #trialEvery(Duration, Duration)}</td><td>1 min, up to 9 min</td></tr>
     *   <tr><td>{@link #trialBackoff(double)}</td><td>3</td></tr>
     *   <tr><td>{@link #trials(boolean)}</td><td>on</td></tr>
     *   <tr><td>{@link #listen(boolean)}</td><td>on</td></tr>
     * </table>
     */
    public static final class Builder {
        private Duration checkEvery = DEFAULT_CHECK_EVERY;
        private int firstBatch = DEFAULT_FIRST_BATCH;
        private double growthFactor = DEFAULT_GROWTH_FACTOR;
        private int maxBatch = DEFAULT_MAX_BATCH;
        private Duration spread = DEFAULT_SPREAD;
        private int replayBudget = DEFAULT_REPLAY_BUDGET;
        private Duration closeGrace = DEFAULT_CLOSE_GRACE;
        private Duration rateLimitMinAge = DEFAULT_RATE_LIMIT_MIN_AGE;
        private Duration quotaMinAge = DEFAULT_QUOTA_MIN_AGE;
        private boolean trials = true;
        private Duration trialEvery = DEFAULT_TRIAL_EVERY;
        private Duration maxTrialEvery = DEFAULT_MAX_TRIAL_EVERY;
        private double trialBackoff = DEFAULT_TRIAL_BACKOFF;
        private boolean listen = true;
        private Set<FailureType> autoReplay = EnumSet.copyOf(DEFAULT_AUTO_REPLAY);
        private final Map<String, Set<FailureType>> autoReplayByJobType = new LinkedHashMap<>();

        private Builder() {}

        /**
         * @param interval time between the end of one run and the start of the next, at least
         *     10 ms; default 5 s
         * @return this builder
         */
        public Builder checkEvery(Duration interval) {
            this.checkEvery = atLeast(interval, Duration.ofMillis(10), "checkEvery");
            return this;
        }

        /**
         * @param size dead letters in the first batch after a close (and after the sweep was idle),
         *     1-5,000; default 10
         * @return this builder
         */
        public Builder firstBatch(int size) {
            this.firstBatch = batch(size, "firstBatch");
            return this;
        }

        /**
         * @param factor how the batch size grows after a batch without failures, 1-10 (1: never
         *     grows); default 2
         * @return this builder
         */
        public Builder growthFactor(double factor) {
            if (!(factor >= 1 && factor <= 10)) {
                throw new IllegalArgumentException("growthFactor must be 1-10, was " + factor);
            }
            this.growthFactor = factor;
            return this;
        }

        /**
         * @param size the largest batch, 1-5,000; default 500
         * @return this builder
         */
        public Builder maxBatch(int size) {
            this.maxBatch = batch(size, "maxBatch");
            return this;
        }

        /**
         * @param window a batch's jobs are due spread uniformly over this window, and the next
         *     batch waits until it has passed; zero or more; default 10 s
         * @return this builder
         */
        public Builder spreadOver(Duration window) {
            if (window == null || window.isNegative()) {
                throw new IllegalArgumentException("spread must be zero or more, was " + window);
            }
            this.spread = window;
            return this;
        }

        /**
         * @param budget sweep replays one dead letter may spend (counted in
         *     {@code auto_replay_count}, reset when a person moves it back to parked), 1-100;
         *     default 3. A dead letter whose budget is spent is moved to {@code review}.
         * @return this builder
         */
        public Builder replayBudget(int budget) {
            if (budget < 1 || budget > 100) {
                throw new IllegalArgumentException("replayBudget must be 1-100, was " + budget);
            }
            this.replayBudget = budget;
            return this;
        }

        /**
         * The failure types replayed automatically for every job type without its own setting.
         *
         * @param types the types; none: nothing is replayed automatically. {@code rejected} and
         *     {@code bad_args} are refused (they fail the same way again)
         * @return this builder
         */
        public Builder autoReplay(FailureType... types) {
            this.autoReplay = checkTypes(types);
            return this;
        }

        /**
         * The failure types replayed automatically for one job type, instead of the general ones.
         *
         * @param jobType the job type's name
         * @param types the types; none: its dead letters are never replayed automatically
         * @return this builder
         */
        public Builder autoReplay(String jobType, FailureType... types) {
            if (jobType == null || jobType.isBlank()) {
                throw new IllegalArgumentException("name the job type");
            }
            autoReplayByJobType.put(jobType, checkTypes(types));
            return this;
        }

        /**
         * Like {@link #autoReplay(String, FailureType...)}.
         *
         * @param jobType the job type
         * @param types the types
         * @return this builder
         */
        public Builder autoReplay(JobType<?> jobType, FailureType... types) {
            return autoReplay(Objects.requireNonNull(jobType, "jobType").name(), types);
        }

        /**
         * @param grace dead letters parked up to this long after a breaker close belong to its
         *     sweep (calls in flight at the close, workers whose cache still said open); zero or
         *     more; default 1 min
         * @return this builder
         */
        public Builder closeGrace(Duration grace) {
            if (grace == null || grace.isNegative()) {
                throw new IllegalArgumentException("closeGrace must be zero or more, was " + grace);
            }
            this.closeGrace = grace;
            return this;
        }

        /**
         * @param age a {@code rate_limit_exhausted} dead letter parked at least this long comes back
         *     once its key's cooldown has ended, without a breaker close; positive; default 5 min
         * @return this builder
         */
        public Builder rateLimitMinAge(Duration age) {
            this.rateLimitMinAge = atLeast(age, Duration.ofMillis(1), "rateLimitMinAge");
            return this;
        }

        /**
         * @param age a {@code quota_exhausted} dead letter parked at least this long comes back once
         *     its key's cooldown (set to the quota's reset when the provider named it) has ended,
         *     without a breaker close; positive; default 1 h
         * @return this builder
         */
        public Builder quotaMinAge(Duration age) {
            this.quotaMinAge = atLeast(age, Duration.ofMillis(1), "quotaMinAge");
            return this;
        }

        /**
         * @param on whether to make recovery trials while a breaker stays open; default on
         * @return this builder
         */
        public Builder trials(boolean on) {
            this.trials = on;
            return this;
        }

        /**
         * @param first time between the run times of the first trials of an outage, at least 10 ms;
         *     default 1 min
         * @param max the longest time between trials, at least {@code first}; default 9 min
         * @return this builder
         */
        public Builder trialEvery(Duration first, Duration max) {
            this.trialEvery = atLeast(first, Duration.ofMillis(10), "trialEvery");
            this.maxTrialEvery = atLeast(max, Duration.ofMillis(10), "maxTrialEvery");
            return this;
        }

        /**
         * @param factor how the time between trials grows with each trial of one outage, 1-10;
         *     default 3
         * @return this builder
         */
        public Builder trialBackoff(double factor) {
            if (!(factor >= 1 && factor <= 10)) {
                throw new IllegalArgumentException("trialBackoff must be 1-10, was " + factor);
            }
            this.trialBackoff = factor;
            return this;
        }

        /**
         * @param on whether to listen to the instance's breaker events and run at once when a close
         *     is heard (besides finding it in the database at the next run); default on
         * @return this builder
         */
        public Builder listen(boolean on) {
            this.listen = on;
            return this;
        }

        /**
         * @return the sweep, a plugin for {@code Layover.Builder#plugin}
         * @throws IllegalArgumentException when {@code firstBatch > maxBatch}
         */
        public RecoverySweep build() {
            return new RecoverySweep(this);
        }

        private static Set<FailureType> checkTypes(FailureType... types) {
            Set<FailureType> out = EnumSet.noneOf(FailureType.class);
            for (FailureType t : Objects.requireNonNull(types, "types")) {
                Objects.requireNonNull(t, "failure type");
                if (t == FailureType.REJECTED || t == FailureType.BAD_ARGS) {
                    throw new IllegalArgumentException(t.code() + " is never replayed automatically: the same request "
                            + "fails the same way; replay it by hand after fixing its args");
                }
                out.add(t);
            }
            return out;
        }

        private static int batch(int size, String name) {
            if (size < 1 || size > 5000) {
                throw new IllegalArgumentException(name + " must be 1-5000, was " + size);
            }
            return size;
        }

        private static Duration atLeast(Duration d, Duration min, String name) {
            if (d == null || d.compareTo(min) < 0) {
                throw new IllegalArgumentException(name + " must be at least " + min + ", was " + d);
            }
            return d;
        }
    }
}
