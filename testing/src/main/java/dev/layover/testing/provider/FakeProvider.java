package dev.layover.testing.provider;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fake LLM provider for tests and demos: a local HTTP server (127.0.0.1, a free port) speaking
 * OpenAI's chat completions API with real limit behaviour.
 *
 * <pre>{@code
 * try (FakeProvider fake = FakeProvider.start()) {
 *     fake.primary().limitPerMinute(60);             // token bucket, 60 requests/min
 *     fake.secondary().limitPerSecond(5);            // a second provider with its own bucket
 *     URI url = fake.primary().url();                // POST http://127.0.0.1:port/v1/chat/completions
 *     ...
 *     fake.primary().phase(FakeProvider.Phase.OUTAGE);  // from now on: 503
 *     assertEquals(0, fake.primary().rateLimited());
 * }
 * }</pre>
 *
 * <h2>Endpoints</h2>
 * Two, each with its own bucket, phase and counters: {@link #primary()} at {@code POST
 * /v1/chat/completions} and {@link #secondary()} at {@code POST /secondary/v1/chat/completions}
 * (a second provider, for fallback chains). Both start unlimited, in {@link Phase#NORMAL}.
 *
 * <h2>Requests and answers</h2>
 * The body is an OpenAI chat request, {@code {"model": ..., "messages": [{"role": "user",
 * "content": ...}, ...]}}. The answer echoes the last user message deterministically:
 * <ul>
 *   <li>when its content is JSON with a {@code segments} array of strings and a {@code target}
 *       language, the content is {@code {"segments":["<TRANSLATED:fr> text", ...]}};
 *   <li>otherwise it is {@code "<ECHO> " + content}.
 * </ul>
 * wrapped as a {@code chat.completion} object ({@code choices[0].message.content},
 * {@code finish_reason}, {@code usage}). The content's {@link Style} is {@link Style#PLAIN} unless
 * set on the endpoint ({@link Endpoint#style}, {@link Endpoint#styleEvery}) or asked for by the
 * request header {@code x-fake-style: fenced|chatty|truncated}: fenced wraps the JSON in
 * {@code ```json ... ```}, chatty surrounds it with prose, truncated cuts it in half with
 * {@code finish_reason: "length"}.
 *
 * <h2>Limits</h2>
 * {@link Endpoint#limitPerMinute} / {@link Endpoint#limitPerSecond} set a token bucket of R
 * requests per window, refilled continuously, holding at most {@link Endpoint#burst} requests
 * (default R). A request over it gets HTTP 429 with {@code retry-after} (whole seconds, rounded
 * up), {@code x-ratelimit-limit-requests}, {@code x-ratelimit-remaining-requests},
 * {@code x-ratelimit-reset-requests} (OpenAI's duration format, {@code 1s}, {@code 120ms},
 * {@code 6m0s}) and OpenAI's body {@code {"error":{"message":"Rate limit reached ...","type":"requests",
 * "param":null,"code":"rate_limit_exceeded"}}}. With {@link Endpoint#countRefused(boolean)} a refused
 * request also takes from the bucket (down to minus one bucket), as some providers do.
 *
 * <h2>Phases</h2>
 * {@link Endpoint#phase(Phase)} switches at once; {@link Endpoint#script(Stage...)} runs phases one
 * after another from now (the last one stays). {@link Phase#THROTTLED}: every request 429 with
 * {@code retry-after} of {@link Endpoint#throttledRetryAfter} (its message names the request limit
 * when one is set, else a token limit, so that no request pace is learned from it); {@link Phase#OUTAGE}: 503;
 * {@link Phase#OVERLOADED}: Anthropic's 529 {@code overloaded_error}; {@link Phase#REJECTING}: 400
 * {@code invalid_request_error}; {@link Phase#UNAUTHORIZED}: 401 {@code invalid_api_key};
 * {@link Phase#NORMAL}: answers within the bucket ("recovered" is NORMAL again).
 *
 * <h2>Counters</h2>
 * Per endpoint: {@link Endpoint#calls()}, {@link Endpoint#rateLimited()},
 * {@link Endpoint#unavailable()} (503), {@link Endpoint#overloaded()} (529),
 * {@link Endpoint#refused()} (400/401), {@link Endpoint#successes()},
 * {@link Endpoint#maxInFlight()}, {@link Endpoint#perSecond()} (calls per epoch second),
 * {@link Endpoint#arrivals()} and {@link Endpoint#maxInWindow(Duration)}.
 *
 * <p>Thread-safe; answers concurrently.
 */
public final class FakeProvider implements AutoCloseable {

    /** The primary endpoint's path. */
    public static final String PRIMARY_PATH = "/v1/chat/completions";
    /** The secondary endpoint's path. */
    public static final String SECONDARY_PATH = "/secondary/v1/chat/completions";

    /** What an endpoint does with requests. */
    public enum Phase {
        /** Answers, within its bucket (429 beyond it). */
        NORMAL,
        /** Every request: 429 {@code rate_limit_exceeded} with a retry-after. */
        THROTTLED,
        /** Every request: 503, OpenAI's "The server is overloaded or not ready yet." */
        OUTAGE,
        /** Every request: 529, Anthropic's {@code overloaded_error}. */
        OVERLOADED,
        /** Every request: 400 {@code invalid_request_error}. */
        REJECTING,
        /** Every request: 401 {@code invalid_api_key}. */
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
        /** Cut in half, {@code finish_reason: "length"}. */
        TRUNCATED
    }

    /**
     * One stage of a {@link Endpoint#script(Stage...)}.
     *
     * @param phase the phase
     * @param duration how long it lasts
     */
    public record Stage(Phase phase, Duration duration) {}

    private final HttpServer server;
    private final ExecutorService executor;
    private final Endpoint primary;
    private final Endpoint secondary;
    private final AtomicLong ids = new AtomicLong();

    private FakeProvider() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 256);
        executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "fake-provider");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        primary = new Endpoint(PRIMARY_PATH, "gpt-4o-mini");
        secondary = new Endpoint(SECONDARY_PATH, "claude-haiku");
        server.createContext(PRIMARY_PATH, primary::handle);
        server.createContext(SECONDARY_PATH, secondary::handle);
        server.start();
    }

    /**
     * Starts a fake provider on 127.0.0.1 and a free port.
     *
     * @return the running server
     */
    public static FakeProvider start() {
        try {
            return new FakeProvider();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start the fake provider: " + e.getMessage(), e);
        }
    }

    /** @return {@code http://127.0.0.1:port} */
    public URI baseUri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** @return the endpoint at {@value #PRIMARY_PATH} */
    public Endpoint primary() {
        return primary;
    }

    /** @return the endpoint at {@value #SECONDARY_PATH}, a second provider */
    public Endpoint secondary() {
        return secondary;
    }

    /** Stops the server at once. */
    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }

    /** One endpoint: its bucket, phase, style and counters. */
    public final class Endpoint {
        private final String path;
        private final String model;
        private final Object lock = new Object();
        private double perSecond; // 0: unlimited
        private double capacity;
        private double tokens;
        private long refilledAt = System.nanoTime();
        private boolean countRefused;
        private Phase phase = Phase.NORMAL;
        private List<Stage> script = List.of();
        private long scriptStart;
        private Duration throttledRetryAfter = Duration.ofSeconds(2);
        private Duration latency = Duration.ZERO;
        private Style style = Style.PLAIN;
        private Style everyStyle;
        private int every;
        private int limitPerWindow;
        private String windowName = "min";

        private final AtomicInteger calls = new AtomicInteger();
        private final AtomicInteger rateLimited = new AtomicInteger();
        private final AtomicInteger unavailable = new AtomicInteger();
        private final AtomicInteger overloaded = new AtomicInteger();
        private final AtomicInteger refused = new AtomicInteger();
        private final AtomicInteger successes = new AtomicInteger();
        private final AtomicInteger inFlight = new AtomicInteger();
        private final AtomicInteger maxInFlight = new AtomicInteger();
        private final List<Instant> arrivals = Collections.synchronizedList(new ArrayList<>());

        private Endpoint(String path, String model) {
            this.path = path;
            this.model = model;
        }

        /** @return the full URL of this endpoint */
        public URI url() {
            return baseUri().resolve(path);
        }

        /** @return the path, {@value FakeProvider#PRIMARY_PATH} or {@value FakeProvider#SECONDARY_PATH} */
        public String path() {
            return path;
        }

        /**
         * A token bucket of {@code n} requests per minute, full at the start.
         *
         * @param n requests per minute
         * @return this endpoint
         */
        public Endpoint limitPerMinute(int n) {
            return limit(n, n / 60.0, "min");
        }

        /**
         * A token bucket of {@code n} requests per second, full at the start.
         *
         * @param n requests per second
         * @return this endpoint
         */
        public Endpoint limitPerSecond(int n) {
            return limit(n, n, "s");
        }

        private Endpoint limit(int n, double rate, String window) {
            if (n < 1) {
                throw new IllegalArgumentException("a limit must be at least 1");
            }
            synchronized (lock) {
                limitPerWindow = n;
                perSecond = rate;
                capacity = n;
                tokens = n;
                windowName = window;
                refilledAt = System.nanoTime();
            }
            return this;
        }

        /**
         * @param requests the most requests the bucket holds (default: the limit)
         * @return this endpoint
         */
        public Endpoint burst(int requests) {
            synchronized (lock) {
                capacity = requests;
                tokens = Math.min(tokens, requests);
            }
            return this;
        }

        /** @return this endpoint, without a limit */
        public Endpoint unlimited() {
            synchronized (lock) {
                perSecond = 0;
            }
            return this;
        }

        /**
         * @param on whether a refused (429) request also takes from the bucket
         * @return this endpoint
         */
        public Endpoint countRefused(boolean on) {
            synchronized (lock) {
                countRefused = on;
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
                return phaseNow(System.nanoTime());
            }
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
                scriptStart = System.nanoTime();
            }
            return this;
        }

        /**
         * @param d the retry-after sent in {@link Phase#THROTTLED} (default 2 s)
         * @return this endpoint
         */
        public Endpoint throttledRetryAfter(Duration d) {
            synchronized (lock) {
                throttledRetryAfter = d;
            }
            return this;
        }

        /**
         * @param d how long each answer takes (default none)
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

        /** @return requests received */
        public int calls() {
            return calls.get();
        }

        /** @return 429 answers */
        public int rateLimited() {
            return rateLimited.get();
        }

        /** @return 503 answers */
        public int unavailable() {
            return unavailable.get();
        }

        /** @return 529 answers */
        public int overloaded() {
            return overloaded.get();
        }

        /** @return 400 and 401 answers */
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

        /** Sets every counter back to zero. */
        public void resetCounters() {
            calls.set(0);
            rateLimited.set(0);
            unavailable.set(0);
            overloaded.set(0);
            refused.set(0);
            successes.set(0);
            maxInFlight.set(inFlight.get());
            arrivals.clear();
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

        private void handle(HttpExchange ex) throws IOException {
            int now = inFlight.incrementAndGet();
            maxInFlight.accumulateAndGet(now, Math::max);
            calls.incrementAndGet();
            arrivals.add(Instant.now());
            try {
                if (!"POST".equals(ex.getRequestMethod()) || !ex.getRequestURI().getPath().equals(path)) {
                    send(ex, 404, Map.of(), "{\"error\":{\"message\":\"Unknown request URL\",\"type\":\"invalid_request_error\","
                            + "\"param\":null,\"code\":\"unknown_url\"}}");
                    return;
                }
                String body;
                try (InputStream in = ex.getRequestBody()) {
                    body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                }
                answer(ex, body);
            } finally {
                inFlight.decrementAndGet();
                ex.close();
            }
        }

        private void answer(HttpExchange ex, String body) throws IOException {
            Phase p;
            Duration delay;
            Style s;
            Map<String, String> limitHeaders = new LinkedHashMap<>();
            double waitSeconds = 0;
            boolean admitted = true;
            synchronized (lock) {
                long t = System.nanoTime();
                p = phaseNow(t);
                delay = latency;
                if (perSecond > 0) {
                    tokens = Math.min(capacity, tokens + (t - refilledAt) / 1e9 * perSecond);
                    refilledAt = t;
                }
                if (p == Phase.NORMAL && perSecond > 0) {
                    if (tokens >= 1) {
                        tokens -= 1;
                    } else {
                        admitted = false;
                        if (countRefused) {
                            tokens = Math.max(-capacity, tokens - 1);
                        }
                        waitSeconds = (1 - tokens) / perSecond;
                    }
                }
                if (perSecond > 0) {
                    limitHeaders.put("x-ratelimit-limit-requests", String.valueOf(limitPerWindow));
                    limitHeaders.put("x-ratelimit-remaining-requests", String.valueOf((long) Math.max(0, Math.floor(tokens))));
                    limitHeaders.put("x-ratelimit-reset-requests", resetFormat(Math.max(0, capacity - tokens) / perSecond));
                }
                if (p == Phase.THROTTLED) {
                    waitSeconds = throttledRetryAfter.toNanos() / 1e9;
                    limitHeaders.put("x-ratelimit-remaining-requests", "0");
                    limitHeaders.put("x-ratelimit-reset-requests", resetFormat(waitSeconds));
                }
                s = style;
                if (every > 0 && (successes.get() + 1) % every == 0) {
                    s = everyStyle;
                }
            }
            String hint = ex.getRequestHeaders().getFirst("x-fake-style");
            if (hint != null) {
                s = Style.valueOf(hint.trim().toUpperCase(java.util.Locale.ROOT));
            }
            if (!delay.isZero()) {
                try {
                    Thread.sleep(delay.toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            switch (p) {
                case THROTTLED -> tooMany(ex, limitHeaders, waitSeconds);
                case OUTAGE -> {
                    unavailable.incrementAndGet();
                    send(ex, 503, Map.of(), "{\"error\":{\"message\":\"The server is overloaded or not ready yet.\","
                            + "\"type\":\"server_error\",\"param\":null,\"code\":null}}");
                }
                case OVERLOADED -> {
                    overloaded.incrementAndGet();
                    send(ex, 529, Map.of(), "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}");
                }
                case REJECTING -> {
                    refused.incrementAndGet();
                    send(ex, 400, Map.of(), "{\"error\":{\"message\":\"Invalid value for 'messages': the request is malformed.\","
                            + "\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":null}}");
                }
                case UNAUTHORIZED -> {
                    refused.incrementAndGet();
                    send(ex, 401, Map.of(), "{\"error\":{\"message\":\"Incorrect API key provided: sk-fake****. You can find "
                            + "your API key at https://platform.openai.com/account/api-keys.\",\"type\":\"invalid_request_error\","
                            + "\"param\":null,\"code\":\"invalid_api_key\"}}");
                }
                default -> {
                    if (!admitted) {
                        tooMany(ex, limitHeaders, waitSeconds);
                    } else {
                        success(ex, body, s, limitHeaders);
                    }
                }
            }
        }

        private void tooMany(HttpExchange ex, Map<String, String> limitHeaders, double waitSeconds) throws IOException {
            rateLimited.incrementAndGet();
            Map<String, String> h = new LinkedHashMap<>(limitHeaders);
            long retry = Math.max(1, (long) Math.ceil(waitSeconds));
            h.put("retry-after", String.valueOf(retry));
            String per;
            int limit;
            synchronized (lock) {
                per = limitPerWindow <= 0 ? "tokens per min (TPM)"
                        : windowName.equals("s") ? "requests per sec (RPS)" : "requests per min (RPM)";
                // THROTTLED without a request limit names a token limit: no request pace to learn from it
                limit = limitPerWindow > 0 ? limitPerWindow : 40_000;
            }
            String msg = "Rate limit reached for " + model + " in organization org-fake on " + per + ": Limit "
                    + limit + ", Used " + limit + ", Requested 1. Please try again in "
                    + resetFormat(waitSeconds) + ". Visit https://platform.openai.com/account/rate-limits to learn more.";
            send(ex, 429, h, "{\"error\":{\"message\":" + MiniJson.quote(msg)
                    + ",\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}");
        }

        private void success(HttpExchange ex, String body, Style s, Map<String, String> limitHeaders) throws IOException {
            String user = lastUserMessage(body);
            String content = answerFor(user);
            String finish = "stop";
            switch (s) {
                case FENCED -> content = "```json\n" + content + "\n```";
                case CHATTY -> content = "Sure! Here is the translation you asked for:\n\n" + content
                        + "\n\nLet me know if you need anything else.";
                case TRUNCATED -> {
                    content = content.substring(0, content.length() / 2);
                    finish = "length";
                }
                default -> { }
            }
            successes.incrementAndGet();
            int promptTokens = user.length() / 4 + 1;
            int completionTokens = content.length() / 4 + 1;
            String json = "{\"id\":\"chatcmpl-fake-" + ids.incrementAndGet() + "\",\"object\":\"chat.completion\","
                    + "\"created\":" + Instant.now().getEpochSecond() + ",\"model\":" + MiniJson.quote(model)
                    + ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":" + MiniJson.quote(content)
                    + "},\"finish_reason\":\"" + finish + "\"}],\"usage\":{\"prompt_tokens\":" + promptTokens
                    + ",\"completion_tokens\":" + completionTokens + ",\"total_tokens\":" + (promptTokens + completionTokens)
                    + "}}";
            send(ex, 200, limitHeaders, json);
        }
    }

    /** The content of the last {@code user} message of a chat request ("" when there is none). */
    static String lastUserMessage(String body) {
        try {
            Object req = MiniJson.parse(body);
            if (req instanceof Map<?, ?> m && m.get("messages") instanceof List<?> msgs) {
                for (int i = msgs.size() - 1; i >= 0; i--) {
                    if (msgs.get(i) instanceof Map<?, ?> msg && "user".equals(msg.get("role"))) {
                        Object c = msg.get("content");
                        return c instanceof String str ? str : MiniJson.write(c);
                    }
                }
            }
        } catch (RuntimeException e) {
            return "";
        }
        return "";
    }

    /** The deterministic answer to a user message; see the class description. */
    static String answerFor(String user) {
        try {
            Object v = MiniJson.parse(user);
            if (v instanceof Map<?, ?> m && m.get("segments") instanceof List<?> segs && m.get("target") instanceof String target) {
                List<Object> out = new ArrayList<>();
                for (Object seg : segs) {
                    out.add("<TRANSLATED:" + target + "> " + seg);
                }
                Map<String, Object> answer = new LinkedHashMap<>();
                answer.put("segments", out);
                return MiniJson.write(answer);
            }
        } catch (RuntimeException notJson) {
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

    private static void send(HttpExchange ex, int status, Map<String, String> headers, String json) throws IOException {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("content-type", "application/json");
        headers.forEach((k, v) -> ex.getResponseHeaders().set(k, v));
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }
}
