package dev.layover.core.schedule;

import dev.layover.core.JobType;
import dev.layover.core.internal.db.StoredText;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.function.Function;

/**
 * A recurring job: a job type, a {@link Timing} (cron expression and zone, or interval), the args
 * of each occurrence (fixed, or a function of the occurrence's instant) and the policies for missed
 * and overlapping occurrences. Each occurrence is an ordinary Layover job (outcomes, rate limits,
 * fair share, dead letters, history) whose id is {@code sched:<tenant>/<name>@<instant>} (the
 * instant in ISO-8601 UTC, e.g. {@code sched:/nightly@2026-03-29T01:00:00Z}), so it is enqueued
 * once across the fleet.
 *
 * <p>Registered in code with {@code Layover.Builder#schedule(Schedule)} (tenant {@code ""},
 * reconciled with {@code layover.schedules} at every start), or at run time with
 * {@link Schedules#create(String, Schedule)} (fixed args only: they are stored).
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>column of {@code layover.schedules}</th></tr>
 *   <tr><td>{@link Builder#args(Object)} / {@link Builder#argsJson(String)} /
 *       {@link Builder#argsFor(Function)}</td><td>required</td>
 *       <td>{@code args} (jsonb; null and {@code args_from_code} for a function)</td></tr>
 *   <tr><td>{@link Builder#missedRuns(MissedRuns)}</td><td>{@link MissedRuns#skip()} (1 minute grace)</td>
 *       <td>{@code missed}, {@code missed_window_ms}</td></tr>
 *   <tr><td>{@link Builder#overlap(Overlap)}</td><td>{@link Overlap#SKIP}</td><td>{@code overlap}</td></tr>
 *   <tr><td>{@link Builder#jitter(Duration)}</td><td>none: each occurrence's job runs at a random
 *       time between its instant and instant + jitter</td><td>{@code jitter_ms}</td></tr>
 *   <tr><td>{@link Builder#priority(int)}</td><td>0</td><td>{@code priority}</td></tr>
 * </table>
 *
 * @param <A> the args type of the job type
 */
public final class Schedule<A> {

    /** The longest schedule name. */
    public static final int MAX_NAME = 90;

    private final String name;
    private final JobType<A> jobType;
    private final Timing timing;
    private final A args;
    private final Function<Instant, ? extends A> argsFor;
    private final String argsJson;
    private final MissedRuns missedRuns;
    private final Overlap overlap;
    private final Duration jitter;
    private final int priority;

    private Schedule(Builder<A> b) {
        this.name = b.name;
        this.jobType = b.jobType;
        this.timing = b.timing;
        this.args = b.args;
        this.argsFor = b.argsFor;
        this.argsJson = b.argsJson;
        this.missedRuns = b.missedRuns;
        this.overlap = b.overlap;
        this.jitter = b.jitter;
        this.priority = b.priority;
    }

    /**
     * @param name the schedule's name (1-{@value #MAX_NAME} characters, no {@code @})
     * @param jobType the job type of its occurrences
     * @param timing when its occurrences are
     * @param <A> the args type
     * @return a builder
     */
    public static <A> Builder<A> builder(String name, JobType<A> jobType, Timing timing) {
        return new Builder<>(name, jobType, timing);
    }

    /**
     * A cron schedule with fixed args and the default policies.
     *
     * @param name the schedule's name
     * @param jobType the job type
     * @param cron 5 or 6 fields
     * @param zone the zone the cron expression is read in
     * @param args every occurrence's args
     * @param <A> the args type
     * @return the schedule
     * @throws InvalidScheduleException on an invalid expression or name
     */
    public static <A> Schedule<A> cron(String name, JobType<A> jobType, String cron, java.time.ZoneId zone, A args) {
        return builder(name, jobType, Timing.cron(cron, zone)).args(args).build();
    }

    /**
     * An interval schedule with fixed args and the default policies.
     *
     * @param name the schedule's name
     * @param jobType the job type
     * @param interval the time between occurrences
     * @param args every occurrence's args
     * @param <A> the args type
     * @return the schedule
     */
    public static <A> Schedule<A> every(String name, JobType<A> jobType, Duration interval, A args) {
        return builder(name, jobType, Timing.every(interval)).args(args).build();
    }

    /** @return the name */
    public String name() {
        return name;
    }

    /** @return the job type */
    public JobType<A> jobType() {
        return jobType;
    }

    /** @return the timing */
    public Timing timing() {
        return timing;
    }

    /** @return the fixed args, or null when they are a function of the instant */
    public A args() {
        return args;
    }

    /** @return the args as JSON text given by {@link Builder#argsJson(String)}, or null */
    public String argsJson() {
        return argsJson;
    }

    /** @return the args function, or null when the args are fixed */
    public Function<Instant, ? extends A> argsFor() {
        return argsFor;
    }

    /**
     * @param occurrence an occurrence's instant
     * @return that occurrence's args (null when they were given as JSON text)
     */
    public A argsAt(Instant occurrence) {
        return argsFor != null ? argsFor.apply(occurrence) : args;
    }

    /** @return the missed-run policy */
    public MissedRuns missedRuns() {
        return missedRuns;
    }

    /** @return the overlap policy */
    public Overlap overlap() {
        return overlap;
    }

    /** @return the jitter (zero: none) */
    public Duration jitter() {
        return jitter;
    }

    /** @return the priority of each occurrence's job */
    public int priority() {
        return priority;
    }

    @Override
    public String toString() {
        return "schedule '" + name + "' (" + jobType.name() + ", " + timing + ")";
    }

    /**
     * Builds a {@link Schedule}.
     *
     * @param <A> the args type
     */
    public static final class Builder<A> {
        private final String name;
        private final JobType<A> jobType;
        private final Timing timing;
        private A args;
        private Function<Instant, ? extends A> argsFor;
        private String argsJson;
        private MissedRuns missedRuns = MissedRuns.skip();
        private Overlap overlap = Overlap.SKIP;
        private Duration jitter = Duration.ZERO;
        private int priority;

        private Builder(String name, JobType<A> jobType, Timing timing) {
            this.name = checkName(name, "schedule name", MAX_NAME);
            if (name.indexOf('@') >= 0) {
                throw new InvalidScheduleException("a schedule name must not contain '@': '" + name + "'");
            }
            this.jobType = Objects.requireNonNull(jobType, "jobType");
            this.timing = Objects.requireNonNull(timing, "timing");
        }

        /**
         * @param fixed every occurrence's args
         * @return this builder
         */
        public Builder<A> args(A fixed) {
            this.args = Objects.requireNonNull(fixed, "args");
            this.argsFor = null;
            this.argsJson = null;
            return this;
        }

        /**
         * Every occurrence's args as JSON text (from configuration, the console, another language):
         * checked against the job type's args type when the schedule is registered or created.
         *
         * @param json the args as JSON
         * @return this builder
         */
        public Builder<A> argsJson(String json) {
            this.argsJson = Objects.requireNonNull(json, "argsJson");
            this.args = null;
            this.argsFor = null;
            return this;
        }

        /**
         * Args computed for each occurrence, from its instant (code schedules only: a function is not
         * stored, so only a JVM that has this schedule in its code enqueues its occurrences).
         *
         * @param f the occurrence's args from its instant
         * @return this builder
         */
        public Builder<A> argsFor(Function<Instant, ? extends A> f) {
            this.argsFor = Objects.requireNonNull(f, "argsFor");
            this.args = null;
            this.argsJson = null;
            return this;
        }

        /**
         * @param policy the missed-run policy; default {@link MissedRuns#skip()}
         * @return this builder
         */
        public Builder<A> missedRuns(MissedRuns policy) {
            this.missedRuns = Objects.requireNonNull(policy, "missedRuns");
            return this;
        }

        /**
         * @param policy the overlap policy; default {@link Overlap#SKIP}
         * @return this builder
         */
        public Builder<A> overlap(Overlap policy) {
            this.overlap = Objects.requireNonNull(policy, "overlap");
            return this;
        }

        /**
         * Spreads the occurrences' jobs of a big fleet: each job runs at a uniformly random time between
         * its occurrence's instant and instant + {@code max}. The occurrence's instant (its id, its
         * args) does not move.
         *
         * @param max the largest delay, zero or positive, shorter than a day; default zero
         * @return this builder
         */
        public Builder<A> jitter(Duration max) {
            Objects.requireNonNull(max, "jitter");
            if (max.isNegative() || max.compareTo(Duration.ofDays(1)) >= 0) {
                throw new InvalidScheduleException("a schedule's jitter must be between 0 and 1 day, was " + max);
            }
            this.jitter = max;
            return this;
        }

        /**
         * @param p the priority of each occurrence's job, -32768..32767; default 0
         * @return this builder
         */
        public Builder<A> priority(int p) {
            if (p < Short.MIN_VALUE || p > Short.MAX_VALUE) {
                throw new InvalidScheduleException("a schedule's priority must fit a smallint: " + p);
            }
            this.priority = p;
            return this;
        }

        /**
         * @return the schedule
         * @throws InvalidScheduleException when no args were given
         */
        public Schedule<A> build() {
            if (args == null && argsFor == null && argsJson == null) {
                throw new InvalidScheduleException("schedule '" + name + "' needs args: args(..), argsJson(..) or "
                        + "argsFor(..)");
            }
            return new Schedule<>(this);
        }
    }

    /** Checks a name or tenant: 1 to max characters, storable. */
    static String checkName(String s, String what, int max) {
        if (s == null || s.isEmpty() || s.length() > max) {
            throw new InvalidScheduleException("a " + what + " must be 1-" + max + " characters, was "
                    + (s == null ? "null" : s.length() + " ('" + s + "')"));
        }
        if (StoredText.unstorable(s)) {
            throw new InvalidScheduleException("a " + what + " must not contain a NUL character or half of a "
                    + "surrogate pair");
        }
        return s;
    }
}
