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
 * <p>Two ways in: {@link #classify(Provider, int, Map, String)} for a response read by hand, and
 * {@link #classify(Throwable)} for an exception thrown by a provider SDK (openai-java,
 * anthropic-java, google-genai, AWS SDK v2 bedrockruntime) or by the JDK's networking. The rules
 * are listed in {@code docs/provider-classification.md}.
 *
 * <p>Instances are immutable and thread-safe. Every classification method accepts any input,
 * including {@code null}s, garbled headers and HTML bodies, and never throws: what cannot be read
 * falls back on a conservative class by HTTP status (see {@link #classify(Provider, int, Map,
 * String)}). Every wait is clamped to {@code [0, maxWait]}.
 *
 * <p>The provider SDKs are optional dependencies. No SDK type appears in this class; the adapter
 * for an SDK is only loaded once an exception whose class belongs to that SDK has been seen.
 */
public final class ProviderClassifier {

    /** Default for {@link Builder#maxWait(Duration)}: 7 days. */
    public static final Duration DEFAULT_MAX_WAIT = Duration.ofDays(7);

    private static final int MAX_CAUSE_DEPTH = 32;

    private static final int MAX_BODY_CHARS = 4 << 20;

    private static final ProviderClassifier DEFAULTS = create();

    private final Clock clock;
    private final Duration maxWait;

    private ProviderClassifier(Clock clock, Duration maxWait) {
        this.clock = clock;
        this.maxWait = maxWait;
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

    /** @return the longest wait this classifier reports; longer ones are clamped to it */
    public Duration maxWait() {
        return maxWait;
    }

    /**
     * Classifies an HTTP response.
     *
     * <p>The body decides when it can be read: an error inside a 200 event stream (an SSE
     * {@code error} event, an OpenAI chunk {@code {"error":{...}}}) is classified by what it says,
     * not by the status. When nothing can be read, the status decides: 429 is RATE_LIMITED, 529
     * and 503 OVERLOADED, other 5xx and 408, 409, 425 TRANSIENT, 401 and 403 AUTH_REFUSED, other
     * 4xx BAD_REQUEST, and anything else (a 2xx without an error, 3xx, 0) TRANSIENT.
     *
     * @param provider where the response came from; {@code null} means {@link Provider#UNKNOWN}
     * @param status the HTTP status; 0 when unknown
     * @param headers the response headers, names in any case; may be {@code null}
     * @param body the response body as text; may be {@code null}, empty, HTML or an event stream
     * @return the classification; never {@code null}
     */
    public Classification classify(Provider provider, int status, Map<String, List<String>> headers, String body) {
        Provider p = provider == null ? Provider.UNKNOWN : provider;
        try {
            HeaderMap h = HeaderMap.of(headers);
            return classifyDetails(p, status, h, ErrorBodyParser.parse(cap(body)));
        } catch (RuntimeException | StackOverflowError e) {
            return fallback(p, status, "HTTP " + status + " (unreadable response)");
        }
    }

    /**
     * Classifies a response of the JDK's {@link java.net.http.HttpClient}, for users calling a
     * provider's REST API by hand. Bodies of type {@code String}, {@code byte[]} (UTF-8) and other
     * {@link CharSequence}s are read; other body types (streams, files) are left alone and only
     * the status and headers count.
     *
     * @param provider where the response came from; {@code null} means {@link Provider#UNKNOWN}
     * @param response the response; {@code null} gives empty
     * @return empty for a 2xx response whose body holds no error (no SSE {@code error} event, no
     *     {@code "error"} member); otherwise the classification
     */
    public Optional<Classification> classify(Provider provider, HttpResponse<?> response) {
        if (response == null) {
            return Optional.empty();
        }
        Provider p = provider == null ? Provider.UNKNOWN : provider;
        int status = 0;
        try {
            status = response.statusCode();
            String body = bodyText(response.body());
            Map<String, List<String>> headers = response.headers() == null ? null : response.headers().map();
            if (status >= 200 && status < 300) {
                ErrorDetails d = ErrorBodyParser.parse(cap(body), true);
                return d.isError()
                        ? Optional.of(classifyDetails(p, status, HeaderMap.of(headers), d))
                        : Optional.empty();
            }
            return Optional.of(classify(p, status, headers, body));
        } catch (RuntimeException | StackOverflowError e) {
            if (status >= 200 && status < 300) {
                return Optional.empty();
            }
            return Optional.of(fallback(p, status, "HTTP " + status + " (unreadable response)"));
        }
    }

    /**
     * Classifies an exception, walking its cause chain from the outside in. Recognised: the
     * exceptions of openai-java ({@code com.openai.errors}), anthropic-java
     * ({@code com.anthropic.errors}, also with its Bedrock and Vertex backends), google-genai
     * ({@code com.google.genai.errors}) and AWS SDK v2 ({@code software.amazon.awssdk}), including
     * their IO, timeout and stream errors; and the JDK's {@link IOException}s (timeouts, refused
     * connections, resets), which are TRANSIENT, except the local file system's
     * ({@link FileNotFoundException}, {@link FileSystemException}).
     *
     * @param t the exception; may be {@code null}
     * @return the classification, or empty when the exception is not a provider failure (a bug of
     *     the job's own, or an {@link OutcomeException}, which carries its outcome already)
     */
    public Optional<Classification> classify(Throwable t) {
        if (t == null || t instanceof OutcomeException) {
            return Optional.empty();
        }
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Throwable current = t;
        for (int depth = 0; current != null && depth < MAX_CAUSE_DEPTH && seen.add(current); depth++) {
            Optional<Classification> c = classifyOne(current);
            if (c.isPresent()) {
                return c;
            }
            current = current.getCause();
        }
        return Optional.empty();
    }

    /**
     * The outcome for an exception: {@link #classify(Throwable)} then
     * {@link Classification#toOutcome(Throwable)}, keeping {@code t} as the cause of a
     * {@link Outcome.Transient}.
     *
     * @param t the exception; may be {@code null}
     * @return the outcome, or empty when the exception is not a provider failure
     */
    public Optional<Outcome> outcomeOf(Throwable t) {
        return classify(t).map(c -> c.toOutcome(t));
    }

    // ---- package-private: used by the SDK adapters ------------------------------------------

    Classification classifyRaw(Provider provider, int status, Map<String, List<String>> headers, String body,
            boolean streamError) {
        try {
            ErrorDetails d = ErrorBodyParser.parse(cap(body));
            return classifyDetails(provider, status, HeaderMap.of(headers), streamError ? d.asStreamError() : d);
        } catch (RuntimeException | StackOverflowError e) {
            return fallback(provider, status, "HTTP " + status + " (unreadable response)");
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
            Instant now = clock.instant();
            Rules.Verdict v = Rules.decide(status, d);
            Duration retryAfter = clamp(RetryAfter.find(headers, d, now));
            Instant resetAt = null;
            if (v.failureClass() == FailureClass.QUOTA_EXHAUSTED) {
                resetAt = resetAt(v.quotaReset(), d, retryAfter, now);
            }
            Double pace = v.failureClass() == FailureClass.RATE_LIMITED ? Pace.find(headers, d.message()) : null;
            return new Classification(v.failureClass(), retryAfter, resetAt, reason(status, d), p, status, pace);
        } catch (RuntimeException | StackOverflowError e) {
            return fallback(p, status, "HTTP " + status + " (unreadable response)");
        }
    }

    Classification transientFailure(Provider provider, Throwable t) {
        return new Classification(FailureClass.TRANSIENT, null, null, describe(t), provider, 0);
    }

    // ---- internals ---------------------------------------------------------------------------

    private Optional<Classification> classifyOne(Throwable t) {
        try {
            switch (SdkFamily.of(t)) {
                case OPENAI:
                    return OpenAiSdkAdapter.classify(t, this);
                case ANTHROPIC:
                    return AnthropicSdkAdapter.classify(t, this);
                case GOOGLE_GENAI:
                    return GenAiSdkAdapter.classify(t, this);
                case AWS:
                    return BedrockSdkAdapter.classify(t, this);
                default:
                    break;
            }
        } catch (LinkageError | RuntimeException e) {
            // the SDK is not visible to Layover's class loader, or has changed shape: use the JDK rules
        }
        if (t instanceof IOException && !(t instanceof FileNotFoundException) && !(t instanceof FileSystemException)) {
            return Optional.of(transientFailure(Provider.UNKNOWN, t));
        }
        return Optional.empty();
    }

    private Instant resetAt(Rules.QuotaReset how, ErrorDetails d, Duration retryAfter, Instant now) {
        Instant at = Waits.regainAccess(d.message());
        if (at == null && how == Rules.QuotaReset.NEXT_PACIFIC_MIDNIGHT) {
            at = Waits.nextPacificMidnight(now);
        }
        if (at == null && how == Rules.QuotaReset.NEXT_MONTH_UTC) {
            at = Waits.nextMonthUtc(now);
        }
        if (at == null && retryAfter != null) {
            return now.plus(retryAfter);
        }
        if (at == null) {
            return null;
        }
        return now.plus(clamp(Waits.until(now, at)));
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

    private Classification fallback(Provider provider, int status, String reason) {
        return new Classification(Rules.byStatus(status), null, null, reason, provider, status);
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
     * Builds a {@link ProviderClassifier}. Defaults: {@link Clock#systemUTC()} and
     * {@link ProviderClassifier#DEFAULT_MAX_WAIT}.
     */
    public static final class Builder {

        private Clock clock = Clock.systemUTC();
        private Duration maxWait = DEFAULT_MAX_WAIT;

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
         * The longest wait reported: longer {@code retryAfter}s, and {@code resetAt}s further
         * away, are clamped to it. Default 7 days.
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

        /** @return a new immutable classifier */
        public ProviderClassifier build() {
            return new ProviderClassifier(clock, maxWait);
        }
    }
}
