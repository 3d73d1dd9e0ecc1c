package dev.layover.core.provider;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Response headers with case-insensitive names; tolerant of nulls everywhere. */
final class HeaderMap {

    static final HeaderMap EMPTY = new HeaderMap(new TreeMap<>(String.CASE_INSENSITIVE_ORDER));

    private final TreeMap<String, List<String>> map;

    private HeaderMap(TreeMap<String, List<String>> map) {
        this.map = map;
    }

    static HeaderMap of(Map<String, ? extends List<String>> headers) {
        if (headers == null || headers.isEmpty()) {
            return EMPTY;
        }
        TreeMap<String, List<String>> m = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (Map.Entry<String, ? extends List<String>> e : headers.entrySet()) {
            String name = e.getKey();
            // HttpURLConnection reports the status line under a null name
            if (name == null || e.getValue() == null) {
                continue;
            }
            List<String> values = m.computeIfAbsent(name.trim(), k -> new ArrayList<>());
            for (String v : e.getValue()) {
                if (v != null) {
                    values.add(v);
                }
            }
        }
        return new HeaderMap(m);
    }

    /** All values of a header, in order; empty when absent. */
    List<String> all(String name) {
        List<String> v = map.get(name);
        return v == null ? Collections.emptyList() : v;
    }

    /** The first non-blank value of a header, trimmed, or {@code null}. */
    String first(String name) {
        for (String v : all(name)) {
            if (!v.isBlank()) {
                return v.trim();
            }
        }
        return null;
    }

    boolean has(String name) {
        return map.containsKey(name);
    }

    /** The header names, as first seen. */
    java.util.Set<String> names() {
        return map.keySet();
    }

    /**
     * These headers, and those of {@code more} that are absent here (headers a gateway quoted in its
     * body, e.g. OpenRouter's {@code error.metadata.headers}).
     */
    HeaderMap withFallback(Map<String, List<String>> more) {
        if (more == null || more.isEmpty()) {
            return this;
        }
        TreeMap<String, List<String>> m = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        m.putAll(map);
        for (Map.Entry<String, List<String>> e : more.entrySet()) {
            if (e.getKey() != null && e.getValue() != null && !m.containsKey(e.getKey().trim())) {
                m.put(e.getKey().trim(), List.copyOf(e.getValue()));
            }
        }
        return new HeaderMap(m);
    }
}
