package dev.layover.core.metrics;

import java.time.Instant;
import java.util.List;

/**
 * What a running Layover instance read of the queue and of the provider state at one moment
 * (every {@link LayoverMetrics#sampleInterval()}), for gauges. Fleet-wide: every instance reads
 * the same tables, so every instance reports the same numbers (aggregate them with max, not sum).
 *
 * @param at when it was read (the database's clock)
 * @param jobs live jobs by type and state; a type and state with no job is absent. A count of the
 *     whole job table, so behind more than 200,000 jobs it is read again only every 10 s per
 *     100,000 jobs (at most 60 s, rounded up to whole sample intervals) and carried in between
 * @param deadLetters dead letters waiting for a decision ({@code parked} and {@code review}), by
 *     type, failure type and state
 * @param providerKeys every provider key with a breaker, cooldown or bucket row
 */
public record StateSample(Instant at, List<JobCount> jobs, List<DeadLetterCount> deadLetters,
        List<ProviderKeyState> providerKeys) {

    /**
     * Copies the lists.
     *
     * @param at when it was read (the database's clock)
     * @param jobs live jobs by type and state; a type and state with no job is absent
     * @param deadLetters dead letters waiting for a decision ({@code parked} and {@code review}), by type,
     *     failure type and state
     * @param providerKeys every provider key with a breaker, cooldown or bucket row
     */
    public StateSample {
        jobs = List.copyOf(jobs);
        deadLetters = List.copyOf(deadLetters);
        providerKeys = List.copyOf(providerKeys);
    }

    /**
     * Live jobs of one type in one state.
     *
     * @param jobType the job type
     * @param state {@code scheduled}, {@code rescheduled}, {@code retrying} or {@code running}
     *     (the {@code state} of {@code layover.jobs}, including any state added later)
     * @param count how many
     * @param due how many of them are not running and due ({@code run_at} passed): the backlog
     */
    public record JobCount(String jobType, String state, long count, long due) {}

    /**
     * Dead letters of one type, failure type and state.
     *
     * @param jobType the job type
     * @param failureType the failure type
     * @param state {@code parked} or {@code review}
     * @param count how many
     */
    public record DeadLetterCount(String jobType, String failureType, String state, long count) {}

    /**
     * The state of one provider key.
     *
     * @param providerKey the key
     * @param breakerState {@code closed}, {@code open} or {@code half_open}
     * @param cooldownUntil no call before this, or {@code null} (an ended cooldown may still be
     *     given: compare with the time)
     * @param requestPermits request permits free now, when the key's bucket limits requests, else
     *     {@code null}; negative when the bucket is owed (a 429 emptied it until after its wait)
     * @param tokenPermits token permits free now, likewise for a token limit
     */
    public record ProviderKeyState(String providerKey, String breakerState, Instant cooldownUntil,
            Double requestPermits, Double tokenPermits) {}
}
