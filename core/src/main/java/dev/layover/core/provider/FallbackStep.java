package dev.layover.core.provider;

import java.time.Duration;
import java.time.Instant;

/**
 * One line of a job's fallback trail: what a {@link FallbackChain} did with one endpoint.
 *
 * <p>Stored with the job when its run ends in anything but done (a reschedule, a retry or a park),
 * in {@code layover.jobs.provider_trail} and, once parked, {@code layover.dead_letters.provider_trail};
 * once the job finished (the run that answered included), in {@code layover.job_history.provider_trail}:
 * a jsonb array, oldest first (the newest 50 kept), of objects
 * {@code {"at", "attempt", "key", "result", "detail", "wait_ms"}}.
 *
 * <table>
 *   <caption>result</caption>
 *   <tr><td>{@code answered}</td><td>this endpoint answered; the chain stopped here</td></tr>
 *   <tr><td>{@code rate_limited}</td><td>429: moved on, no breaker failure, the key cools down</td></tr>
 *   <tr><td>{@code overloaded}, {@code transient}, {@code quota_exhausted}, {@code auth_refused}</td>
 *       <td>a breaker failure of the key; moved on</td></tr>
 *   <tr><td>{@code rejected}</td><td>the request itself was refused (BAD_REQUEST); the chain stopped</td></tr>
 *   <tr><td>{@code error}</td><td>an exception that is not a provider failure (the job's own); the chain stopped</td></tr>
 *   <tr><td>{@code skipped_cooldown}, {@code skipped_breaker_open}, {@code skipped_half_open},
 *       {@code skipped_bucket}, {@code skipped_state_unavailable}</td>
 *       <td>passed over without a call</td></tr>
 * </table>
 *
 * @param providerKey the endpoint's provider key
 * @param result what happened (see the table)
 * @param detail the reason in words, e.g. the provider's message
 * @param retryAfter how long until the endpoint may be tried again, when known, else {@code null}
 * @param at when
 */
public record FallbackStep(String providerKey, String result, String detail, Duration retryAfter, Instant at) {

    /** @return whether the endpoint answered */
    public boolean answered() {
        return "answered".equals(result);
    }

    /** @return whether the endpoint was passed over without a call */
    public boolean skipped() {
        return result.startsWith("skipped_");
    }
}
