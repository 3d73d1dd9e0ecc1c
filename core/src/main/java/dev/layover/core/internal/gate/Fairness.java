package dev.layover.core.internal.gate;

import dev.layover.core.provider.state.FairnessSettings;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Map;

/**
 * The weights of fair share within a provider key ({@code docs/fairness.md}): the configured ones,
 * written to {@code layover.fairness_weights} at start, and operators' at run time. The fair queue
 * itself is in the job table (each due job's tag, given at enqueue by {@code layover.fair_tags}) and
 * in the pick, which admits a key's jobs in tag order.
 */
final class Fairness {

    private final GateDb gdb;
    private volatile FairnessSettings settings = FairnessSettings.defaults();

    Fairness(GateDb gdb) {
        this.gdb = gdb;
    }

    void configure(FairnessSettings s) {
        this.settings = s;
    }

    FairnessSettings settings() {
        return settings;
    }

    /** Writes the configured weights ({@link FairSql#CONFIGURE_WEIGHT}); an operator's weight stays. */
    void start() {
        for (Map.Entry<String, Double> w : settings.weights().entrySet()) {
            gdb.inline("configuring the fairness weight of " + w.getKey(), c -> {
                try (PreparedStatement ps = c.prepareStatement(FairSql.CONFIGURE_WEIGHT)) {
                    Db.bind(ps, w.getKey(), w.getValue(), w.getValue(), gdb.workerName);
                    return ps.executeUpdate();
                }
            });
        }
    }

    /**
     * An operator's weight for a fairness key or pattern ({@link FairSql#SET_WEIGHT}).
     *
     * @return the weight in force before; null when the pattern had none of its own
     */
    Double setWeight(String pattern, double weight, String by, String reason) {
        FairnessSettings.defaults().withWeight(pattern, weight); // validates
        return gdb.inline("setting the fairness weight of " + pattern, c -> {
            try (PreparedStatement ps = c.prepareStatement(FairSql.SET_WEIGHT)) {
                Db.bind(ps, pattern, weight, by, reason);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    double before = rs.getDouble(1);
                    return rs.wasNull() ? null : before;
                }
            }
        });
    }

    /**
     * Reverts an operator's weight ({@link FairSql#REVERT_WEIGHT}).
     *
     * @return the operator's weight removed; null when the pattern had none
     */
    Double revertWeight(String pattern, String by) {
        return gdb.inline("reverting the fairness weight of " + pattern, c -> {
            try (PreparedStatement ps = c.prepareStatement(FairSql.REVERT_WEIGHT)) {
                Db.bind(ps, pattern, by);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getDouble(1) : null;
                }
            }
        });
    }
}
