package dev.layover.core.provider.state;

import dev.layover.core.internal.Db;
import java.net.InetAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
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
public final class ProviderStates {

    private final ProviderGate gate;

    /**
     * For Layover itself.
     *
     * @param gate the instance's gate
     */
    public ProviderStates(ProviderGate gate) {
        this.gate = Objects.requireNonNull(gate, "gate");
    }

    /**
     * A handle for a JVM that runs no jobs (for example a standalone console). Listeners added to
     * it hear only about changes made through it.
     *
     * @param dataSource the Layover database
     * @return the handle
     */
    public static ProviderStates create(DataSource dataSource) {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = "unknown-host";
        }
        String name = "operator@" + host + "#" + ProcessHandle.current().pid();
        return new ProviderStates(new ProviderGate(new Db(dataSource), Clock.systemUTC(), name,
                ProviderGate.Config.defaults()));
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
    public boolean forceOpen(String providerKey, Duration holdFor, String reason) {
        Objects.requireNonNull(providerKey, "providerKey");
        if (holdFor != null && (holdFor.isNegative() || holdFor.isZero())) {
            throw new IllegalArgumentException("holdFor must be positive: " + holdFor);
        }
        return gate.forceOpen(providerKey, holdFor, reason, gate.workerName());
    }

    /**
     * Closes a key's breaker now. Database: {@code state = 'closed'}, {@code closed_at = now},
     * counts and the escalating open period reset, a trial claim dropped; only when it was not
     * closed. Listeners (the recovery sweep) hear of the closing like of any other.
     *
     * @param providerKey the key
     * @param reason why, stored in {@code reason} as "forced closed: ..."
     * @return true when the breaker was open or half-open before
     */
    public boolean forceClose(String providerKey, String reason) {
        return gate.forceClose(Objects.requireNonNull(providerKey, "providerKey"), reason, gate.workerName());
    }

    /**
     * Reads a breaker from the database (not the cache).
     *
     * @param providerKey the key
     * @return its state; {@link BreakerState#CLOSED} when the key has no breaker row yet
     */
    public BreakerState breakerState(String providerKey) {
        return gate.breakerState(Objects.requireNonNull(providerKey, "providerKey"));
    }

    /**
     * Reads a cooldown from the database (not the cache).
     *
     * @param providerKey the key
     * @return the end of its cooldown, possibly past; {@code null} when it never cooled down
     */
    public Instant cooldownUntil(String providerKey) {
        return gate.cooldownUntil(Objects.requireNonNull(providerKey, "providerKey"));
    }

    /**
     * Adds a listener for breaker state changes of every key, those made by this instance and
     * (in a running Layover) those of other JVMs learnt by NOTIFY.
     *
     * @param listener the listener
     */
    public void addListener(BreakerListener listener) {
        gate.addListener(listener);
    }

    /**
     * @param listener a listener added before
     */
    public void removeListener(BreakerListener listener) {
        gate.removeListener(listener);
    }

    ProviderGate gate() {
        return gate;
    }
}
