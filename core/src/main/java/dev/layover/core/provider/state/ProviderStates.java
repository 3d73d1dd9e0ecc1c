package dev.layover.core.provider.state;

import java.time.Duration;
import java.time.Instant;
import dev.layover.core.internal.gate.ProviderStateHandle;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Operators' handle on the fleet-wide provider state: force a breaker open or closed, read a
 * breaker or cooldown, and listen to breaker changes. Get it from {@code layover.providerStates()},
 * or with {@link #create(DataSource)} in a JVM that runs no jobs (a console).
 *
 * <p>Every change here is one conditional {@code UPDATE} of {@code layover.breakers}; the table's
 * trigger sends a NOTIFY so that running workers see it at once (and within a second in any case).
 * The rest of the state is plain SQL: see {@code layover.breakers}, {@code layover.cooldowns},
 * {@code layover.buckets} and the view {@code layover.provider_keys}.
 */
public interface ProviderStates {

    /**
     * A handle for a JVM that runs no jobs (for example a standalone console). Listeners added to
     * it hear only about changes made through it.
     *
     * @param dataSource the Layover database
     * @return the handle
     */
    static ProviderStates create(DataSource dataSource) {
        return ProviderStateHandle.create(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /**
     * Opens a key's breaker now, whatever its counts: jobs of the key picked from now on are
     * parked {@code breaker_open} without calling. Database: creates the breaker row if missing,
     * then sets {@code state = 'open'}, {@code open_until = now + holdFor} ({@code 'infinity'} when
     * {@code holdFor} is null: it stays open until {@link #forceClose}); a trial claim is dropped.
     * After {@code holdFor} the usual half-open trial decides.
     *
     * @param providerKey the key
     * @param holdFor how long, or {@code null} until forced closed
     * @param reason why, stored in {@code reason} as "forced open: ..."
     * @return true when the breaker was not open before
     */
    boolean forceOpen(String providerKey, Duration holdFor, String reason);

    /**
     * Closes a key's breaker now. Database: {@code state = 'closed'}, {@code closed_at = now},
     * counts and the escalating open period reset, a trial claim dropped; only when it was not
     * closed. Listeners (the recovery sweep) hear of the closing like of any other.
     *
     * @param providerKey the key
     * @param reason why, stored in {@code reason} as "forced closed: ..."
     * @return true when the breaker was open or half-open before
     */
    boolean forceClose(String providerKey, String reason);

    /**
     * Sets the weight of a fairness key, or of a pattern with {@code *}, at run time
     * ({@code docs/fairness.md}): an operator's weight, kept over the configured one (also across
     * restarts) until {@link #revertFairnessWeight}. Database: upserts the pattern's row of
     * {@code layover.fairness_weights} with {@code origin = 'operator'} (the configured weight
     * stays in {@code configured_weight}); jobs tagged from then on get it. Not audited here: a
     * console records it in {@code layover.audit_log}.
     *
     * @param pattern a fairness key or a pattern, 1-200 characters
     * @param weight the weight, in (0, 1,000,000]
     * @param reason why, stored in {@code reason} (may be null)
     * @return the weight in force for the pattern before; {@code null} when it had none of its own (1)
     * @throws dev.layover.core.ConfigurationException when the pattern or the weight is out of range
     */
    Double setFairnessWeight(String pattern, double weight, String reason);

    /**
     * Reverts an operator's weight: the configured weight applies again, or 1 when none is
     * configured. Database: the row gets back {@code configured_weight} and
     * {@code origin = 'config'}, or is deleted.
     *
     * @param pattern the fairness key or pattern
     * @return the operator's weight removed; {@code null} when the pattern had none
     */
    Double revertFairnessWeight(String pattern);

    /**
     * Sets a key's limits at run time ({@code docs/provider-state.md}, "Limits at run time"): every
     * worker of the fleet uses the override's dimensions for the key in place of the ones it
     * configured, within about a second (NOTIFY, else the one-second provider-state refresh), until
     * {@link #revertLimit}; a dimension the override leaves null stays as configured. For a
     * provider key or a limit key (exact). Database: upserts the key's row of
     * {@code layover.limit_overrides}. Not audited here: a console records it in
     * {@code layover.audit_log}.
     *
     * @param key the key, 1-200 characters
     * @param limit the limits
     * @param reason why, stored in {@code reason} (may be null)
     * @return the override it replaced; {@code null} when the key had none
     * @throws dev.layover.core.ConfigurationException when the key is empty, too long or holds a NUL
     */
    LimitOverride setLimit(String key, LimitOverride limit, String reason);

    /**
     * Removes a key's override: its configured limits apply again in every worker within about a
     * second. Database: deletes the key's row of {@code layover.limit_overrides}.
     *
     * @param key the key
     * @return the override removed; {@code null} when the key had none
     */
    LimitOverride revertLimit(String key);

    /**
     * Reads a key's override from the database (not the workers' memory).
     *
     * @param key the key
     * @return its override, or {@code null}
     */
    LimitOverride limitOverride(String key);

    /**
     * Reads a breaker from the database (not the cache).
     *
     * @param providerKey the key
     * @return its state; {@link BreakerState#CLOSED} when the key has no breaker row yet
     */
    BreakerState breakerState(String providerKey);

    /**
     * Reads a cooldown from the database (not the cache).
     *
     * @param providerKey the key
     * @return the end of its cooldown, possibly past; {@code null} when it never cooled down
     */
    Instant cooldownUntil(String providerKey);

    /**
     * Adds a listener for breaker state changes of every key, those made by this instance and
     * (in a running Layover) those of other JVMs learnt by NOTIFY.
     *
     * @param listener the listener
     */
    void addListener(BreakerListener listener);

    /**
     * @param listener a listener added before
     */
    void removeListener(BreakerListener listener);
}
