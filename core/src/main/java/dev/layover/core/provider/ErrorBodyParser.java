package dev.layover.core.provider;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.TextNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the error out of a response body in any of the providers' shapes: OpenAI/Azure
 * {@code {"error":{"message","type","code"}}}, Anthropic {@code {"type":"error","error":{...}}},
 * Google {@code {"error":{"code","status","details":[...]}}}, Bedrock {@code {"message"}}, a bare
 * error object (what the SDKs keep), a JSON array of stream chunks, or an SSE event stream. Never
 * throws: a body it cannot read comes back as {@link ErrorDetails#raw(String)}.
 */
final class ErrorBodyParser {

    /** Bodies longer than this are not parsed as one JSON document (an SSE stream is still scanned). */
    private static final int MAX_JSON_BODY = 1 << 20;

    /** Longest SSE {@code data} payload parsed. */
    private static final int MAX_EVENT_DATA = 64 * 1024;

    private static final int RAW_SNIPPET = 200;

    private static final ObjectMapper JSON = new ObjectMapper();

    private ErrorBodyParser() {}

    /** Reads an error response body; a bare error object (no {@code "error"} wrapper) counts. */
    static ErrorDetails parse(String body) {
        return parse(body, false);
    }

    /**
     * Reads a body. With {@code strict}, as for a 2xx response, only an explicit {@code "error"}
     * member or an SSE error event counts as an error.
     */
    static ErrorDetails parse(String body, boolean strict) {
        if (body == null) {
            return ErrorDetails.NONE;
        }
        String trimmed = body.strip();
        if (trimmed.isEmpty()) {
            return ErrorDetails.NONE;
        }
        try {
            if (looksLikeSse(trimmed)) {
                return fromSse(trimmed);
            }
            char first = trimmed.charAt(0);
            if ((first == '{' || first == '[') && trimmed.length() <= MAX_JSON_BODY) {
                JsonNode root = JSON.readTree(trimmed);
                return fromJson(root, false, strict);
            }
        } catch (Exception | StackOverflowError e) {
            // not JSON after all (an HTML page from a proxy, a truncated body): keep the text
        }
        return strict ? ErrorDetails.NONE : ErrorDetails.raw(snippet(trimmed));
    }

    /** Reads a parsed JSON document; {@code stream} marks an error found inside a stream. */
    static ErrorDetails fromJson(JsonNode root, boolean stream) {
        return fromJson(root, stream, false);
    }

    private static ErrorDetails fromJson(JsonNode root, boolean stream, boolean strict) {
        if (root == null) {
            return ErrorDetails.NONE;
        }
        if (root.isArray()) {
            // Gemini's non-SSE streaming answers with an array of chunks; an error may be any of them
            for (JsonNode chunk : root) {
                if (chunk != null && chunk.isObject() && chunk.has("error")) {
                    return fromJson(chunk, true);
                }
            }
            return ErrorDetails.NONE;
        }
        if (root.isTextual()) {
            return strict ? ErrorDetails.NONE : ErrorDetails.raw(snippet(root.asText()));
        }
        if (!root.isObject()) {
            return ErrorDetails.NONE;
        }
        JsonNode error = root.get("error");
        JsonNode node;
        if (error != null && error.isObject()) {
            node = error;
        } else if (error != null && error.isTextual()) {
            // {"error": "..."} (Ollama, vLLM's auth); xAI adds a gRPC "code", Fireworks a "message"
            String rootMessage = text(root.get("message"));
            String message = rootMessage == null ? error.asText() : error.asText() + ": " + rootMessage;
            return new ErrorDetails(null, null, message, null, 0, List.of(), List.of(), null, stream, null);
        } else if (!strict && (root.has("message") || root.has("Message") || root.has("__type")
                || (root.has("type") && root.has("code")) || root.get("detail") instanceof TextNode)) {
            node = root;
        } else {
            return ErrorDetails.NONE;
        }

        String type = text(node.get("type"));
        if (type == null) {
            type = awsType(text(node.get("__type")));
        }
        String code = null;
        int embedded = 0;
        JsonNode codeNode = node.get("code");
        if (codeNode != null && codeNode.isNumber()) {
            embedded = httpStatus(codeNode.asInt());
        } else if (codeNode != null && codeNode.isTextual()) {
            code = codeNode.asText();
            embedded = httpStatus(parseInt(code));
            if (embedded != 0) {
                code = null; // Azure's "code": "429" is a status, not a code
            }
        }
        String message = text(node.get("message"));
        if (message == null) {
            message = text(node.get("Message"));
        }
        if (message == null) {
            message = text(node.get("detail")); // FastAPI's {"detail": "..."}
        }
        String status = text(node.get("status"));

        List<ErrorDetails.Quota> quotas = new ArrayList<>();
        List<String> reasons = new ArrayList<>();
        Duration retryDelay = null;
        JsonNode details = node.get("details");
        if (details != null && details.isObject()) {
            String errorCode = text(details.get("error_code"));
            if (errorCode != null) {
                code = errorCode;
            }
        } else if (details != null && details.isArray()) {
            for (JsonNode d : details) {
                if (d == null || !d.isObject()) {
                    continue;
                }
                String at = text(d.get("@type"));
                if (at == null) {
                    continue;
                }
                if (at.endsWith("google.rpc.QuotaFailure")) {
                    JsonNode violations = d.get("violations");
                    if (violations != null && violations.isArray()) {
                        for (JsonNode v : violations) {
                            String id = v == null ? null : text(v.get("quotaId"));
                            String metric = v == null ? null : text(v.get("quotaMetric"));
                            if (id != null || metric != null) {
                                quotas.add(new ErrorDetails.Quota(id, metric, number(v.get("quotaValue"))));
                            }
                        }
                    }
                } else if (at.endsWith("google.rpc.RetryInfo") && retryDelay == null) {
                    retryDelay = Waits.protoDuration(text(d.get("retryDelay")));
                } else if (at.endsWith("google.rpc.ErrorInfo")) {
                    String reason = text(d.get("reason"));
                    if (reason != null) {
                        reasons.add(reason);
                    }
                }
            }
        }
        reasonTokens(node, reasons);
        JsonNode metadata = node.get("metadata");
        String detail = null;
        Map<String, List<String>> bodyHeaders = Map.of();
        if (metadata != null && metadata.isObject()) {
            bodyHeaders = quotedHeaders(metadata.get("headers"));
            detail = relayed(metadata.get("raw"), reasons);
            String source = text(metadata.get("limit_source"));
            if (source != null) {
                reasons.add(source);
            }
        }
        return new ErrorDetails(type, code, message, status, embedded, quotas, reasons, retryDelay, stream, null,
                detail, bodyHeaders);
    }

    /** Azure's {@code innererror.code}, Google's older {@code errors[].reason}: more reason tokens. */
    private static void reasonTokens(JsonNode node, List<String> reasons) {
        JsonNode inner = node.get("innererror");
        if (inner != null && inner.isObject() && text(inner.get("code")) != null) {
            reasons.add(text(inner.get("code")));
        }
        JsonNode errors = node.get("errors");
        if (errors != null && errors.isArray()) {
            for (JsonNode e : errors) {
                String reason = e == null ? null : text(e.get("reason"));
                if (reason != null && reasons.size() < 16) {
                    reasons.add(reason);
                }
            }
        }
    }

    /** OpenRouter's {@code metadata.headers}: the upstream's or its own rate-limit headers, quoted. */
    private static Map<String, List<String>> quotedHeaders(JsonNode headers) {
        if (headers == null || !headers.isObject()) {
            return Map.of();
        }
        Map<String, List<String>> out = new LinkedHashMap<>();
        headers.fields().forEachRemaining(e -> {
            String v = text(e.getValue());
            if (v != null && out.size() < 32) {
                out.put(e.getKey(), List.of(v));
            }
        });
        return out;
    }

    /**
     * OpenRouter's {@code metadata.raw}: what the upstream provider answered, as text or JSON. Its
     * error type and code join the reason tokens; its words are returned to be read with the message.
     */
    private static String relayed(JsonNode raw, List<String> reasons) {
        if (raw == null || raw.isNull()) {
            return null;
        }
        JsonNode parsed = raw;
        String text = raw.isTextual() ? raw.asText() : raw.toString();
        if (raw.isTextual() && text.strip().startsWith("{") && text.length() <= MAX_EVENT_DATA) {
            try {
                parsed = JSON.readTree(text);
            } catch (Exception | StackOverflowError notJson) {
                parsed = raw;
            }
        }
        if (parsed != null && parsed.isObject()) {
            ErrorDetails upstream = fromJson(parsed, false);
            for (String token : new String[] {upstream.type(), upstream.code(), upstream.status()}) {
                if (token != null) {
                    reasons.add(token);
                }
            }
            if (upstream.message() != null) {
                text = upstream.message();
            }
        }
        return snippet(text);
    }

    private static boolean looksLikeSse(String body) {
        return body.startsWith("event:") || body.startsWith("data:") || body.startsWith(":")
                || body.contains("\ndata:") || body.contains("\nevent:");
    }

    /** Scans an event stream for the first error event; {@link ErrorDetails#NONE} if there is none. */
    private static ErrorDetails fromSse(String body) {
        String event = null;
        StringBuilder data = new StringBuilder();
        String[] lines = body.split("\r\n|\n|\r", -1);
        for (int i = 0; i <= lines.length; i++) {
            String line = i < lines.length ? lines[i] : "";
            if (line.isEmpty()) {
                ErrorDetails d = dispatch(event, data);
                if (d != null) {
                    return d;
                }
                event = null;
                data.setLength(0);
                continue;
            }
            if (line.startsWith(":")) {
                continue;
            }
            event = field(line, "event", event);
            appendData(line, data);
        }
        return ErrorDetails.NONE;
    }

    private static ErrorDetails dispatch(String event, StringBuilder data) {
        if (data.length() == 0 || data.length() > MAX_EVENT_DATA) {
            return null;
        }
        String payload = data.toString().strip();
        JsonNode node = null;
        if (payload.startsWith("{") || payload.startsWith("[")) {
            try {
                node = JSON.readTree(payload);
            } catch (Exception | StackOverflowError e) {
                node = null;
            }
        }
        boolean errorEvent = "error".equals(event);
        boolean errorData = node != null && node.isObject()
                && ((node.has("error") && !node.get("error").isNull()) || "error".equals(text(node.get("type"))));
        if (!errorEvent && !errorData) {
            return null;
        }
        if (node == null) {
            return new ErrorDetails(null, null, snippet(payload), null, 0, List.of(), List.of(), null, true, null);
        }
        ErrorDetails d = fromJson(node, true);
        return d.isError() ? d.asStreamError() : new ErrorDetails("error", null, null, null, 0, List.of(),
                List.of(), null, true, null);
    }

    private static String field(String line, String name, String current) {
        if (line.startsWith(name + ":")) {
            String v = line.substring(name.length() + 1);
            return v.startsWith(" ") ? v.substring(1) : v;
        }
        return current;
    }

    private static void appendData(String line, StringBuilder data) {
        if (line.startsWith("data:")) {
            String v = line.substring(5);
            if (v.startsWith(" ")) {
                v = v.substring(1);
            }
            if (data.length() > 0) {
                data.append('\n');
            }
            if (data.length() <= MAX_EVENT_DATA) {
                data.append(v);
            }
        }
    }

    static String text(JsonNode n) {
        if (n == null || n.isNull() || n.isMissingNode()) {
            return null;
        }
        if (n.isTextual()) {
            String s = n.asText();
            return s.isBlank() ? null : s;
        }
        if (n.isNumber() || n.isBoolean()) {
            return n.asText();
        }
        return null;
    }

    /** A JSON number, or a string holding a plain decimal number (Google writes int64 as a string); else null. */
    private static Double number(JsonNode n) {
        String t = text(n);
        if (t == null || t.length() > 20 || !t.matches("\\d{1,20}(?:\\.\\d{1,9})?")) {
            return null;
        }
        return Double.valueOf(t);
    }

    /** "com.amazon.coral.service#ThrottlingException" or "ThrottlingException:http://..." to the bare name. */
    static String awsType(String s) {
        if (s == null) {
            return null;
        }
        String t = s.trim();
        int colon = t.indexOf(':');
        if (colon >= 0) {
            t = t.substring(0, colon);
        }
        int hash = t.lastIndexOf('#');
        if (hash >= 0) {
            t = t.substring(hash + 1);
        }
        return t.isBlank() ? null : t.trim();
    }

    private static int parseInt(String s) {
        if (s == null || s.length() > 3) {
            return 0;
        }
        try {
            return Integer.parseInt(s.trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static int httpStatus(int code) {
        return code >= 100 && code <= 599 ? code : 0;
    }

    static String snippet(String text) {
        String s = text.length() > 4 * RAW_SNIPPET ? text.substring(0, 4 * RAW_SNIPPET) : text;
        // strip markup so an HTML error page reads as its text
        s = s.replaceAll("(?s)<(script|style)[^>]*>.*?</\\1>", " ").replaceAll("<[^>]{0,200}>", " ");
        s = Classification.cut(s);
        return s.length() > RAW_SNIPPET ? s.substring(0, RAW_SNIPPET) : s;
    }
}
