package dev.layover.core.internal.batch;

import dev.layover.core.batch.BatchSettings;
import java.util.Map;

/** The batch settings of each provider key: an exact key, else the longest matching {@code prefix*} pattern. */
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
        BatchSettings exact = byKeyOrPattern.get(key);
        if (exact != null) {
            return exact;
        }
        BatchSettings best = null;
        int bestLength = -1;
        for (Map.Entry<String, BatchSettings> e : byKeyOrPattern.entrySet()) {
            String k = e.getKey();
            if (k.endsWith("*")) {
                String prefix = k.substring(0, k.length() - 1);
                if (key.startsWith(prefix) && prefix.length() > bestLength) {
                    best = e.getValue();
                    bestLength = prefix.length();
                }
            }
        }
        return best;
    }
}
