package dev.layover.core.batch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.genai.Client;
import com.google.genai.types.BatchJob;
import com.google.genai.types.BatchJobSource;
import com.google.genai.types.CreateBatchJobConfig;
import com.google.genai.types.InlinedRequest;
import com.google.genai.types.InlinedResponse;
import com.google.genai.types.JobError;
import com.google.genai.types.JobState;
import com.google.genai.types.ListBatchJobsConfig;
import dev.layover.core.provider.Provider;
import dev.layover.core.tokens.TokenUsage;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A {@link BatchTransport} on the Gemini API's batch mode, through google-genai (an optional
 * dependency of core: only this class refers to it), with the requests inlined in the create call.
 *
 * <pre>{@code
 * Client gemini = Client.builder().apiKey(key)
 *         .httpOptions(HttpOptions.builder().retryOptions(HttpRetryOptions.builder().attempts(1).build()).build())
 *         .build();
 * BatchTransport batches = GeminiBatches.of(gemini, "gemini-2.5-flash");
 * }</pre>
 *
 * Each line's body is one {@code GenerateContentRequest} as the REST API takes it
 * ({@code contents}, {@code generationConfig}, {@code systemInstruction}, {@code safetySettings},
 * {@code tools}, {@code toolConfig}, {@code cachedContent}), or the SDK's own shape with a
 * {@code config}; it is read into the SDK's {@code InlinedRequest} with the line's custom id as
 * {@code metadata.key}, which the results carry back.
 *
 * <table>
 *   <caption>what each step calls at Google</caption>
 *   <tr><th>step</th><th>calls</th></tr>
 *   <tr><td>{@link #submit}</td><td>{@code batches.create(model, inlinedRequests, displayName = ref)}:
 *       {@code POST /v1beta/models/{model}:batchGenerateContent}</td></tr>
 *   <tr><td>{@link #find}</td><td>{@code batches.list} (100 a page) for the batch whose display name is
 *       the ref, created at or after {@code since} less a minute</td></tr>
 *   <tr><td>{@link #poll}</td><td>{@code batches.get}</td></tr>
 *   <tr><td>{@link #cancel}</td><td>{@code batches.cancel}</td></tr>
 *   <tr><td>{@link #results}</td><td>{@code batches.get}, then its {@code dest.inlinedResponses}</td></tr>
 * </table>
 *
 * <p>Limits: {@link #maxRequests()} 50,000 (Google states no count, Layover's cap), {@link #maxBytes()}
 * 19,000,000 (Google's 20 MB for inlined requests, leaving room for each request's envelope),
 * {@link #completionWindow()} 48 h (a batch still pending or running after 48 hours expires). The
 * Gemini API (Google AI) only: Vertex AI's batch prediction reads its input from Cloud Storage or
 * BigQuery, which this transport does not write. Immutable and thread-safe; the client's retries are
 * its own (give it {@code HttpRetryOptions.attempts(1)} to leave retrying to Layover's batch loop).
 */
public final class GeminiBatches implements BatchTransport {

    /** The display-name match of {@link #find} looks this far before {@code since}: clocks differ. */
    private static final Duration FIND_SLACK = Duration.ofMinutes(1);

    /** REST request fields that belong to the SDK's {@code GenerateContentConfig}. */
    private static final Set<String> CONFIG_FIELDS = Set.of("systemInstruction", "safetySettings", "tools",
            "toolConfig", "cachedContent", "labels");

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Client client;
    private final String model;

    private GeminiBatches(Client client, String model) {
        this.client = client;
        this.model = model;
    }

    /**
     * A transport on {@code client} for one model.
     *
     * @param client the google-genai client, for the Gemini API (not Vertex AI); not {@code null}
     * @param model the model every line of a batch goes to, e.g. {@code "gemini-2.5-flash"}; not blank
     * @return the transport
     * @throws IllegalArgumentException for a blank model, or a client for Vertex AI
     */
    public static GeminiBatches of(Client client, String model) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(model, "model");
        if (model.isBlank()) {
            throw new IllegalArgumentException("a Gemini batch needs a model, e.g. gemini-2.5-flash");
        }
        if (client.vertexAI()) {
            throw new IllegalArgumentException("GeminiBatches speaks the Gemini API's batch mode; a Vertex AI client "
                    + "batches through Cloud Storage or BigQuery, which it does not write");
        }
        return new GeminiBatches(client, model);
    }

    /** @return the model the batches go to */
    public String model() {
        return model;
    }

    /** @return {@code "gemini"} */
    @Override
    public String name() {
        return "gemini";
    }

    /** @return {@link Provider#GEMINI}: an errored line's body is a Google error body */
    @Override
    public Provider provider() {
        return Provider.GEMINI;
    }

    /** @return 50,000 */
    @Override
    public int maxRequests() {
        return 50_000;
    }

    /** @return 19,000,000 */
    @Override
    public long maxBytes() {
        return 19_000_000L;
    }

    /** @return 48 hours */
    @Override
    public Duration completionWindow() {
        return Duration.ofHours(48);
    }

    /**
     * Creates the batch with its requests inlined, display name {@code ref}, each request's
     * {@code metadata.key} its line's custom id.
     *
     * @throws IllegalArgumentException when {@code lines} is empty or longer than {@link #maxRequests()},
     *     or a body is not a JSON object with {@code contents}
     */
    @Override
    public String submit(String ref, List<BatchLine> lines) throws Exception {
        Objects.requireNonNull(ref, "ref");
        BatchLines.check(lines, maxRequests());
        List<InlinedRequest> requests = new ArrayList<>(lines.size());
        for (BatchLine line : lines) {
            requests.add(request(line));
        }
        BatchJob job = client.batches.create(model, BatchJobSource.builder().inlinedRequests(requests).build(),
                CreateBatchJobConfig.builder().displayName(ref).build());
        return job.name().orElseThrow(() -> new IllegalStateException("Google created a batch without a name"));
    }

    /**
     * Lists batches ({@code batches.list}, 100 a page) and returns the one whose display name is
     * {@code ref}, created no earlier than a minute before {@code since}; the display name makes the
     * match exact, so {@code lines} is not needed.
     */
    @Override
    public Optional<String> find(String ref, int lines, Instant since) throws Exception {
        Objects.requireNonNull(ref, "ref");
        Instant from = Objects.requireNonNull(since, "since").minus(FIND_SLACK);
        for (BatchJob job : client.batches.list(ListBatchJobsConfig.builder().pageSize(100).build())) {
            boolean recent = job.createTime().map(t -> !t.isBefore(from)).orElse(true);
            if (recent && ref.equals(job.displayName().orElse(null)) && job.name().isPresent()) {
                return job.name();
            }
        }
        return Optional.empty();
    }

    /**
     * Gets the batch ({@code batches.get}): pending, queued, running, updating and paused are
     * {@link BatchProgress.State#IN_PROGRESS}, cancelling CANCELLING, succeeded and partially succeeded
     * ENDED, expired EXPIRED, cancelled CANCELLED, failed FAILED. The Gemini API reports no counts
     * while a batch runs: they are 0 until its responses exist, then counted from them.
     *
     * @throws IllegalStateException for a state this class does not know
     */
    @Override
    public BatchProgress poll(String providerBatchId) throws Exception {
        BatchJob job = client.batches.get(Objects.requireNonNull(providerBatchId, "providerBatchId"), null);
        List<InlinedResponse> responses = responses(job);
        int errored = 0;
        for (InlinedResponse r : responses) {
            if (r.response().isEmpty()) {
                errored++;
            }
        }
        return new BatchProgress(state(job.state().orElse(null)), responses.size(), responses.size() - errored,
                errored);
    }

    /** Asks Google to cancel the batch ({@code batches.cancel}). */
    @Override
    public void cancel(String providerBatchId) throws Exception {
        client.batches.cancel(Objects.requireNonNull(providerBatchId, "providerBatchId"), null);
    }

    /**
     * Gets the batch and gives each inlined response: with a {@code response} SUCCEEDED, status
     * 200, the {@code GenerateContentResponse} as the body, tokens from its {@code usageMetadata};
     * with an {@code error} ERRORED, the error's code as an HTTP status (a gRPC code is mapped: 3
     * INVALID_ARGUMENT 400, 8 RESOURCE_EXHAUSTED 429, 13 INTERNAL 500, 14 UNAVAILABLE 503, ...) and
     * a Google error body. The custom id is the response's {@code metadata.key}; a response without
     * one cannot be matched to a line and is skipped (its job goes back to the queue).
     */
    @Override
    public void results(String providerBatchId, Consumer<BatchResultLine> sink) throws Exception {
        Objects.requireNonNull(sink, "sink");
        BatchJob job = client.batches.get(Objects.requireNonNull(providerBatchId, "providerBatchId"), null);
        for (InlinedResponse r : responses(job)) {
            String id = r.metadata().map(m -> m.get("key")).orElse(null);
            if (id == null || id.isBlank()) {
                continue;
            }
            if (r.response().isPresent()) {
                String body = r.response().get().toJson();
                TokenUsage u = TokenUsage.fromJson(Provider.GEMINI, body).orElse(null);
                sink.accept(new BatchResultLine(id, BatchResultLine.Kind.SUCCEEDED, 200, body,
                        u == null ? 0 : u.totalInputTokens(), u == null ? 0 : u.outputTokens()));
            } else {
                JobError e = r.error().orElse(null);
                int status = httpStatus(e == null ? null : e.code().orElse(null));
                sink.accept(new BatchResultLine(id, BatchResultLine.Kind.ERRORED, status, errorBody(status, e), 0, 0));
            }
        }
    }

    static BatchProgress.State state(JobState state) {
        if (state == null || state.knownEnum() == null) {
            throw new IllegalStateException("Google gave a batch state Layover does not know: " + state);
        }
        return switch (state.knownEnum()) {
            case JOB_STATE_QUEUED, JOB_STATE_PENDING, JOB_STATE_RUNNING, JOB_STATE_UPDATING, JOB_STATE_PAUSED ->
                    BatchProgress.State.IN_PROGRESS;
            case JOB_STATE_CANCELLING -> BatchProgress.State.CANCELLING;
            case JOB_STATE_SUCCEEDED, JOB_STATE_PARTIALLY_SUCCEEDED -> BatchProgress.State.ENDED;
            case JOB_STATE_EXPIRED -> BatchProgress.State.EXPIRED;
            case JOB_STATE_CANCELLED -> BatchProgress.State.CANCELLED;
            case JOB_STATE_FAILED -> BatchProgress.State.FAILED;
            default -> throw new IllegalStateException("Google gave a batch state Layover does not know: " + state);
        };
    }

    /** An error's code as an HTTP status: an HTTP code as it is, a gRPC code mapped, none 500. */
    static int httpStatus(Integer code) {
        if (code == null) {
            return 500;
        }
        if (code >= 100 && code <= 599) {
            return code;
        }
        return switch (code) {
            case 1 -> 499;
            case 3, 9, 11 -> 400;
            case 4 -> 504;
            case 5 -> 404;
            case 6, 10 -> 409;
            case 7 -> 403;
            case 8 -> 429;
            case 12 -> 501;
            case 14 -> 503;
            case 16 -> 401;
            default -> 500;
        };
    }

    private static List<InlinedResponse> responses(BatchJob job) {
        return job.dest().flatMap(d -> d.inlinedResponses()).orElse(List.of());
    }

    /** {@code {"error":{"code":..,"message":..}}}, as a direct call's error would have been. */
    private static String errorBody(int status, JobError e) {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode error = root.putObject("error").put("code", status);
        error.put("message", e == null ? "error" : e.message().orElse("error"));
        return root.toString();
    }

    private InlinedRequest request(BatchLine line) {
        JsonNode body;
        try {
            body = JSON.readTree(line.body());
        } catch (IOException e) {
            throw new IllegalArgumentException("the body of batch line " + line.customId() + " is not JSON: "
                    + e.getMessage());
        }
        if (body == null || !body.isObject() || !body.path("contents").isArray()) {
            throw new IllegalArgumentException("the body of batch line " + line.customId()
                    + " is not a GenerateContentRequest (a JSON object with contents): "
                    + BatchLines.abbreviate(line.body()));
        }
        ObjectNode request = JSON.createObjectNode().put("model", model);
        request.set("contents", body.get("contents"));
        ObjectNode config = body.path("config").isObject() ? ((ObjectNode) body.get("config")).deepCopy()
                : JSON.createObjectNode();
        if (body.path("generationConfig").isObject()) {
            config.setAll((ObjectNode) body.get("generationConfig"));
        }
        body.fields().forEachRemaining(e -> {
            if (CONFIG_FIELDS.contains(e.getKey())) {
                config.set(e.getKey(), e.getValue());
            }
        });
        if (!config.isEmpty()) {
            request.set("config", config);
        }
        request.putObject("metadata").put("key", line.customId());
        try {
            return InlinedRequest.fromJson(request.toString());
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("the body of batch line " + line.customId()
                    + " is not a GenerateContentRequest: " + e.getMessage(), e);
        }
    }
}
