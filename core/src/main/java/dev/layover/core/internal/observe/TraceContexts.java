package dev.layover.core.internal.observe;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.tracing.LayoverTracing.EnqueueSpan;
import java.io.IOException;

/**
 * The W3C trace context a job stores ({@code scheduled_tasks.trace_context}, a jsonb object
 * {@code {"traceparent", "tracestate"}}), written from an enqueue's span and read back for its runs.
 */
public final class TraceContexts {

    private static final ObjectMapper JSON = new ObjectMapper();

    private TraceContexts() {}

    /** A stored trace context: its {@code traceparent} (possibly malformed) and {@code tracestate}, each possibly null. */
    public record Stored(String traceparent, String tracestate) {
        /** Nothing stored. */
        public static final Stored NONE = new Stored(null, null);
    }

    /**
     * @param span an enqueue's span
     * @return the jsonb text to store, or null when the span has no context
     */
    public static String json(EnqueueSpan span) {
        String parent;
        String state;
        try {
            parent = span.traceparent();
            state = parent == null ? null : span.tracestate();
        } catch (RuntimeException e) {
            return null; // a tracer that fails stores nothing
        }
        if (parent == null) {
            return null;
        }
        ObjectNode o = JSON.createObjectNode().put("traceparent", parent);
        if (state != null && !state.isEmpty()) {
            o.put("tracestate", state);
        }
        return o.toString();
    }

    /**
     * @param json the stored jsonb text, or null
     * @return what it holds; {@link Stored#NONE} when nothing readable (a value another writer stored)
     */
    public static Stored read(String json) {
        if (json == null) {
            return Stored.NONE;
        }
        try {
            JsonNode n = JSON.readTree(json);
            if (n == null || !n.isObject()) {
                return Stored.NONE;
            }
            JsonNode p = n.get("traceparent");
            JsonNode s = n.get("tracestate");
            return new Stored(p != null && p.isTextual() ? p.asText() : null, s != null && s.isTextual() ? s.asText() : null);
        } catch (IOException e) {
            return Stored.NONE;
        }
    }
}
