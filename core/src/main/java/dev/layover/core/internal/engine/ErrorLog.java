package dev.layover.core.internal.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.internal.db.StoredText;
import dev.layover.core.internal.engine.RunDecision.AttemptError;
import java.util.ArrayList;
import java.util.List;

/** The jsonb a job's error log ({@code errors}) and fallback trail ({@code provider_trail}) store. */
final class ErrorLog {

    /** An empty trail. */
    static final String NO_TRAIL = "[]";

    private static final ObjectMapper JSON = new ObjectMapper();

    private ErrorLog() {}

    /** One entry of {@code errors}: attempt, at, kind, error_class, message (cut). */
    static String entry(AttemptError e) {
        return node(e).toString();
    }

    /**
     * An entry with the attempt's stack trace ({@code stack_trace}, already bounded and masked by
     * {@link StackTraces}); without one when it is null.
     */
    static String entry(AttemptError e, String stackTrace) {
        ObjectNode n = node(e);
        if (stackTrace != null) {
            n.put("stack_trace", StoredText.clean(stackTrace));
        }
        return n.toString();
    }

    /** An entry with extra text fields (a cancel's {@code by}), each cut. */
    static String entry(AttemptError e, String field, String value) {
        ObjectNode n = node(e);
        n.put(field, StoredText.cut(value));
        return n.toString();
    }

    private static ObjectNode node(AttemptError e) {
        ObjectNode n = JSON.createObjectNode();
        n.put("attempt", e.attempt());
        n.put("at", e.at().toString());
        n.put("kind", e.kind());
        n.put("error_class", e.errorClass());
        n.put("message", StoredText.cut(e.message()));
        return n;
    }

    /**
     * A fallback trail as stored: NUL escapes (refused by jsonb) in its texts replaced. The trail is
     * Jackson's output, so the escape only appears inside strings.
     */
    static String cleanTrail(String trail) {
        if (trail == null || !trail.contains("\\u0000")) {
            return trail;
        }
        try {
            return JSON.writeValueAsString(clean(JSON.readTree(trail)));
        } catch (Exception e) {
            return NO_TRAIL;
        }
    }

    private static JsonNode clean(JsonNode n) {
        if (n.isTextual()) {
            return JSON.getNodeFactory().textNode(StoredText.clean(n.asText()));
        }
        if (n instanceof ObjectNode o) {
            List<String> names = new ArrayList<>();
            o.fieldNames().forEachRemaining(names::add);
            for (String f : names) {
                o.set(f, clean(o.get(f)));
            }
        } else if (n instanceof ArrayNode a) {
            for (int i = 0; i < a.size(); i++) {
                a.set(i, clean(a.get(i)));
            }
        }
        return n;
    }
}
