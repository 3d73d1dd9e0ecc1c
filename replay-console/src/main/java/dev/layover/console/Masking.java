package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Hides values that look like secrets, before anything leaves the console.
 *
 * <ul>
 *   <li>In JSON (args, error details, audit details): the value of every field whose name looks
 *       sensitive, at any depth, becomes {@value #MASK}. A name looks sensitive when, lower-cased
 *       and without {@code - _ .} and spaces, it contains {@code secret}, {@code password},
 *       {@code passwd}, {@code apikey}, {@code authorization}, {@code credential},
 *       {@code privatekey}, {@code accesskey}, {@code cookie}, or {@code token} (but not token
 *       counts and rates: names ending in {@code tokens}, starting with {@code max} or holding
 *       {@code tokensper}, like {@code max_tokens} or {@code tokensPerMinute}), or is {@code auth}.
 *   <li>In text (error messages, provider details): {@code Bearer xxx}, {@code Basic xxx},
 *       OpenAI/Anthropic style {@code sk-...} keys, Google {@code AIza...} keys, AWS
 *       {@code AKIA...} ids, JWTs, and {@code key=value} / {@code "key": "value"} pairs whose key
 *       looks sensitive.
 * </ul>
 */
final class Masking {

    /** What a masked value is replaced with. */
    static final String MASK = "[masked]";

    private Masking() {}

    private static final String[] SENSITIVE_PARTS = {
        "secret", "password", "passwd", "apikey", "authorization", "credential", "privatekey", "accesskey", "cookie",
    };

    private static final Pattern SCHEME = Pattern.compile("(?i)\\b(Bearer|Basic)(\\s+)(?!\\[masked\\])([A-Za-z0-9._~+/=-]{4,})");
    private static final Pattern KEYS = Pattern.compile(
            "\\b(sk-(?:ant-|proj-|live-|test-)?)([A-Za-z0-9_-]{6,})"
                    + "|\\b(AIza)([0-9A-Za-z_-]{20,})"
                    + "|\\b(AKIA|ASIA)([0-9A-Z]{12,})"
                    + "|\\b(xox[abprs]-)([A-Za-z0-9-]{6,})");
    private static final Pattern JWT = Pattern.compile("\\beyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{4,}");
    private static final Pattern PAIR = Pattern.compile(
            "(?i)((?<![A-Za-z0-9])(?:[a-z0-9]+[-_])*(?:token|secret|password|passwd|api[-_ ]?key|apikey|authorization"
                    + "|credentials?|private[-_]?key|access[-_]?key)(?:[-_][a-z0-9]+)*[\"']?\\s*[:=]\\s*[\"']?)"
                    + "(?!\\[masked\\])(?!(?:Bearer|Basic)\\b)([^\\s\"',;&}\\]]+)");

    /**
     * @param name a JSON field name
     * @return whether its value should be masked
     */
    static boolean isSensitiveKey(String name) {
        if (name == null) {
            return false;
        }
        String k = name.toLowerCase(Locale.ROOT).replaceAll("[\\s._-]", "");
        if (k.equals("auth")) {
            return true;
        }
        for (String part : SENSITIVE_PARTS) {
            if (k.contains(part)) {
                return true;
            }
        }
        if (k.contains("token")) {
            return !(k.endsWith("tokens") || k.startsWith("max") || k.contains("tokencount")
                    || k.contains("tokenlimit") || k.contains("tokenusage") || k.contains("tokensper"));
        }
        return false;
    }

    /**
     * @param text any text, or {@code null}
     * @return the text with secret-looking parts replaced by {@value #MASK}
     */
    static String maskText(String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        String s = SCHEME.matcher(text).replaceAll("$1$2" + Matcher.quoteReplacement(MASK));
        // named values first: "api_key=sk-..." masks whole, not as "sk-[masked]" and then again
        s = PAIR.matcher(s).replaceAll("$1" + Matcher.quoteReplacement(MASK));
        Matcher m = KEYS.matcher(s);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String prefix = m.group(1) != null ? m.group(1) : m.group(3) != null ? m.group(3)
                    : m.group(5) != null ? m.group(5) : m.group(7);
            m.appendReplacement(out, Matcher.quoteReplacement(prefix + MASK));
        }
        m.appendTail(out);
        return JWT.matcher(out.toString()).replaceAll(Matcher.quoteReplacement(MASK));
    }

    /**
     * Masks the values of sensitive-looking fields, at any depth. Strings elsewhere are kept as
     * they are (args are data: a prompt is shown as written).
     *
     * @param node JSON, or {@code null}
     * @return a masked copy
     */
    static JsonNode maskKeys(JsonNode node) {
        return mask(node, false);
    }

    /**
     * Masks the values of sensitive-looking fields at any depth and secret-looking parts of every
     * other string (error details, audit details).
     *
     * @param node JSON, or {@code null}
     * @return a masked copy
     */
    static JsonNode maskAll(JsonNode node) {
        return mask(node, true);
    }

    private static JsonNode mask(JsonNode node, boolean text) {
        if (node == null) {
            return null;
        }
        if (node.isObject()) {
            ObjectNode out = JsonNodeFactory.instance.objectNode();
            Iterator<Map.Entry<String, JsonNode>> it = node.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode v = e.getValue();
                if (isSensitiveKey(e.getKey()) && v != null && !v.isNull()) {
                    out.put(e.getKey(), MASK);
                } else {
                    out.set(e.getKey(), mask(v, text));
                }
            }
            return out;
        }
        if (node.isArray()) {
            ArrayNode out = JsonNodeFactory.instance.arrayNode();
            for (JsonNode v : node) {
                out.add(mask(v, text));
            }
            return out;
        }
        if (text && node.isTextual()) {
            return TextNode.valueOf(maskText(node.asText()));
        }
        return node.deepCopy();
    }

    /**
     * Puts stored values back where edited args still carry {@value #MASK} in a sensitive field,
     * so that an operator who edits other fields of masked args does not replace a secret with the
     * mask.
     *
     * @param edited the args as edited
     * @param stored the stored args (unmasked)
     * @return the edited args with masked fields restored (a copy)
     */
    static JsonNode restoreMasked(JsonNode edited, JsonNode stored) {
        if (edited == null) {
            return null;
        }
        if (edited.isObject()) {
            ObjectNode out = JsonNodeFactory.instance.objectNode();
            Iterator<Map.Entry<String, JsonNode>> it = edited.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode before = stored != null && stored.isObject() ? stored.get(e.getKey()) : null;
                JsonNode v = e.getValue();
                if (isSensitiveKey(e.getKey()) && v.isTextual() && MASK.equals(v.asText()) && before != null) {
                    out.set(e.getKey(), before.deepCopy());
                } else {
                    out.set(e.getKey(), restoreMasked(v, before));
                }
            }
            return out;
        }
        if (edited.isArray()) {
            ArrayNode out = JsonNodeFactory.instance.arrayNode();
            for (int i = 0; i < edited.size(); i++) {
                JsonNode before = stored != null && stored.isArray() && i < stored.size() ? stored.get(i) : null;
                out.add(restoreMasked(edited.get(i), before));
            }
            return out;
        }
        return edited.deepCopy();
    }

    /**
     * @param node JSON
     * @return whether it contains a sensitive field with a value (what {@link #maskKeys} would hide)
     */
    static boolean hasSensitive(JsonNode node) {
        if (node == null) {
            return false;
        }
        if (node.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> it = node.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                if (isSensitiveKey(e.getKey()) && !e.getValue().isNull()) {
                    return true;
                }
                if (hasSensitive(e.getValue())) {
                    return true;
                }
            }
            return false;
        }
        if (node.isArray()) {
            for (JsonNode v : node) {
                if (hasSensitive(v)) {
                    return true;
                }
            }
        }
        return false;
    }
}
