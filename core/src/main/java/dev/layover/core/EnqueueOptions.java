package dev.layover.core;

import dev.layover.core.internal.db.StoredText;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * When and how a job is enqueued. Immutable; start from {@link #now()} or a static factory and
 * chain {@code withX} calls.
 *
 * <ul>
 *   <li><b>run time</b>: now (default), at an instant, or after a delay;
 *   <li><b>idempotency key</b>: becomes the job's id. Enqueueing a key that names a live job, or a
 *       dead letter still {@code parked} or in {@code review}, writes nothing and returns that job.
 *       Without a key the id is a new time-ordered UUID (version 7: the enqueue's millisecond, a
 *       counter that keeps one JVM's ids increasing, then 62 random bits), so the primary key of
 *       jobs enqueued together shares its index pages, and jobs due at the same time are picked in
 *       enqueue order;
 *   <li><b>priority</b>: higher runs first among due jobs (only when the Layover instance has
 *       priority enabled; stored either way). Default 0;
 *   <li><b>deadline</b>: absolute ({@link #withDeadline(Instant)}) or relative to the enqueue
 *       ({@link #withDeadline(Duration)}); stored in {@code deadline}. Past it the job is parked
 *       {@code deadline_exceeded} instead of being started, rescheduled or retried (within about a
 *       second; see {@code docs/admission-and-control.md}). Default none;
 *   <li><b>after</b>: jobs this one runs after ({@link #withAfter(JobRef...)}): it waits (run time
 *       9999-12-31, reason {@code dependencies}, one row of {@code layover.job_dependencies} per job
 *       named) until all of them completed; see {@code docs/composition.md}. Default none.
 * </ul>
 *
 * @param runAt when the job may first run; {@code null} means now
 * @param delay added to now when {@code runAt} is null; {@code null} means none
 * @param key the idempotency key (1-200 characters), or {@code null}
 * @param priority the priority, -32768..32767
 * @param deadline the latest time the job is worth running at, or {@code null}
 * @param deadlineAfter the deadline relative to the enqueue, when {@code deadline} is null; or
 *     {@code null}
 * @param after the jobs this one runs after (empty: none)
 */
public record EnqueueOptions(Instant runAt, Duration delay, String key, int priority, Instant deadline,
        Duration deadlineAfter, List<JobRef> after) {

    private static final EnqueueOptions NOW = new EnqueueOptions(null, null, null, 0);

    /**
     * Validates the options.
     *
     * @param runAt when the job may first run; {@code null} means now
     * @param delay added to now when {@code runAt} is null; {@code null} means none
     * @param key the idempotency key (1-200 characters), or {@code null}
     * @param priority the priority, -32768..32767
     * @param deadline the latest time the job is worth running at, or {@code null}
     * @param deadlineAfter the deadline relative to the enqueue, when {@code deadline} is null; or {@code null}
     * @param after the jobs this one runs after, or null for none
     */
    public EnqueueOptions {
        after = after == null ? List.of() : List.copyOf(after);
        if (runAt != null && delay != null) {
            throw new IllegalArgumentException("give either runAt or delay, not both");
        }
        if (delay != null && delay.isNegative()) {
            throw new IllegalArgumentException("delay must not be negative: " + delay);
        }
        if (key != null && (key.isEmpty() || key.length() > 200)) {
            throw new IllegalArgumentException("an idempotency key must be 1-200 characters, was " + key.length());
        }
        if (key != null && StoredText.unstorable(key)) {
            throw new IllegalArgumentException("an idempotency key must not contain a NUL character or half of a "
                    + "surrogate pair (Postgres text cannot hold them)");
        }
        if (priority < Short.MIN_VALUE || priority > Short.MAX_VALUE) {
            throw new IllegalArgumentException("priority must fit a smallint: " + priority);
        }
        if (deadline != null && deadlineAfter != null) {
            throw new IllegalArgumentException("give either an absolute deadline or one relative to the enqueue, not both");
        }
        if (deadlineAfter != null && (deadlineAfter.isNegative() || deadlineAfter.isZero())) {
            throw new IllegalArgumentException("a relative deadline must be positive: " + deadlineAfter);
        }
    }

    /**
     * Options without a deadline (the form before deadlines existed).
     *
     * @param runAt when the job may first run; {@code null} means now
     * @param delay added to now when {@code runAt} is null; {@code null} means none
     * @param key the idempotency key (1-200 characters), or {@code null}
     * @param priority the priority, -32768..32767
     */
    public EnqueueOptions(Instant runAt, Duration delay, String key, int priority) {
        this(runAt, delay, key, priority, null, null, List.of());
    }

    /**
     * Options without dependencies (the form before dependencies existed).
     *
     * @param runAt when the job may first run; {@code null} means now
     * @param delay added to now when {@code runAt} is null; {@code null} means none
     * @param key the idempotency key (1-200 characters), or {@code null}
     * @param priority the priority, -32768..32767
     * @param deadline the latest time the job is worth running at, or {@code null}
     * @param deadlineAfter the deadline relative to the enqueue, or {@code null}
     */
    public EnqueueOptions(Instant runAt, Duration delay, String key, int priority, Instant deadline,
            Duration deadlineAfter) {
        this(runAt, delay, key, priority, deadline, deadlineAfter, List.of());
    }

    /**
     * The job runs after these jobs, once all of them completed ({@code Outcome.done}); while one
     * is parked it waits, and when one's dead letter is discarded it is parked
     * {@code dependency_failed}. Each must exist at the enqueue: live, parked (or in review), or
     * completed within the history's retention (a completed one is already satisfied).
     * {@link Layover#enqueue}, {@link Layover#enqueueBatch} and a group's members
     * ({@link Layover#enqueueGroup}) take dependencies; a batch's job or a member may also name jobs
     * before it in the same call.
     *
     * @param jobs the jobs
     * @return a copy with those dependencies (replacing any given before)
     */
    public EnqueueOptions withAfter(JobRef... jobs) {
        return new EnqueueOptions(runAt, delay, key, priority, deadline, deadlineAfter, List.of(jobs));
    }

    /**
     * {@link #withAfter(JobRef...)} with jobs an enqueue returned.
     *
     * @param jobs the jobs
     * @return a copy with those dependencies
     */
    public EnqueueOptions withAfter(Enqueued... jobs) {
        return withAfter(java.util.Arrays.stream(jobs).map(JobRef::of).toArray(JobRef[]::new));
    }

    /** @return run as soon as possible, a new id, priority 0 */
    public static EnqueueOptions now() {
        return NOW;
    }

    /**
     * @param when the first run time
     * @return options to run at that time
     */
    public static EnqueueOptions at(Instant when) {
        return NOW.withRunAt(when);
    }

    /**
     * @param delay how long from now
     * @return options to run after that delay
     */
    public static EnqueueOptions after(Duration delay) {
        return NOW.withDelay(delay);
    }

    /**
     * @param key the idempotency key
     * @return options with that key
     */
    public static EnqueueOptions key(String key) {
        return NOW.withKey(key);
    }

    /**
     * @param when the first run time
     * @return a copy with that run time
     */
    public EnqueueOptions withRunAt(Instant when) {
        return new EnqueueOptions(when, null, key, priority, deadline, deadlineAfter, after);
    }

    /**
     * @param d how long from now
     * @return a copy with that delay
     */
    public EnqueueOptions withDelay(Duration d) {
        return new EnqueueOptions(null, d, key, priority, deadline, deadlineAfter, after);
    }

    /**
     * @param k the idempotency key
     * @return a copy with that key
     */
    public EnqueueOptions withKey(String k) {
        return new EnqueueOptions(runAt, delay, k, priority, deadline, deadlineAfter, after);
    }

    /**
     * @param p the priority
     * @return a copy with that priority
     */
    public EnqueueOptions withPriority(int p) {
        return new EnqueueOptions(runAt, delay, key, p, deadline, deadlineAfter, after);
    }

    /**
     * An absolute deadline: past it the job is parked {@code deadline_exceeded} instead of being
     * started, rescheduled or retried.
     *
     * @param when the latest time the job is worth running at, or {@code null} for none
     * @return a copy with that deadline
     */
    public EnqueueOptions withDeadline(Instant when) {
        return new EnqueueOptions(runAt, delay, key, priority, when, null, after);
    }

    /**
     * A deadline relative to the enqueue: the job is worth running until {@code d} after it was
     * enqueued (the time of the enqueue call, not of the first run).
     *
     * @param d how long after the enqueue, positive; or {@code null} for none
     * @return a copy with that deadline
     */
    public EnqueueOptions withDeadline(Duration d) {
        return new EnqueueOptions(runAt, delay, key, priority, null, d, after);
    }

    /**
     * @param now the time of the enqueue
     * @return the deadline these options give, or {@code null}
     */
    public Instant deadlineTime(Instant now) {
        if (deadline != null) {
            return deadline;
        }
        return deadlineAfter == null ? null : now.plus(deadlineAfter);
    }

    /**
     * @param now the current time
     * @return the first run time these options give
     */
    public Instant runTime(Instant now) {
        if (runAt != null) {
            return runAt;
        }
        return delay == null ? now : now.plus(delay);
    }
}
