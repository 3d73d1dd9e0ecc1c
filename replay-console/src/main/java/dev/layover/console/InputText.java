package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Map;

/**
 * Refuses text that Postgres cannot store, before it reaches a query: the NUL character (text and
 * jsonb reject it) and lone UTF-16 surrogates (no UTF-8 encoding exists for them). Such input is
 * a 400 that names the field, never a database error.
 */
final class InputText {

    private InputText() {}

    /**
     * @param value a value from a request, or {@code null}
     * @param field the name the error gives it (a query parameter, path parameter, body field)
     * @return the value
     * @throws ApiException 400 when the value cannot be stored
     */
    static String check(String value, String field) {
        String why = problem(value);
        if (why != null) {
            throw ApiException.badRequest(field + " contains " + why + ", which the database cannot store", field);
        }
        return value;
    }

    /**
     * Checks every field name and string of a JSON document.
     *
     * @param node the document
     * @param path where it is, e.g. {@code filter} (field names are appended with dots, array
     *     elements with {@code [i]})
     * @throws ApiException 400 naming the first field that cannot be stored
     */
    static void check(JsonNode node, String path) {
        if (node == null) {
            return;
        }
        if (node.isTextual()) {
            check(node.asText(), path);
        } else if (node.isArray()) {
            for (int i = 0; i < node.size(); i++) {
                check(node.get(i), path + "[" + i + "]");
            }
        } else if (node.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> e = it.next();
                String name = path.isEmpty() ? e.getKey() : path + "." + e.getKey();
                check(e.getKey(), (path.isEmpty() ? "" : path + ".") + "(a field name)");
                check(e.getValue(), name);
            }
        }
    }

    /** @return what is wrong with the value, or {@code null} when it can be stored */
    static String problem(String s) {
        if (s == null) {
            return null;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\0') {
                return "a NUL character (\\u0000) at position " + i;
            }
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                    continue;
                }
                return "a lone surrogate (\\u" + Integer.toHexString(c) + ") at position " + i;
            }
            if (Character.isLowSurrogate(c)) {
                return "a lone surrogate (\\u" + Integer.toHexString(c) + ") at position " + i;
            }
        }
        return null;
    }
}
