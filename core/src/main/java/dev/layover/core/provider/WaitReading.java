package dev.layover.core.provider;

/**
 * How faithfully a {@link Classification}'s {@code retryAfter} and {@code resetAt} follow what the
 * provider stated.
 *
 * <p>A stated wait or reset is kept exactly, however far away (an Anthropic spend limit's
 * "You will regain access on 2026-07-01 at 00:00 UTC", an OpenAI monthly reset): whether a job
 * waits that long or parks is the engine's {@code maxDeferral} decision. Only nonsense is
 * changed, and then this says so.
 */
public enum WaitReading {
    /** Every wait and reset the response stated was read as stated (or it stated none). */
    AS_STATED,
    /**
     * A stated wait or reset lay further away than the classifier's {@code maxWait} (default
     * {@value ProviderClassifier#DEFAULT_MAX_WAIT_DAYS} days: nonsense such as
     * {@code retry-after: 99999999999}) and was cut to it.
     */
    CLAMPED,
    /**
     * A wait or reset was stated in a form that cannot be read ({@code retry-after: soon}, an
     * Anthropic regain date {@code 2026-13-45}) and was skipped, never guessed; what
     * {@code retryAfter} and {@code resetAt} hold comes from the other sources, or is
     * {@code null}.
     */
    UNREADABLE
}
