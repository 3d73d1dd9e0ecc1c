package dev.layover.core.internal.keys;

import java.util.Map;

/**
 * Settings by provider key or {@code prefix*} pattern, the one rule every per-key setting
 * follows (buckets, concurrency limits, batching): the exact key wins, else the longest pattern
 * the key starts with.
 */
public final class KeyPatterns {

    private KeyPatterns() {}

    /**
     * @param key a configured key
     * @return whether it is a pattern ({@code prefix*})
     */
    public static boolean isPattern(String key) {
        return key.endsWith("*");
    }

    /**
     * @param map settings by exact key or {@code prefix*} pattern
     * @param key a key
     * @param <T> the settings type
     * @return the exact key's settings, else those of the longest pattern the key matches, else null
     */
    public static <T> T lookup(Map<String, T> map, String key) {
        T exact = map.get(key);
        if (exact != null || map.isEmpty()) {
            return exact;
        }
        T best = null;
        int bestLength = -1;
        for (Map.Entry<String, T> e : map.entrySet()) {
            String k = e.getKey();
            if (isPattern(k)) {
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
