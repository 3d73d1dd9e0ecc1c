package dev.layover.core.batch;

import com.anthropic.client.AnthropicClient;
import com.anthropic.core.ObjectMappers;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.models.ErrorResponse;
import com.anthropic.models.messages.batches.BatchCreateParams;
import com.anthropic.models.messages.batches.BatchListPage;
import com.anthropic.models.messages.batches.BatchListParams;
import com.anthropic.models.messages.batches.MessageBatch;
import com.anthropic.models.messages.batches.MessageBatchIndividualResponse;
import com.anthropic.models.messages.batches.MessageBatchRequestCounts;
import com.anthropic.models.messages.batches.MessageBatchResult;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.provider.Provider;
import dev.layover.core.tokens.TokenUsage;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * A {@link BatchTransport} on Anthropic's Message Batches API, through anthropic-java (an
 * optional dependency of core: only this class refers to it).
 *
 * <pre>{@code
 * BatchTransport anthropic = AnthropicBatches.of(client);
 * }</pre>
 *
 * Each line's body is the {@code params} of one Messages request (JSON text: {@code model},
 * {@code max_tokens}, {@code messages}, {@code system}, ...), read into the SDK's
 * {@code BatchCreateParams.Request.Params} by the SDK's own JSON mapper, so fields the SDK does
 * not model are sent as they are.
 *
 * <table>
 *   <caption>what each step calls at Anthropic</caption>
 *   <tr><th>step</th><th>calls</th></tr>
 *   <tr><td>{@link #submit}</td><td>{@code messages().batches().create} with one request
 *       ({@code custom_id}, {@code params}) per line</td></tr>
 *   <tr><td>{@link #find}</td><td>{@code messages().batches().list} (100 a page, newest first)
 *       until batches created before {@code since}: Anthropic keeps no metadata on a batch, so the
 *       candidates are the batches created at or after {@code since} holding exactly
 *       {@code lines} requests; one is the batch, none is empty, two or more throw
 *       {@link AmbiguousRejoinException}</td></tr>
 *   <tr><td>{@link #poll}</td><td>{@code messages().batches().retrieve}</td></tr>
 *   <tr><td>{@link #cancel}</td><td>{@code messages().batches().cancel}</td></tr>
 *   <tr><td>{@link #results}</td><td>{@code messages().batches().resultsStreaming}, read one
 *       result at a time</td></tr>
 * </table>
 *
 * <p>Limits: {@link #maxRequests()} 100,000, {@link #maxBytes()} 256,000,000 (Anthropic's 256 MB
 * per batch, in decimal megabytes to leave room for the requests' envelopes),
 * {@link #completionWindow()} 24 h. Immutable and thread-safe; the client's retries are its own
 * (give it {@code maxRetries(0)} to leave retrying to Layover's batch loop).
 */
public final class AnthropicBatches implements BatchTransport {

    private static final ObjectMapper SDK_JSON = ObjectMappers.jsonMapper();

    private final AnthropicClient client;

    private AnthropicBatches(AnthropicClient client) {
        this.client = client;
    }

    /**
     * A transport on {@code client}.
     *
     * @param client the Anthropic client; not {@code null}
     * @return the transport
     */
    public static AnthropicBatches of(AnthropicClient client) {
        return new AnthropicBatches(Objects.requireNonNull(client, "client"));
    }

    /**
     * {@link #find} met two or more batches that could be the one it looks for (same number of
     * requests, created after the first submit attempt began): Layover tries again later rather
     * than guess.
     */
    public static final class AmbiguousRejoinException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        /** The ids of the batches that could be it, newest first. */
        private final List<String> candidates;

        AmbiguousRejoinException(String ref, List<String> candidates) {
            super("the rejoin of batch " + ref + " is ambiguous: Anthropic holds " + candidates.size()
                    + " batches of that size created since its first submit (" + String.join(", ", candidates) + ")");
            this.candidates = List.copyOf(candidates);
        }

        /** @return the ids of the batches that could be it, newest first */
        public List<String> candidates() {
            return candidates;
        }
    }

    /** @return {@code "anthropic"} */
    @Override
    public String name() {
        return "anthropic";
    }

    /**
     * @return {@link Provider#ANTHROPIC}: an errored line's body is the error body a direct call would
     *     have had
     */
    @Override
    public Provider provider() {
        return Provider.ANTHROPIC;
    }

    /** @return 100,000 */
    @Override
    public int maxRequests() {
        return 100_000;
    }

    /** @return 256,000,000 */
    @Override
    public long maxBytes() {
        return 256_000_000L;
    }

    /** @return 24 hours */
    @Override
    public Duration completionWindow() {
        return Duration.ofHours(24);
    }

    /**
     * Creates the batch ({@code messages().batches().create}), one request per line, its
     * {@code params} read from the line's body. Anthropic keeps no metadata: {@code ref} is not
     * sent (see {@link #find}).
     *
     * @throws IllegalArgumentException when {@code lines} is empty or longer than
     *     {@link #maxRequests()}, or a body is not a JSON object of Messages params
     */
    @Override
    public String submit(String ref, List<BatchLine> lines) throws Exception {
        Objects.requireNonNull(ref, "ref");
        BatchLines.check(lines, maxRequests());
        BatchCreateParams.Builder params = BatchCreateParams.builder();
        for (BatchLine line : lines) {
            params.addRequest(BatchCreateParams.Request.builder().customId(line.customId()).params(params(line)).build());
        }
        return client.messages().batches().create(params.build()).id();
    }

    /**
     * Lists batches newest first ({@code messages().batches().list}, 100 a page) down to the
     * first created before {@code since}; of those created at or after it, the ones holding
     * exactly {@code lines} requests are candidates.
     *
     * @return the one candidate's id, or empty when there is none
     * @throws AmbiguousRejoinException when there are two or more
     */
    @Override
    public Optional<String> find(String ref, int lines, Instant since) throws Exception {
        Objects.requireNonNull(ref, "ref");
        Objects.requireNonNull(since, "since");
        List<String> candidates = new ArrayList<>();
        BatchListPage page = client.messages().batches().list(BatchListParams.builder().limit(100L).build());
        boolean older = false;
        while (!older) {
            for (MessageBatch b : page.data()) {
                if (b.createdAt().toInstant().isBefore(since)) {
                    older = true;
                    break;
                }
                if (total(b.requestCounts()) == lines) {
                    candidates.add(b.id());
                }
            }
            if (older || !page.hasNextPage()) {
                break;
            }
            page = page.nextPage();
        }
        if (candidates.size() > 1) {
            throw new AmbiguousRejoinException(ref, candidates);
        }
        return candidates.stream().findFirst();
    }

    /**
     * Retrieves the batch ({@code messages().batches().retrieve}): {@code in_progress} is
     * {@link BatchProgress.State#IN_PROGRESS}, {@code canceling} CANCELLING; {@code ended} is
     * CANCELLED when a cancel was initiated, EXPIRED when lines expired, else ENDED. The total is
     * the sum of {@code request_counts}; succeeded and errored are its {@code succeeded} and
     * {@code errored}.
     *
     * @throws IllegalStateException for a status this class does not know
     */
    @Override
    public BatchProgress poll(String providerBatchId) throws Exception {
        MessageBatch b = client.messages().batches().retrieve(Objects.requireNonNull(providerBatchId, "providerBatchId"));
        MessageBatchRequestCounts c = b.requestCounts();
        BatchProgress.State state = switch (b.processingStatus().asString()) {
            case "in_progress" -> BatchProgress.State.IN_PROGRESS;
            case "canceling" -> BatchProgress.State.CANCELLING;
            case "ended" -> b.cancelInitiatedAt().isPresent() ? BatchProgress.State.CANCELLED
                    : c.expired() > 0 ? BatchProgress.State.EXPIRED : BatchProgress.State.ENDED;
            default -> throw new IllegalStateException("Anthropic gave a batch status Layover does not know: "
                    + b.processingStatus().asString());
        };
        return new BatchProgress(state, (int) total(c), (int) c.succeeded(), (int) c.errored());
    }

    /** Asks Anthropic to cancel the batch ({@code messages().batches().cancel}). */
    @Override
    public void cancel(String providerBatchId) throws Exception {
        client.messages().batches().cancel(Objects.requireNonNull(providerBatchId, "providerBatchId"));
    }

    /**
     * Streams the results ({@code messages().batches().resultsStreaming}): {@code succeeded} is
     * SUCCEEDED, status 200, the message as the body, tokens from its {@code usage}
     * ({@code input_tokens} with the cache reads and writes, {@code output_tokens});
     * {@code errored} is ERRORED with the nested error response as the body and the status of its
     * type ({@code invalid_request_error} 400, {@code authentication_error} 401,
     * {@code billing_error} 402, {@code permission_error} 403, {@code not_found_error} 404,
     * {@code request_too_large} 413, {@code rate_limit_error} 429, {@code api_error} 500,
     * {@code timeout_error} 504, {@code overloaded_error} 529, any other 500);
     * {@code canceled} is CANCELLED and {@code expired} EXPIRED.
     *
     * @throws IllegalStateException for a result type this class does not know
     */
    @Override
    public void results(String providerBatchId, Consumer<BatchResultLine> sink) throws Exception {
        Objects.requireNonNull(sink, "sink");
        try (StreamResponse<MessageBatchIndividualResponse> stream =
                client.messages().batches().resultsStreaming(Objects.requireNonNull(providerBatchId, "providerBatchId"))) {
            Iterator<MessageBatchIndividualResponse> it = stream.iterator();
            while (it.hasNext()) {
                sink.accept(line(it.next()));
            }
        }
    }

    private static BatchResultLine line(MessageBatchIndividualResponse r) throws IOException {
        String id = r.customId();
        MessageBatchResult result = r.result();
        if (result.isSucceeded()) {
            String body = SDK_JSON.writeValueAsString(result.asSucceeded().message());
            TokenUsage u = TokenUsage.fromJson(Provider.ANTHROPIC, body).orElse(null);
            return new BatchResultLine(id, BatchResultLine.Kind.SUCCEEDED, 200, body,
                    u == null ? 0 : u.totalInputTokens(), u == null ? 0 : u.outputTokens());
        }
        if (result.isErrored()) {
            ErrorResponse error = result.asErrored().error();
            String body = SDK_JSON.writeValueAsString(error);
            String type = SDK_JSON.readTree(body).path("error").path("type").asText("");
            return new BatchResultLine(id, BatchResultLine.Kind.ERRORED, status(type), body, 0, 0);
        }
        if (result.isCanceled()) {
            return new BatchResultLine(id, BatchResultLine.Kind.CANCELLED, 0, "", 0, 0);
        }
        if (result.isExpired()) {
            return new BatchResultLine(id, BatchResultLine.Kind.EXPIRED, 0, "", 0, 0);
        }
        throw new IllegalStateException("Anthropic gave batch line " + id + " a result Layover does not know: "
                + result._json().map(Object::toString).orElse("?"));
    }

    /** The HTTP status Anthropic answers an error type with. */
    static int status(String errorType) {
        return switch (errorType) {
            case "invalid_request_error" -> 400;
            case "authentication_error" -> 401;
            case "billing_error" -> 402;
            case "permission_error" -> 403;
            case "not_found_error" -> 404;
            case "request_too_large" -> 413;
            case "rate_limit_error" -> 429;
            case "timeout_error" -> 504;
            case "overloaded_error" -> 529;
            default -> 500;
        };
    }

    private static BatchCreateParams.Request.Params params(BatchLine line) {
        JsonNode body;
        try {
            body = SDK_JSON.readTree(line.body());
        } catch (IOException e) {
            throw new IllegalArgumentException("the body of batch line " + line.customId() + " is not JSON: "
                    + e.getMessage());
        }
        if (body == null || !body.isObject()) {
            throw new IllegalArgumentException("the body of batch line " + line.customId() + " is not a JSON object");
        }
        try {
            return SDK_JSON.treeToValue(body, BatchCreateParams.Request.Params.class);
        } catch (IOException e) {
            throw new IllegalArgumentException("the body of batch line " + line.customId()
                    + " is not the params of a Messages request: " + e.getMessage(), e);
        }
    }

    private static long total(MessageBatchRequestCounts c) {
        return c.processing() + c.succeeded() + c.errored() + c.canceled() + c.expired();
    }
}
