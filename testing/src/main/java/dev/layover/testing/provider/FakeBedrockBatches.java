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
import dev.layover.testing.provider.FakeBatches.ValidationError;
import dev.layover.testing.provider.FakeBatches.Wire;
import dev.layover.testing.provider.FakeProvider.Api;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Bedrock's batch inference in {@link FakeBatches}, in the REST shapes AWS SDK v2's {@code bedrock}
 * client reads ({@code endpointOverride(base)}), its files in the fake's {@link FakeS3}:
 *
 * <table>
 *   <caption>paths below an endpoint's base</caption>
 *   <tr><th>call</th><th>path</th></tr>
 *   <tr><td>CreateModelInvocationJob: {@code jobName}, {@code roleArn}, {@code clientRequestToken},
 *       {@code modelId}, {@code inputDataConfig.s3InputDataConfig.s3Uri} (a JSONL object of
 *       {@code {"recordId","modelInput"}}), {@code outputDataConfig.s3OutputDataConfig.s3Uri},
 *       {@code timeoutDurationInHours} (24 to 168), {@code modelInvocationType}
 *       ({@code InvokeModel}, {@code Converse}) → {@code {"jobArn"}}</td>
 *       <td>{@code POST /model-invocation-job}</td></tr>
 *   <tr><td>GetModelInvocationJob</td><td>{@code GET /model-invocation-job/{jobArn or id}}</td></tr>
 *   <tr><td>ListModelInvocationJobs, newest first ({@code nameContains}, {@code submitTimeAfter},
 *       {@code maxResults}, {@code nextToken})</td><td>{@code GET /model-invocation-jobs}</td></tr>
 *   <tr><td>StopModelInvocationJob</td><td>{@code POST /model-invocation-job/{jobArn or id}/stop}</td></tr>
 * </table>
 *
 * The input is read from S3 when the job is created; a job whose input is missing or not JSONL, or
 * holds fewer records than {@link FakeBatches#bedrockMinimumRecords(int)} (default 100), is
 * {@code Failed} at its first poll with a message saying why. A create repeating a client request
 * token answers the first job's ARN; a job name already taken with another token is a 409
 * {@code ConflictException}. The job is {@code Validating} until its first poll, then
 * {@code InProgress}; it ends {@code Completed} ({@code PartiallyCompleted} when a record errored),
 * {@code Expired} or {@code Stopped} as {@link FakeBatches} describes, and then writes
 * {@code <output>/<job id>/<input file>.out} (records in the reverse order of the input, as Bedrock
 * keeps no order: one {@code {"recordId","modelInput","modelOutput"}}, or {@code "error":
 * {"errorCode","errorMessage"}} for a record failed with {@code [fail:NNN]}; records not processed
 * are absent) and {@code manifest.json.out}. An {@code InvokeModel} record is answered as
 * Anthropic's Messages API, a {@code Converse} one as Converse. A record's custom id in the fake's
 * counters is its {@code recordId}.
 */
final class FakeBedrockBatches {

    /** Bedrock's default quota "Minimum number of records per batch inference job". */
    static final int MINIMUM_RECORDS = 100;

    private static final String JOB = "/model-invocation-job";
    private static final String JOBS = "/model-invocation-jobs";
    private static final String ARN_PREFIX = "arn:aws:bedrock:us-east-1:000000000000:model-invocation-job/";
    private static final Pattern JOB_NAME = Pattern.compile("[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9+\\-.]){0,63}");

    private final FakeBatches batches;
    private final ObjectMapper json;
    private final FakeS3 s3;

    FakeBedrockBatches(FakeBatches batches, ObjectMapper json, FakeS3 s3) {
        this.batches = batches;
        this.json = json;
        this.s3 = s3;
    }

    static boolean serves(String sub) {
        return sub.equals(JOB) || sub.startsWith(JOB + "/") || sub.equals(JOBS);
    }

    void handle(HttpExchange ex, String sub, Map<String, String> query, byte[] body, Answerer answerer)
            throws IOException {
        String method = ex.getRequestMethod();
        if (sub.equals(JOB) && method.equals("POST")) {
            create(ex, body, answerer);
        } else if (sub.equals(JOBS) && method.equals("GET")) {
            list(ex, query);
        } else if (sub.startsWith(JOB + "/")) {
            // the job identifier is an ARN whose '/' the server decoded, or the bare id
            String rest = sub.substring(JOB.length() + 1);
            boolean stop = rest.endsWith("/stop");
            if (stop) {
                rest = rest.substring(0, rest.length() - "/stop".length());
            }
            String id = rest.substring(rest.lastIndexOf('/') + 1);
            if (stop ? method.equals("POST") : method.equals("GET")) {
                one(ex, id, stop);
            } else {
                error(ex, 404, "ResourceNotFoundException", "No route for " + method + " " + sub);
            }
        } else {
            error(ex, 404, "ResourceNotFoundException", "No route for " + method + " " + sub);
        }
    }

    private void create(HttpExchange ex, byte[] raw, Answerer answerer) throws IOException {
        JsonNode req = read(raw);
        if (req == null) {
            error(ex, 400, "ValidationException", "The request body is not valid JSON.");
            return;
        }
        String jobName = req.path("jobName").asText("");
        String token = req.path("clientRequestToken").asText("");
        String input = req.path("inputDataConfig").path("s3InputDataConfig").path("s3Uri").asText("");
        String output = req.path("outputDataConfig").path("s3OutputDataConfig").path("s3Uri").asText("");
        int hours = req.path("timeoutDurationInHours").asInt(168);
        String type = req.path("modelInvocationType").asText("InvokeModel");
        String problem = null;
        if (!JOB_NAME.matcher(jobName).matches()) {
            problem = "1 validation error detected: Value '" + jobName + "' at 'jobName' failed to satisfy constraint";
        } else if (!req.path("roleArn").asText("").startsWith("arn:")) {
            problem = "1 validation error detected: Value at 'roleArn' failed to satisfy constraint";
        } else if (req.path("modelId").asText("").isEmpty()) {
            problem = "1 validation error detected: Value at 'modelId' failed to satisfy constraint";
        } else if (!input.startsWith("s3://") || !output.startsWith("s3://")) {
            problem = "The input and output data configs need S3 URIs.";
        } else if (hours < 24 || hours > 168) {
            problem = "timeoutDurationInHours must be between 24 and 168.";
        } else if (!type.equals("InvokeModel") && !type.equals("Converse")) {
            problem = "Unknown modelInvocationType " + type;
        }
        if (problem != null) {
            error(ex, 400, "ValidationException", problem);
            return;
        }
        Stored b;
        synchronized (batches.lock()) {
            for (Stored other : batches.page(Wire.BEDROCK, null, null, Integer.MAX_VALUE)) {
                if (other.metadata.get("jobName").equals(jobName)) {
                    if (!token.isEmpty() && token.equals(other.metadata.get("clientRequestToken"))) {
                        String arn = ARN_PREFIX + other.id;
                        sendJson(ex, 200, json.createObjectNode().put("jobArn", arn).toString());
                        return;
                    }
                    error(ex, 409, "ConflictException", "A job with the name " + jobName + " already exists.");
                    return;
                }
            }
            Api api = type.equals("Converse") ? Api.BEDROCK_CONVERSE : Api.ANTHROPIC_MESSAGES;
            b = new Stored(batches.nextId("fakejob"), Wire.BEDROCK, api, batches.clockNow(), answerer, null);
            b.metadata.put("jobName", jobName);
            b.metadata.put("clientRequestToken", token);
            b.metadata.put("modelId", req.path("modelId").asText());
            b.metadata.put("roleArn", req.path("roleArn").asText());
            b.metadata.put("input", input);
            b.metadata.put("output", output.endsWith("/") ? output : output + "/");
            b.metadata.put("timeoutDurationInHours", String.valueOf(hours));
            b.metadata.put("modelInvocationType", type);
            readInput(b, input);
            b.status = Status.VALIDATING;
            b.onEnd = this::writeOutput;
            batches.store(b);
        }
        batches.holdCreateIfAsked();
        sendJson(ex, 200, json.createObjectNode().put("jobArn", ARN_PREFIX + b.id).toString());
    }

    /** Reads the JSONL input from S3; what Bedrock's validation would refuse fails the job at its first poll. */
    private void readInput(Stored b, String input) {
        Optional<String> text = s3.text(URI.create(input));
        if (text.isEmpty()) {
            fail(b, "Input file " + input + " does not exist or Amazon Bedrock cannot access it.");
            return;
        }
        Set<String> ids = new HashSet<>();
        int n = 0;
        for (String row : text.get().split("\n")) {
            n++;
            if (row.isBlank()) {
                continue;
            }
            JsonNode r = read(row.getBytes(StandardCharsets.UTF_8));
            if (r == null || !r.path("modelInput").isObject()) {
                fail(b, "Record " + n + " of " + input + " is not a JSON object with a modelInput.");
                return;
            }
            String id = r.path("recordId").asText("");
            if (id.isEmpty()) {
                id = String.format("%011d", n);
            }
            if (!ids.add(id)) {
                fail(b, "Record " + n + " of " + input + " repeats the recordId " + id + ".");
                return;
            }
            b.lines.add(new Line(id, r.get("modelInput").toString()));
        }
        if (b.lines.size() < batches.bedrockMinimumRecords()) {
            fail(b, "The number of records in the input (" + b.lines.size() + ") is below the minimum number of "
                    + "records per batch inference job (" + batches.bedrockMinimumRecords() + ").");
        }
    }

    private static void fail(Stored b, String message) {
        b.failure = message;
        b.errors.add(new ValidationError("validation", message, 1));
    }

    private void one(HttpExchange ex, String id, boolean stop) throws IOException {
        String view;
        synchronized (batches.lock()) {
            Stored b = batches.find(id);
            if (b == null || b.wire != Wire.BEDROCK) {
                error(ex, 404, "ResourceNotFoundException", "The model invocation job " + id + " was not found.");
                return;
            }
            if (stop) {
                if (!batches.cancel(b)) {
                    error(ex, 400, "ValidationException", "The job cannot be stopped in status "
                            + batches.statusWord(b) + ".");
                    return;
                }
                view = "{}";
            } else {
                batches.poll(b);
                view = job(b).toString();
            }
        }
        sendJson(ex, 200, view);
    }

    private void list(HttpExchange ex, Map<String, String> query) throws IOException {
        int max;
        try {
            max = query.get("maxResults") == null ? 1000 : Integer.parseInt(query.get("maxResults"));
        } catch (NumberFormatException e) {
            max = -1;
        }
        if (max < 1 || max > 1000) {
            error(ex, 400, "ValidationException", "maxResults must be 1 to 1000.");
            return;
        }
        Instant after = query.get("submitTimeAfter") == null ? null : Instant.parse(query.get("submitTimeAfter"));
        String contains = query.getOrDefault("nameContains", "");
        String view;
        synchronized (batches.lock()) {
            List<Stored> matching = new ArrayList<>();
            for (Stored b : batches.page(Wire.BEDROCK, null, null, Integer.MAX_VALUE)) {
                if (b.metadata.get("jobName").contains(contains) && (after == null || b.createdAt.isAfter(after))) {
                    matching.add(b);
                }
            }
            int from = 0;
            String token = query.get("nextToken");
            if (token != null) {
                from = Integer.parseInt(token);
            }
            ObjectNode root = json.createObjectNode();
            ArrayNode summaries = root.putArray("invocationJobSummaries");
            for (int i = from; i < Math.min(matching.size(), from + max); i++) {
                batches.poll(matching.get(i));
                summaries.add(job(matching.get(i)));
            }
            if (from + max < matching.size()) {
                root.put("nextToken", String.valueOf(from + max));
            }
            view = root.toString();
        }
        sendJson(ex, 200, view);
    }

    /** The job as GetModelInvocationJob answers it. Under the lock. */
    private ObjectNode job(Stored b) {
        ObjectNode n = json.createObjectNode().put("jobArn", ARN_PREFIX + b.id)
                .put("jobName", b.metadata.get("jobName"))
                .put("modelId", b.metadata.get("modelId"))
                .put("clientRequestToken", b.metadata.get("clientRequestToken"))
                .put("roleArn", b.metadata.get("roleArn"))
                .put("status", batches.statusWord(b));
        if (b.status == Status.FAILED && b.failure != null) {
            n.put("message", b.failure);
        }
        n.put("submitTime", time(b.createdAt));
        n.put("lastModifiedTime", time(batches.clockNow()));
        if (b.finished() || b.status == Status.FAILED) {
            n.put("endTime", time(b.endedAt() == null ? batches.clockNow() : b.endedAt()));
        }
        n.putObject("inputDataConfig").putObject("s3InputDataConfig").put("s3Uri", b.metadata.get("input"))
                .put("s3InputFormat", "JSONL");
        n.putObject("outputDataConfig").putObject("s3OutputDataConfig").put("s3Uri", b.metadata.get("output"));
        int hours = Integer.parseInt(b.metadata.get("timeoutDurationInHours"));
        n.put("timeoutDurationInHours", hours);
        n.put("jobExpirationTime", time(b.createdAt.plus(Duration.ofHours(hours))));
        n.put("modelInvocationType", b.metadata.get("modelInvocationType"));
        int succeeded = 0;
        int errored = 0;
        for (Line l : b.lines) {
            if (l.result != null && l.result.kind() == Kind.SUCCEEDED) {
                succeeded++;
            } else if (l.result != null && l.result.kind() == Kind.ERRORED) {
                errored++;
            }
        }
        n.put("totalRecordCount", b.lines.size()).put("processedRecordCount", succeeded + errored)
                .put("successRecordCount", succeeded).put("errorRecordCount", errored);
        return n;
    }

    /** Writes the output file (records in reverse order) and the manifest when a job ends. Under the lock. */
    private void writeOutput(Stored b) {
        String input = b.metadata.get("input");
        String file = input.substring(input.lastIndexOf('/') + 1);
        String folder = b.metadata.get("output") + b.id + "/";
        StringBuilder out = new StringBuilder();
        long inputTokens = 0;
        long outputTokens = 0;
        int succeeded = 0;
        int errored = 0;
        for (int i = b.lines.size() - 1; i >= 0; i--) {
            Line l = b.lines.get(i);
            if (l.result == null || (l.result.kind() != Kind.SUCCEEDED && l.result.kind() != Kind.ERRORED)) {
                continue;
            }
            ObjectNode row = json.createObjectNode().put("recordId", l.customId);
            row.set("modelInput", read(l.body.getBytes(StandardCharsets.UTF_8)));
            if (l.result.kind() == Kind.SUCCEEDED) {
                row.set("modelOutput", read(l.result.json().getBytes(StandardCharsets.UTF_8)));
                inputTokens += l.result.inputTokens();
                outputTokens += l.result.outputTokens();
                succeeded++;
            } else {
                row.putObject("error").put("errorCode", l.result.status()).put("errorMessage", l.result.json());
                errored++;
            }
            out.append(row).append('\n');
        }
        s3.put(URI.create(folder + file + ".out"), out.toString().getBytes(StandardCharsets.UTF_8));
        ObjectNode manifest = json.createObjectNode().put("totalRecordCount", b.lines.size())
                .put("processedRecordCount", succeeded + errored).put("successRecordCount", succeeded)
                .put("errorRecordCount", errored).put("inputTokenCount", inputTokens)
                .put("outputTokenCount", outputTokens);
        s3.put(URI.create(folder + "manifest.json.out"), manifest.toString().getBytes(StandardCharsets.UTF_8));
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
        return at.truncatedTo(ChronoUnit.MILLIS).toString();
    }

    /** An AWS error: {@code x-amzn-ErrorType} and {@code {"message"}}. */
    private void error(HttpExchange ex, int status, String type, String message) throws IOException {
        ex.getResponseHeaders().set("x-amzn-ErrorType", type);
        sendJson(ex, status, json.createObjectNode().put("message", message).toString());
    }

    private static void sendJson(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("content-type", "application/json");
        ex.getResponseHeaders().set("x-amzn-RequestId", "fake-request");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }
}
