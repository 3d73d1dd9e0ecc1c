package dev.layover.samples.translate;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.JobContext;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import dev.layover.core.provider.FallbackChain;
import dev.layover.core.provider.FallbackEndpoint;
import dev.layover.core.provider.FallbackResult;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The translation job: translates a document's segments into a target language with an LLM,
 * charges the customer's credits, and delivers the result.
 *
 * <h2>One run</h2>
 * <ol>
 *   <li>If an earlier run of this job already stored (and so charged) its translation, skip to
 *       delivery: a retry after the charge, or a replay, never calls the model or charges again.
 *   <li>A cheap balance check: an account that cannot pay is parked without calling the model.
 *   <li>The model, segment by segment, each segment a step ({@code ctx.step("segment-" + i, ...)},
 *       docs/steps.md): a segment an earlier run translated is read back from the job's stored
 *       steps, never called and paid for again. Each call goes through a {@link FallbackChain}: {@value #PRIMARY_KEY}, then
 *       {@value #SECONDARY_KEY}, each its own provider key (breaker, cooldown, bucket). The
 *       OpenAI client has its own retries off ({@code maxRetries(0)}): Layover is the only retry
 *       layer. A 429 moves on to the next endpoint without a breaker failure; when none can
 *       answer because of rate limits or cooldowns, the job is rescheduled without spending an
 *       attempt. When every endpoint's breaker is open, the model is down: the job fails as
 *       OVERLOADED, a breaker failure of {@value #MODEL_KEY}.
 *   <li>The answer is read with {@link TranslationAnswer} ({@link JsonRepair}): fences and prose
 *       are stripped, a truncated answer or a missing segment is refused, and the job retries
 *       (an attempt spent; the provider is healthy, the answer is not).
 *   <li>One transaction: {@link Credits#charge} (at most once per job id; balance never below
 *       zero) and the stored translation. Both or neither. An account without enough credits is
 *       <b>parked</b> ({@code handler_parked}) with a reason naming the account, its balance and
 *       the cost: not charged, nothing stored, waiting for a person to top up and replay it from
 *       the console (the recovery sweep never replays it).
 *   <li>Delivery to the customer. A failure here retries the job (an attempt spent); the retry
 *       finds the stored translation (step 1).
 * </ol>
 *
 * <h2>Provider keys</h2>
 * The job type's own key is {@value #MODEL_KEY}: the model, whichever endpoint serves it. Its
 * breaker opens when the whole chain keeps failing (every endpoint failed, or every endpoint's
 * breaker is open); jobs picked meanwhile are parked
 * {@code breaker_open}, and the recovery sweep replays this key's parked jobs when it closes.
 * (Without a job-level key a parked job would carry no key for the sweep to find.) The endpoint
 * keys decide which endpoint is called; a cooldown of the primary alone does not stop the job,
 * the chain falls back.
 */
public final class TranslateJob {

    /** The job type's name. */
    public static final String NAME = "translate-document";
    /** The job type's provider key: the model, over both endpoints. */
    public static final String MODEL_KEY = "openai:gpt-4o-mini";
    /** The primary endpoint's provider key. */
    public static final String PRIMARY_KEY = "openai:gpt-4o-mini@primary";
    /** The secondary endpoint's provider key. */
    public static final String SECONDARY_KEY = "openai:gpt-4o-mini@secondary";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String INSTRUCTIONS = "You translate documents. The user message is JSON: "
            + "{\"target\": language code, \"segments\": [text, ...]}. Translate every segment into the target "
            + "language and answer with JSON only: {\"segments\": [translation, ...]}, one entry per segment, in order.";

    /**
     * The job's arguments: what a replay runs again, as stored in {@code layover.dead_letters.args}.
     *
     * @param documentId the document
     * @param accountId the account that pays
     * @param target the target language, e.g. {@code fr}
     * @param segments the text, in segments (one credit each)
     */
    public record TranslateDocument(String documentId, String accountId, String target, List<String> segments) {
        /** @return what translating the document costs, in credits */
        public long cost() {
            return segments.size();
        }
    }

    /** Where a finished translation goes (the customer's webhook, in a real service). */
    @FunctionalInterface
    public interface Delivery {
        /**
         * @param jobId the job
         * @param document the document
         * @param translated its translated segments
         * @throws Exception when the delivery failed (the job retries)
         */
        void deliver(String jobId, TranslateDocument document, List<String> translated) throws Exception;
    }

    private final DataSource dataSource;
    private final FallbackChain<OpenAIClient> chain;
    private final Delivery delivery;
    private final TranslationStats stats;

    /**
     * @param dataSource the database holding the demo's credits
     * @param chain the endpoints, in order
     * @param delivery where finished translations go
     * @param stats counters the job adds to
     */
    public TranslateJob(DataSource dataSource, FallbackChain<OpenAIClient> chain, Delivery delivery,
            TranslationStats stats) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.chain = Objects.requireNonNull(chain, "chain");
        this.delivery = Objects.requireNonNull(delivery, "delivery");
        this.stats = Objects.requireNonNull(stats, "stats");
    }

    /**
     * An OpenAI client for an OpenAI-compatible endpoint, with the SDK's own retries switched off.
     *
     * @param baseUrl the API's base URL, e.g. {@code http://127.0.0.1:8080/v1}
     * @param apiKey the key
     * @return the client
     */
    public static OpenAIClient client(URI baseUrl, String apiKey) {
        return OpenAIOkHttpClient.builder()
                .baseUrl(baseUrl.toString())
                .apiKey(apiKey)
                .maxRetries(0) // Layover is the only retry layer (docs/sdk-retries.md)
                .timeout(Duration.ofSeconds(30))
                .build();
    }

    /**
     * The chain primary → secondary over two OpenAI-compatible base URLs.
     *
     * @param primary the primary's client
     * @param secondary the secondary's client
     * @return the chain
     */
    public static FallbackChain<OpenAIClient> chain(OpenAIClient primary, OpenAIClient secondary) {
        return FallbackChain.<OpenAIClient>builder()
                .endpoint(PRIMARY_KEY, primary)
                .endpoint(SECONDARY_KEY, secondary)
                .build();
    }

    /**
     * @param policy the job type's limits
     * @return the job type, to register with Layover
     */
    public JobType<TranslateDocument> jobType(JobPolicy policy) {
        return JobType.builder(NAME, TranslateDocument.class)
                .policy(policy)
                .providerKey(MODEL_KEY)
                .handler(this::run)
                .build();
    }

    private Outcome run(TranslateDocument doc, JobContext ctx) throws Exception {
        stats.runStarted(ctx.jobId(), ctx.attempt());
        Outcome outcome;
        try {
            outcome = translate(doc, ctx);
        } catch (OutcomeException e) {
            stats.runEnded(ctx.jobId(), ctx.attempt(), e.outcome());
            throw e;
        } catch (Exception e) {
            stats.runEnded(ctx.jobId(), ctx.attempt(), Outcome.retry(e)); // what Layover makes of it
            throw e;
        }
        stats.runEnded(ctx.jobId(), ctx.attempt(), outcome);
        return outcome;
    }

    private Outcome translate(TranslateDocument doc, JobContext ctx) throws Exception {
        String jobId = ctx.jobId();
        List<String> translated = stored(jobId);
        if (translated == null) {
            long balance = Credits.balance(dataSource, doc.accountId());
            if (balance < doc.cost()) {
                stats.accountCouldNotPay();
                return noCredits(doc, balance);
            }
            // one step per segment (docs/steps.md): a segment translated by an earlier run of this job (before
            // a 429's reschedule, a retry, a crash or a replay) is read back, not called and paid for again
            translated = new ArrayList<>();
            String providerKey = null;
            int[] called = {0};
            for (int i = 0; i < doc.segments().size(); i++) {
                String segment = doc.segments().get(i);
                Segment t = ctx.step("segment-" + i, Segment.class, () -> {
                    called[0]++;
                    return translateSegment(doc.target(), segment, ctx);
                });
                translated.add(t.text());
                providerKey = t.providerKey();
            }
            stats.segmentsReused(doc.segments().size() - called[0]);
            Credits.Charge charge = chargeAndStore(jobId, doc, translated, providerKey);
            if (!charge.paid()) {
                stats.accountCouldNotPay();
                return noCredits(doc, charge.balance());
            }
        }
        try {
            delivery.deliver(jobId, doc, translated);
        } catch (Exception e) {
            // the job's own failure, not the provider's: retry it as such (an IOException thrown
            // from the handler would be classified as a transient provider failure)
            stats.deliveryFailed();
            return new Outcome.Retry("delivery failed: " + e.getMessage(), e, null);
        }
        return Outcome.done();
    }

    /**
     * One segment's translation, and the endpoint that answered: a step's stored result.
     *
     * @param text the translation
     * @param providerKey the endpoint's provider key
     */
    public record Segment(String text, String providerKey) {}

    /**
     * Translates one segment through the chain (a step of the job): a rate limit everywhere
     * reschedules the job (it resumes at this segment), an unusable answer retries it.
     */
    private Segment translateSegment(String target, String segment, JobContext ctx) throws Exception {
        FallbackResult<Answer> r;
        try {
            r = chain.call(ctx, ep -> complete(ep, target, List.of(segment)));
        } catch (OutcomeException e) {
            if (e.outcome() instanceof Outcome.RateLimited && everyEndpointBroken()) {
                Outcome.RateLimited rl = (Outcome.RateLimited) e.outcome();
                throw Outcome.overloaded(rl.retryAfter(), "every endpoint of " + MODEL_KEY
                        + " has an open breaker: " + rl.reason()).toException();
            }
            throw e;
        }
        stats.answered(r.providerKey(), r.value().content());
        try {
            List<String> one = TranslationAnswer.read(r.value().content(), r.value().finishReason(), 1);
            return new Segment(one.get(0), r.providerKey());
        } catch (UnusableAnswerException e) {
            stats.unusable(e.truncated());
            throw Outcome.retry("unusable answer from " + r.providerKey() + ": " + e.getMessage()).toException();
        }
    }

    /**
     * Whether no endpoint is healthy: every endpoint's breaker is open or half-open. The chain
     * reports "passed over for an open breaker" as a wait (RATE_LIMITED, no attempt spent); when
     * that is true of every endpoint, the model itself is down, and the job says so (OVERLOADED:
     * an attempt spent and a breaker failure of {@value #MODEL_KEY}), so that the model key's
     * breaker opens, jobs park, and the recovery sweep brings them back when it closes. Read only
     * when the chain could call nothing: one query, off the hot path.
     */
    private boolean everyEndpointBroken() throws SQLException {
        List<String> keys = new ArrayList<>();
        chain.endpoints().forEach(ep -> keys.add(ep.providerKey()));
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*) FROM layover.breakers WHERE provider_key = ANY (?) AND state <> 'closed'")) {
            ps.setArray(1, c.createArrayOf("text", keys.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) == keys.size();
            }
        }
    }

    private static Outcome noCredits(TranslateDocument doc, long balance) {
        return Outcome.park(balance < 0
                ? "account '" + doc.accountId() + "' does not exist; not charged, nothing stored"
                : "account '" + doc.accountId() + "' has " + balance + " credits, translating document '"
                        + doc.documentId() + "' costs " + doc.cost() + "; not charged, nothing stored. "
                        + "Top up the account, then replay this job from the console");
    }

    private Credits.Charge chargeAndStore(String jobId, TranslateDocument doc, List<String> translated, String providerKey)
            throws SQLException, JsonProcessingException {
        String segments = JSON.writeValueAsString(translated);
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                Credits.Charge charge = Credits.charge(c, jobId, doc.accountId(), doc.cost());
                if (!charge.paid()) {
                    c.rollback();
                    return charge;
                }
                Credits.storeTranslation(c, jobId, doc.documentId(), doc.target(), segments, providerKey);
                c.commit();
                stats.charged(charge);
                return charge;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }

    private List<String> stored(String jobId) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT segments::text FROM layover_demo.translations WHERE job_id = ?")) {
            ps.setString(1, jobId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                List<String> out = new ArrayList<>();
                JSON.readTree(rs.getString(1)).forEach(n -> out.add(n.asText()));
                return out;
            }
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stored translation of job " + jobId + " is not JSON", e);
        }
    }

    /** The content and finish reason of a model's answer. */
    record Answer(String content, String finishReason) {}

    private static Answer complete(FallbackEndpoint<OpenAIClient> ep, String target, List<String> texts)
            throws JsonProcessingException {
        ObjectNode request = JSON.createObjectNode();
        request.put("target", target);
        ArrayNode segments = request.putArray("segments");
        texts.forEach(segments::add);
        ChatCompletion completion = ep.client().chat().completions().create(ChatCompletionCreateParams.builder()
                .model("gpt-4o-mini")
                .addSystemMessage(INSTRUCTIONS)
                .addUserMessage(JSON.writeValueAsString(request))
                .maxCompletionTokens(2000)
                .build());
        if (completion.choices().isEmpty()) {
            return new Answer("", null);
        }
        ChatCompletion.Choice choice = completion.choices().get(0);
        return new Answer(choice.message().content().orElse(""), choice.finishReason().asString());
    }
}
