package dev.layover.samples.translate;

import com.openai.client.OpenAIClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobContext;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.batch.BatchResult;
import dev.layover.core.batch.Batching;
import dev.layover.core.outcome.Outcome;
import dev.layover.samples.translate.TranslateJob.TranslateDocument;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * The demo's deferrable work: a short summary of each translated document, wanted within
 * {@link #DEADLINE} (2 h). Nobody waits for it, so Layover sends it by the provider's batch API at
 * half price instead of calling the model directly ({@code docs/batches.md}): the job type is
 * batchable, and its key {@value #KEY} has batching ({@link DemoScript#batching}).
 *
 * <ul>
 *   <li><b>By batch</b> (every summary in the demo): the request function makes the same chat
 *       completion request a direct call would; the result function stores the line's answer in
 *       {@code layover_demo.summaries} with {@code route = 'batch'}.
 *   <li><b>Directly</b> (the handler): only for a summary whose batch could not help in time, which
 *       in the demo means something went wrong; it calls the primary endpoint and stores the answer
 *       with {@code route = 'direct'}.
 * </ul>
 * Storing is idempotent (one row per job id), so a line applied twice stores once.
 */
public final class SummaryJob {

    /** The job type's name. */
    public static final String NAME = "summarize-document";
    /** The job type's provider key: the model at the primary's account, by batch. */
    public static final String KEY = "openai:gpt-4o-mini@batch";
    /** How soon a summary is wanted: far enough for a batch (1 h expected + 15 min margin). */
    public static final Duration DEADLINE = Duration.ofHours(2);

    private static final String MODEL = "gpt-4o-mini";
    private static final String INSTRUCTIONS = "Summarise the translated document in one sentence.";
    private static final int MAX_TOKENS = 200;

    /**
     * The job's arguments.
     *
     * @param translationJobId the translation job whose result is summarised
     * @param documentId the document
     * @param target the language of the translation
     * @param segments the translated segments
     */
    public record SummarizeDocument(String translationJobId, String documentId, String target, List<String> segments) {}

    private final DataSource dataSource;
    private final OpenAIClient direct;
    private final AtomicInteger byBatch = new AtomicInteger();
    private final AtomicInteger called = new AtomicInteger();

    /**
     * @param dataSource the database holding {@code layover_demo.summaries}
     * @param direct the client the handler calls when a summary does not go by batch (retries off)
     */
    public SummaryJob(DataSource dataSource, OpenAIClient direct) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.direct = Objects.requireNonNull(direct, "direct");
    }

    /**
     * Creates {@code layover_demo.summaries} (after {@link Credits#createSchema}, which drops the schema).
     *
     * @param dataSource the database
     * @throws SQLException on a database error
     */
    public static void createTable(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("""
                    CREATE TABLE layover_demo.summaries (
                        job_id      text        PRIMARY KEY,
                        document_id text        NOT NULL,
                        summary     text        NOT NULL,
                        route       text        NOT NULL CHECK (route IN ('batch', 'direct')),
                        at          timestamptz NOT NULL DEFAULT now())""");
        }
    }

    /**
     * @param policy the job type's limits
     * @return the job type, batchable, to register with Layover
     */
    public JobType<SummarizeDocument> jobType(JobPolicy policy) {
        return JobType.builder(NAME, SummarizeDocument.class)
                .policy(policy)
                .providerKey(KEY)
                .batchable(Batching.<SummarizeDocument>of(SummaryJob::request, this::fromLine))
                .handler(this::callDirectly)
                .build();
    }

    /**
     * Enqueues the summary of a translated document (once per translation job: the idempotency key
     * is {@code summary:<translation job id>}), with the {@link #DEADLINE}.
     *
     * @param layover the instance
     * @param type the job type of {@link #jobType}
     * @param translationJobId the translation job
     * @param doc the document
     * @param translated its translated segments
     */
    public static void enqueue(Layover layover, JobType<SummarizeDocument> type, String translationJobId,
            TranslateDocument doc, List<String> translated) {
        layover.enqueue(type, new SummarizeDocument(translationJobId, doc.documentId(), doc.target(), translated),
                EnqueueOptions.key("summary:" + translationJobId).withDeadline(DEADLINE));
    }

    /** @return summaries stored from a batch line by this process */
    public int byBatch() {
        return byBatch.get();
    }

    /** @return summaries the handler called directly in this process */
    public int calledDirectly() {
        return called.get();
    }

    /** The batch line's body: the chat completion request a direct call makes. */
    private static Map<String, Object> request(SummarizeDocument doc) {
        return Map.of("model", MODEL, "max_tokens", MAX_TOKENS, "messages", List.of(
                Map.of("role", "system", "content", INSTRUCTIONS),
                Map.of("role", "user", "content", userMessage(doc))));
    }

    private static String userMessage(SummarizeDocument doc) {
        return "(" + doc.target() + ") " + String.join(" ", doc.segments());
    }

    private Outcome fromLine(SummarizeDocument doc, BatchResult line) {
        String summary = line.json().path("choices").path(0).path("message").path("content").asText("");
        try {
            store(doc, summary, "batch");
        } catch (SQLException e) {
            // the result function cannot throw checked exceptions; thrown, it is the job's failure (retried)
            throw new IllegalStateException("could not store the summary of " + doc.documentId(), e);
        }
        byBatch.incrementAndGet();
        return Outcome.done();
    }

    private Outcome callDirectly(SummarizeDocument doc, JobContext ctx) throws SQLException {
        called.incrementAndGet();
        ChatCompletion completion = direct.chat().completions().create(ChatCompletionCreateParams.builder()
                .model(MODEL)
                .addSystemMessage(INSTRUCTIONS)
                .addUserMessage(userMessage(doc))
                .maxCompletionTokens(MAX_TOKENS)
                .build());
        ctx.reportUsage(completion);
        String summary = completion.choices().isEmpty() ? "" : completion.choices().get(0).message().content().orElse("");
        store(doc, summary, "direct");
        return Outcome.done();
    }

    private void store(SummarizeDocument doc, String summary, String route) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("""
                        INSERT INTO layover_demo.summaries (job_id, document_id, summary, route)
                        VALUES (?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING""")) {
            ps.setString(1, "summary:" + doc.translationJobId());
            ps.setString(2, doc.documentId());
            ps.setString(3, summary);
            ps.setString(4, route);
            ps.executeUpdate();
        }
    }
}
