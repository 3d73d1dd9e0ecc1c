package dev.layover.testing.provider;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.layover.testing.provider.FakeShapes.Refusal;
import dev.layover.testing.provider.FakeShapes.Reply;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fake LLM provider for tests, demos and benchmarks: a local HTTP server (127.0.0.1, a free
 * port) speaking four providers' APIs, with their real limit behaviour, error shapes and token
 * usage.
 *
 * <pre>{@code
 * try (FakeProvider fake = FakeProvider.start()) {
 *     fake.primary().limitPerMinute(60);                       // 60 requests/min
 *     fake.primary().tokenLimitPerMinute(30_000);              // and 30,000 tokens/min
 *     fake.secondary().limitPerSecond(5);                      // a second provider, its own limits
 *     URI url = fake.primary().url();                          // POST http://127.0.0.1:port/v1/chat/completions
 *     URI gemini = fake.primary().url(FakeProvider.Api.GEMINI_GENERATE_CONTENT);
 *     ...
 *     fake.primary().changeLimitPerSecond(20);                 // the provider lowers the limit mid-run
 *     fake.primary().phase(FakeProvider.Phase.OUTAGE);         // from now on: 503
 *     assertEquals(0, fake.primary().rateLimited());
 * }
 * }</pre>
 *
 * <h2>Endpoints and APIs</h2>
 * Two endpoints, each with its own limits, phase and counters (two provider keys): {@link #primary()}
 * below {@code http://127.0.0.1:port} and {@link #secondary()} below {@code .../secondary} (a second
 * provider, for fallback chains). Both start unlimited, in {@link Phase#NORMAL}. Each answers the
 * four {@link Api}s by path, all sharing the endpoint's limits:
 * <table>
 *   <caption>paths below an endpoint's {@link Endpoint#base()}</caption>
 *   <tr><th>API</th><th>path</th><th>an SDK pointed at it</th></tr>
 *   <tr><td>{@link Api#OPENAI_CHAT}</td><td>{@code POST /v1/chat/completions}</td><td>openai-java {@code baseUrl(base + "/v1")}</td></tr>
 *   <tr><td>{@link Api#ANTHROPIC_MESSAGES}</td><td>{@code POST /v1/messages}</td><td>anthropic-java {@code baseUrl(base)}</td></tr>
 *   <tr><td>{@link Api#GEMINI_GENERATE_CONTENT}</td><td>{@code POST /v1beta/models/{model}:generateContent}</td><td>google-genai {@code HttpOptions.baseUrl(base)}</td></tr>
 *   <tr><td>{@link Api#BEDROCK_CONVERSE}</td><td>{@code POST /model/{modelId}/converse}</td><td>bedrockruntime {@code endpointOverride(base)}</td></tr>
 * </table>
 * Both endpoints also serve the batch APIs, OpenAI's {@code /v1/files} and {@code /v1/batches},
 * Anthropic's {@code /v1/messages/batches}, the Gemini API's {@code :batchGenerateContent} and
 * {@code /v1beta/batches}, Bedrock's {@code /model-invocation-job} (bedrock {@code endpointOverride(base)})
 * and the S3 it reads and writes below {@code /s3/} (s3 {@code endpointOverride(base + "/s3")},
 * {@code forcePathStyle(true)}): see {@link #batches()}, {@link FakeBatches} and {@link FakeS3}.
 * Any other path below {@code /v1/}, {@code /v1beta/}, {@code /model/} (or {@code /secondary/}) is a
 * 404 in OpenAI's shape.
 *
 * <h2>Answers</h2>
 * The answer echoes the last user message deterministically: when its content is JSON with a
 * {@code segments} array of strings and a {@code target} language, the content is
 * {@code {"segments":["<TRANSLATED:fr> text", ...]}}; otherwise it is {@code "<ECHO> " + content}.
 * The content's {@link Style} is {@link Style#PLAIN} unless set on the endpoint ({@link Endpoint#style},
 * {@link Endpoint#styleEvery}) or asked for by the request header {@code x-fake-style:
 * fenced|chatty|truncated}: fenced wraps the JSON in {@code ```json ... ```}, chatty surrounds it with
 * prose, truncated cuts it in half and says the ceiling was hit ({@code finish_reason: "length"},
 * {@code stop_reason: "max_tokens"}, {@code finishReason: "MAX_TOKENS"}).
 *
 * <h2>Token counting</h2>
 * The fake counts tokens itself, deterministically:
 * <ul>
 *   <li><b>input</b>: the characters of every text of the request (system prompt and all messages)
 *       divided by 4, rounded up, at least 1;
 *   <li><b>output</b>: with {@link Endpoint#outputShare(double, double)} set and a ceiling in the
 *       request ({@code max_completion_tokens} or {@code max_tokens}, {@code max_tokens},
 *       {@code generationConfig.maxOutputTokens}, {@code inferenceConfig.maxTokens}), a share of
 *       that ceiling between the two bounds, fixed by a hash of the request body (at least 1);
 *       otherwise the answer's characters / 4, rounded up, at most the ceiling (and an answer cut
 *       there says so: {@code finish_reason: "length"}, {@code stop_reason: "max_tokens"}, ...);
 *   <li><b>cached input</b>: the request header {@code x-fake-cached-tokens: n} reports n of the
 *       input (at most all of it) as read from a cache.
 * </ul>
 * Every answer reports its usage in the API's real shape: OpenAI {@code usage.prompt_tokens},
 * {@code completion_tokens}, {@code total_tokens}, {@code prompt_tokens_details.cached_tokens};
 * Anthropic {@code usage.input_tokens} (the uncached part), {@code output_tokens},
 * {@code cache_read_input_tokens}, {@code cache_creation_input_tokens}; Gemini
 * {@code usageMetadata.promptTokenCount}, {@code candidatesTokenCount}, {@code totalTokenCount},
 * {@code cachedContentTokenCount}; Bedrock {@code usage.inputTokens}, {@code outputTokens},
 * {@code totalTokens}, {@code cacheReadInputTokens}.
 *
 * <h2>Limits</h2>
 * Each {@link Dimension} can be limited, each a token bucket refilled continuously and full at the
 * start: requests ({@link Endpoint#limitPerMinute}, {@link Endpoint#limitPerSecond}, at most
 * {@link Endpoint#burst} held), and per minute combined tokens ({@link Endpoint#tokenLimitPerMinute}),
 * input tokens ({@link Endpoint#inputTokenLimitPerMinute}) and output tokens
 * ({@link Endpoint#outputTokenLimitPerMinute}). A call is admitted only when every limited
 * dimension holds what it needs, and then takes from all of them: one request; its input tokens
 * (in the Anthropic API without what was read from the cache, as Anthropic counts input tokens per
 * minute); its output ceiling (the request's {@code max_tokens}, or its output when it has none);
 * input plus ceiling from the combined tokens. When the answer is made, the unused part of the
 * ceiling is given back (Anthropic's documented rule for output tokens per minute, applied by the
 * fake to every API). A call that would need more of a limit than it can ever hold is refused the
 * same way (OpenAI's shape then says "Request too large ... Limit L, Requested R"). With
 * {@link Endpoint#countRefused(boolean)} a refused call still takes one request (down to minus one
 * bucket), as some providers count it. {@link Endpoint#changeLimit} and
 * {@link Endpoint#changeLimitPerSecond} change a limit at run time (50, then 20, then 80 a second):
 * what the bucket holds stays, cut to the new size.
 *
 * <p>A refused call gets HTTP 429 in the API's real shape, naming the limit that refused:
 * <ul>
 *   <li>OpenAI: {@code retry-after} (whole seconds, rounded up), {@code x-ratelimit-limit-*},
 *       {@code -remaining-*}, {@code -reset-*} for requests and tokens (OpenAI's duration format,
 *       {@code 1s}, {@code 120ms}, {@code 6m0s}), and {@code {"error":{"message":"Rate limit reached
 *       for <model> in organization org-fake on requests per min (RPM): Limit 500, Used 500, Requested
 *       1. Please try again in 120ms. ...","type":"requests","param":null,"code":"rate_limit_exceeded"}}}
 *       ({@code per sec (RPS)} for a per-second limit; {@code tokens per min (TPM)} and type
 *       {@code tokens} for any token limit, OpenAI having only one);
 *   <li>Anthropic: {@code retry-after}, {@code anthropic-ratelimit-{requests,tokens,input-tokens,
 *       output-tokens}-{limit,remaining,reset}} for each limited dimension (limit per minute, reset
 *       RFC 3339), and {@code rate_limit_error} "This request would exceed the rate limit for your
 *       organization (org-fake) of 40,000 input tokens per minute. ...";
 *   <li>Gemini: {@code RESOURCE_EXHAUSTED} with "Quota exceeded for metric: ..., limit: N" and the
 *       details {@code QuotaFailure} (a per-minute quota id and its {@code quotaValue}),
 *       {@code Help} and {@code RetryInfo}; no headers;
 *   <li>Bedrock: {@code x-amzn-ErrorType: ThrottlingException} and "Too many requests, please wait
 *       before trying again." (or "Too many tokens, ..."); no limit, no headers, as Bedrock does.
 * </ul>
 * Successful answers carry the same rate-limit headers (OpenAI, Anthropic). With
 * {@link Endpoint#statesNoLimit(boolean)} the endpoint states no limit at all, as Gemini's and
 * Bedrock's real 429s do: no numbers in any message, no rate-limit headers, no {@code retry-after}
 * (OpenAI: "Rate limit exceeded. Please try again later."; Anthropic: "Rate limited. Please try
 * again later."; Gemini: Vertex's "Resource exhausted. Please try again later. ...").
 *
 * <h2>Phases</h2>
 * {@link Endpoint#phase(Phase)} switches at once; {@link Endpoint#script(Stage...)} runs phases one
 * after another from now (the last one stays); {@link Endpoint#throttleFirst(int)} answers the next
 * requests 429 whenever they come. {@link Phase#THROTTLED}: every request 429 with a
 * wait of {@link Endpoint#throttledRetryAfter} (OpenAI's message names the request limit when one
 * is set, else a token limit, so that no request pace is learned from it); {@link Phase#OUTAGE}: 503
 * in the API's shape; {@link Phase#OVERLOADED}: Anthropic's 529 {@code overloaded_error};
 * {@link Phase#REJECTING}: 400 in the API's shape; {@link Phase#UNAUTHORIZED}: the API's refused key
 * (401 {@code invalid_api_key} / {@code authentication_error}, Gemini's 400 {@code API_KEY_INVALID},
 * Bedrock's 403 {@code UnrecognizedClientException}); {@link Phase#NORMAL}: answers within the limits
 * ("recovered" is NORMAL again). No token is taken outside NORMAL.
 *
 * <h2>Faults</h2>
 * {@link Endpoint#faults(Faults)} makes an endpoint fail a fraction of its calls, as real providers
 * do on an ordinary day: 503 in the API's shape (Anthropic's API: its own 529
 * {@code overloaded_error}), 500 in the API's shape, slow answers (a normal answer after a delay
 * drawn uniformly between two bounds, 2-8 s by default) and dropped connections (the socket closed
 * without any answer; the client sees a connection error). None states a {@code retry-after}.
 * Faults apply only to calls the endpoint's limits admitted, in {@link Phase#NORMAL}: a 429 stays a
 * 429, and a failed call has taken its request (and its input tokens) from the limits, as a real
 * provider counts it; the output it reserved is given back. One {@link SplittableRandom} per
 * endpoint, seeded by {@link Faults#seed()} and drawn under the endpoint's lock once per admitted
 * call (twice for a slow one: its delay), so the same seed and the same order of calls give the
 * same faults. {@link Endpoint#faultCounts()} counts what was answered.
 *
 * <h2>Counters</h2>
 * Per endpoint: {@link Endpoint#calls()}, {@link Endpoint#rateLimited()} (and by
 * {@link Endpoint#rateLimited(Dimension)}), {@link Endpoint#unavailable()} (503),
 * {@link Endpoint#overloaded()} (529), {@link Endpoint#serverErrors()} (500),
 * {@link Endpoint#refused()} (400/401/403), {@link Endpoint#faultCounts()},
 * {@link Endpoint#successes()}, {@link Endpoint#maxInFlight()}, {@link Endpoint#perSecond()} (calls
 * per epoch second), {@link Endpoint#arrivals()}, {@link Endpoint#maxInWindow(Duration)}, and the
 * tokens answered: {@link Endpoint#usages()}, {@link Endpoint#inputTokens()},
 * {@link Endpoint#outputTokens()}, {@link Endpoint#cachedInputTokens()}.
 *
 * <h2>Time</h2>
 * Buckets, scripts and arrivals follow {@link #start(Clock)}'s clock (a test moves it by hand and
 * needs no sleep); {@link #start()} uses the system's monotonic time. {@link Endpoint#latency}
 * always sleeps for real.
 *
 * <p>Thread-safe; answers concurrently. Touches no database.
 */
public final class FakeProvider implements AutoCloseable {

    /** The primary endpoint's OpenAI path. */
    public static final String PRIMARY_PATH = "/v1/chat/completions";
    /** The secondary endpoint's OpenAI path. */
    public static final String SECONDARY_PATH = "/secondary/v1/chat/completions";

    private static final String SECONDARY_PREFIX = "/secondary";

    /** What an endpoint does with requests. */
    public enum Phase {
        /** Answers, within its limits (429 beyond them). */
        NORMAL,
        /** Every request: 429 with a stated wait. */
        THROTTLED,
        /** Every request: 503 (OpenAI's "The server is overloaded or not ready yet."). */
        OUTAGE,
        /** Every request: 529, Anthropic's {@code overloaded_error}. */
        OVERLOADED,
        /** Every request: 400 (OpenAI's {@code invalid_request_error}). */
        REJECTING,
        /** Every request: the key is refused (OpenAI's 401 {@code invalid_api_key}). */
        UNAUTHORIZED
    }

    /** How an answer's content is written. */
    public enum Style {
        /** The content as is. */
        PLAIN,
        /** In a Markdown code fence: {@code ```json\n...\n```}. */
        FENCED,
        /** With prose before and after. */
        CHATTY,
        /** Cut in half, at the ceiling ({@code finish_reason: "length"}). */
        TRUNCATED
    }

    /** The provider APIs an endpoint speaks; see the class description for their paths. */
    public enum Api {
        /** OpenAI chat completions (also Azure OpenAI's shape). */
        OPENAI_CHAT,
        /** Anthropic messages. */
        ANTHROPIC_MESSAGES,
        /** Gemini {@code generateContent}. */
        GEMINI_GENERATE_CONTENT,
        /** Amazon Bedrock runtime Converse. */
        BEDROCK_CONVERSE
    }

    /** What a limit counts. */
    public enum Dimension {
        /** Requests. */
        REQUESTS,
        /** Input and output tokens together. */
        TOKENS,
        /** Input tokens. */
        INPUT_TOKENS,
        /** Output tokens. */
        OUTPUT_TOKENS
    }

    /**
     * One stage of a {@link Endpoint#script(Stage...)}.
     *
     * @param phase the phase
     * @param duration how long it lasts
     */
    public record Stage(Phase phase, Duration duration) {}

    /**
     * The tokens of one successful answer, as it reported them.
     *
     * @param at when the answer was made
     * @param api which API answered
     * @param inputTokens the input tokens counted (cached ones included)
     * @param outputTokens the output tokens
     * @param cachedInputTokens the part of the input read from the cache
     */
    public record Usage(Instant at, Api api, long inputTokens, long outputTokens, long cachedInputTokens) {}

    private static final ObjectMapper JSON = new ObjectMapper();

    static {
        // The JDK's server leaves Nagle's algorithm on: a small reply then waits for the client's
        // delayed ACK, a delay on every call. Read once, when the JDK's server classes first load.
        if (System.getProperty("sun.net.httpserver.nodelay") == null) {
            System.setProperty("sun.net.httpserver.nodelay", "true");
        }
    }

    private final HttpServer server;
    private final ExecutorService executor;
    private final Time time;
    private final FakeShapes shapes = new FakeShapes(JSON);
    private final Endpoint primary;
    private final Endpoint secondary;
    private final AtomicLong ids = new AtomicLong();
    private final FakeBatches batches;

    private FakeProvider(Time time) throws IOException {
        this.time = time;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 256);
        executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "fake-provider");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        batches = new FakeBatches(JSON, shapes, time::instant);
        primary = new Endpoint("", "gpt-4o-mini");
        secondary = new Endpoint(SECONDARY_PREFIX, "claude-haiku");
        for (String context : List.of("/v1/", "/v1beta/", "/model/", "/model-invocation-job", FakeS3.PREFIX)) {
            server.createContext(context, primary::handle);
        }
        server.createContext(SECONDARY_PREFIX + "/", secondary::handle);
        server.start();
    }

    /**
     * Starts a fake provider on 127.0.0.1 and a free port, on the system's monotonic time.
     *
     * @return the running server
     */
    public static FakeProvider start() {
        return start(Time.SYSTEM);
    }

    /**
     * Starts a fake provider whose limits, scripts and arrivals follow {@code clock}, so a test can
     * move time by hand.
     *
     * @param clock the clock; not {@code null}
     * @return the running server
     */
    public static FakeProvider start(Clock clock) {
        Objects.requireNonNull(clock, "clock");
        return start(new Time() {
            @Override
            public long nanos() {
                Instant i = clock.instant();
                return i.getEpochSecond() * 1_000_000_000L + i.getNano();
            }

            @Override
            public Instant instant() {
                return clock.instant();
            }
        });
    }

    private static FakeProvider start(Time time) {
        try {
            return new FakeProvider(time);
        } catch (IOException e) {
            throw new IllegalStateException("cannot start the fake provider: " + e.getMessage(), e);
        }
    }

    /** @return {@code http://127.0.0.1:port} */
    public URI baseUri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** @return the endpoint at {@value #PRIMARY_PATH} (and the other APIs below the base URI) */
    public Endpoint primary() {
        return primary;
    }

    /** @return the endpoint at {@value #SECONDARY_PATH} (and below {@code /secondary}), a second provider */
    public Endpoint secondary() {
        return secondary;
    }

    /**
     * @return the batch APIs (OpenAI's Batch and Files APIs, Anthropic's Message Batches) that
     *     both endpoints serve, and their test controls
     */
    public FakeBatches batches() {
        return batches;
    }

    /** Stops the server at once (and lets go of any batch create held by {@link FakeBatches#holdCreate()}). */
    @Override
    public void close() {
        batches.close();
        server.stop(0);
        executor.shutdownNow();
    }

    /** Where "now" comes from. */
    private interface Time {
        Time SYSTEM = new Time() {
            @Override
            public long nanos() {
                return System.nanoTime();
            }

            @Override
            public Instant instant() {
                return Instant.now();
            }
        };

        long nanos();

        Instant instant();
    }

    /** One endpoint, a provider key: its limits, phase, style and counters. */
    public final class Endpoint {
        private final String prefix;
        private final String model;
        private final Object lock = new Object();
        private final Map<Dimension, FakeBucket> buckets = new EnumMap<>(Dimension.class);
        private int limitPerWindow;
        private String windowName = "min";
        private boolean countRefused;
        private boolean statesNoLimit;
        private double shareMin = Double.NaN;
        private double shareMax = Double.NaN;
        private Phase phase = Phase.NORMAL;
        private List<Stage> script = List.of();
        private long scriptStart;
        private Duration throttledRetryAfter = Duration.ofSeconds(2);
        private int throttleLeft;
        private Duration latency = Duration.ZERO;
        private Style style = Style.PLAIN;
        private Style everyStyle;
        private int every;
        private Faults faults = Faults.none();
        private SplittableRandom faultRandom = new SplittableRandom(0);

        private final AtomicInteger calls = new AtomicInteger();
        private final AtomicInteger rateLimited = new AtomicInteger();
        private final Map<Dimension, AtomicInteger> rateLimitedBy = new EnumMap<>(Dimension.class);
        private final AtomicInteger unavailable = new AtomicInteger();
        private final AtomicInteger overloaded = new AtomicInteger();
        private final AtomicInteger refused = new AtomicInteger();
        private final AtomicInteger serverErrors = new AtomicInteger();
        private final AtomicInteger faultUnavailable = new AtomicInteger();
        private final AtomicInteger faultServerError = new AtomicInteger();
        private final AtomicInteger faultSlow = new AtomicInteger();
        private final AtomicInteger faultDropped = new AtomicInteger();
        private final AtomicInteger successes = new AtomicInteger();
        private final AtomicInteger inFlight = new AtomicInteger();
        private final AtomicInteger maxInFlight = new AtomicInteger();
        private final List<Instant> arrivals = Collections.synchronizedList(new ArrayList<>());
        private final List<Usage> usages = Collections.synchronizedList(new ArrayList<>());

        private Endpoint(String prefix, String model) {
            this.prefix = prefix;
            this.model = model;
            for (Dimension d : Dimension.values()) {
                rateLimitedBy.put(d, new AtomicInteger());
            }
        }

        /** @return the full URL of this endpoint's OpenAI chat completions */
        public URI url() {
            return url(Api.OPENAI_CHAT);
        }

        /**
         * The URL of one API of this endpoint.
         *
         * @param api the API
         * @return its URL; Gemini's names the model {@code gemini-2.5-flash}, Bedrock's
         *     {@code anthropic.claude-3-haiku-20240307-v1:0} (any model name works)
         */
        public URI url(Api api) {
            String path = switch (Objects.requireNonNull(api, "api")) {
                case OPENAI_CHAT -> "/v1/chat/completions";
                case ANTHROPIC_MESSAGES -> "/v1/messages";
                case GEMINI_GENERATE_CONTENT -> "/v1beta/models/gemini-2.5-flash:generateContent";
                case BEDROCK_CONVERSE -> "/model/"
                        + URLEncoder.encode("anthropic.claude-3-haiku-20240307-v1:0", StandardCharsets.UTF_8) + "/converse";
            };
            return URI.create(base() + path);
        }

        /** @return the root the APIs' paths are below, for an SDK's base URL: {@code http://127.0.0.1:port[/secondary]} */
        public URI base() {
            return URI.create(baseUri() + prefix);
        }

        /** @return the OpenAI path, {@value FakeProvider#PRIMARY_PATH} or {@value FakeProvider#SECONDARY_PATH} */
        public String path() {
            return prefix + "/v1/chat/completions";
        }

        /**
         * A request limit of {@code n} per minute, full at the start.
         *
         * @param n requests per minute, at least 1
         * @return this endpoint
         */
        public Endpoint limitPerMinute(int n) {
            return requestLimit(n, n / 60.0, "min");
        }

        /**
         * A request limit of {@code n} per second, full at the start.
         *
         * @param n requests per second, at least 1
         * @return this endpoint
         */
        public Endpoint limitPerSecond(int n) {
            return requestLimit(n, n, "s");
        }

        private Endpoint requestLimit(int n, double rate, String window) {
            if (n < 1) {
                throw new IllegalArgumentException("a limit must be at least 1");
            }
            synchronized (lock) {
                limitPerWindow = n;
                windowName = window;
                buckets.put(Dimension.REQUESTS, new FakeBucket(n, rate, time.nanos()));
            }
            return this;
        }

        /**
         * Changes the request limit at run time to {@code n} a second, as a provider does: the
         * bucket keeps what it holds (cut to the new size) and refills at the new rate from now.
         * Without a request limit yet, sets one, full.
         *
         * @param n requests per second, more than 0
         * @return this endpoint
         */
        public Endpoint changeLimitPerSecond(double n) {
            positive(n);
            synchronized (lock) {
                FakeBucket b = buckets.get(Dimension.REQUESTS);
                if (b == null) {
                    buckets.put(Dimension.REQUESTS, new FakeBucket(n, n, time.nanos()));
                } else {
                    b.change(n, n, time.nanos());
                }
                limitPerWindow = (int) Math.max(1, Math.round(n));
                windowName = "s";
            }
            return this;
        }

        /**
         * A limit of {@code perMinute} on one dimension, full at the start; for requests the same as
         * {@link #limitPerMinute(int)}.
         *
         * @param d what to limit
         * @param perMinute the limit per minute, at least 1
         * @return this endpoint
         */
        public Endpoint limit(Dimension d, long perMinute) {
            if (perMinute < 1) {
                throw new IllegalArgumentException("a limit must be at least 1");
            }
            if (d == Dimension.REQUESTS) {
                return limitPerMinute((int) Math.min(Integer.MAX_VALUE, perMinute));
            }
            synchronized (lock) {
                buckets.put(d, new FakeBucket(perMinute, perMinute / 60.0, time.nanos()));
            }
            return this;
        }

        /**
         * Changes a limit at run time to {@code perMinute}: the bucket keeps what it holds (cut to
         * the new size) and refills at the new rate from now. Without that limit yet, sets it, full.
         *
         * @param d what the limit counts
         * @param perMinute the new limit per minute, more than 0
         * @return this endpoint
         */
        public Endpoint changeLimit(Dimension d, double perMinute) {
            positive(perMinute);
            synchronized (lock) {
                FakeBucket b = buckets.get(d);
                if (b == null) {
                    buckets.put(d, new FakeBucket(perMinute, perMinute / 60.0, time.nanos()));
                } else {
                    b.change(perMinute, perMinute / 60.0, time.nanos());
                }
                if (d == Dimension.REQUESTS) {
                    limitPerWindow = (int) Math.max(1, Math.round(perMinute));
                    windowName = "min";
                }
            }
            return this;
        }

        /**
         * @param perMinute combined (input + output) tokens per minute, full at the start
         * @return this endpoint
         */
        public Endpoint tokenLimitPerMinute(long perMinute) {
            return limit(Dimension.TOKENS, perMinute);
        }

        /**
         * @param perMinute input tokens per minute, full at the start
         * @return this endpoint
         */
        public Endpoint inputTokenLimitPerMinute(long perMinute) {
            return limit(Dimension.INPUT_TOKENS, perMinute);
        }

        /**
         * @param perMinute output tokens per minute, full at the start
         * @return this endpoint
         */
        public Endpoint outputTokenLimitPerMinute(long perMinute) {
            return limit(Dimension.OUTPUT_TOKENS, perMinute);
        }

        /**
         * @param d the dimension to stop limiting
         * @return this endpoint
         */
        public Endpoint noLimit(Dimension d) {
            synchronized (lock) {
                buckets.remove(d);
                if (d == Dimension.REQUESTS) {
                    limitPerWindow = 0;
                }
            }
            return this;
        }

        /**
         * @param requests the most requests the request bucket holds (default: the limit)
         * @return this endpoint
         */
        public Endpoint burst(int requests) {
            synchronized (lock) {
                FakeBucket b = buckets.get(Dimension.REQUESTS);
                if (b != null) {
                    b.capacity(requests);
                }
            }
            return this;
        }

        /** @return this endpoint, without any limit (requests and tokens) */
        public Endpoint unlimited() {
            synchronized (lock) {
                buckets.clear();
                limitPerWindow = 0;
            }
            return this;
        }

        /**
         * @param on whether a refused (429) request also takes from the request bucket
         * @return this endpoint
         */
        public Endpoint countRefused(boolean on) {
            synchronized (lock) {
                countRefused = on;
            }
            return this;
        }

        /**
         * @param on whether this endpoint states no limit at all, as Gemini's and Bedrock's real
         *     429s do: no numbers in messages, no rate-limit headers, no retry-after (default off)
         * @return this endpoint
         */
        public Endpoint statesNoLimit(boolean on) {
            synchronized (lock) {
                statesNoLimit = on;
            }
            return this;
        }

        /**
         * Answers use a share of the request's output ceiling between {@code min} and {@code max}
         * (e.g. 0.2 and 1.0), fixed per request by a hash of its body.
         *
         * @param min the smallest share, in (0, 1]
         * @param max the largest share, in [min, 1]
         * @return this endpoint
         */
        public Endpoint outputShare(double min, double max) {
            if (!(min > 0 && min <= max && max <= 1)) {
                throw new IllegalArgumentException("need 0 < min <= max <= 1, was " + min + ", " + max);
            }
            synchronized (lock) {
                shareMin = min;
                shareMax = max;
            }
            return this;
        }

        /**
         * Switches to a phase now (and drops a running script).
         *
         * @param p the phase
         * @return this endpoint
         */
        public Endpoint phase(Phase p) {
            synchronized (lock) {
                phase = p;
                script = List.of();
            }
            return this;
        }

        /** @return the phase now */
        public Phase phase() {
            synchronized (lock) {
                return phaseNow(time.nanos());
            }
        }

        /**
         * Answers the next {@code n} requests that would be answered normally with a 429, as
         * {@link Phase#THROTTLED} does (its wait: {@link #throttledRetryAfter}), then normally:
         * a rate limit met whatever time the calls come at.
         *
         * @param n requests, at least 0
         * @return this endpoint
         */
        public Endpoint throttleFirst(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("n must be at least 0, was " + n);
            }
            synchronized (lock) {
                throttleLeft = n;
            }
            return this;
        }

        /**
         * Runs phases one after another from now; the last one stays.
         *
         * @param stages the stages, e.g. normal 5 s, throttled 10 s, outage 10 s, normal
         * @return this endpoint
         */
        public Endpoint script(Stage... stages) {
            synchronized (lock) {
                script = List.of(stages);
                scriptStart = time.nanos();
            }
            return this;
        }

        /**
         * @param d the wait stated in {@link Phase#THROTTLED} (default 2 s)
         * @return this endpoint
         */
        public Endpoint throttledRetryAfter(Duration d) {
            synchronized (lock) {
                throttledRetryAfter = d;
            }
            return this;
        }

        /**
         * @param d how long each answer takes (default none); a real sleep
         * @return this endpoint
         */
        public Endpoint latency(Duration d) {
            synchronized (lock) {
                latency = d;
            }
            return this;
        }

        /**
         * @param s the style of every answer
         * @return this endpoint
         */
        public Endpoint style(Style s) {
            synchronized (lock) {
                style = s;
                every = 0;
            }
            return this;
        }

        /**
         * @param s a style for every {@code n}-th successful answer (the others plain)
         * @param n how often
         * @return this endpoint
         */
        public Endpoint styleEvery(Style s, int n) {
            synchronized (lock) {
                everyStyle = s;
                every = n;
            }
            return this;
        }

        /**
         * Fails a fraction of the calls this endpoint's limits admit, from now; see the class
         * description. Starts the endpoint's random sequence again from {@link Faults#seed()}.
         *
         * @param f the faults; {@link Faults#none()} to stop failing
         * @return this endpoint
         */
        public Endpoint faults(Faults f) {
            Objects.requireNonNull(f, "faults");
            synchronized (lock) {
                faults = f;
                faultRandom = new SplittableRandom(f.seed());
            }
            return this;
        }

        /** @return the faults set (default {@link Faults#none()}) */
        public Faults faults() {
            synchronized (lock) {
                return faults;
            }
        }

        /** @return the faults answered since the start or the last {@link #resetCounters()} */
        public Faults.Counts faultCounts() {
            return new Faults.Counts(faultUnavailable.get(), faultServerError.get(), faultSlow.get(),
                    faultDropped.get());
        }

        /** @return requests received */
        public int calls() {
            return calls.get();
        }

        /** @return 429 answers */
        public int rateLimited() {
            return rateLimited.get();
        }

        /**
         * @param d a dimension
         * @return 429 answers refused by that limit (the throttled phase's are in none)
         */
        public int rateLimited(Dimension d) {
            return rateLimitedBy.get(d).get();
        }

        /** @return 503 answers */
        public int unavailable() {
            return unavailable.get();
        }

        /** @return 500 answers (a fault's) */
        public int serverErrors() {
            return serverErrors.get();
        }

        /** @return 529 answers */
        public int overloaded() {
            return overloaded.get();
        }

        /** @return refused requests and keys: 400, 401 and 403 answers */
        public int refused() {
            return refused.get();
        }

        /** @return 200 answers */
        public int successes() {
            return successes.get();
        }

        /** @return the most requests in progress at once */
        public int maxInFlight() {
            return maxInFlight.get();
        }

        /** @return the usage of every successful answer, oldest first */
        public List<Usage> usages() {
            synchronized (usages) {
                return List.copyOf(usages);
            }
        }

        /** @return input tokens of all successful answers (cached ones included) */
        public long inputTokens() {
            return usages().stream().mapToLong(Usage::inputTokens).sum();
        }

        /** @return output tokens of all successful answers */
        public long outputTokens() {
            return usages().stream().mapToLong(Usage::outputTokens).sum();
        }

        /** @return cached input tokens of all successful answers */
        public long cachedInputTokens() {
            return usages().stream().mapToLong(Usage::cachedInputTokens).sum();
        }

        /** @return when each request arrived, oldest first */
        public List<Instant> arrivals() {
            List<Instant> copy;
            synchronized (arrivals) {
                copy = new ArrayList<>(arrivals);
            }
            Collections.sort(copy);
            return List.copyOf(copy);
        }

        /** @return requests per epoch second */
        public SortedMap<Long, Integer> perSecond() {
            SortedMap<Long, Integer> out = new TreeMap<>();
            for (Instant a : arrivals()) {
                out.merge(a.getEpochSecond(), 1, Integer::sum);
            }
            return out;
        }

        /**
         * @param window a window length
         * @return the most requests that arrived within any window of that length
         */
        public int maxInWindow(Duration window) {
            List<Instant> a = new ArrayList<>(arrivals());
            Collections.sort(a);
            int best = 0;
            int start = 0;
            for (int end = 0; end < a.size(); end++) {
                while (Duration.between(a.get(start), a.get(end)).compareTo(window) >= 0) {
                    start++;
                }
                best = Math.max(best, end - start + 1);
            }
            return best;
        }

        /** Sets every counter back to zero, and forgets the arrivals and usages. */
        public void resetCounters() {
            calls.set(0);
            rateLimited.set(0);
            rateLimitedBy.values().forEach(c -> c.set(0));
            unavailable.set(0);
            overloaded.set(0);
            refused.set(0);
            serverErrors.set(0);
            faultUnavailable.set(0);
            faultServerError.set(0);
            faultSlow.set(0);
            faultDropped.set(0);
            successes.set(0);
            maxInFlight.set(inFlight.get());
            arrivals.clear();
            usages.clear();
        }

        private Phase phaseNow(long now) {
            if (script.isEmpty()) {
                return phase;
            }
            long t = scriptStart;
            for (Stage s : script) {
                t += s.duration().toNanos();
                if (now - t < 0) {
                    return s.phase();
                }
            }
            return script.get(script.size() - 1).phase();
        }

        /** The answer to one batch line: this endpoint's content and usage rules, no limit, no counter. */
        private FakeBatches.Answer batchAnswer(Api api, String body) {
            FakeRequest req = FakeRequest.parse(api, "", body, JSON);
            String content = answerFor(req.lastUserMessage());
            Needs n;
            synchronized (lock) {
                n = needs(req, content, body, 0);
            }
            String m = api == Api.OPENAI_CHAT ? model : modelOf(api, req.model());
            String json = shapes.answer(api, String.valueOf(ids.incrementAndGet()), m, content, n.hitCeiling(),
                    new FakeShapes.Usage(n.input(), n.output(), 0), time.instant().getEpochSecond());
            return new FakeBatches.Answer(json, n.input(), n.output());
        }

        private void handle(HttpExchange ex) throws IOException {
            String whole = ex.getRequestURI().getPath();
            String below = whole.startsWith(prefix) ? whole.substring(prefix.length()) : whole;
            if (FakeBatches.serves(below)) {
                try {
                    batches.handle(ex, below, base().toString(), this::batchAnswer);
                } finally {
                    ex.close();
                }
                return;
            }
            int now = inFlight.incrementAndGet();
            maxInFlight.accumulateAndGet(now, Math::max);
            calls.incrementAndGet();
            arrivals.add(time.instant());
            try {
                String path = ex.getRequestURI().getPath();
                String sub = path.startsWith(prefix) ? path.substring(prefix.length()) : path;
                Api api = "POST".equals(ex.getRequestMethod()) ? FakeRequest.route(sub) : null;
                if (api == null) {
                    send(ex, new Reply(404, Map.of(), shapes.unknownUrl()));
                    return;
                }
                String body;
                try (InputStream in = ex.getRequestBody()) {
                    body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                }
                answer(ex, FakeRequest.parse(api, sub, body, JSON), body);
            } finally {
                inFlight.decrementAndGet();
                ex.close();
            }
        }

        /** What one call needs of each limit, and what it gives back when answered. */
        private record Needs(long input, long cached, long output, long reservedOutput, long countedInput,
                boolean hitCeiling) {
            double of(Dimension d) {
                return switch (d) {
                    case REQUESTS -> 1;
                    case INPUT_TOKENS -> countedInput;
                    case OUTPUT_TOKENS -> reservedOutput;
                    case TOKENS -> countedInput + reservedOutput;
                };
            }
        }

        private void answer(HttpExchange ex, FakeRequest req, String body) throws IOException {
            Api api = req.api();
            String hint = ex.getRequestHeaders().getFirst("x-fake-style");
            Phase p;
            Duration delay;
            String content;
            boolean cut;
            Needs needs;
            Refusal refusal = null;
            boolean noLimit;
            String throttledMessage = null;
            double throttledWait = 0;
            Map<String, String> limitHeaders;
            Faults.Kind fault = Faults.Kind.NONE;
            synchronized (lock) {
                long t = time.nanos();
                p = phaseNow(t);
                if (p == Phase.NORMAL && throttleLeft > 0) {
                    throttleLeft--;
                    p = Phase.THROTTLED;
                }
                delay = latency;
                noLimit = statesNoLimit;
                Style s = style;
                if (every > 0 && (successes.get() + 1) % every == 0) {
                    s = everyStyle;
                }
                if (hint != null) {
                    s = Style.valueOf(hint.trim().toUpperCase(Locale.ROOT));
                }
                content = styled(answerFor(req.lastUserMessage()), s);
                needs = needs(req, content, body, cachedHint(ex));
                cut = s == Style.TRUNCATED || needs.hitCeiling();
                for (FakeBucket b : buckets.values()) {
                    b.refill(t);
                }
                if (p == Phase.NORMAL) {
                    refusal = admit(needs);
                    if (refusal == null && !faults.isNone()) {
                        // one draw per admitted call, under the lock: the sequence follows the seed
                        fault = faults.kindOf(faultRandom.nextDouble());
                        if (fault == Faults.Kind.SLOW) {
                            long min = faults.slowMin().toNanos();
                            long span = faults.slowMax().toNanos() - min;
                            delay = delay.plusNanos(min + (span == 0 ? 0 : faultRandom.nextLong(span + 1)));
                        } else if (fault != Faults.Kind.NONE) {
                            giveBackOutput(needs.reservedOutput()); // no answer, no output
                        }
                    }
                }
                if (p == Phase.THROTTLED) {
                    throttledWait = throttledRetryAfter.toNanos() / 1e9;
                    throttledMessage = openAiRequestMessage(throttledWait, true);
                } else if (refusal != null && refusal.dimension() == Dimension.REQUESTS) {
                    throttledMessage = openAiRequestMessage(refusal.waitSeconds(), false);
                }
                limitHeaders = noLimit ? Map.of() : limitHeaders(api, p == Phase.THROTTLED ? throttledWait : -1);
            }
            if (!delay.isZero()) {
                try {
                    Thread.sleep(delay.toMillis(), delay.toNanosPart() % 1_000_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            switch (fault) {
                case DROPPED -> {
                    // no answer: handle() closes the exchange before any byte of a response, which
                    // closes the connection
                    faultDropped.incrementAndGet();
                    return;
                }
                case UNAVAILABLE -> {
                    faultUnavailable.incrementAndGet();
                    if (api == Api.ANTHROPIC_MESSAGES) {
                        overloaded.incrementAndGet();
                        send(ex, shapes.overloaded());
                    } else {
                        unavailable.incrementAndGet();
                        send(ex, shapes.outage(api));
                    }
                    return;
                }
                case SERVER_ERROR -> {
                    faultServerError.incrementAndGet();
                    serverErrors.incrementAndGet();
                    send(ex, shapes.serverError(api));
                    return;
                }
                case SLOW -> faultSlow.incrementAndGet();
                case NONE -> {
                    // an ordinary answer
                }
            }
            Reply reply = switch (p) {
                case THROTTLED -> {
                    rateLimited.incrementAndGet();
                    yield noLimit ? shapes.tooManyStatingNothing(api, Dimension.REQUESTS)
                            : shapes.throttled(api, throttledMessage, throttledWait, limitHeaders);
                }
                case OUTAGE -> {
                    unavailable.incrementAndGet();
                    yield shapes.outage(api);
                }
                case OVERLOADED -> {
                    overloaded.incrementAndGet();
                    yield shapes.overloaded();
                }
                case REJECTING -> {
                    refused.incrementAndGet();
                    yield shapes.rejecting(api);
                }
                case UNAUTHORIZED -> {
                    refused.incrementAndGet();
                    yield shapes.unauthorized(api);
                }
                case NORMAL -> refusal != null ? refusedReply(api, refusal, noLimit, throttledMessage, limitHeaders)
                        : success(req, content, cut, needs, limitHeaders);
            };
            send(ex, reply);
        }

        private Reply refusedReply(Api api, Refusal r, boolean noLimit, String openAiMessage,
                Map<String, String> limitHeaders) {
            rateLimited.incrementAndGet();
            rateLimitedBy.get(r.dimension()).incrementAndGet();
            if (noLimit) {
                return shapes.tooManyStatingNothing(api, r.dimension());
            }
            if (api == Api.OPENAI_CHAT && r.dimension() == Dimension.REQUESTS) {
                return shapes.throttled(api, openAiMessage, r.waitSeconds(), limitHeaders);
            }
            return shapes.tooMany(api, r, api == Api.OPENAI_CHAT ? model : modelOf(api, null), limitHeaders);
        }

        private Reply success(FakeRequest req, String content, boolean cut, Needs n, Map<String, String> limitHeaders) {
            synchronized (lock) {
                giveBackOutput(n.reservedOutput() - n.output());
            }
            successes.incrementAndGet();
            Instant at = time.instant();
            usages.add(new Usage(at, req.api(), n.input(), n.output(), n.cached()));
            String m = req.api() == Api.OPENAI_CHAT ? model : modelOf(req.api(), req.model());
            String json = shapes.answer(req.api(), String.valueOf(ids.incrementAndGet()), m, content, cut,
                    new FakeShapes.Usage(n.input(), n.output(), n.cached()), at.getEpochSecond());
            return new Reply(200, limitHeaders, json);
        }

        /** Gives {@code unused} reserved output tokens back to the output and combined limits; under the lock. */
        private void giveBackOutput(long unused) {
            if (unused > 0) {
                for (Dimension d : List.of(Dimension.OUTPUT_TOKENS, Dimension.TOKENS)) {
                    FakeBucket b = buckets.get(d);
                    if (b != null) {
                        b.giveBack(unused);
                    }
                }
            }
        }

        private String modelOf(Api api, String requested) {
            if (requested != null && !requested.isBlank()) {
                return requested;
            }
            return switch (api) {
                case OPENAI_CHAT -> model;
                case ANTHROPIC_MESSAGES -> "claude-haiku-4-5";
                case GEMINI_GENERATE_CONTENT -> "gemini-2.5-flash";
                case BEDROCK_CONVERSE -> "anthropic.claude-3-haiku-20240307-v1:0";
            };
        }

        private Needs needs(FakeRequest req, String content, String body, long cachedHint) {
            long input = Math.max(1, (req.inputChars() + 3) / 4);
            long cached = Math.max(0, Math.min(cachedHint, input));
            long natural = Math.max(1, (content.length() + 3) / 4);
            Integer max = req.maxTokens();
            long output;
            boolean hitCeiling = false;
            if (max != null && !Double.isNaN(shareMin)) {
                double fraction = (Math.floorMod(body.hashCode(), 10_007)) / 10_006.0;
                output = Math.max(1, Math.round((shareMin + (shareMax - shareMin) * fraction) * max));
            } else {
                output = max == null ? natural : Math.min(natural, max);
                hitCeiling = max != null && natural > max;
            }
            long reserved = max == null ? output : Math.max(max, output);
            // Anthropic does not count input read from the cache against its input tokens per minute
            long counted = req.api() == Api.ANTHROPIC_MESSAGES ? input - cached : input;
            return new Needs(input, cached, output, reserved, counted, hitCeiling);
        }

        /** Takes what the call needs from every limit, or nothing and says which limit refused. */
        private Refusal admit(Needs n) {
            Refusal refusal = null;
            for (Dimension d : List.of(Dimension.REQUESTS, Dimension.INPUT_TOKENS, Dimension.OUTPUT_TOKENS,
                    Dimension.TOKENS)) {
                FakeBucket b = buckets.get(d);
                double need = n.of(d);
                if (b == null || b.admits(need)) {
                    continue;
                }
                boolean never = need > b.capacity();
                if (d == Dimension.REQUESTS && countRefused) {
                    b.takeAnyway(1);
                }
                double wait = never ? b.secondsUntilFull() : b.secondsUntil(need);
                long perMinute = Math.round(b.perSecond() * 60);
                long used = Math.max(0, Math.min(perMinute, Math.round(b.capacity() - Math.max(0, b.level()))));
                refusal = new Refusal(d, perMinute, used, (long) need, wait, never);
                break;
            }
            if (refusal == null) {
                for (Dimension d : Dimension.values()) {
                    FakeBucket b = buckets.get(d);
                    if (b != null) {
                        b.take(n.of(d));
                    }
                }
            } else if (refusal.dimension() != Dimension.REQUESTS && countRefused) {
                FakeBucket r = buckets.get(Dimension.REQUESTS);
                if (r != null) {
                    r.takeAnyway(1);
                }
            }
            return refusal;
        }

        /**
         * OpenAI's words for a request 429: the request limit when one is set, else (the throttled
         * phase only) a token limit, so that no request pace is learned from it.
         */
        private String openAiRequestMessage(double waitSeconds, boolean throttled) {
            String per;
            long limit;
            FakeBucket tokens = buckets.get(Dimension.TOKENS);
            if (limitPerWindow > 0) {
                per = windowName.equals("s") ? "requests per sec (RPS)" : "requests per min (RPM)";
                limit = limitPerWindow;
            } else {
                per = "tokens per min (TPM)";
                limit = tokens != null && throttled ? Math.round(tokens.perSecond() * 60) : 40_000;
            }
            return "Rate limit reached for " + model + " in organization " + FakeShapes.ORG + " on " + per + ": Limit "
                    + limit + ", Used " + limit + ", Requested 1. Please try again in " + resetFormat(waitSeconds)
                    + ". Visit https://platform.openai.com/account/rate-limits to learn more.";
        }

        /** The API's rate-limit headers for the limits set; {@code throttledWait} ≥ 0 in the throttled phase. */
        private Map<String, String> limitHeaders(Api api, double throttledWait) {
            Map<String, String> h = new LinkedHashMap<>();
            FakeBucket requests = buckets.get(Dimension.REQUESTS);
            if (api == Api.OPENAI_CHAT) {
                if (requests != null) {
                    h.put("x-ratelimit-limit-requests", String.valueOf(limitPerWindow));
                    h.put("x-ratelimit-remaining-requests", String.valueOf(remaining(requests)));
                    h.put("x-ratelimit-reset-requests", resetFormat(requests.secondsUntilFull()));
                }
                FakeBucket tokens = buckets.get(Dimension.TOKENS);
                if (tokens != null) {
                    h.put("x-ratelimit-limit-tokens", String.valueOf(Math.round(tokens.perSecond() * 60)));
                    h.put("x-ratelimit-remaining-tokens", String.valueOf(remaining(tokens)));
                    h.put("x-ratelimit-reset-tokens", resetFormat(tokens.secondsUntilFull()));
                }
                if (throttledWait >= 0) {
                    h.put("x-ratelimit-remaining-requests", "0");
                    h.put("x-ratelimit-reset-requests", resetFormat(throttledWait));
                }
            } else if (api == Api.ANTHROPIC_MESSAGES) {
                Instant now = time.instant();
                for (Map.Entry<Dimension, FakeBucket> e : buckets.entrySet()) {
                    String name = "anthropic-ratelimit-" + e.getKey().name().toLowerCase(Locale.ROOT).replace('_', '-') + "-";
                    FakeBucket b = e.getValue();
                    h.put(name + "limit", String.valueOf(Math.round(b.perSecond() * 60)));
                    h.put(name + "remaining", String.valueOf(remaining(b)));
                    h.put(name + "reset", rfc3339(now, b.secondsUntilFull()));
                }
                if (throttledWait >= 0) {
                    h.put("anthropic-ratelimit-requests-remaining", "0");
                    h.put("anthropic-ratelimit-requests-reset", rfc3339(now, throttledWait));
                }
            }
            return h;
        }
    }

    private static long remaining(FakeBucket b) {
        return (long) Math.max(0, Math.floor(b.level()));
    }

    private static String rfc3339(Instant now, double seconds) {
        return now.plusNanos((long) Math.ceil(seconds * 1e9)).truncatedTo(ChronoUnit.MILLIS).toString();
    }

    private static void positive(double n) {
        if (!(n > 0 && n < Double.POSITIVE_INFINITY)) {
            throw new IllegalArgumentException("a limit must be more than 0, was " + n);
        }
    }

    private static long cachedHint(HttpExchange ex) {
        String v = ex.getRequestHeaders().getFirst("x-fake-cached-tokens");
        if (v == null) {
            return 0;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static String styled(String content, Style s) {
        return switch (s) {
            case FENCED -> "```json\n" + content + "\n```";
            case CHATTY -> "Sure! Here is the translation you asked for:\n\n" + content
                    + "\n\nLet me know if you need anything else.";
            case TRUNCATED -> content.substring(0, content.length() / 2);
            case PLAIN -> content;
        };
    }

    /** The deterministic answer to a user message; see the class description. */
    static String answerFor(String user) {
        try {
            JsonNode v = JSON.readTree(user);
            if (v != null && v.isObject() && v.get("segments") instanceof ArrayNode segs
                    && v.get("target") != null && v.get("target").isTextual()) {
                ObjectNode answer = JSON.createObjectNode();
                ArrayNode out = answer.putArray("segments");
                for (JsonNode seg : segs) {
                    out.add("<TRANSLATED:" + v.get("target").asText() + "> " + (seg.isTextual() ? seg.asText() : seg.toString()));
                }
                return answer.toString();
            }
        } catch (Exception notJson) {
            // an ordinary prompt
        }
        return "<ECHO> " + user;
    }

    /** OpenAI's reset durations: {@code 120ms}, {@code 1s}, {@code 6m0s}. */
    static String resetFormat(double seconds) {
        if (seconds < 1) {
            return Math.max(1, Math.round(seconds * 1000)) + "ms";
        }
        long s = (long) Math.ceil(seconds);
        if (s < 60) {
            return s + "s";
        }
        return (s / 60) + "m" + (s % 60) + "s";
    }

    private static void send(HttpExchange ex, Reply r) throws IOException {
        byte[] bytes = r.body().getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("content-type", "application/json");
        r.headers().forEach((k, v) -> ex.getResponseHeaders().set(k, v));
        ex.sendResponseHeaders(r.status(), bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }
}
