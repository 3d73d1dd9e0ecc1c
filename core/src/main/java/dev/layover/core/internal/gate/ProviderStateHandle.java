package dev.layover.core.internal.gate;

import dev.layover.core.internal.db.DatabaseClock;
import dev.layover.core.spi.Db;
import dev.layover.core.provider.state.BreakerListener;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.core.provider.state.ProviderStates;
import java.net.InetAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import javax.sql.DataSource;

/** {@link ProviderStates} over a {@link ProviderGate}: operators' actions, checked, then the gate's. */
public final class ProviderStateHandle implements ProviderStates {

    private final ProviderGate gate;

    /**
     * @param gate the instance's gate
     */
    public ProviderStateHandle(ProviderGate gate) {
        this.gate = Objects.requireNonNull(gate, "gate");
    }

    /**
     * A handle for a JVM that runs no jobs (a standalone console); listeners hear only about
     * changes made through it.
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
        return new ProviderStateHandle(new ProviderGate(new Db(dataSource),
                new DatabaseClock(dataSource, Clock.systemUTC(), name), name,
                ProviderGate.Config.defaults()));
    }

    @Override
    public boolean forceOpen(String providerKey, Duration holdFor, String reason) {
        Objects.requireNonNull(providerKey, "providerKey");
        if (holdFor != null && (holdFor.isNegative() || holdFor.isZero())) {
            throw new IllegalArgumentException("holdFor must be positive: " + holdFor);
        }
        return gate.forceOpen(providerKey, holdFor, reason, gate.workerName());
    }

    @Override
    public boolean forceClose(String providerKey, String reason) {
        return gate.forceClose(Objects.requireNonNull(providerKey, "providerKey"), reason, gate.workerName());
    }

    @Override
    public Double setFairnessWeight(String pattern, double weight, String reason) {
        return gate.setFairnessWeight(Objects.requireNonNull(pattern, "pattern"), weight, gate.workerName(), reason);
    }

    @Override
    public Double revertFairnessWeight(String pattern) {
        return gate.revertFairnessWeight(Objects.requireNonNull(pattern, "pattern"), gate.workerName());
    }

    @Override
    public LimitOverride setLimit(String key, LimitOverride limit, String reason) {
        return gate.setLimit(checkedKey(key), Objects.requireNonNull(limit, "limit"), gate.workerName(), reason);
    }

    @Override
    public LimitOverride revertLimit(String key) {
        return gate.revertLimit(checkedKey(key));
    }

    @Override
    public LimitOverride limitOverride(String key) {
        return gate.readLimitOverride(checkedKey(key));
    }

    private static String checkedKey(String key) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty() || key.length() > 200 || dev.layover.core.internal.db.StoredText.unstorable(key)) {
            throw new dev.layover.core.ConfigurationException("a key must be 1-200 characters without a NUL character");
        }
        return key;
    }

    @Override
    public BreakerState breakerState(String providerKey) {
        return gate.breakerState(Objects.requireNonNull(providerKey, "providerKey"));
    }

    @Override
    public Instant cooldownUntil(String providerKey) {
        return gate.cooldownUntil(Objects.requireNonNull(providerKey, "providerKey"));
    }

    @Override
    public void addListener(BreakerListener listener) {
        gate.addListener(listener);
    }

    @Override
    public void removeListener(BreakerListener listener) {
        gate.removeListener(listener);
    }

    /** @return the gate (tests measure its statements) */
    public ProviderGate gate() {
        return gate;
    }
}
