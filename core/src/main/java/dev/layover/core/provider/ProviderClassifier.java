package dev.layover.core.provider;

import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Classifies provider failures into Layover's outcome vocabulary.
 *
 * <h2>The entry points</h2>
 * One family, all named {@code classify}, all answering {@code Optional<Classification>}: empty
 * means "this is not a provider failure" (a clean 2xx, a bug of the job's own), present means a
 * provider failure and what kind. Each accepts a {@link Provider}: for a response it selects the
 * documented shapes, for an exception it names the provider the SDK cannot tell (Azure OpenAI
 * through openai-java, Gemini through its OpenAI-compatible endpoint); {@code null} or
 * {@link Provider#UNKNOWN} means "guess from what is there".
 * <table>
 *   <caption>classify entry points</caption>
 *   <tr><th>what you have</th><th>call</th></tr>
 *   <tr><td>an exception (SDK, JDK networking), anywhere in a cause chain</td>
 *       <td>{@link #classify(Throwable)}, {@link #classify(Provider, Throwable)}</td></tr>
 *   <tr><td>a JDK {@link java.net.http.HttpClient} response</td><td>{@link #classify(Provider, HttpResponse)}</td></tr>
 *   <tr><td>a response read by hand: status, headers, body</td><td>{@link #classify(Provider, int, Map, String)}</td></tr>
 *   <tr><td>no response at all: a timeout, a refused connection</td>
 *       <td>{@link #classifyNoResponse(Provider, Throwable)} (never empty)</td></tr>
 * </table>
 * {@link #outcomeOf(Throwable)} and {@link #outcomeOf(Provider, Throwable)} go one step further, to
 * the {@link Outcome}. The rules are a versioned table, {@link ProviderRules#builtIn()} (the
 * resource {@code rules-v1.tsv}), to which an application adds rows of its own
 * ({@link Builder#rules(ProviderRules)}); they are listed in {@code docs/provider-classification.md}.
 * A hint of {@link Provider#OPENAI}, {@link Provider#UNKNOWN} or none is refined by the headers in
 * which an OpenAI-compatible server names itself (Groq's {@code x-groq-region}, ...).
 *
 * <h2>Waits</h2>
 * A wait ({@code retryAfter}) or reset ({@code resetAt}) the provider states is kept exactly, however
 * far away: an Anthropic spend limit's regain date at the start of next month, an OpenAI monthly
 * reset. Whether a job waits that long or parks is the engine's {@code maxDeferral} decision.
 * Only nonsense further than {@link Builder#maxWait(Duration) maxWait} (default
 * {@value #DEFAULT_MAX_WAIT_DAYS} days) is cut to it, and an unreadable value is skipped; the
 * classification says so in {@link Classification#waitReading()}.
 *
 * <p>Instances are immutable and thread-safe. Every method accepts any input, including
 * {@code null}s, garbled headers and HTML bodies, and never throws: what cannot be read falls back
 * on a conservative class by HTTP status (see {@link #classify(Provider, int, Map, String)}).
 * Nothing here touches the database; the engine applies the outcome.
 *
 * <p>The provider SDKs are optional dependencies. No SDK type appears in this class; the adapter
 * for an SDK is only loaded once an exception whose class belongs to that SDK has been seen.
 */
public final class ProviderClassifier {

    /** {@link #DEFAULT_MAX_WAIT} in days. */
    public static final int DEFAULT_MAX_WAIT_DAYS = 366;

    /**
     * Default for {@link Builder#maxWait(Duration)}: 366 days, so that a reset a year away (an annual
     * contract, a leap year included) survives and only nonsense is cut.
     */
    public static final Duration DEFAULT_MAX_WAIT = Duration.ofDays(DEFAULT_MAX_WAIT_DAYS);

    private static final int MAX_CAUSE_DEPTH = 32;

    private static final int MAX_BODY_CHARS = 4 << 20;

    private static final ProviderClassifier DEFAULTS = create();

    private final Clock clock;
    private final Duration maxWait;
    private final ProviderRules rules;
    private final List<Row.Wait> waitRows;

    private ProviderClassifier(Clock clock, Duration maxWait, ProviderRules rules) {
        this.clock = clock;
        this.maxWait = maxWait;
        this.rules = rules;
        // the built-in table is read at the first classification, not when the shared instance is made
        this.waitRows = rules.size() == 0 ? null : List.copyOf(rules.waits());
    }

    /**
     * A classifier on the system UTC clock with {@link #DEFAULT_MAX_WAIT}.
     *
     * @return a new classifier
     */
    public static ProviderClassifier create() {
        return builder().build();
    }

    /**
     * The shared classifier with the defaults of {@link #create()}.
     *
     * @return the shared instance
     */
    public static ProviderClassifier defaults() {
        return DEFAULTS;
    }

    /**
     * A builder; defaults are {@link Clock#systemUTC()} and {@link #DEFAULT_MAX_WAIT}.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the clock "now" is read from */
    public Clock clock() {
        return clock;
    }

    /**
     * @return the longest wait this classifier reports; a stated wait or reset further away is
     *     nonsense and cut to it ({@link WaitReading#CLAMPED})
     */
    public Duration maxWait() {
        return maxWait;
    }

    /**
     * @return the application's rules, tried before the built-in ones ({@link ProviderRules#builtIn()});
     *     {@link ProviderRules#empty()} by default
     */
    public ProviderRules rules() {
        return rules;
    }

    /**
     * Classifies an HTTP response read by hand.
     *
     * <p>The body decides when it can be read: an error inside a 200 event stream (an SSE
     * {@code error} event, an OpenAI chunk {@code {"error":{...}}}, a Gemini chunk) is classified by
     * what it says, not by the status. When nothing can be read, the status decides: 429 is
     * RATE_LIMITED, 529, 503 and 498 OVERLOADED, 402 QUOTA_EXHAUSTED, other 5xx and 408, 409, 424,
     * 425, 444, 460, 499 TRANSIENT, 401 and 403 AUTH_REFUSED, other 4xx BAD_REQUEST, and anything
     * else (3xx, 1xx, 0 for "no status known") TRANSIENT.
     *
     * @param provider where the response came from; {@code null} means {@link Provider#UNKNOWN}
     * @param status the HTTP status; 0 when unknown
     * @param headers the response headers, names in any case; may be {@code null}
     * @param body the response body as text; may be {@code null}, empty, HTML or an event stream
     * @return empty for a 2xx response whose body holds no error (no SSE {@code error} event, no
     *     {@code "error"} member); otherwise the classification
     */
    public Optional<Classification> classify(Provider provider, int status, Map<String, List<String>> headers,
            String body) {
        Provider p = provider == null ? Provider.UNKNOWN : provider;
        boolean ok = status >= 200 && status < 300;
        try {
            ErrorDetails d = ErrorBodyParser.parse(cap(body), ok);
            if (ok && !d.isError()) {
                return Optional.empty();
            }
            return Optional.of(classifyDetails(p, status, HeaderMap.of(headers), d));
        } catch (RuntimeException | StackOverflowError e) {
            return ok ? Optional.empty() : Optional.of(unreadable(p, status));
        }
    }

    /**
     * Classifies a response of the JDK's {@link java.net.http.HttpClient}, for users calling a
     * provider's REST API by hand, exactly as {@link #classify(Provider, int, Map, String)} does.
     * Bodies of type {@code String}, {@code byte[]} (UTF-8) and other {@link CharSequence}s are
     * read; other body types (streams, files) are left alone and only the status and headers count.
     *
     * @param provider where the response came from; {@code null} means {@link Provider#UNKNOWN}
     * @param response the response; {@code null} gives empty
     * @return empty for a 2xx response whose body holds no error; otherwise the classification
     */
    public Optional<Classification> classify(Provider provider, HttpResponse<?> response) {
        if (response == null) {
            return Optional.empty();
        }
        int status = 0;
        try {
            status = response.statusCode();
            Map<String, List<String>> headers = response.headers() == null ? null : response.headers().map();
            return classify(provider, status, headers, bodyText(response.body()));
        } catch (RuntimeException | StackOverflowError e) {
            return status >= 200 && status < 300 ? Optional.empty()
                    : Optional.of(unreadable(provider == null ? Provider.UNKNOWN : provider, status));
        }
    }

    /**
     * Classifies an exception, walking its cause chain from the outside in; the provider is told by
     * the SDK (and guessed among its backends: Azure OpenAI by its headers, Anthropic on Bedrock by
     * its {@code x-amzn-*} headers). Same as {@link #classify(Provider, Throwable)} with no hint.
     *
     * @param failure the exception; may be {@code null}
     * @return the classification, or empty when the exception is not a provider failure
     */
    public Optional<Classification> classify(Throwable failure) {
        return classify(null, failure);
    }

    /**
     * Classifies an exception, walking its cause chain from the outside in (at most 32 deep; a
     * cycle ends it). Recognised: the exceptions of openai-java ({@code com.openai.errors}),
     * anthropic-java ({@code com.anthropic.errors}, also with its Bedrock and Vertex backends),
     * google-genai ({@code com.google.genai.errors}) and AWS SDK v2 ({@code software.amazon.awssdk}),
     * including their IO, timeout and stream errors; and the JDK's {@link IOException}s (timeouts,
     * refused connections, resets), which are TRANSIENT, except the local file system's
     * ({@link FileNotFoundException}, {@link FileSystemException}).
     *
     * @param provider the provider the call went to, which then labels the classification and
     *     selects its shapes whatever the SDK (openai-java pointed at Azure, at Gemini's
     *     OpenAI-compatible endpoint, ...); {@code null} or {@link Provider#UNKNOWN}: the SDK's own
     * @param failure the exception; may be {@code null}
     * @return the classification, or empty when the exception is not a provider failure (a bug of
     *     the job's own, or an {@link OutcomeException}, which carries its outcome already)
     */
    public Optional<Classification> classify(Provider provider, Throwable failure) {
        if (failure == null || failure instanceof OutcomeException) {
            return Optional.empty();
        }
        Provider hint = provider == Provider.UNKNOWN ? null : provider;
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Throwable current = failure;
        for (int depth = 0; current != null && depth < MAX_CAUSE_DEPTH && seen.add(current); depth++) {
            Optional<Classification> c = classifyOne(hint, current);
            if (c.isPresent()) {
                return c;
            }
            current = current.getCause();
        }
        return Optional.empty();
    }

    /**
     * Classifies a call that got no HTTP response at all: a timeout of any kind (an
     * {@link IOException}, a {@link java.util.concurrent.TimeoutException}, an SDK's own), a refused
     * connection, a reset, or a deadline the caller enforced itself. When {@code cause} is an SDK
     * exception that does carry a response, that response is classified as by
     * {@link #classify(Provider, Throwable)}; otherwise the answer is TRANSIENT with
     * {@code httpStatus} 0 and no wait.
     *
     * @param provider the provider the call went to; {@code null} means {@link Provider#UNKNOWN}
     * @param cause what the call failed with; may be {@code null} (the reason is then
     *     {@code "no response"})
     * @return the classification; never empty, since a call that got no answer is a provider failure
     */
    public Optional<Classification> classifyNoResponse(Provider provider, Throwable cause) {
        Provider p = provider == null ? Provider.UNKNOWN : provider;
        Optional<Classification> c = classify(p, cause);
        if (c.isPresent()) {
            return c;
        }
        String reason = cause == null ? "no response" : "no response: " + describe(cause);
        return Optional.of(new Classification(FailureClass.TRANSIENT, null, null, reason, p, 0));
    }

    /**
     * The outcome for an exception: {@link #outcomeOf(Provider, Throwable)} with no provider hint.
     * This is the engine's default exception classifier.
     *
     * @param failure the exception; may be {@code null}
     * @return the outcome, or empty when the exception is not a provider failure
     */
    public Optional<Outcome> outcomeOf(Throwable failure) {
        return outcomeOf(null, failure);
    }

    /**
     * The outcome for an exception: {@link #classify(Provider, Throwable)} then
     * {@link Classification#toOutcome(Throwable)}, keeping {@code failure} as the cause of a
     * {@link Outcome.Transient}.
     *
     * @param provider the provider the call went to, or {@code null}
     * @param failure the exception; may be {@code null}
     * @return the outcome, or empty when the exception is not a provider failure
     */
    public Optional<Outcome> outcomeOf(Provider provider, Throwable failure) {
        return classify(provider, failure).map(c -> c.toOutcome(failure));
    }

    // ---- package-private: used by the SDK adapters ------------------------------------------

    Classification classifyRaw(Provider provider, int status, Map<String, List<String>> headers, String body,
            boolean streamError) {
        try {
            ErrorDetails d = ErrorBodyParser.parse(cap(body));
            return classifyDetails(provider, status, HeaderMap.of(headers), streamError ? d.asStreamError() : d);
        } catch (RuntimeException | StackOverflowError e) {
            return unreadable(provider, status);
        }
    }

    Classification classifyDetails(Provider provider, int status, HeaderMap headers, ErrorDetails details) {
        Provider p = provider == null ? Provider.UNKNOWN : provider;
        try {
            ErrorDetails d = details == null ? ErrorDetails.NONE : details;
            String amznType = ErrorBodyParser.awsType(headers.first("x-amzn-ErrorType"));
            if (d.type() == null && amznType != null) {
                d = d.withType(amznType);
            }
            HeaderMap h = headers.withFallback(d.bodyHeaders());
            p = Rules.detect(rules, p, h, d);
            Instant now = clock.instant();
            Rules.Verdict v = Rules.decide(rules, p, status, h, d);
            List<Row.Wait> waitRows = waitRows();
            Duration stated = RetryAfter.find(h, d, now, waitRows, p);
            Duration retryAfter = clamp(stated);
            boolean clamped = stated != null && stated.compareTo(maxWait) > 0;
            boolean unreadable = RetryAfter.unreadable(h, now, waitRows, p);
            Instant resetAt = null;
            if (v.failureClass() == FailureClass.QUOTA_EXHAUSTED) {
                Instant regain = Waits.regainAccess(d.message());
                unreadable |= regain == null && Waits.mentionsRegainAccess(d.message());
                Instant at = regain;
                if (at == null && v.quotaReset() == Row.Reset.PACIFIC_MIDNIGHT) {
                    at = Waits.nextPacificMidnight(now);
                }
                if (at == null && v.quotaReset() == Row.Reset.NEXT_MONTH_UTC) {
                    at = Waits.nextMonthUtc(now);
                }
                if (at == null && retryAfter != null) {
                    at = now.plus(retryAfter);
                }
                if (at == null && v.quotaReset() == Row.Reset.UTC_MIDNIGHT) {
                    at = Waits.nextUtcMidnight(now);
                }
                if (at == null && v.quotaReset() == Row.Reset.NEXT_MONDAY_UTC) {
                    at = Waits.nextMondayUtc(now);
                }
                if (at != null) {
                    Duration until = Waits.until(now, at);
                    resetAt = now.plus(clamp(until));
                    clamped |= until.compareTo(maxWait) > 0;
                }
            }
            Double pace = null;
            TokenLimits.Found tokens = TokenLimits.NONE;
            if (v.failureClass() == FailureClass.RATE_LIMITED) {
                tokens = TokenLimits.find(h, d);
                pace = Pace.find(p, h, d);
            } else if (v.failureClass() == FailureClass.BAD_REQUEST && d.message() != null
                    && Rules.neverFits(Rules.lower(d.message()))) {
                tokens = TokenLimits.fromMessage(d.message());
            }
            WaitReading reading = clamped ? WaitReading.CLAMPED
                    : unreadable ? WaitReading.UNREADABLE : WaitReading.AS_STATED;
            return new Classification(v.failureClass(), retryAfter, resetAt, reason(status, d), p, status, pace,
                    tokens.perMinute(), tokens.dimension(), reading);
        } catch (RuntimeException | StackOverflowError e) {
            return unreadable(p, status);
        }
    }

    Classification transientFailure(Provider provider, Throwable t) {
        return new Classification(FailureClass.TRANSIENT, null, null, describe(t), provider, 0);
    }

    // ---- internals ---------------------------------------------------------------------------

    private Optional<Classification> classifyOne(Provider hint, Throwable t) {
        try {
            switch (SdkFamily.of(t)) {
                case OPENAI:
                    return OpenAiSdkAdapter.classify(t, this, hint);
                case ANTHROPIC:
                    return AnthropicSdkAdapter.classify(t, this, hint);
                case GOOGLE_GENAI:
                    return GenAiSdkAdapter.classify(t, this, hint);
                case AWS:
                    return BedrockSdkAdapter.classify(t, this, hint);
                default:
                    break;
            }
        } catch (LinkageError | RuntimeException e) {
            // the SDK is not visible to Layover's class loader, or has changed shape: use the JDK rules
        }
        if (t instanceof IOException && !(t instanceof FileNotFoundException) && !(t instanceof FileSystemException)) {
            return Optional.of(transientFailure(hint == null ? Provider.UNKNOWN : hint, t));
        }
        return Optional.empty();
    }

    /** The wait rows of the application's table, then the built-in ones. */
    private List<Row.Wait> waitRows() {
        List<Row.Wait> builtIn = ProviderRules.builtIn().waits();
        if (waitRows == null || waitRows.isEmpty()) {
            return builtIn;
        }
        List<Row.Wait> all = new java.util.ArrayList<>(waitRows);
        all.addAll(builtIn);
        return all;
    }

    private Duration clamp(Duration d) {
        if (d == null) {
            return null;
        }
        if (d.isNegative()) {
            return Duration.ZERO;
        }
        return d.compareTo(maxWait) > 0 ? maxWait : d;
    }

    private Classification unreadable(Provider provider, int status) {
        return new Classification(Rules.byStatus(status), null, null, "HTTP " + status + " (unreadable response)",
                provider, status);
    }

    private static String reason(int status, ErrorDetails d) {
        String label = d.code() != null ? d.code() : d.type() != null ? d.type() : d.status();
        String message = d.message();
        if (message != null && label != null) {
            return label + ": " + message;
        }
        if (message != null) {
            return message;
        }
        if (label != null) {
            return label;
        }
        String head = status == 0 ? "no HTTP status" : "HTTP " + status;
        return d.rawText() == null ? head : head + ": " + d.rawText();
    }

    static String describe(Throwable t) {
        String m = t.getMessage();
        return m == null || m.isBlank() ? t.getClass().getName() : t.getClass().getSimpleName() + ": " + m;
    }

    private static String cap(String body) {
        return body != null && body.length() > MAX_BODY_CHARS ? body.substring(0, MAX_BODY_CHARS) : body;
    }

    private static String bodyText(Object body) {
        if (body instanceof CharSequence cs) {
            return cs.toString();
        }
        if (body instanceof byte[] bytes) {
            int n = Math.min(bytes.length, MAX_BODY_CHARS);
            return new String(bytes, 0, n, StandardCharsets.UTF_8);
        }
        return null;
    }

    /** Which SDK an exception belongs to, by the names of its class and superclasses. */
    enum SdkFamily {
        OPENAI("com.openai."),
        ANTHROPIC("com.anthropic."),
        GOOGLE_GENAI("com.google.genai."),
        AWS("software.amazon.awssdk."),
        NONE("");

        private final String prefix;

        SdkFamily(String prefix) {
            this.prefix = prefix;
        }

        static SdkFamily of(Throwable t) {
            for (Class<?> c = t.getClass(); c != null && c != Throwable.class; c = c.getSuperclass()) {
                String name = c.getName();
                for (SdkFamily f : values()) {
                    if (f != NONE && name.startsWith(f.prefix)) {
                        return f;
                    }
                }
            }
            return NONE;
        }
    }

    /**
     * Builds a {@link ProviderClassifier}.
     *
     * <table>
     *   <caption>settings and defaults</caption>
     *   <tr><th>setting</th><th>default</th></tr>
     *   <tr><td>{@link #clock(Clock)}</td><td>{@link Clock#systemUTC()}</td></tr>
     *   <tr><td>{@link #maxWait(Duration)}</td><td>{@value ProviderClassifier#DEFAULT_MAX_WAIT_DAYS} days</td></tr>
     *   <tr><td>{@link #rules(ProviderRules)}</td><td>none: the built-in table alone</td></tr>
     * </table>
     */
    public static final class Builder {

        private Clock clock = Clock.systemUTC();
        private Duration maxWait = DEFAULT_MAX_WAIT;
        private ProviderRules rules = ProviderRules.empty();

        private Builder() {}

        /**
         * The clock "now" is read from, to turn HTTP-dates and RFC 3339 reset times into waits
         * and waits into reset times. Default {@link Clock#systemUTC()}.
         *
         * @param clock the clock; not {@code null}
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * The longest wait reported: a stated {@code retryAfter} longer than this, or a
         * {@code resetAt} further away, is taken for nonsense and cut to it, and the classification
         * says so ({@link WaitReading#CLAMPED}). Default {@value ProviderClassifier#DEFAULT_MAX_WAIT_DAYS}
         * days, so that every real reset (a month, a year) survives as stated.
         *
         * @param maxWait zero or more; not {@code null}
         * @return this builder
         */
        public Builder maxWait(Duration maxWait) {
            Objects.requireNonNull(maxWait, "maxWait");
            if (maxWait.isNegative()) {
                throw new IllegalArgumentException("maxWait must not be negative: " + maxWait);
            }
            this.maxWait = maxWait;
            return this;
        }

        /**
         * Rules of the application's own, e.g. for its gateway: their rows are tried before the built-in
         * table's ({@link ProviderRules#builtIn()}), so they win where both match. Called again, the
         * later rules are tried after the earlier ones. Default: none.
         *
         * @param more the rules, e.g. {@link ProviderRules#parse(String, String)} or
         *     {@link ProviderRules#load(java.nio.file.Path)}; not {@code null}
         * @return this builder
         */
        public Builder rules(ProviderRules more) {
            this.rules = rules.and(Objects.requireNonNull(more, "rules"));
            return this;
        }

        /** @return a new immutable classifier */
        public ProviderClassifier build() {
            return new ProviderClassifier(clock, maxWait, rules);
        }
    }
}
