package dev.layover.core.batch;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.provider.Provider;
import dev.layover.core.tokens.TokenUsage;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import software.amazon.awssdk.services.bedrock.BedrockClient;
import software.amazon.awssdk.services.bedrock.model.CreateModelInvocationJobRequest;
import software.amazon.awssdk.services.bedrock.model.GetModelInvocationJobResponse;
import software.amazon.awssdk.services.bedrock.model.ModelInvocationJobInputDataConfig;
import software.amazon.awssdk.services.bedrock.model.ModelInvocationJobOutputDataConfig;
import software.amazon.awssdk.services.bedrock.model.ModelInvocationJobS3InputDataConfig;
import software.amazon.awssdk.services.bedrock.model.ModelInvocationJobS3OutputDataConfig;
import software.amazon.awssdk.services.bedrock.model.ModelInvocationJobSummary;
import software.amazon.awssdk.services.bedrock.model.ModelInvocationType;
import software.amazon.awssdk.services.bedrock.model.S3InputFormat;

/**
 * A {@link BatchTransport} on Amazon Bedrock's batch inference ({@code CreateModelInvocationJob}),
 * through AWS SDK v2's {@code bedrock} client (an optional dependency of core: only this class
 * refers to it). Bedrock reads a job's input from S3 and writes its output there: the files go
 * through a {@link BatchStorage}, {@link S3BatchStorage} on an {@code S3Client} or one of your own.
 *
 * <pre>{@code
 * BatchTransport batches = BedrockBatches.builder(bedrockClient, S3BatchStorage.of(s3Client))
 *         .modelId("anthropic.claude-3-5-haiku-20241022-v1:0")
 *         .roleArn("arn:aws:iam::123456789012:role/bedrock-batch")
 *         .location(URI.create("s3://my-bucket/layover-batches/"))
 *         .build();
 * }</pre>
 *
 * Each line's body is the {@code modelInput} of one record: the model's {@code InvokeModel} body
 * (for Anthropic models {@code anthropic_version}, {@code max_tokens}, {@code messages}), or with
 * {@link Builder#converse()} a Converse request. Its record id is the line's custom id written
 * with letters and digits only ({@code lo-12} is {@code loZ2D12}: every other character, and
 * {@code Z}, as {@code Z} and two hex digits of its UTF-8 bytes), since Bedrock matches output to
 * input by record id, not by order.
 *
 * <table>
 *   <caption>what each step does</caption>
 *   <tr><th>step</th><th>calls</th></tr>
 *   <tr><td>{@link #submit}</td><td>writes {@code <location><ref>/input.jsonl} ({@code {"recordId",
 *       "modelInput"}} a line), then {@code CreateModelInvocationJob} (job name and client request token
 *       {@code <jobNamePrefix><ref>}, output to {@code <location><ref>/output/})</td></tr>
 *   <tr><td>{@link #find}</td><td>{@code ListModelInvocationJobs} (name contains the job name, submitted
 *       since a minute before {@code since}); the job of that name</td></tr>
 *   <tr><td>{@link #poll}</td><td>{@code GetModelInvocationJob}</td></tr>
 *   <tr><td>{@link #cancel}</td><td>{@code StopModelInvocationJob}</td></tr>
 *   <tr><td>{@link #results}</td><td>{@code GetModelInvocationJob}, then reads
 *       {@code <output>/<job id>/input.jsonl.out} line by line</td></tr>
 * </table>
 *
 * <table>
 *   <caption>settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link Builder#modelId}, {@link Builder#roleArn}, {@link Builder#location}</td><td>required</td></tr>
 *   <tr><td>{@link Builder#converse()}</td><td>off: records are {@code InvokeModel} bodies</td></tr>
 *   <tr><td>{@link Builder#timeout}</td><td>24 h (Bedrock takes 24 to 168 hours); the completion window</td></tr>
 *   <tr><td>{@link Builder#jobNamePrefix}</td><td>{@code layover-}; give each deployment sharing an AWS
 *       account and region a prefix of its own</td></tr>
 *   <tr><td>{@link Builder#maxRequests}</td><td>50,000 (Bedrock's default records per job)</td></tr>
 *   <tr><td>{@link Builder#maxBytes}</td><td>990,000,000 (Bedrock's default 1 GB input file, less the
 *       records' envelopes)</td></tr>
 * </table>
 *
 * <p>Bedrock refuses a job of fewer records than its minimum (100 by default): such a batch fails
 * and its jobs are called directly. Gather enough with {@link BatchSettings#withMaxGatherAge}. The
 * files stay in S3: expire them with a lifecycle rule. Immutable and thread-safe; the clients'
 * retries are their own.
 */
public final class BedrockBatches implements BatchTransport {

    /** The input file's name, and so the output's {@code input.jsonl.out}. */
    static final String INPUT = "input.jsonl";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration FIND_SLACK = Duration.ofMinutes(1);

    private final BedrockClient bedrock;
    private final BatchStorage storage;
    private final String modelId;
    private final String roleArn;
    private final URI location;
    private final boolean converse;
    private final Duration timeout;
    private final String jobNamePrefix;
    private final int maxRequests;
    private final long maxBytes;

    private BedrockBatches(Builder b) {
        this.bedrock = b.bedrock;
        this.storage = b.storage;
        this.modelId = b.modelId;
        this.roleArn = b.roleArn;
        this.location = b.location;
        this.converse = b.converse;
        this.timeout = b.timeout;
        this.jobNamePrefix = b.jobNamePrefix;
        this.maxRequests = b.maxRequests;
        this.maxBytes = b.maxBytes;
    }

    /**
     * A builder; see the class description for the settings.
     *
     * @param bedrock the Bedrock control-plane client ({@code software.amazon.awssdk.services.bedrock}); not {@code null}
     * @param storage where the job's files go, e.g. {@link S3BatchStorage}; not {@code null}
     * @return a new builder
     */
    public static Builder builder(BedrockClient bedrock, BatchStorage storage) {
        return new Builder(Objects.requireNonNull(bedrock, "bedrock"), Objects.requireNonNull(storage, "storage"));
    }

    /** @return {@code "bedrock"} */
    @Override
    public String name() {
        return "bedrock";
    }

    /** @return {@link Provider#BEDROCK}: an errored record carries Bedrock's code and message */
    @Override
    public Provider provider() {
        return Provider.BEDROCK;
    }

    /** @return {@link Builder#maxRequests}, default 50,000 */
    @Override
    public int maxRequests() {
        return maxRequests;
    }

    /** @return {@link Builder#maxBytes}, default 990,000,000 */
    @Override
    public long maxBytes() {
        return maxBytes;
    }

    /** @return {@link Builder#timeout}, default 24 hours */
    @Override
    public Duration completionWindow() {
        return timeout;
    }

    /**
     * Writes the input file and creates the job; a retry of the same {@code ref} sends the same
     * client request token, so Bedrock creates it once.
     *
     * @throws IllegalArgumentException when {@code lines} is empty or longer than {@link #maxRequests()},
     *     a body is not a JSON object, or two custom ids are the same
     */
    @Override
    public String submit(String ref, List<BatchLine> lines) throws Exception {
        Objects.requireNonNull(ref, "ref");
        BatchLines.check(lines, maxRequests);
        String jobName = jobName(ref);
        URI input = location.resolve(ref + "/" + INPUT);
        URI output = location.resolve(ref + "/output/");
        Path jsonl = Files.createTempFile("layover-bedrock-", ".jsonl");
        try {
            Set<String> ids = new HashSet<>();
            try (OutputStream out = Files.newOutputStream(jsonl);
                    JsonGenerator g = JSON.getFactory().createGenerator(out)) {
                g.setRootValueSeparator(null);
                for (BatchLine line : lines) {
                    if (!ids.add(line.customId())) {
                        throw new IllegalArgumentException("batch line " + line.customId() + " appears twice");
                    }
                    g.writeStartObject();
                    g.writeStringField("recordId", recordId(line.customId()));
                    g.writeFieldName("modelInput");
                    g.writeTree(body(line));
                    g.writeEndObject();
                    g.writeRaw('\n');
                }
            }
            storage.put(input, jsonl);
        } finally {
            Files.deleteIfExists(jsonl);
        }
        return bedrock.createModelInvocationJob(CreateModelInvocationJobRequest.builder()
                .jobName(jobName)
                .clientRequestToken(jobName)
                .roleArn(roleArn)
                .modelId(modelId)
                .modelInvocationType(converse ? ModelInvocationType.CONVERSE : ModelInvocationType.INVOKE_MODEL)
                .timeoutDurationInHours((int) timeout.toHours())
                .inputDataConfig(ModelInvocationJobInputDataConfig.fromS3InputDataConfig(
                        ModelInvocationJobS3InputDataConfig.builder().s3Uri(input.toString())
                                .s3InputFormat(S3InputFormat.JSONL).build()))
                .outputDataConfig(ModelInvocationJobOutputDataConfig.fromS3OutputDataConfig(
                        ModelInvocationJobS3OutputDataConfig.builder().s3Uri(output.toString()).build()))
                .build()).jobArn();
    }

    /**
     * Lists jobs whose name contains the job name, submitted since a minute before {@code since},
     * and returns the one of exactly that name; the name makes the match exact.
     */
    @Override
    public Optional<String> find(String ref, int lines, Instant since) throws Exception {
        String jobName = jobName(Objects.requireNonNull(ref, "ref"));
        Instant from = Objects.requireNonNull(since, "since").minus(FIND_SLACK);
        for (ModelInvocationJobSummary job : bedrock.listModelInvocationJobsPaginator(r -> r.nameContains(jobName)
                .submitTimeAfter(from).maxResults(100)).invocationJobSummaries()) {
            if (jobName.equals(job.jobName())) {
                return Optional.of(job.jobArn());
            }
        }
        return Optional.empty();
    }

    /**
     * Gets the job: {@code Submitted}, {@code Validating}, {@code Scheduled} and {@code InProgress}
     * are {@link BatchProgress.State#IN_PROGRESS}, {@code Stopping} CANCELLING, {@code Completed} and
     * {@code PartiallyCompleted} ENDED, {@code Expired} EXPIRED, {@code Stopped} CANCELLED,
     * {@code Failed} FAILED; the counts are {@code totalRecordCount}, {@code successRecordCount},
     * {@code errorRecordCount} (0 when not reported).
     *
     * @throws IllegalStateException for a status this class does not know
     */
    @Override
    public BatchProgress poll(String providerBatchId) throws Exception {
        GetModelInvocationJobResponse job = bedrock.getModelInvocationJob(
                r -> r.jobIdentifier(Objects.requireNonNull(providerBatchId, "providerBatchId")));
        return new BatchProgress(state(job.statusAsString()), count(job.totalRecordCount()),
                count(job.successRecordCount()), count(job.errorRecordCount()));
    }

    /** Asks Bedrock to stop the job ({@code StopModelInvocationJob}). */
    @Override
    public void cancel(String providerBatchId) throws Exception {
        bedrock.stopModelInvocationJob(r -> r.jobIdentifier(Objects.requireNonNull(providerBatchId, "providerBatchId")));
    }

    /**
     * Reads the job's output file, line by line: a record with a {@code modelOutput} is SUCCEEDED,
     * status 200, the output as the body (tokens from its {@code usage}); with an {@code error} ERRORED,
     * its {@code errorCode} as the status and {@code {"message": errorMessage}} as the body. Records
     * Bedrock did not process (a stopped or expired job) are not in the file: their jobs go back to the
     * queue. No output file (a failed job): no lines.
     *
     * @throws IllegalStateException when a line cannot be read
     */
    @Override
    public void results(String providerBatchId, Consumer<BatchResultLine> sink) throws Exception {
        Objects.requireNonNull(sink, "sink");
        GetModelInvocationJobResponse job = bedrock.getModelInvocationJob(
                r -> r.jobIdentifier(Objects.requireNonNull(providerBatchId, "providerBatchId")));
        URI output = outputFile(job);
        if (output == null) {
            return;
        }
        Optional<InputStream> opened = storage.open(output);
        if (opened.isEmpty()) {
            return;
        }
        try (InputStream raw = opened.get();
                BufferedReader in = new BufferedReader(new InputStreamReader(raw, StandardCharsets.UTF_8))) {
            String row;
            while ((row = in.readLine()) != null) {
                if (!row.isBlank()) {
                    sink.accept(line(row));
                }
            }
        }
    }

    /** One record of an output file. */
    static BatchResultLine line(String row) {
        JsonNode n;
        try {
            n = JSON.readTree(row);
        } catch (IOException e) {
            throw new IllegalStateException("a Bedrock batch output record is not JSON: " + BatchLines.abbreviate(row), e);
        }
        String recordId = n.path("recordId").asText("");
        if (recordId.isEmpty()) {
            throw new IllegalStateException("a Bedrock batch output record has no recordId: " + BatchLines.abbreviate(row));
        }
        String id = customId(recordId);
        JsonNode output = n.get("modelOutput");
        if (output != null && output.isObject()) {
            String body = output.toString();
            TokenUsage u = TokenUsage.fromJson(Provider.BEDROCK, body).orElse(null);
            return new BatchResultLine(id, BatchResultLine.Kind.SUCCEEDED, 200, body,
                    u == null ? 0 : u.totalInputTokens(), u == null ? 0 : u.outputTokens());
        }
        JsonNode error = n.path("error");
        int status = error.path("errorCode").asInt(500);
        String message = error.path("errorMessage").asText("error");
        String body = JSON.createObjectNode().put("message", message).toString();
        return new BatchResultLine(id, BatchResultLine.Kind.ERRORED, status >= 100 && status <= 599 ? status : 500,
                body, 0, 0);
    }

    static BatchProgress.State state(String status) {
        return switch (status == null ? "" : status) {
            case "Submitted", "Validating", "Scheduled", "InProgress" -> BatchProgress.State.IN_PROGRESS;
            case "Stopping" -> BatchProgress.State.CANCELLING;
            case "Completed", "PartiallyCompleted" -> BatchProgress.State.ENDED;
            case "Expired" -> BatchProgress.State.EXPIRED;
            case "Stopped" -> BatchProgress.State.CANCELLED;
            case "Failed" -> BatchProgress.State.FAILED;
            default -> throw new IllegalStateException("Bedrock gave a job status Layover does not know: " + status);
        };
    }

    /** A custom id in letters and digits: every other character, and 'Z', as 'Z' and two hex digits a byte. */
    static String recordId(String customId) {
        StringBuilder b = new StringBuilder(customId.length() + 8);
        for (byte x : customId.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (x & 0xff);
            if (c < 128 && Character.isLetterOrDigit(c) && c != 'Z') {
                b.append(c);
            } else {
                b.append('Z').append(String.format(Locale.ROOT, "%02X", x & 0xff));
            }
        }
        return b.toString();
    }

    /** The custom id a record id was written from. */
    static String customId(String recordId) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(recordId.length());
        for (int i = 0; i < recordId.length(); i++) {
            char c = recordId.charAt(i);
            int hex = c == 'Z' && i + 2 < recordId.length() ? hexByte(recordId, i + 1) : -1;
            if (hex >= 0) {
                out.write(hex);
                i += 2;
            } else {
                out.write(c);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static int hexByte(String s, int at) {
        int hi = Character.digit(s.charAt(at), 16);
        int lo = Character.digit(s.charAt(at + 1), 16);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }

    private String jobName(String ref) {
        return jobNamePrefix + ref;
    }

    /** {@code <output>/<job id>/input.jsonl.out}; the job id is the ARN's last part. */
    private static URI outputFile(GetModelInvocationJobResponse job) {
        ModelInvocationJobOutputDataConfig out = job.outputDataConfig();
        if (out == null || out.s3OutputDataConfig() == null || out.s3OutputDataConfig().s3Uri() == null
                || job.jobArn() == null) {
            return null;
        }
        String base = out.s3OutputDataConfig().s3Uri();
        String jobId = job.jobArn().substring(job.jobArn().lastIndexOf('/') + 1);
        return URI.create((base.endsWith("/") ? base : base + "/") + jobId + "/" + INPUT + ".out");
    }

    private static int count(Long n) {
        return n == null ? 0 : (int) Math.min(Integer.MAX_VALUE, Math.max(0, n));
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

    /**
     * Builds a {@link BedrockBatches}: the model, the role Bedrock runs the job with and the S3
     * location are required; see the class description for the defaults.
     */
    public static final class Builder {
        private final BedrockClient bedrock;
        private final BatchStorage storage;
        private String modelId;
        private String roleArn;
        private URI location;
        private boolean converse;
        private Duration timeout = Duration.ofHours(24);
        private String jobNamePrefix = "layover-";
        private int maxRequests = 50_000;
        private long maxBytes = 990_000_000L;

        private Builder(BedrockClient bedrock, BatchStorage storage) {
            this.bedrock = bedrock;
            this.storage = storage;
        }

        /**
         * @param modelId the model or inference profile every record of a job goes to; not blank
         * @return this builder
         */
        public Builder modelId(String modelId) {
            this.modelId = requireText(modelId, "modelId");
            return this;
        }

        /**
         * @param roleArn the IAM role Bedrock assumes to read the input and write the output; not blank
         * @return this builder
         */
        public Builder roleArn(String roleArn) {
            this.roleArn = requireText(roleArn, "roleArn");
            return this;
        }

        /**
         * @param location the S3 prefix the jobs' folders go under, {@code s3://bucket/prefix/} (a
         *     trailing slash is added when missing)
         * @return this builder
         * @throws IllegalArgumentException for a URI that is not {@code s3://bucket/...}
         */
        public Builder location(URI location) {
            Objects.requireNonNull(location, "location");
            if (!"s3".equals(location.getScheme()) || location.getAuthority() == null) {
                throw new IllegalArgumentException("the batch location is s3://bucket/prefix/, was " + location);
            }
            String s = location.toString();
            this.location = URI.create(s.endsWith("/") ? s : s + "/");
            return this;
        }

        /** @return this builder, whose records are Converse requests ({@code modelInvocationType Converse}) */
        public Builder converse() {
            this.converse = true;
            return this;
        }

        /**
         * @param timeout how long Bedrock may take before the job expires, whole hours from 24 to 168
         * @return this builder
         * @throws IllegalArgumentException outside 24 to 168 whole hours
         */
        public Builder timeout(Duration timeout) {
            Objects.requireNonNull(timeout, "timeout");
            if (timeout.toHours() < 24 || timeout.toHours() > 168 || !timeout.equals(Duration.ofHours(timeout.toHours()))) {
                throw new IllegalArgumentException("a Bedrock batch timeout is 24 to 168 whole hours, was " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * @param prefix put before each batch's ref to make its job name; letters, digits and '-'
         * @return this builder
         */
        public Builder jobNamePrefix(String prefix) {
            Objects.requireNonNull(prefix, "prefix");
            if (!prefix.matches("[a-zA-Z0-9-]{0,40}")) {
                throw new IllegalArgumentException("a job name prefix is letters, digits and '-', was '" + prefix + "'");
            }
            this.jobNamePrefix = prefix;
            return this;
        }

        /**
         * @param n the most records in a job (your account's quota), 1 or more
         * @return this builder
         */
        public Builder maxRequests(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxRequests must be 1 or more, was " + n);
            }
            this.maxRequests = n;
            return this;
        }

        /**
         * @param n the most bytes of record bodies in a job's input file, 1 or more
         * @return this builder
         */
        public Builder maxBytes(long n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxBytes must be 1 or more, was " + n);
            }
            this.maxBytes = n;
            return this;
        }

        /**
         * @return the transport
         * @throws IllegalStateException when the model, the role or the location is missing
         */
        public BedrockBatches build() {
            if (modelId == null || roleArn == null || location == null) {
                throw new IllegalStateException("a Bedrock batch transport needs modelId, roleArn and location");
            }
            return new BedrockBatches(this);
        }

        private static String requireText(String s, String name) {
            Objects.requireNonNull(s, name);
            if (s.isBlank()) {
                throw new IllegalArgumentException(name + " must not be blank");
            }
            return s;
        }
    }
}
