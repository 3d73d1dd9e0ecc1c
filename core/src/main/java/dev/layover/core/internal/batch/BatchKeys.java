package dev.layover.core.internal.batch;

import dev.layover.core.batch.BatchSettings;
import dev.layover.core.internal.keys.KeyPatterns;
import java.util.Map;

/** The batch settings of each provider key: an exact key, else the longest matching {@code prefix*} pattern ({@link KeyPatterns}). */
public final class BatchKeys {

    private final Map<String, BatchSettings> byKeyOrPattern;

    /** @param byKeyOrPattern settings by provider key or {@code prefix*} pattern */
    public BatchKeys(Map<String, BatchSettings> byKeyOrPattern) {
        this.byKeyOrPattern = Map.copyOf(byKeyOrPattern);
    }

    /** @return whether any key has batching */
    public boolean any() {
        return !byKeyOrPattern.isEmpty();
    }

    /**
     * @param key a provider key, or null
     * @return its settings, or null when the key has no batching
     */
    public BatchSettings of(String key) {
        if (key == null || byKeyOrPattern.isEmpty()) {
            return null;
        }
        return KeyPatterns.lookup(byKeyOrPattern, key);
    }
}
