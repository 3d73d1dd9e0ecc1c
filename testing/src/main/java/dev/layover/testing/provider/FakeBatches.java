package dev.layover.testing.provider;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.layover.testing.provider.FakeProvider.Api;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fake provider's batch APIs: OpenAI's Batch API (with its Files API), Anthropic's Message
 * Batches, the Gemini API's batch mode (inlined requests; see {@code FakeGeminiBatches}) and Bedrock's
 * batch inference with its S3 ({@link FakeS3}; see {@code FakeBedrockBatches}), in their real shapes,
 * reached from {@link FakeProvider#batches()}. One instance
 * serves both endpoints of the fake ({@link FakeProvider#primary()} and {@link FakeProvider#secondary()},
 * below their {@link FakeProvider.Endpoint#base()}); batch calls are not counted in the endpoint's
 * direct-call counters, and each batch line is answered with the content and token usage rules of
 * the endpoint its batch was created on (no limit, no phase applies to batch lines).
 *
 * <table>
 *   <caption>paths below an endpoint's base</caption>
 *   <tr><th>call</th><th>path</th></tr>
 *   <tr><td>OpenAI: upload the input file (multipart, {@code purpose=batch}, JSONL lines
 *       {@code {"custom_id","method":"POST","url","body"}})</td><td>{@code POST /v1/files}</td></tr>
 *   <tr><td>OpenAI: a file's content (input, output or error file)</td><td>{@code GET /v1/files/{id}/content}</td></tr>
 *   <tr><td>OpenAI: create ({@code input_file_id}, {@code endpoint}, {@code completion_window: "24h"},
 *       {@code metadata})</td><td>{@code POST /v1/batches}</td></tr>
 *   <tr><td>OpenAI: retrieve, list (newest first, {@code limit} 1–100 default 20, {@code after}),
 *       cancel</td><td>{@code GET /v1/batches/{id}}, {@code GET /v1/batches}, {@code POST /v1/batches/{id}/cancel}</td></tr>
 *   <tr><td>Anthropic: create ({@code {"requests":[{"custom_id","params"}]}})</td><td>{@code POST /v1/messages/batches}</td></tr>
 *   <tr><td>Anthropic: retrieve, list (newest first, {@code limit} 1–1000 default 20, {@code after_id},
 *       {@code before_id}), cancel, results (JSONL)</td><td>{@code GET /v1/messages/batches/{id}},
 *       {@code GET /v1/messages/batches}, {@code POST /v1/messages/batches/{id}/cancel},
 *       {@code GET /v1/messages/batches/{id}/results}</td></tr>
 * </table>
 *
 * <h2>How a batch moves</h2>
 * A batch is stored when its create call arrives; OpenAI's create answers {@code validating},
 * Anthropic's {@code in_progress}. Then, at each look at the batch (retrieve, list, cancel,
 * results: a "poll"), the fake moves it:
 * <ul>
 *   <li>an OpenAI batch whose input file is malformed (a line that is not JSON, lacks
 *       {@code custom_id} or {@code body}, names another {@code url}, or repeats a custom id) is
 *       {@code failed} at its first poll, with {@code errors.data} naming the line;
 *   <li>otherwise, unless {@link #manual()} was called, a batch is done at the first poll at or
 *       after its creation plus {@link #processingDelay(Duration)} (default zero: done at the first
 *       poll): every line without a result gets one, and the batch is {@code completed} (OpenAI)
 *       / {@code ended} (Anthropic), or {@code expired} (Anthropic: {@code ended}, lines
 *       {@code expired}) after {@link #expireNext()};
 *   <li>before that, an OpenAI batch is {@code in_progress} from its first poll;
 *   <li>a cancelled batch is {@code cancelling} / {@code canceling} until the next poll (in
 *       manual mode: until {@link #complete(String)}), then {@code cancelled} / {@code ended}:
 *       lines done keep their result, the others are cancelled.
 * </ul>
 * Gemini and Bedrock batches move the same way, in their words ({@code BATCH_STATE_*}; Bedrock's
 * {@code Validating}, {@code InProgress}, {@code Completed} / {@code PartiallyCompleted},
 * {@code Stopping}, {@code Stopped}, {@code Expired}, {@code Failed}).
 * In {@link #manual()} mode, batches move only when the test says: {@link #process(String, int)}
 * answers some lines (an OpenAI batch with every line answered is {@code finalizing}),
 * {@link #complete(String)} ends it (or ends its cancel), {@link #expire(String)} expires it.
 *
 * <h2>Line results</h2>
 * A line is answered like a direct call of its API to the batch's endpoint (the
 * {@link FakeProvider} answer and token rules, deterministic from the body). A line whose body
 * contains {@code [fail:NNN]} (e.g. {@code [fail:429]}) is answered with error status NNN in the
 * API's shape: 400 {@code invalid_request_error}, 401 {@code authentication_error}, 403
 * {@code permission_error}, 404 {@code not_found_error}, 413 {@code request_too_large}, 429
 * {@code rate_limit_error}, 500 {@code api_error}, 529 {@code overloaded_error} (Anthropic);
 * OpenAI's {@code {"error":{"message","type","param","code"}}} with the status in
 * {@code response.status_code}. OpenAI: answered lines with status 200 go to the output file
 * ({@code output_file_id}), errored, expired ({@code error.code: "batch_expired"}) and cancelled
 * ({@code "batch_cancelled"}) lines to the error file ({@code error_file_id}); the files exist
 * once the batch is finished. Anthropic: {@code succeeded}, {@code errored} (the nested
 * {@code {"type":"error","error":{...}}}), {@code canceled}, {@code expired} results, readable once
 * the batch has ended. {@code request_counts}: OpenAI {@code completed} (status 200) and
 * {@code failed} (every other result, expired and cancelled ones included); Anthropic
 * {@code processing, succeeded, errored, canceled, expired}.
 *
 * <h2>Counters</h2>
 * A line is <em>charged</em> when it is answered (succeeded or errored), never when it expires or
 * is cancelled: {@link #chargesOf(String)}, {@link #chargedMoreThanOnce()}, {@link #inputTokens()}
 * and {@link #outputTokens()} (of succeeded lines), {@link #created()}, {@link #batches()}.
 *
 * <p>Thread-safe. Touches no database.
 */
public final class FakeBatches {

    /** The batch API a batch was created through, which decides the words of its status. */
    public enum Wire {
        /** OpenAI's Batch API ({@code /v1/batches}). */
        OPENAI,
        /** Anthropic's Message Batches ({@code /v1/messages/batches}). */
        ANTHROPIC,
        /** The Gemini API's batch mode ({@code :batchGenerateContent}, {@code /v1beta/batches}). */
        GEMINI,
        /** Bedrock's batch inference ({@code /model-invocation-job}), its files in {@link FakeS3}. */
        BEDROCK
    }

    /**
     * A batch as the fake holds it, for tests.
     *
     * @param id the batch's id (Bedrock: the job id, the last part of its ARN)
     * @param api the API its lines are answered as
     * @param status its status in its batch API's words now
     * @param lines how many request lines it holds
     * @param createdAt when it was created, on the fake's clock
     * @param metadata OpenAI's metadata; Gemini's {@code displayName}; Bedrock's {@code jobName}
     * @param wire the batch API it came through
     */
    public record Batch(String id, Api api, String status, int lines, Instant createdAt, Map<String, String> metadata,
            Wire wire) {}

    /**
     * One request line as the fake received it.
     *
     * @param customId its custom id
     * @param body its body (OpenAI) or params (Anthropic), compact JSON text
     */
    public record Request(String customId, String body) {}

    /** The answer the endpoint gives one line: the response body and its usage. */
    record Answer(String json, long inputTokens, long outputTokens) {}

    /** Answers one batch line like a direct call: the endpoint's rules. */
    interface Answerer {
        Answer answer(Api api, String body);
    }

    private static final Pattern FAIL = Pattern.compile("\\[fail:(\\d{3})]");
    private static final Pattern CUSTOM_ID = Pattern.compile("[a-zA-Z0-9_-]{1,64}");
    private static final Pattern OPENAI_BATCH = Pattern.compile("/v1/batches/([^/]+)(/cancel)?");
    private static final Pattern OPENAI_FILE = Pattern.compile("/v1/files/([^/]+)/content");
    private static final Pattern ANTHROPIC_BATCH = Pattern.compile("/v1/messages/batches/([^/]+)(/cancel|/results)?");
    private static final Duration WINDOW = Duration.ofHours(24);
    private static final int OPENAI_MAX_LINES = 50_000;
    private static final int ANTHROPIC_MAX_REQUESTS = 100_000;

    private final ObjectMapper json;
    private final FakeShapes shapes;
    private final Supplier<Instant> clock;
    private final Object lock = new Object();
    private final Map<String, Stored> batches = new LinkedHashMap<>();
    private final Map<String, File> files = new HashMap<>();
    private final Map<String, Integer> charges = new HashMap<>();
    private long seq;
    private long inputTokens;
    private long outputTokens;
    private int created;
    private boolean manual;
    private Duration delay = Duration.ZERO;
    private boolean expireNext;
    private boolean holdNext;
    private int held;
    private boolean closed;

    private final FakeS3 s3 = new FakeS3();
    private final FakeGeminiBatches gemini;
    private final FakeBedrockBatches bedrock;
    private int bedrockMinimumRecords = FakeBedrockBatches.MINIMUM_RECORDS;

    FakeBatches(ObjectMapper json, FakeShapes shapes, Supplier<Instant> clock) {
        this.json = json;
        this.shapes = shapes;
        this.clock = clock;
        this.gemini = new FakeGeminiBatches(this, json);
        this.bedrock = new FakeBedrockBatches(this, json, s3);
    }

    // ---- test controls ---------------------------------------------------------------------------

    /**
     * Batches are done at the first poll at or after their creation plus {@code d} (the default,
     * zero, makes them done at the first poll); leaves {@link #manual()} mode.
     *
     * @param d the processing delay, not negative, on the fake's clock
     * @return this
     */
    public FakeBatches processingDelay(Duration d) {
        if (d == null || d.isNegative()) {
            throw new IllegalArgumentException("the processing delay must be zero or more, was " + d);
        }
        synchronized (lock) {
            delay = d;
            manual = false;
        }
        return this;
    }

    /**
     * From now on batches move only when the test says ({@link #process}, {@link #complete},
     * {@link #expire}); a cancel stays {@code cancelling} until {@link #complete}.
     *
     * @return this
     */
    public FakeBatches manual() {
        synchronized (lock) {
            manual = true;
        }
        return this;
    }

    /**
     * Answers the next {@code n} lines without a result of a batch (fewer when fewer are left).
     * An OpenAI batch whose lines are all answered is {@code finalizing} until it completes.
     *
     * @param id the batch id
     * @param n how many lines, at least 0
     * @return this
     * @throws IllegalArgumentException for an unknown batch or a negative n
     */
    public FakeBatches process(String id, int n) {
        if (n < 0) {
            throw new IllegalArgumentException("n must be 0 or more, was " + n);
        }
        synchronized (lock) {
            Stored b = stored(id);
            start(b);
            if (!b.finished() && b.status != Status.FAILED) {
                int done = 0;
                for (Line l : b.lines) {
                    if (done == n) {
                        break;
                    }
                    if (l.result == null) {
                        answer(b, l);
                        done++;
                    }
                }
                if (b.open() == 0 && b.status == Status.IN_PROGRESS) {
                    b.status = Status.FINALIZING;
                    b.finalizingAt = now();
                }
            }
        }
        return this;
    }

    /**
     * Ends a batch now: every line without a result is answered (a cancelling batch: cancelled),
     * and the batch is {@code completed} / {@code ended} ({@code cancelled}).
     *
     * @param id the batch id
     * @return this
     * @throws IllegalArgumentException for an unknown batch
     */
    public FakeBatches complete(String id) {
        synchronized (lock) {
            Stored b = stored(id);
            start(b);
            if (b.status == Status.CANCELLING) {
                finishCancel(b);
            } else if (!b.finished() && b.status != Status.FAILED) {
                finish(b);
            }
        }
        return this;
    }

    /** Ends every batch not finished yet, as {@link #complete(String)} does. */
    public void completeAll() {
        synchronized (lock) {
            for (String id : List.copyOf(batches.keySet())) {
                complete(id);
            }
        }
    }

    /**
     * Expires a batch now: lines without a result are expired, the batch is {@code expired}
     * (OpenAI) / {@code ended} (Anthropic).
     *
     * @param id the batch id
     * @return this
     * @throws IllegalArgumentException for an unknown batch
     */
    public FakeBatches expire(String id) {
        synchronized (lock) {
            Stored b = stored(id);
            start(b);
            if (!b.finished() && b.status != Status.FAILED) {
                expireNow(b);
            }
        }
        return this;
    }

    /**
     * The next batch created expires instead of completing: when it would be done, its lines
     * without a result are expired.
     *
     * @return this
     */
    public FakeBatches expireNext() {
        synchronized (lock) {
            expireNext = true;
        }
        return this;
    }

    /**
     * The next batch create (either API) stores the batch, then holds its reply until
     * {@link #releaseCreate()}: a test can kill the client mid-submit. {@link #heldCreates()} says
     * when the create is being held.
     *
     * @return this
     */
    public FakeBatches holdCreate() {
        synchronized (lock) {
            holdNext = true;
        }
        return this;
    }

    /** Lets every held create reply, and holds no further one. */
    public void releaseCreate() {
        synchronized (lock) {
            holdNext = false;
            held = 0;
            lock.notifyAll();
        }
    }

    /** @return creates whose reply is being held now */
    public int heldCreates() {
        synchronized (lock) {
            return held;
        }
    }

    /**
     * The fewest records a Bedrock job takes (Bedrock's default quota, 100); a job of fewer fails at
     * its first poll, as Bedrock's validation does.
     *
     * @param n the minimum, 1 or more
     * @return this
     */
    public FakeBatches bedrockMinimumRecords(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("the minimum must be 1 or more, was " + n);
        }
        synchronized (lock) {
            bedrockMinimumRecords = n;
        }
        return this;
    }

    /** @return the object store Bedrock jobs read their input from and write their output to */
    public FakeS3 s3() {
        return s3;
    }

    /** @return batches created (every API), failed ones included */
    public int created() {
        synchronized (lock) {
            return created;
        }
    }

    /**
     * @param customId a line's custom id
     * @return how many times a line with this custom id was charged (answered), over all batches
     */
    public int chargesOf(String customId) {
        synchronized (lock) {
            return charges.getOrDefault(customId, 0);
        }
    }

    /** @return how many custom ids were charged more than once */
    public int chargedMoreThanOnce() {
        synchronized (lock) {
            return (int) charges.values().stream().filter(c -> c > 1).count();
        }
    }

    /** @return input tokens of every succeeded line */
    public long inputTokens() {
        synchronized (lock) {
            return inputTokens;
        }
    }

    /** @return output tokens of every succeeded line */
    public long outputTokens() {
        synchronized (lock) {
            return outputTokens;
        }
    }

    /** @return every batch, oldest first, with its status in its API's words now (no poll: nothing moves) */
    public List<Batch> batches() {
        synchronized (lock) {
            List<Batch> out = new ArrayList<>();
            for (Stored b : batches.values()) {
                out.add(new Batch(b.id, b.api, statusWord(b), b.lines.size(), b.createdAt, Map.copyOf(b.metadata),
                        b.wire));
            }
            return List.copyOf(out);
        }
    }

    /**
     * @param id a batch id
     * @return its request lines as received, in order
     * @throws IllegalArgumentException for an unknown batch
     */
    public List<Request> requests(String id) {
        synchronized (lock) {
            List<Request> out = new ArrayList<>();
            for (Line l : stored(id).lines) {
                out.add(new Request(l.customId, l.body));
            }
            return List.copyOf(out);
        }
    }

    /** Lets held creates go (the server is closing). */
    void close() {
        synchronized (lock) {
            closed = true;
            lock.notifyAll();
        }
    }

    // ---- routing ---------------------------------------------------------------------------------

    /** Whether a path (below an endpoint's prefix) is a batch API's. */
    static boolean serves(String sub) {
        return sub.equals("/v1/files") || sub.startsWith("/v1/files/") || sub.equals("/v1/batches")
                || sub.startsWith("/v1/batches/") || sub.equals("/v1/messages/batches")
                || sub.startsWith("/v1/messages/batches/") || FakeGeminiBatches.serves(sub)
                || FakeBedrockBatches.serves(sub) || sub.startsWith(FakeS3.PREFIX);
    }

    /** Serves one batch API call arriving at an endpoint whose base is {@code base}. */
    void handle(HttpExchange ex, String sub, String base, Answerer answerer) throws IOException {
        String method = ex.getRequestMethod();
        Map<String, String> query = query(ex.getRequestURI().getRawQuery());
        byte[] body;
        try (InputStream in = ex.getRequestBody()) {
            body = in.readAllBytes();
        }
        Matcher m;
        if (sub.startsWith(FakeS3.PREFIX)) {
            s3.handle(ex, sub.substring(FakeS3.PREFIX.length() - 1), body);
        } else if (FakeGeminiBatches.isGemini(sub, ex.getRequestHeaders())) {
            gemini.handle(ex, sub, query, body, answerer);
        } else if (FakeBedrockBatches.serves(sub)) {
            bedrock.handle(ex, sub, query, body, answerer);
        } else if (sub.startsWith("/v1/messages/batches")) {
            if (sub.equals("/v1/messages/batches")) {
                if (method.equals("POST")) {
                    anthropicCreate(ex, body, answerer, base);
                } else if (method.equals("GET")) {
                    anthropicList(ex, query);
                } else {
                    notFound(ex, Api.ANTHROPIC_MESSAGES);
                }
            } else if ((m = ANTHROPIC_BATCH.matcher(sub)).matches()) {
                String id = m.group(1);
                String what = m.group(2) == null ? "" : m.group(2);
                if (what.equals("/results") && method.equals("GET")) {
                    anthropicResults(ex, id);
                } else if (what.equals("/cancel") && method.equals("POST")) {
                    reply(ex, Api.ANTHROPIC_MESSAGES, id, true);
                } else if (what.isEmpty() && method.equals("GET")) {
                    reply(ex, Api.ANTHROPIC_MESSAGES, id, false);
                } else {
                    notFound(ex, Api.ANTHROPIC_MESSAGES);
                }
            } else {
                notFound(ex, Api.ANTHROPIC_MESSAGES);
            }
        } else if (sub.equals("/v1/files") && method.equals("POST")) {
            upload(ex, body, ex.getRequestHeaders().getFirst("content-type"));
        } else if ((m = OPENAI_FILE.matcher(sub)).matches() && method.equals("GET")) {
            fileContent(ex, m.group(1));
        } else if (sub.equals("/v1/batches")) {
            if (method.equals("POST")) {
                openAiCreate(ex, body, answerer);
            } else if (method.equals("GET")) {
                openAiList(ex, query);
            } else {
                notFound(ex, Api.OPENAI_CHAT);
            }
        } else if ((m = OPENAI_BATCH.matcher(sub)).matches()) {
            boolean cancel = m.group(2) != null;
            if (cancel ? method.equals("POST") : method.equals("GET")) {
                reply(ex, Api.OPENAI_CHAT, m.group(1), cancel);
            } else {
                notFound(ex, Api.OPENAI_CHAT);
            }
        } else {
            notFound(ex, Api.OPENAI_CHAT);
        }
    }

    // ---- OpenAI ----------------------------------------------------------------------------------

    private void upload(HttpExchange ex, byte[] body, String contentType) throws IOException {
        Map<String, Part> parts;
        try {
            parts = Multipart.parse(body, contentType);
        } catch (IllegalArgumentException e) {
            send(ex, 400, openAiError(e.getMessage(), null));
            return;
        }
        Part file = parts.get("file");
        Part purpose = parts.get("purpose");
        if (file == null) {
            send(ex, 400, openAiError("Missing required parameter: 'file'.", "file"));
            return;
        }
        if (purpose == null || !purpose.text().equals("batch")) {
            send(ex, 400, openAiError("The fake provider takes only files with purpose 'batch'.", "purpose"));
            return;
        }
        String filename = file.filename() == null ? "upload" : file.filename();
        File f;
        synchronized (lock) {
            String id = "file-fake" + (++seq);
            f = new File(id, filename, "batch", now(), file.bytes());
            files.put(id, f);
        }
        send(ex, 200, fileObject(f));
    }

    private void fileContent(HttpExchange ex, String id) throws IOException {
        File f;
        synchronized (lock) {
            f = files.get(id);
        }
        if (f == null) {
            send(ex, 404, openAiError("No such File object: " + id, "id"));
            return;
        }
        ex.getResponseHeaders().set("content-type", "application/octet-stream");
        ex.sendResponseHeaders(200, f.content.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(f.content);
        }
    }

    private void openAiCreate(HttpExchange ex, byte[] raw, Answerer answerer) throws IOException {
        JsonNode req = readObject(raw);
        if (req == null) {
            send(ex, 400, openAiError("We could not parse the JSON body of your request.", null));
            return;
        }
        String fileId = req.path("input_file_id").asText("");
        String endpoint = req.path("endpoint").asText("");
        String window = req.path("completion_window").asText("");
        if (!endpoint.equals("/v1/chat/completions")) {
            send(ex, 400, openAiError("Invalid value for 'endpoint': the fake provider batches only "
                    + "'/v1/chat/completions', was '" + endpoint + "'.", "endpoint"));
            return;
        }
        if (!window.equals("24h")) {
            send(ex, 400, openAiError("Invalid value for 'completion_window': supported values are: '24h'.",
                    "completion_window"));
            return;
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        JsonNode md = req.get("metadata");
        if (md != null && md.isObject()) {
            md.fields().forEachRemaining(e -> metadata.put(e.getKey(), e.getValue().asText()));
        }
        if (metadata.size() > 16) {
            send(ex, 400, openAiError("Invalid 'metadata': too many properties. Expected at most 16.", "metadata"));
            return;
        }
        Stored b;
        synchronized (lock) {
            File f = files.get(fileId);
            if (f == null) {
                send(ex, 404, openAiError("No such File object: " + fileId, "input_file_id"));
                return;
            }
            b = new Stored("batch_fake" + (++seq), Wire.OPENAI, Api.OPENAI_CHAT, now(), answerer, null);
            b.endpoint = endpoint;
            b.inputFileId = fileId;
            b.metadata.putAll(metadata);
            b.status = Status.VALIDATING;
            readInputFile(b, f.content, endpoint);
            store(b);
        }
        holdIfAsked();
        String view;
        synchronized (lock) {
            view = openAiBatch(b).toString();
        }
        send(ex, 200, view);
    }

    /** Reads the JSONL input; a malformed file fails the batch at its first poll, as OpenAI's validation does. */
    private void readInputFile(Stored b, byte[] content, String endpoint) {
        String[] rows = new String(content, StandardCharsets.UTF_8).split("\n");
        Set<String> ids = new HashSet<>();
        int n = 0;
        for (String row : rows) {
            n++;
            if (row.isBlank()) {
                continue;
            }
            JsonNode line = readObject(row.getBytes(StandardCharsets.UTF_8));
            String problem = null;
            String code = "invalid_json_line";
            if (line == null) {
                problem = "This line is not parseable as valid JSON.";
            } else if (!line.path("custom_id").isTextual() || line.path("custom_id").asText().isEmpty()) {
                problem = "Missing required parameter: 'custom_id'.";
                code = "missing_required_parameter";
            } else if (!line.path("body").isObject()) {
                problem = "Missing required parameter: 'body'.";
                code = "missing_required_parameter";
            } else if (!endpoint.equals(line.path("url").asText())) {
                problem = "The URL provided for this request does not match the batch endpoint.";
                code = "mismatched_endpoint";
            } else if (!"POST".equals(line.path("method").asText())) {
                problem = "Invalid value for 'method': only POST is supported.";
                code = "invalid_method";
            } else if (!ids.add(line.path("custom_id").asText())) {
                problem = "The custom_id for this request is a duplicate of another request.";
                code = "duplicate_custom_id";
            }
            if (problem != null) {
                b.errors.add(new ValidationError(code, problem, n));
                continue;
            }
            b.lines.add(new Line(line.path("custom_id").asText(), line.get("body").toString()));
        }
        if (b.lines.isEmpty() && b.errors.isEmpty()) {
            b.errors.add(new ValidationError("empty_file", "The batch input file is empty.", 1));
        }
        if (b.lines.size() > OPENAI_MAX_LINES) {
            b.errors.add(new ValidationError("too_many_requests", "The batch input file has more than "
                    + OPENAI_MAX_LINES + " requests.", OPENAI_MAX_LINES + 1));
        }
    }

    private void openAiList(HttpExchange ex, Map<String, String> query) throws IOException {
        int limit;
        try {
            limit = limit(query.get("limit"), 20, 100);
        } catch (IllegalArgumentException e) {
            send(ex, 400, openAiError(e.getMessage(), "limit"));
            return;
        }
        ObjectNode root;
        synchronized (lock) {
            List<Stored> page = page(Wire.OPENAI, query.get("after"), null, limit);
            if (page == null) {
                send(ex, 404, openAiError("No such Batch object: " + query.get("after"), "after"));
                return;
            }
            root = json.createObjectNode().put("object", "list");
            ArrayNode data = root.putArray("data");
            for (Stored b : page) {
                poll(b);
                data.add(openAiBatch(b));
            }
            Stored first = page.isEmpty() ? null : page.get(0);
            Stored last = page.isEmpty() ? null : page.get(page.size() - 1);
            putNullable(root, "first_id", first == null ? null : first.id);
            putNullable(root, "last_id", last == null ? null : last.id);
            root.put("has_more", hasMore(Wire.OPENAI, last));
        }
        send(ex, 200, root.toString());
    }

    private ObjectNode openAiBatch(Stored b) {
        ObjectNode n = json.createObjectNode().put("id", b.id).put("object", "batch").put("endpoint", b.endpoint);
        if (b.errors.isEmpty() || b.status != Status.FAILED) {
            n.putNull("errors");
        } else {
            ObjectNode errors = n.putObject("errors").put("object", "list");
            ArrayNode data = errors.putArray("data");
            for (ValidationError e : b.errors) {
                data.addObject().put("code", e.code()).put("message", e.message()).putNull("param").put("line", e.line());
            }
        }
        n.put("input_file_id", b.inputFileId).put("completion_window", "24h").put("status", b.status.openAi);
        putNullable(n, "output_file_id", b.outputFileId);
        putNullable(n, "error_file_id", b.errorFileId);
        n.put("created_at", b.createdAt.getEpochSecond());
        epoch(n, "in_progress_at", b.inProgressAt);
        epoch(n, "expires_at", b.createdAt.plus(WINDOW));
        epoch(n, "finalizing_at", b.finalizingAt);
        epoch(n, "completed_at", b.completedAt);
        epoch(n, "failed_at", b.failedAt);
        epoch(n, "expired_at", b.expiredAt);
        epoch(n, "cancelling_at", b.cancellingAt);
        epoch(n, "cancelled_at", b.cancelledAt);
        int completed = 0;
        int failed = 0;
        for (Line l : b.lines) {
            if (l.result != null) {
                if (l.result.kind == Kind.SUCCEEDED) {
                    completed++;
                } else {
                    failed++;
                }
            }
        }
        n.putObject("request_counts").put("total", b.lines.size()).put("completed", completed).put("failed", failed);
        ObjectNode md = n.putObject("metadata");
        b.metadata.forEach(md::put);
        return n;
    }

    /** Writes the output and error files of a finished OpenAI batch. */
    private void writeFiles(Stored b) {
        StringBuilder output = new StringBuilder();
        StringBuilder errors = new StringBuilder();
        for (Line l : b.lines) {
            if (l.result == null) {
                continue;
            }
            ObjectNode row = json.createObjectNode().put("id", "batch_req_fake" + (++seq)).put("custom_id", l.customId);
            Result r = l.result;
            switch (r.kind) {
                case SUCCEEDED, ERRORED -> {
                    ObjectNode response = row.putObject("response").put("status_code", r.status)
                            .put("request_id", "req_fake" + seq);
                    response.set("body", readObject(r.json.getBytes(StandardCharsets.UTF_8)));
                    row.putNull("error");
                }
                case EXPIRED -> {
                    row.putNull("response");
                    row.putObject("error").put("code", "batch_expired")
                            .put("message", "This request could not be executed before the completion window expired.");
                }
                case CANCELLED -> {
                    row.putNull("response");
                    row.putObject("error").put("code", "batch_cancelled")
                            .put("message", "This request could not be executed because the batch was cancelled.");
                }
            }
            (r.kind == Kind.SUCCEEDED ? output : errors).append(row).append('\n');
        }
        if (!output.isEmpty()) {
            b.outputFileId = newFile("batch_" + b.id + "_output.jsonl", output);
        }
        if (!errors.isEmpty()) {
            b.errorFileId = newFile("batch_" + b.id + "_error.jsonl", errors);
        }
    }

    private String newFile(String name, StringBuilder content) {
        String id = "file-fake" + (++seq);
        files.put(id, new File(id, name, "batch_output", now(), content.toString().getBytes(StandardCharsets.UTF_8)));
        return id;
    }

    private String fileObject(File f) {
        return json.createObjectNode().put("id", f.id).put("object", "file").put("bytes", f.content.length)
                .put("created_at", f.createdAt.getEpochSecond()).putNull("expires_at").put("filename", f.filename)
                .put("purpose", f.purpose).put("status", "processed").putNull("status_details").toString();
    }

    private String openAiError(String message, String param) {
        return shapes.openAiError(message, "invalid_request_error", null, param);
    }

    // ---- Anthropic -------------------------------------------------------------------------------

    private void anthropicCreate(HttpExchange ex, byte[] raw, Answerer answerer, String base) throws IOException {
        JsonNode req = readObject(raw);
        String problem = null;
        if (req == null) {
            problem = "The request body is not valid JSON.";
        } else if (!req.path("requests").isArray() || req.path("requests").isEmpty()) {
            problem = "requests: Field required (at least one request)";
        } else if (req.path("requests").size() > ANTHROPIC_MAX_REQUESTS) {
            problem = "requests: at most " + ANTHROPIC_MAX_REQUESTS + " requests in a batch";
        }
        List<Line> lines = new ArrayList<>();
        if (problem == null) {
            Set<String> ids = new HashSet<>();
            int i = 0;
            for (JsonNode r : req.path("requests")) {
                String id = r.path("custom_id").asText("");
                JsonNode params = r.get("params");
                if (!CUSTOM_ID.matcher(id).matches()) {
                    problem = "requests." + i + ".custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'";
                } else if (!ids.add(id)) {
                    problem = "requests." + i + ".custom_id: Duplicate custom_id " + id;
                } else if (params == null || !params.isObject()) {
                    problem = "requests." + i + ".params: Field required";
                } else if (!params.path("model").isTextual() || !params.path("max_tokens").canConvertToInt()
                        || !params.path("messages").isArray()) {
                    problem = "requests." + i + ".params: model, max_tokens and messages are required";
                }
                if (problem != null) {
                    break;
                }
                lines.add(new Line(id, params.toString()));
                i++;
            }
        }
        if (problem != null) {
            send(ex, 400, shapes.anthropicError("invalid_request_error", problem));
            return;
        }
        Stored b;
        synchronized (lock) {
            b = new Stored("msgbatch_fake" + (++seq), Wire.ANTHROPIC, Api.ANTHROPIC_MESSAGES, now(), answerer, base);
            b.lines.addAll(lines);
            b.status = Status.IN_PROGRESS;
            store(b);
        }
        holdIfAsked();
        String view;
        synchronized (lock) {
            view = anthropicBatch(b).toString();
        }
        send(ex, 200, view);
    }

    private void anthropicList(HttpExchange ex, Map<String, String> query) throws IOException {
        int limit;
        try {
            limit = limit(query.get("limit"), 20, 1000);
        } catch (IllegalArgumentException e) {
            send(ex, 400, shapes.anthropicError("invalid_request_error", e.getMessage()));
            return;
        }
        String view;
        synchronized (lock) {
            List<Stored> page = page(Wire.ANTHROPIC, query.get("after_id"), query.get("before_id"), limit);
            ObjectNode root = json.createObjectNode();
            ArrayNode data = root.putArray("data");
            for (Stored b : page == null ? List.<Stored>of() : page) {
                poll(b);
                data.add(anthropicBatch(b));
            }
            boolean more;
            if (page == null || page.isEmpty()) {
                more = false;
            } else if (query.get("before_id") != null) {
                more = hasNewer(Wire.ANTHROPIC, page.get(0));
            } else {
                more = hasMore(Wire.ANTHROPIC, page.get(page.size() - 1));
            }
            root.put("has_more", more);
            putNullable(root, "first_id", page == null || page.isEmpty() ? null : page.get(0).id);
            putNullable(root, "last_id", page == null || page.isEmpty() ? null : page.get(page.size() - 1).id);
            view = root.toString();
        }
        send(ex, 200, view);
    }

    private ObjectNode anthropicBatch(Stored b) {
        ObjectNode n = json.createObjectNode().put("id", b.id).put("type", "message_batch")
                .put("processing_status", b.status.anthropic());
        int processing = 0;
        int succeeded = 0;
        int errored = 0;
        int canceled = 0;
        int expired = 0;
        for (Line l : b.lines) {
            if (l.result == null) {
                processing++;
                continue;
            }
            switch (l.result.kind) {
                case SUCCEEDED -> succeeded++;
                case ERRORED -> errored++;
                case CANCELLED -> canceled++;
                case EXPIRED -> expired++;
            }
        }
        n.putObject("request_counts").put("processing", processing).put("succeeded", succeeded)
                .put("errored", errored).put("canceled", canceled).put("expired", expired);
        rfc3339(n, "ended_at", b.finished() ? b.endedAt() : null);
        rfc3339(n, "created_at", b.createdAt);
        rfc3339(n, "expires_at", b.createdAt.plus(WINDOW));
        n.putNull("archived_at");
        rfc3339(n, "cancel_initiated_at", b.cancellingAt);
        putNullable(n, "results_url", b.finished() ? b.base + "/v1/messages/batches/" + b.id + "/results" : null);
        return n;
    }

    private void anthropicResults(HttpExchange ex, String id) throws IOException {
        List<String> rows;
        synchronized (lock) {
            Stored b = batches.get(id);
            if (b == null || b.wire != Wire.ANTHROPIC) {
                send(ex, 404, shapes.anthropicError("not_found_error", "Not found: message batch " + id));
                return;
            }
            poll(b);
            if (!b.finished()) {
                send(ex, 404, shapes.anthropicError("not_found_error",
                        "Results for message batch " + id + " are not available: it has not ended."));
                return;
            }
            rows = new ArrayList<>(b.lines.size());
            for (Line l : b.lines) {
                ObjectNode row = json.createObjectNode().put("custom_id", l.customId);
                ObjectNode result = row.putObject("result");
                switch (l.result.kind) {
                    case SUCCEEDED -> result.put("type", "succeeded")
                            .set("message", readObject(l.result.json.getBytes(StandardCharsets.UTF_8)));
                    case ERRORED -> result.put("type", "errored")
                            .set("error", readObject(l.result.json.getBytes(StandardCharsets.UTF_8)));
                    case CANCELLED -> result.put("type", "canceled");
                    case EXPIRED -> result.put("type", "expired");
                }
                rows.add(row.toString());
            }
        }
        ex.getResponseHeaders().set("content-type", "application/binary");
        ex.sendResponseHeaders(200, 0);
        try (Writer w = new BufferedWriter(new OutputStreamWriter(ex.getResponseBody(), StandardCharsets.UTF_8))) {
            for (String row : rows) {
                w.write(row);
                w.write('\n');
            }
        }
    }

    // ---- both ------------------------------------------------------------------------------------

    /** Retrieve ({@code cancel} false) or cancel one batch. */
    private void reply(HttpExchange ex, Api api, String id, boolean cancel) throws IOException {
        String view;
        synchronized (lock) {
            Stored b = batches.get(id);
            if (b == null || b.wire != (api == Api.OPENAI_CHAT ? Wire.OPENAI : Wire.ANTHROPIC)) {
                if (api == Api.OPENAI_CHAT) {
                    send(ex, 404, openAiError("No such Batch object: " + id, "batch_id"));
                } else {
                    send(ex, 404, shapes.anthropicError("not_found_error", "Not found: message batch " + id));
                }
                return;
            }
            if (cancel) {
                if (!cancel(b)) {
                    if (api == Api.OPENAI_CHAT) {
                        send(ex, 409, openAiError("Cannot cancel a batch with status '" + b.status.openAi + "'.", null));
                        return;
                    }
                    // Anthropic: cancelling an ended batch leaves it as it is
                }
            } else {
                poll(b);
            }
            view = (api == Api.OPENAI_CHAT ? openAiBatch(b) : anthropicBatch(b)).toString();
        }
        send(ex, 200, view);
    }

    /**
     * Asks a batch to cancel (it is cancelling until the next poll). Called under the lock.
     *
     * @return false when it has ended or failed already (nothing changes)
     */
    boolean cancel(Stored b) {
        start(b);
        if (b.finished() || b.status == Status.FAILED) {
            return false;
        }
        if (b.status != Status.CANCELLING) {
            b.status = Status.CANCELLING;
            b.cancellingAt = now();
        }
        return true;
    }

    /** What a look at a batch moves (see the class description). Called under the lock. */
    void poll(Stored b) {
        start(b);
        if (manual) {
            return;
        }
        if (b.status == Status.CANCELLING) {
            finishCancel(b);
        } else if ((b.status == Status.IN_PROGRESS || b.status == Status.FINALIZING)
                && !now().isBefore(b.createdAt.plus(delay))) {
            if (b.expireWhenDue) {
                expireNow(b);
            } else {
                finish(b);
            }
        }
    }

    /** A validating batch is failed (a malformed input file) or in progress. */
    void start(Stored b) {
        if (b.status != Status.VALIDATING) {
            return;
        }
        if (b.errors.isEmpty()) {
            b.status = Status.IN_PROGRESS;
            b.inProgressAt = now();
        } else {
            b.status = Status.FAILED;
            b.failedAt = now();
        }
    }

    private void finish(Stored b) {
        for (Line l : b.lines) {
            if (l.result == null) {
                answer(b, l);
            }
        }
        if (b.inProgressAt == null) {
            b.inProgressAt = now();
        }
        if (b.finalizingAt == null) {
            b.finalizingAt = now();
        }
        b.status = Status.COMPLETED;
        b.completedAt = now();
        ended(b);
    }

    private void expireNow(Stored b) {
        for (Line l : b.lines) {
            if (l.result == null) {
                l.result = new Result(Kind.EXPIRED, 0, "", 0, 0);
            }
        }
        b.status = Status.EXPIRED;
        b.expiredAt = now();
        ended(b);
    }

    private void finishCancel(Stored b) {
        for (Line l : b.lines) {
            if (l.result == null) {
                l.result = new Result(Kind.CANCELLED, 0, "", 0, 0);
            }
        }
        b.status = Status.CANCELLED;
        b.cancelledAt = now();
        ended(b);
    }

    /** Answers one line and charges it. */
    private void answer(Stored b, Line l) {
        Matcher fail = FAIL.matcher(l.body);
        if (fail.find()) {
            int status = Integer.parseInt(fail.group(1));
            l.result = new Result(Kind.ERRORED, status, lineError(b, status), 0, 0);
        } else {
            Answer a = b.answerer.answer(b.api, l.body);
            l.result = new Result(Kind.SUCCEEDED, 200, a.json(), a.inputTokens(), a.outputTokens());
            inputTokens += a.inputTokens();
            outputTokens += a.outputTokens();
        }
        charges.merge(l.customId, 1, Integer::sum);
    }

    /**
     * The error body of a line failed with {@code status}, in the API's shape; for the Gemini and
     * Bedrock wires, the message alone (their handlers write the shape).
     */
    private String lineError(Stored b, int status) {
        if (b.wire == Wire.GEMINI || b.wire == Wire.BEDROCK) {
            return switch (status) {
                case 429 -> "Too many requests, please wait before trying again.";
                case 500 -> "Internal server error";
                case 503 -> "Service unavailable";
                default -> "The fake provider failed this request as asked ([fail:" + status + "]).";
            };
        }
        if (b.api == Api.ANTHROPIC_MESSAGES) {
            String type = switch (status) {
                case 400 -> "invalid_request_error";
                case 401 -> "authentication_error";
                case 402 -> "billing_error";
                case 403 -> "permission_error";
                case 404 -> "not_found_error";
                case 413 -> "request_too_large";
                case 429 -> "rate_limit_error";
                case 504 -> "timeout_error";
                case 529 -> "overloaded_error";
                default -> status >= 500 ? "api_error" : "invalid_request_error";
            };
            String message = switch (type) {
                case "rate_limit_error" -> "Number of request tokens has exceeded your per-minute rate limit.";
                case "overloaded_error" -> "Overloaded";
                case "api_error" -> "Internal server error";
                default -> "The fake provider failed this request as asked ([fail:" + status + "]).";
            };
            return shapes.anthropicError(type, message);
        }
        return switch (status) {
            case 401 -> shapes.openAiError("Incorrect API key provided.", "invalid_request_error", "invalid_api_key", null);
            case 429 -> shapes.openAiError("Rate limit reached for requests.", "requests", "rate_limit_exceeded", null);
            default -> status >= 500
                    ? shapes.openAiError("The server had an error while processing your request.", "server_error", null, null)
                    : shapes.openAiError("The fake provider failed this request as asked ([fail:" + status + "]).",
                            "invalid_request_error", null, null);
        };
    }

    /** What a batch does when it ends: OpenAI writes its files, another wire what it needs. */
    private void ended(Stored b) {
        if (b.wire == Wire.OPENAI) {
            writeFiles(b);
        }
        if (b.onEnd != null) {
            b.onEnd.accept(b);
        }
    }

    /** A batch's status in its wire's words. Called under the lock. */
    String statusWord(Stored b) {
        return switch (b.wire) {
            case OPENAI -> b.status.openAi;
            case ANTHROPIC -> b.status.anthropic();
            case GEMINI -> b.status.gemini();
            case BEDROCK -> b.status.bedrock(b.lines.stream().anyMatch(l -> l.result != null
                    && l.result.kind() == Kind.ERRORED));
        };
    }

    // ---- for the Gemini and Bedrock wires (FakeGeminiBatches, FakeBedrockBatches) -----------------

    Object lock() {
        return lock;
    }

    /** A fresh id with a prefix. Called under the lock. */
    String nextId(String prefix) {
        return prefix + (++seq);
    }

    /** The batch of an id, or null. Called under the lock. */
    Stored find(String id) {
        return batches.get(id);
    }

    int bedrockMinimumRecords() {
        return bedrockMinimumRecords;
    }

    Instant clockNow() {
        return now();
    }

    void holdCreateIfAsked() {
        holdIfAsked();
    }

    /** Stores a new batch (counting it, taking an asked expiry). Called under the lock. */
    void store(Stored b) {
        if (expireNext) {
            b.expireWhenDue = true;
            expireNext = false;
        }
        batches.put(b.id, b);
        created++;
    }

    private void holdIfAsked() {
        synchronized (lock) {
            if (!holdNext) {
                return;
            }
            holdNext = false;
            held++;
            while (held > 0 && !closed) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /**
     * A page of one API's batches, newest first: after {@code after} (older than it), or before
     * {@code before} (newer than it, the nearest ones); {@code null} when the cursor is unknown.
     */
    List<Stored> page(Wire wire, String after, String before, int limit) {
        List<Stored> newestFirst = new ArrayList<>();
        for (Stored b : batches.values()) {
            if (b.wire == wire) {
                newestFirst.add(0, b);
            }
        }
        int from = 0;
        int to = newestFirst.size();
        if (after != null) {
            int i = indexOf(newestFirst, after);
            if (i < 0) {
                return null;
            }
            from = i + 1;
        }
        if (before != null) {
            int i = indexOf(newestFirst, before);
            if (i < 0) {
                return null;
            }
            to = i;
            from = Math.max(from, to - limit);
        }
        return new ArrayList<>(newestFirst.subList(from, Math.min(to, from + limit)));
    }

    boolean hasMore(Wire wire, Stored last) {
        if (last == null) {
            return false;
        }
        boolean seen = false;
        for (Stored b : batches.values()) {
            if (b == last) {
                seen = true;
                break;
            }
            if (b.wire == wire) {
                return true;
            }
        }
        return !seen;
    }

    private boolean hasNewer(Wire wire, Stored first) {
        boolean after = false;
        for (Stored b : batches.values()) {
            if (after && b.wire == wire) {
                return true;
            }
            after |= b == first;
        }
        return false;
    }

    private static int indexOf(List<Stored> list, String id) {
        for (int i = 0; i < list.size(); i++) {
            if (list.get(i).id.equals(id)) {
                return i;
            }
        }
        return -1;
    }

    private static int limit(String v, int dflt, int max) {
        if (v == null) {
            return dflt;
        }
        try {
            int n = Integer.parseInt(v);
            if (n >= 1 && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException("Invalid 'limit': expected an integer from 1 to " + max + ", was '" + v + "'.");
    }

    private Stored stored(String id) {
        Stored b = batches.get(Objects.requireNonNull(id, "id"));
        if (b == null) {
            throw new IllegalArgumentException("no batch " + id);
        }
        return b;
    }

    private Instant now() {
        return clock.get();
    }

    private JsonNode readObject(byte[] raw) {
        try {
            JsonNode n = json.readTree(raw);
            return n != null && n.isObject() ? n : null;
        } catch (IOException e) {
            return null;
        }
    }

    private void notFound(HttpExchange ex, Api api) throws IOException {
        send(ex, 404, api == Api.OPENAI_CHAT ? shapes.unknownUrl()
                : shapes.anthropicError("not_found_error", "Not found"));
    }

    private static void putNullable(ObjectNode n, String field, String value) {
        if (value == null) {
            n.putNull(field);
        } else {
            n.put(field, value);
        }
    }

    private static void epoch(ObjectNode n, String field, Instant at) {
        if (at == null) {
            n.putNull(field);
        } else {
            n.put(field, at.getEpochSecond());
        }
    }

    private static void rfc3339(ObjectNode n, String field, Instant at) {
        if (at == null) {
            n.putNull(field);
        } else {
            n.put(field, at.truncatedTo(ChronoUnit.MICROS).toString());
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> q = new HashMap<>();
        if (raw == null || raw.isEmpty()) {
            return q;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            q.put(k, v);
        }
        return q;
    }

    private static void send(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("content-type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    // ---- state -----------------------------------------------------------------------------------

    /** The statuses, in OpenAI's words; the other wires' are derived. */
    enum Status {
        VALIDATING("validating"),
        IN_PROGRESS("in_progress"),
        FINALIZING("finalizing"),
        COMPLETED("completed"),
        EXPIRED("expired"),
        CANCELLING("cancelling"),
        CANCELLED("cancelled"),
        FAILED("failed");

        final String openAi;

        Status(String openAi) {
            this.openAi = openAi;
        }

        String anthropic() {
            return switch (this) {
                case CANCELLING -> "canceling";
                case COMPLETED, EXPIRED, CANCELLED, FAILED -> "ended";
                default -> "in_progress";
            };
        }

        /** The Gemini API's {@code BATCH_STATE_*}: a cancel in flight is still running. */
        String gemini() {
            return switch (this) {
                case VALIDATING -> "BATCH_STATE_PENDING";
                case IN_PROGRESS, FINALIZING, CANCELLING -> "BATCH_STATE_RUNNING";
                case COMPLETED -> "BATCH_STATE_SUCCEEDED";
                case EXPIRED -> "BATCH_STATE_EXPIRED";
                case CANCELLED -> "BATCH_STATE_CANCELLED";
                case FAILED -> "BATCH_STATE_FAILED";
            };
        }

        /** Bedrock's job status; a completed job with errored records is partially completed. */
        String bedrock(boolean errored) {
            return switch (this) {
                case VALIDATING -> "Validating";
                case IN_PROGRESS, FINALIZING -> "InProgress";
                case COMPLETED -> errored ? "PartiallyCompleted" : "Completed";
                case EXPIRED -> "Expired";
                case CANCELLING -> "Stopping";
                case CANCELLED -> "Stopped";
                case FAILED -> "Failed";
            };
        }
    }

    enum Kind { SUCCEEDED, ERRORED, EXPIRED, CANCELLED }

    record Result(Kind kind, int status, String json, long inputTokens, long outputTokens) {}

    record ValidationError(String code, String message, int line) {}

    private record File(String id, String filename, String purpose, Instant createdAt, byte[] content) {}

    /** One multipart part. */
    record Part(String filename, byte[] bytes) {
        String text() {
            return new String(bytes, StandardCharsets.UTF_8).trim();
        }
    }

    static final class Line {
        final String customId;
        final String body;
        Result result;

        Line(String customId, String body) {
            this.customId = customId;
            this.body = body;
        }
    }

    static final class Stored {
        final String id;
        final Wire wire;
        final Api api;
        final Instant createdAt;
        final Answerer answerer;
        final String base;
        final List<Line> lines = new ArrayList<>();
        final Map<String, String> metadata = new LinkedHashMap<>();
        final List<ValidationError> errors = new ArrayList<>();
        String endpoint;
        String inputFileId;
        String outputFileId;
        String errorFileId;
        Status status;
        boolean expireWhenDue;
        Instant inProgressAt;
        Instant finalizingAt;
        Instant completedAt;
        Instant failedAt;
        Instant expiredAt;
        Instant cancellingAt;
        Instant cancelledAt;

        /** What the batch's wire does when the batch ends (Bedrock: writes its output to S3). */
        Consumer<Stored> onEnd;
        /** Why a failed batch failed, in the wire's words (Bedrock's message); null for OpenAI's errors. */
        String failure;

        Stored(String id, Wire wire, Api api, Instant createdAt, Answerer answerer, String base) {
            this.id = id;
            this.wire = wire;
            this.api = api;
            this.createdAt = createdAt;
            this.answerer = answerer;
            this.base = base;
        }

        boolean finished() {
            return status == Status.COMPLETED || status == Status.EXPIRED || status == Status.CANCELLED;
        }

        Instant endedAt() {
            return completedAt != null ? completedAt : expiredAt != null ? expiredAt : cancelledAt != null
                    ? cancelledAt : failedAt;
        }

        int open() {
            int n = 0;
            for (Line l : lines) {
                if (l.result == null) {
                    n++;
                }
            }
            return n;
        }
    }

    /** A small multipart/form-data reader: enough for the SDKs' file uploads. */
    static final class Multipart {
        private Multipart() {}

        static Map<String, Part> parse(byte[] body, String contentType) {
            if (contentType == null || !contentType.toLowerCase(java.util.Locale.ROOT).startsWith("multipart/form-data")) {
                throw new IllegalArgumentException("Expected a multipart/form-data body.");
            }
            Matcher bm = Pattern.compile("boundary=\"?([^\";]+)\"?").matcher(contentType);
            if (!bm.find()) {
                throw new IllegalArgumentException("The multipart body has no boundary.");
            }
            // ISO-8859-1 keeps one char per byte, so indexes in the text are indexes in the bytes
            String text = new String(body, StandardCharsets.ISO_8859_1);
            String delimiter = "--" + bm.group(1);
            Map<String, Part> parts = new HashMap<>();
            int at = text.indexOf(delimiter);
            while (at >= 0) {
                int start = at + delimiter.length();
                if (text.startsWith("--", start)) {
                    break;
                }
                int headersEnd = text.indexOf("\r\n\r\n", start);
                int next = text.indexOf("\r\n" + delimiter, Math.max(start, headersEnd));
                if (headersEnd < 0 || next < 0) {
                    throw new IllegalArgumentException("The multipart body is cut short.");
                }
                String headers = text.substring(start, headersEnd);
                Matcher name = Pattern.compile("[; ]name=\"([^\"]*)\"").matcher(headers);
                Matcher filename = Pattern.compile("filename=\"([^\"]*)\"").matcher(headers);
                if (name.find()) {
                    byte[] content = new byte[next - (headersEnd + 4)];
                    System.arraycopy(body, headersEnd + 4, content, 0, content.length);
                    parts.put(name.group(1), new Part(filename.find() ? filename.group(1) : null, content));
                }
                at = next + 2;
            }
            return parts;
        }
    }
}
