package dev.layover.testing.provider;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.layover.testing.provider.FakeBatches.Answerer;
import dev.layover.testing.provider.FakeBatches.Kind;
import dev.layover.testing.provider.FakeBatches.Line;
import dev.layover.testing.provider.FakeBatches.Status;
import dev.layover.testing.provider.FakeBatches.Stored;
import dev.layover.testing.provider.FakeBatches.Wire;
import dev.layover.testing.provider.FakeProvider.Api;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Gemini API's batch mode in {@link FakeBatches}, inlined requests only, in its REST shapes
 * (what google-genai 2.x reads):
 *
 * <table>
 *   <caption>paths below an endpoint's base</caption>
 *   <tr><th>call</th><th>path</th></tr>
 *   <tr><td>create: {@code {"batch":{"displayName","inputConfig":{"requests":{"requests":[{"request",
 *       "metadata":{"key"}}]}}}}}, at most 20 MB</td><td>{@code POST /v1/models/{model}:batchGenerateContent}</td></tr>
 *   <tr><td>get: an operation {@code {"name":"batches/{id}","metadata":{GenerateContentBatch},"done"}}</td>
 *       <td>{@code GET /v1/batches/{id}}</td></tr>
 *   <tr><td>list, newest first ({@code pageSize} default 50, {@code pageToken}): {@code {"operations",
 *       "nextPageToken"}}</td><td>{@code GET /v1/batches}</td></tr>
 *   <tr><td>cancel</td><td>{@code POST /v1/batches/{id}:cancel}</td></tr>
 * </table>
 * Also below {@code /v1beta/}. {@code /v1/batches} is OpenAI's Batch API as well: a call carrying
 * {@code x-goog-api-key} (google-genai's) is Gemini's.
 *
 * The batch's {@code metadata.state} is {@code BATCH_STATE_PENDING} until its first poll, then
 * {@code BATCH_STATE_RUNNING}, and {@code BATCH_STATE_SUCCEEDED} (or {@code _EXPIRED},
 * {@code _CANCELLED}) when it moves as {@link FakeBatches} describes; its
 * {@code metadata.output.inlinedResponses.inlinedResponses} then holds one
 * {@code {"response": GenerateContentResponse, "metadata"}} per answered line, or
 * {@code {"error": {"code": <gRPC code>, "message"}, "metadata"}} for a line failed with
 * {@code [fail:NNN]} (8 for 429, 3 for 400, 13 for 500, ...). Expired and cancelled lines have no
 * response.
 */
final class FakeGeminiBatches {

    /** The Gemini API's limit for a request with inlined requests: 20 MB. */
    static final int MAX_REQUEST_BYTES = 20 * 1024 * 1024;

    private static final Pattern CREATE = Pattern.compile("/v1(?:beta)?/models/([^/:]+):batchGenerateContent");
    private static final Pattern BATCH = Pattern.compile("/v1(?:beta)?/batches/([^/:]+)(:cancel)?");
    private static final Pattern LIST = Pattern.compile("/v1(?:beta)?/batches");

    private final FakeBatches batches;
    private final ObjectMapper json;

    FakeGeminiBatches(FakeBatches batches, ObjectMapper json) {
        this.batches = batches;
        this.json = json;
    }

    /** Paths only Gemini uses: a create, or below {@code /v1beta/batches}. */
    static boolean serves(String sub) {
        return CREATE.matcher(sub).matches() || sub.equals("/v1beta/batches") || sub.startsWith("/v1beta/batches/");
    }

    /**
     * Whether a call is Gemini's: {@code /v1/batches} is also OpenAI's Batch API; google-genai sends
     * its key as {@code x-goog-api-key}, openai-java as a bearer token.
     */
    static boolean isGemini(String sub, com.sun.net.httpserver.Headers headers) {
        return serves(sub) || ((LIST.matcher(sub).matches() || BATCH.matcher(sub).matches())
                && headers.containsKey("x-goog-api-key"));
    }

    void handle(HttpExchange ex, String sub, Map<String, String> query, byte[] body, Answerer answerer)
            throws IOException {
        String method = ex.getRequestMethod();
        Matcher m;
        if ((m = CREATE.matcher(sub)).matches() && method.equals("POST")) {
            create(ex, m.group(1), body, answerer);
        } else if (LIST.matcher(sub).matches() && method.equals("GET")) {
            list(ex, query);
        } else if ((m = BATCH.matcher(sub)).matches()) {
            boolean cancel = m.group(2) != null;
            if (cancel ? method.equals("POST") : method.equals("GET")) {
                one(ex, m.group(1), cancel);
            } else {
                send(ex, 404, error(404, "NOT_FOUND", "Method not found."));
            }
        } else {
            send(ex, 404, error(404, "NOT_FOUND", "Method not found."));
        }
    }

    private void create(HttpExchange ex, String model, byte[] raw, Answerer answerer) throws IOException {
        if (raw.length > MAX_REQUEST_BYTES) {
            send(ex, 400, error(400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: "
                    + MAX_REQUEST_BYTES + " bytes."));
            return;
        }
        JsonNode root = read(raw);
        JsonNode batch = root == null ? null : root.get("batch");
        JsonNode requests = batch == null ? null : batch.path("inputConfig").path("requests").get("requests");
        if (requests == null || !requests.isArray() || requests.isEmpty()) {
            send(ex, 400, error(400, "INVALID_ARGUMENT",
                    "batch.input_config.requests.requests: at least one request is required"));
            return;
        }
        List<Line> lines = new ArrayList<>();
        int i = 0;
        for (JsonNode r : requests) {
            JsonNode request = r.get("request");
            String key = r.path("metadata").path("key").asText("");
            if (request == null || !request.isObject() || !request.path("contents").isArray()) {
                send(ex, 400, error(400, "INVALID_ARGUMENT",
                        "batch.input_config.requests.requests[" + i + "].request.contents: required"));
                return;
            }
            lines.add(new Line(key.isEmpty() ? "request-" + (i + 1) : key, request.toString()));
            i++;
        }
        Stored b;
        synchronized (batches.lock()) {
            b = new Stored(batches.nextId("fakebatch"), Wire.GEMINI, Api.GEMINI_GENERATE_CONTENT, batches.clockNow(),
                    answerer, null);
            b.lines.addAll(lines);
            b.metadata.put("displayName", batch.path("displayName").asText(""));
            b.metadata.put("model", "models/" + model);
            b.status = Status.VALIDATING;
            batches.store(b);
        }
        batches.holdCreateIfAsked();
        String view;
        synchronized (batches.lock()) {
            view = operation(b).toString();
        }
        send(ex, 200, view);
    }

    private void one(HttpExchange ex, String id, boolean cancel) throws IOException {
        String view;
        synchronized (batches.lock()) {
            Stored b = batches.find(id);
            if (b == null || b.wire != Wire.GEMINI) {
                send(ex, 404, error(404, "NOT_FOUND", "Requested entity was not found."));
                return;
            }
            if (cancel) {
                batches.cancel(b);
                view = "{}";
            } else {
                batches.poll(b);
                view = operation(b).toString();
            }
        }
        send(ex, 200, view);
    }

    private void list(HttpExchange ex, Map<String, String> query) throws IOException {
        int size;
        try {
            size = query.get("pageSize") == null ? 50 : Integer.parseInt(query.get("pageSize"));
        } catch (NumberFormatException e) {
            size = -1;
        }
        if (size < 1 || size > 1000) {
            send(ex, 400, error(400, "INVALID_ARGUMENT", "page_size must be 1 to 1000"));
            return;
        }
        String view;
        synchronized (batches.lock()) {
            List<Stored> page = batches.page(Wire.GEMINI, query.get("pageToken"), null, size);
            if (page == null) {
                send(ex, 400, error(400, "INVALID_ARGUMENT", "page_token is not valid"));
                return;
            }
            ObjectNode root = json.createObjectNode();
            ArrayNode ops = root.putArray("operations");
            for (Stored b : page) {
                batches.poll(b);
                ops.add(operation(b));
            }
            if (!page.isEmpty() && batches.hasMore(Wire.GEMINI, page.get(page.size() - 1))) {
                root.put("nextPageToken", page.get(page.size() - 1).id);
            }
            view = root.toString();
        }
        send(ex, 200, view);
    }

    /** The batch as a long-running operation whose metadata is a {@code GenerateContentBatch}. Under the lock. */
    private ObjectNode operation(Stored b) {
        ObjectNode op = json.createObjectNode().put("name", "batches/" + b.id);
        ObjectNode md = op.putObject("metadata")
                .put("@type", "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch")
                .put("model", b.metadata.get("model"))
                .put("displayName", b.metadata.get("displayName"))
                .put("name", "batches/" + b.id)
                .put("state", b.status.gemini());
        md.put("createTime", time(b.createdAt));
        md.put("updateTime", time(batches.clockNow()));
        int succeeded = 0;
        int failed = 0;
        for (Line l : b.lines) {
            if (l.result != null && l.result.kind() == Kind.SUCCEEDED) {
                succeeded++;
            } else if (l.result != null && l.result.kind() == Kind.ERRORED) {
                failed++;
            }
        }
        md.putObject("batchStats").put("requestCount", String.valueOf(b.lines.size()))
                .put("successfulRequestCount", String.valueOf(succeeded))
                .put("failedRequestCount", String.valueOf(failed))
                .put("pendingRequestCount", String.valueOf(b.lines.size() - succeeded - failed));
        boolean done = b.finished() || b.status == Status.FAILED;
        op.put("done", done);
        if (b.finished()) {
            md.put("endTime", time(b.endedAt()));
            ArrayNode responses = md.putObject("output").putObject("inlinedResponses").putArray("inlinedResponses");
            for (Line l : b.lines) {
                if (l.result == null || (l.result.kind() != Kind.SUCCEEDED && l.result.kind() != Kind.ERRORED)) {
                    continue;
                }
                ObjectNode r = responses.addObject();
                if (l.result.kind() == Kind.SUCCEEDED) {
                    r.set("response", read(l.result.json().getBytes(StandardCharsets.UTF_8)));
                } else {
                    r.putObject("error").put("code", grpcCode(l.result.status())).put("message", l.result.json());
                }
                r.putObject("metadata").put("key", l.customId);
            }
            op.putObject("response")
                    .put("@type", "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput")
                    .set("inlinedResponses", md.path("output").path("inlinedResponses").deepCopy());
        } else if (b.status == Status.FAILED) {
            op.putObject("error").put("code", 3).put("message", "The batch could not be validated.");
        }
        return op;
    }

    /** The gRPC code Google's Status carries for an HTTP status. */
    static int grpcCode(int http) {
        return switch (http) {
            case 400 -> 3;
            case 401 -> 16;
            case 403 -> 7;
            case 404 -> 5;
            case 409 -> 10;
            case 429 -> 8;
            case 501 -> 12;
            case 503 -> 14;
            case 504 -> 4;
            default -> 13;
        };
    }

    private String error(int code, String status, String message) {
        ObjectNode root = json.createObjectNode();
        root.putObject("error").put("code", code).put("message", message).put("status", status);
        return root.toString();
    }

    private JsonNode read(byte[] raw) {
        try {
            JsonNode n = json.readTree(raw);
            return n != null && n.isObject() ? n : null;
        } catch (IOException e) {
            return null;
        }
    }

    private static String time(Instant at) {
        return at == null ? null : at.truncatedTo(ChronoUnit.MICROS).toString();
    }

    private static void send(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("content-type", "application/json; charset=UTF-8");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }
}
