package dev.layover.core.internal.gate;

import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Operators' limits for keys at run time ({@code layover.limit_overrides}): written here,
 * read back into memory by the provider-state refresh (every second, and when a change is
 * NOTIFYed), and applied in place of a key's configured bucket and concurrency limit. No
 * statement on the admission path: a lookup is a map read.
 */
final class Overrides {

    private static final Logger LOG = LoggerFactory.getLogger(Overrides.class);

    private final GateDb gdb;
    private volatile Map<String, LimitOverride> byKey = Map.of();
    private volatile boolean anyConcurrency;
    /** A key's configured bucket with its override applied, kept so that a key's bucket stays one object. */
    private final ConcurrentHashMap<String, Applied> applied = new ConcurrentHashMap<>();

    private record Applied(LimitOverride override, BucketSettings configured, BucketSettings bucket) {}

    Overrides(GateDb gdb) {
        this.gdb = gdb;
    }

    /**
     * Reads every override ({@link OverrideSql#READ_ALL}), a background statement (the refresh's
     * thread); throws on a database error (the refresh logs it).
     */
    void refresh() {
        Map<String, LimitOverride> read = gdb.run(true, "reading the limit overrides", c -> {
            Map<String, LimitOverride> out = new HashMap<>();
            try (PreparedStatement ps = c.prepareStatement(OverrideSql.READ_ALL); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    try {
                        out.put(rs.getString("limit_key"), row(rs));
                    } catch (RuntimeException bad) {
                        LOG.warn("Layover: the limit override of {} is not valid and is ignored: {}",
                                rs.getString("limit_key"), bad.getMessage());
                    }
                }
            }
            return out;
        });
        if (!read.equals(byKey)) {
            byKey = Map.copyOf(read);
            anyConcurrency = read.values().stream().anyMatch(o -> o.maxInFlight() != null);
            applied.clear();
        }
    }

    /** @return whether some key's override sets a concurrency limit */
    boolean anyConcurrency() {
        return anyConcurrency;
    }

    /** @return every override this instance applies now, by key */
    Map<String, LimitOverride> all() {
        return byKey;
    }

    /** @return a key's override, or null */
    LimitOverride of(String key) {
        Map<String, LimitOverride> m = byKey;
        return m.isEmpty() ? null : m.get(key);
    }

    /** @return the bucket a key's calls pass: its configured one (null: none) with the key's override applied */
    BucketSettings bucket(String key, BucketSettings configured) {
        LimitOverride o = of(key);
        if (o == null || !o.setsBucket()) {
            return configured;
        }
        Applied a = applied.get(key);
        if (a == null || a.override() != o || a.configured() != configured) {
            a = new Applied(o, configured, o.applyTo(configured));
            applied.put(key, a);
        }
        return a.bucket();
    }

    /** @return a key's concurrency limit: its override's, else the configured one (0: none) */
    int concurrency(String key, int configured) {
        LimitOverride o = of(key);
        return o == null || o.maxInFlight() == null ? configured : o.maxInFlight();
    }

    /** @return a key's override as the database has it now ({@link OverrideSql#READ_ONE}), or null */
    LimitOverride read(String key) {
        return gdb.inline("reading the limit override of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(OverrideSql.READ_ONE)) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? row(rs) : null;
                }
            }
        });
    }

    /**
     * Writes a key's override ({@link OverrideSql#SET}) and applies it here at once.
     *
     * @return the override it replaced, or null
     */
    LimitOverride set(String key, LimitOverride o, String by, String reason) {
        LimitOverride before = gdb.inline("setting the limits of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(OverrideSql.SET)) {
                Db.bind(ps, key, o.requestsPerMinute(), o.tokensPerMinute(), o.inputTokensPerMinute(),
                        o.outputTokensPerMinute(), o.maxInFlight(), by, reason);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getObject("b_key") == null ? null : row(rs, "b_");
                }
            }
        });
        refreshQuietly();
        return before;
    }

    /**
     * Deletes a key's override ({@link OverrideSql#REVERT}): its configured limits apply again.
     *
     * @return the override removed, or null when the key had none
     */
    LimitOverride revert(String key) {
        LimitOverride removed = gdb.inline("reverting the limits of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(OverrideSql.REVERT)) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? row(rs) : null;
                }
            }
        });
        refreshQuietly();
        return removed;
    }

    private void refreshQuietly() {
        try {
            refresh();
        } catch (RuntimeException e) {
            LOG.debug("Layover: could not read the limit overrides back (the refresh will): {}", e.toString());
        }
    }

    private static LimitOverride row(ResultSet rs) throws SQLException {
        return row(rs, "");
    }

    private static LimitOverride row(ResultSet rs, String prefix) throws SQLException {
        return new LimitOverride(num(rs, prefix + "requests_per_minute"), num(rs, prefix + "tokens_per_minute"),
                num(rs, prefix + "input_tokens_per_minute"), num(rs, prefix + "output_tokens_per_minute"),
                (Integer) rs.getObject(prefix + "max_in_flight"));
    }

    private static Double num(ResultSet rs, String column) throws SQLException {
        double d = rs.getDouble(column);
        return rs.wasNull() ? null : d;
    }
}
