package dev.layover.core.metrics;

import java.time.Duration;

/**
 * Where a Layover instance reports what it does: the events of jobs, provider calls and breakers,
 * and (when {@link #sampleInterval()} asks for it) a periodic sample of the queue and of the
 * provider state. Every method has a no-op default, so an implementation overrides what it needs.
 *
 * <p>Layover ships one implementation, {@link MicrometerMetrics} (Micrometer is an optional
 * dependency: without it on the classpath, Layover never loads that class and uses
 * {@link #none()}). Another monitoring system can be plugged in by implementing this interface;
 * no method of it names a type outside the JDK and Layover.
 *
 * <pre>{@code
 * Layover layover = Layover.builder(dataSource)
 *         .register(translate)
 *         .metrics(MicrometerMetrics.of(meterRegistry))
 *         .start();
 * }</pre>
 *
 * <p>Calls come from worker threads, the completer and background threads, concurrently; an
 * implementation must be thread-safe and fast (it runs on the hot path). An exception thrown by
 * it is caught and logged (once), never failing a job. The names of the values passed
 * ({@code reason}, {@code outcome}, {@code failureType}, {@code kind}) are listed in
 * {@code docs/observability.md}; each is one of a small fixed set, so they are fit to be tags.
 */
public interface LayoverMetrics {

    /** @return metrics that record nothing (the default of a Layover instance) */
    static LayoverMetrics none() {
        return NoMetrics.INSTANCE;
    }

    /**
     * A job's handler returned done; the job is removed (and its history row written) by the
     * next batch of the completer.
     *
     * @param jobType the job type
     */
    default void jobCompleted(String jobType) {}

    /**
     * A job's run failed and spent an attempt; it runs again after a backoff.
     *
     * @param jobType the job type
     * @param reason {@code overloaded}, {@code transient}, {@code error} (the job's own) or
     *     {@code worker_lost} (its worker lost for the second time in a row)
     */
    default void jobRetried(String jobType, String reason) {}

    /**
     * A job was moved to a later run time without spending an attempt.
     *
     * @param jobType the job type
     * @param reason the {@code reschedule_reason} of {@code layover.jobs}: {@code rate_limited},
     *     {@code quota_exhausted}, {@code cooldown}, {@code bucket}, {@code breaker_half_open},
     *     {@code snooze}, {@code provider_state_unavailable}, {@code worker_stopped},
     *     {@code worker_lost} (the first loss in a row), ...
     */
    default void jobRescheduled(String jobType, String reason) {}

    /**
     * A job was parked (moved to the dead-letter store).
     *
     * @param jobType the job type
     * @param failureType the dead letter's {@code failure_type}
     */
    default void jobParked(String jobType, String failureType) {}

    /**
     * A waiting job was cancelled by an operator.
     *
     * @param jobType the job type
     */
    default void jobCancelled(String jobType) {}

    /**
     * Dead letters were replayed: fresh jobs made from them.
     *
     * @param jobType the job type
     * @param kind {@code manual}, {@code sweep} or {@code trial}
     * @param count how many
     */
    default void jobsReplayed(String jobType, String kind, long count) {}

    /**
     * A worker started a job: how long after its run time (its {@code run_at}) it started.
     *
     * @param jobType the job type
     * @param queueWait the wait (zero when it started early)
     */
    default void jobStarted(String jobType, Duration queueWait) {}

    /**
     * A job's handler returned (or threw).
     *
     * @param jobType the job type
     * @param outcome {@code done}, {@code snooze}, {@code rate_limited}, {@code quota_exhausted},
     *     {@code overloaded}, {@code transient}, {@code error}, {@code auth_refused},
     *     {@code rejected}, {@code parked} or {@code stopped}
     * @param duration how long the handler ran
     */
    default void jobRan(String jobType, String outcome, Duration duration) {}

    /**
     * One call of a provider key ended (a job's own key, or one endpoint of a fallback chain).
     *
     * @param providerKey the key
     * @param outcome {@code ok}, {@code rate_limited}, {@code quota_exhausted}, {@code overloaded},
     *     {@code transient}, {@code auth_refused}, {@code rejected}, {@code error} (the job's own)
     *     or {@code parked}
     */
    default void providerCall(String providerKey, String outcome) {}

    /**
     * Tokens of a provider key's bucket, as this instance's calls moved them (docs/tokens.md).
     *
     * @param providerKey the bucket's key (a provider key or a limit key)
     * @param kind {@code reserved} (taken by the pick or an endpoint's admission before a call:
     *     input estimate + output ceiling; counted when the run settles),
     *     {@code used} (what the call reported), {@code refunded} (the unused reservation given
     *     back), {@code charged} (an under-estimate charged after the call)
     * @param tokens how many (input + output), at least 1
     */
    default void tokens(String providerKey, String kind, long tokens) {}

    /**
     * Batch lines of a provider key, as this instance moved them (docs/batches.md).
     *
     * @param providerKey the batch's provider key
     * @param kind {@code gathered} (jobs gathered into a batch), {@code submitted} (lines sent in a
     *     submitted or rejoined batch), {@code collected} (result lines stored), {@code returned}
     *     (items sent back to the queue: expired, cancelled, without a line, given up)
     * @param lines how many, at least 1
     */
    default void batchLines(String providerKey, String kind, long lines) {}

    /**
     * This instance's scheduler decided on a due schedule (recurring jobs, docs/recurring.md): each
     * claim of a schedule is reported once, by the instance that claimed it, after its transaction
     * committed.
     *
     * @param jobType the schedule's job type (not its name: run-time schedules per tenant are many)
     * @param outcome what the claim did: {@code enqueued}, {@code enqueued_after_missed},
     *     {@code enqueued_catch_up}, {@code skipped_overlap}, {@code held_overlap}, {@code missed},
     *     {@code args_failed}, {@code invalid_definition}
     * @param enqueued the occurrence jobs it enqueued, 0 or more
     */
    default void scheduleClaimed(String jobType, String outcome, int enqueued) {}

    /**
     * A step of a job ({@code JobContext#step}, docs/steps.md) ran and was stored, or its stored
     * result was returned without running it.
     *
     * @param jobType the job type
     * @param outcome {@code completed} (ran and stored) or {@code reused} (a stored result returned)
     */
    default void step(String jobType, String outcome) {}

    /**
     * A breaker changed state by a change this instance made (each change of the fleet is
     * reported by exactly one instance).
     *
     * @param providerKey the key
     * @param from {@code closed}, {@code open} or {@code half_open}
     * @param to the new state
     */
    default void breakerChanged(String providerKey, String from, String to) {}

    /**
     * How often a running instance should read the queue and the provider state for
     * {@link #sampled(StateSample)}: a few cheap queries each time.
     *
     * @return the interval, or {@code null} for never (the default: no query is run)
     */
    default Duration sampleInterval() {
        return null;
    }

    /**
     * A sample of the queue and the provider state, read every {@link #sampleInterval()}: the
     * source of gauges.
     *
     * @param sample what was read
     */
    default void sampled(StateSample sample) {}
}
