package dev.layover.core.internal.gate;

import dev.layover.core.internal.keys.KeyPatterns;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.util.Map;

/**
 * Fleet-wide concurrency limits ({@code docs/admission-and-control.md}): written to
 * {@code layover.concurrency_limits} at start, for exact keys and {@code prefix*} patterns (a
 * pattern's row is copied to each key matching it when a pick first meets the key). The pick counts
 * a key's slots in use from the job table (its jobs picked with a live heartbeat) and admits no more
 * than are free; nothing here runs per job.
 */
public final class Limits {

    private final Db db;
    private final String workerName;
    private final Map<String, Integer> concurrency;

    /**
     * @param db the database
     * @param workerName this instance's worker name (written as {@code configured_by})
     * @param concurrency concurrency limits by key; a key ending in {@code *} is a pattern: every key
     *     starting with what precedes it gets that limit of its own
     */
    public Limits(Db db, String workerName, Map<String, Integer> concurrency) {
        this.db = db;
        this.workerName = workerName;
        this.concurrency = Map.copyOf(concurrency);
        for (Map.Entry<String, Integer> e : this.concurrency.entrySet()) {
            if (e.getValue() < 1) {
                throw new IllegalArgumentException("concurrency limit of " + e.getKey() + " must be at least 1");
            }
        }
    }

    /** Writes the configured concurrency limits ({@link LimitSql#CONFIGURE_CONCURRENCY}). */
    public void start() {
        for (Map.Entry<String, Integer> e : concurrency.entrySet()) {
            db.autocommit("configuring the concurrency limit of " + e.getKey(), c -> {
                try (PreparedStatement ps = c.prepareStatement(LimitSql.CONFIGURE_CONCURRENCY)) {
                    Db.bind(ps, e.getKey(), e.getValue(), workerName);
                    return ps.execute();
                }
            });
        }
    }

    /** @return whether any concurrency limit is configured */
    public boolean any() {
        return !concurrency.isEmpty();
    }

    /**
     * @param key a configured key
     * @return whether it is a pattern ({@link KeyPatterns#isPattern})
     */
    public static boolean isPattern(String key) {
        return KeyPatterns.isPattern(key);
    }
}
