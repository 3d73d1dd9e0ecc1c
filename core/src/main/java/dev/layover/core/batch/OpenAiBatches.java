package dev.layover.core.batch;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.core.JsonValue;
import com.openai.core.MultipartField;
import com.openai.core.http.HttpResponse;
import com.openai.models.batches.Batch;
import com.openai.models.batches.BatchCreateParams;
import com.openai.models.batches.BatchListPage;
import com.openai.models.batches.BatchListParams;
import com.openai.models.batches.BatchRequestCounts;
import com.openai.models.files.FileCreateParams;
import com.openai.models.files.FilePurpose;
import dev.layover.core.provider.Provider;
import dev.layover.core.tokens.TokenUsage;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * A {@link BatchTransport} on OpenAI's Batch API, through openai-java (an optional dependency of
 * core: only this class refers to it).
 *
 * <pre>{@code
 * BatchTransport openAi = OpenAiBatches.of(client);                     // /v1/chat/completions
 * BatchTransport responses = OpenAiBatches.of(client).endpoint("/v1/responses");
 * }</pre>
 *
 * <table>
 *   <caption>what each step calls at OpenAI</caption>
 *   <tr><th>step</th><th>calls</th></tr>
 *   <tr><td>{@link #submit}</td><td>{@code files().create} (a JSONL file, {@code purpose=batch},
 *       one line {@code {"custom_id","method":"POST","url":endpoint,"body"}} per request), then
 *       {@code batches().create} ({@code completion_window: "24h"},
 *       {@code metadata.layover_ref = ref})</td></tr>
 *   <tr><td>{@link #find}</td><td>{@code batches().list} (100 a page, newest first) until batches
 *       created more than a minute before {@code since}; the one whose
 *       {@code metadata.layover_ref} is the ref</td></tr>
 *   <tr><td>{@link #poll}</td><td>{@code batches().retrieve}</td></tr>
 *   <tr><td>{@link #cancel}</td><td>{@code batches().cancel}</td></tr>
 *   <tr><td>{@link #results}</td><td>{@code batches().retrieve}, then {@code files().content} of
 *       the output file and then of the error file, each read line by line</td></tr>
 * </table>
 *
 * <p>Limits: {@link #maxRequests()} 50,000, {@link #maxBytes()} 200,000,000 (OpenAI's 200 MB per
 * input file, counted in decimal megabytes to leave room for the lines' envelopes),
 * {@link #completionWindow()} 24 h. Immutable and thread-safe; the client's retries are its own
 * (give it {@code maxRetries(0)} to leave retrying to Layover's batch loop).
 */
public final class OpenAiBatches implements BatchTransport {

    /** The default endpoint of the batch's requests. */
    public static final String DEFAULT_ENDPOINT = "/v1/chat/completions";
    /** The metadata key that carries Layover's batch reference. */
    public static final String REF_KEY = "layover_ref";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration FIND_SLACK = Duration.ofMinutes(1);

    private final OpenAIClient client;
    private final String endpoint;

    private OpenAiBatches(OpenAIClient client, String endpoint) {
        this.client = client;
        this.endpoint = endpoint;
    }

    /**
     * A transport on {@code client}, batching requests to {@value #DEFAULT_ENDPOINT}.
     *
     * @param client the OpenAI client; not {@code null}
     * @return the transport
     */
    public static OpenAiBatches of(OpenAIClient client) {
        return new OpenAiBatches(Objects.requireNonNull(client, "client"), DEFAULT_ENDPOINT);
    }

    /**
     * A copy whose batches go to another endpoint of the Batch API.
     *
     * @param endpoint the endpoint path, e.g. {@code "/v1/chat/completions"} (the default),
     *     {@code "/v1/responses"}, {@code "/v1/embeddings"}; must start with {@code /v1/}
     * @return the copy
     * @throws IllegalArgumentException for a path that does not start with {@code /v1/}
     */
    public OpenAiBatches endpoint(String endpoint) {
        Objects.requireNonNull(endpoint, "endpoint");
        if (!endpoint.startsWith("/v1/") || endpoint.length() == 4 || endpoint.contains(" ")) {
            throw new IllegalArgumentException("an OpenAI batch endpoint is a path such as /v1/chat/completions, was '"
                    + endpoint + "'");
        }
        return new OpenAiBatches(client, endpoint);
    }

    /** @return the endpoint of the batch's requests (default {@value #DEFAULT_ENDPOINT}) */
    public String endpoint() {
        return endpoint;
    }

    /** @return {@code "openai"} */
    @Override
    public String name() {
        return "openai";
    }

    /**
     * @return {@link Provider#OPENAI}: an errored line's body is the error body a direct call would
     *     have had
     */
    @Override
    public Provider provider() {
        return Provider.OPENAI;
    }

    /** @return 50,000 */
    @Override
    public int maxRequests() {
        return 50_000;
    }

    /** @return 200,000,000 */
    @Override
    public long maxBytes() {
        return 200_000_000L;
    }

    /** @return 24 hours */
    @Override
    public Duration completionWindow() {
        return Duration.ofHours(24);
    }

    /**
     * Writes the lines as a JSONL file (to a temporary file, deleted after the upload), uploads it
     * ({@code files().create}, purpose {@code batch}) and creates the batch
     * ({@code batches().create}, endpoint {@link #endpoint()}, window 24 h,
     * {@code metadata.layover_ref = ref}).
     *
     * @throws IllegalArgumentException when {@code lines} is empty or longer than
     *     {@link #maxRequests()}, or a body is not a JSON object
     */
    @Override
    public String submit(String ref, List<BatchLine> lines) throws Exception {
        Objects.requireNonNull(ref, "ref");
        BatchLines.check(lines, maxRequests());
        Path jsonl = Files.createTempFile("layover-batch-", ".jsonl");
        try {
            try (OutputStream out = Files.newOutputStream(jsonl);
                    JsonGenerator g = JSON.getFactory().createGenerator(out)) {
                g.setRootValueSeparator(null);
                for (BatchLine line : lines) {
                    g.writeStartObject();
                    g.writeStringField("custom_id", line.customId());
                    g.writeStringField("method", "POST");
                    g.writeStringField("url", endpoint);
                    g.writeFieldName("body");
                    g.writeTree(body(line));
                    g.writeEndObject();
                    g.writeRaw('\n');
                }
            }
            String fileId;
            try (InputStream in = Files.newInputStream(jsonl)) {
                fileId = client.files().create(FileCreateParams.builder()
                        .file(MultipartField.<InputStream>builder().value(in).filename(ref + ".jsonl")
                                .contentType("application/jsonl").build())
                        .purpose(FilePurpose.BATCH).build()).id();
            }
            Batch batch = client.batches().create(BatchCreateParams.builder()
                    .inputFileId(fileId)
                    .endpoint(BatchCreateParams.Endpoint.of(endpoint))
                    .completionWindow(BatchCreateParams.CompletionWindow._24H)
                    .metadata(BatchCreateParams.Metadata.builder().putAdditionalProperty(REF_KEY, JsonValue.from(ref))
                            .build())
                    .build());
            return batch.id();
        } finally {
            Files.deleteIfExists(jsonl);
        }
    }

    /**
     * Lists batches newest first ({@code batches().list}, 100 a page) until one created more than
     * a minute before {@code since}, and returns the one whose {@code metadata.layover_ref} is
     * {@code ref}; the metadata makes the match exact, so {@code lines} is not needed.
     */
    @Override
    public Optional<String> find(String ref, int lines, Instant since) throws Exception {
        Objects.requireNonNull(ref, "ref");
        long stop = Objects.requireNonNull(since, "since").minus(FIND_SLACK).getEpochSecond();
        BatchListPage page = client.batches().list(BatchListParams.builder().limit(100L).build());
        while (true) {
            for (Batch b : page.data()) {
                if (b.createdAt() < stop) {
                    return Optional.empty();
                }
                if (ref.equals(refOf(b))) {
                    return Optional.of(b.id());
                }
            }
            if (!page.hasNextPage()) {
                return Optional.empty();
            }
            page = page.nextPage();
        }
    }

    /**
     * Retrieves the batch ({@code batches().retrieve}): {@code validating}, {@code in_progress}
     * and {@code finalizing} are {@link BatchProgress.State#IN_PROGRESS}, {@code cancelling}
     * CANCELLING, {@code completed} ENDED, {@code expired} EXPIRED, {@code cancelled} CANCELLED,
     * {@code failed} FAILED; the counts are {@code request_counts} ({@code completed} as
     * succeeded, {@code failed} as errored).
     *
     * @throws IllegalStateException for a status this class does not know
     */
    @Override
    public BatchProgress poll(String providerBatchId) throws Exception {
        Batch b = client.batches().retrieve(Objects.requireNonNull(providerBatchId, "providerBatchId"));
        BatchRequestCounts c = b.requestCounts().orElse(null);
        return new BatchProgress(state(b.status().asString()), c == null ? 0 : (int) c.total(),
                c == null ? 0 : (int) c.completed(), c == null ? 0 : (int) c.failed());
    }

    /** Asks OpenAI to cancel the batch ({@code batches().cancel}). */
    @Override
    public void cancel(String providerBatchId) throws Exception {
        client.batches().cancel(Objects.requireNonNull(providerBatchId, "providerBatchId"));
    }

    /**
     * Retrieves the batch, then reads its output file and then its error file
     * ({@code files().content}), line by line. A line with a {@code response} is SUCCEEDED for a
     * 2xx {@code status_code} (tokens from the body's {@code usage}: {@code prompt_tokens} and
     * {@code completion_tokens}, or the Responses API's {@code input_tokens} and
     * {@code output_tokens}), ERRORED otherwise, with that status and the response body; a line
     * with only an {@code error} is EXPIRED for {@code batch_expired}, CANCELLED for
     * {@code batch_cancelled}, else ERRORED with status 400 and the error object as the body.
     *
     * @throws IllegalStateException when a line cannot be read
     */
    @Override
    public void results(String providerBatchId, Consumer<BatchResultLine> sink) throws Exception {
        Objects.requireNonNull(sink, "sink");
        Batch b = client.batches().retrieve(Objects.requireNonNull(providerBatchId, "providerBatchId"));
        Optional<String> output = b.outputFileId();
        Optional<String> errors = b.errorFileId();
        if (output.isPresent()) {
            readFile(output.get(), sink);
        }
        if (errors.isPresent()) {
            readFile(errors.get(), sink);
        }
    }

    private void readFile(String fileId, Consumer<BatchResultLine> sink) throws IOException {
        try (HttpResponse r = client.files().content(fileId);
                BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
            String row;
            while ((row = in.readLine()) != null) {
                if (!row.isBlank()) {
                    sink.accept(line(row));
                }
            }
        }
    }

    /** One line of an output or error file. */
    static BatchResultLine line(String row) {
        JsonNode n;
        try {
            n = JSON.readTree(row);
        } catch (IOException e) {
            throw new IllegalStateException("an OpenAI batch result line is not JSON: " + BatchLines.abbreviate(row), e);
        }
        String id = n.path("custom_id").asText("");
        if (id.isEmpty()) {
            throw new IllegalStateException("an OpenAI batch result line has no custom_id: " + BatchLines.abbreviate(row));
        }
        JsonNode response = n.get("response");
        if (response != null && response.isObject()) {
            int status = response.path("status_code").asInt(0);
            JsonNode body = response.path("body");
            String text = body.isMissingNode() || body.isNull() ? "" : body.toString();
            if (status >= 200 && status < 300) {
                TokenUsage u = TokenUsage.fromJson(Provider.OPENAI, text).orElse(null);
                return new BatchResultLine(id, BatchResultLine.Kind.SUCCEEDED, status, text,
                        u == null ? 0 : u.totalInputTokens(), u == null ? 0 : u.outputTokens());
            }
            return new BatchResultLine(id, BatchResultLine.Kind.ERRORED, status, text, 0, 0);
        }
        JsonNode error = n.path("error");
        String code = error.path("code").asText("");
        return switch (code) {
            case "batch_expired" -> new BatchResultLine(id, BatchResultLine.Kind.EXPIRED, 0, "", 0, 0);
            case "batch_cancelled" -> new BatchResultLine(id, BatchResultLine.Kind.CANCELLED, 0, "", 0, 0);
            default -> new BatchResultLine(id, BatchResultLine.Kind.ERRORED, 400,
                    error.isObject() ? error.toString() : "", 0, 0);
        };
    }

    static BatchProgress.State state(String status) {
        return switch (status) {
            case "validating", "in_progress", "finalizing" -> BatchProgress.State.IN_PROGRESS;
            case "cancelling" -> BatchProgress.State.CANCELLING;
            case "completed" -> BatchProgress.State.ENDED;
            case "expired" -> BatchProgress.State.EXPIRED;
            case "cancelled" -> BatchProgress.State.CANCELLED;
            case "failed" -> BatchProgress.State.FAILED;
            default -> throw new IllegalStateException("OpenAI gave a batch status Layover does not know: " + status);
        };
    }

    private static String refOf(Batch b) {
        JsonValue v = b.metadata().map(m -> m._additionalProperties().get(REF_KEY)).orElse(null);
        if (v == null) {
            return null;
        }
        Optional<String> text = v.asString();
        return text.orElse(null);
    }

    private static JsonNode body(BatchLine line) {
        JsonNode body;
        try {
            body = JSON.readTree(line.body());
        } catch (IOException e) {
            throw new IllegalArgumentException("the body of batch line " + line.customId() + " is not JSON: "
                    + e.getMessage());
        }
        if (body == null || !body.isObject()) {
            throw new IllegalArgumentException("the body of batch line " + line.customId() + " is not a JSON object");
        }
        return body;
    }
}
