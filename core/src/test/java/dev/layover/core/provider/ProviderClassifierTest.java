package dev.layover.core.provider;

import static dev.layover.core.provider.ReplayServer.reply;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import dev.layover.testing.PureTest;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.Test;

/** The classifier's API: JDK exceptions, the HttpResponse path, outcomes, limits and robustness. */
@PureTest
class ProviderClassifierTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    // ---- exceptions --------------------------------------------------------------------------

    @Test
    void jdkNetworkFailuresAreTransient() {
        for (Throwable t : List.of(new SocketTimeoutException("Read timed out"),
                new HttpTimeoutException("request timed out"), new ConnectException("Connection refused"),
                new IOException("Connection reset"))) {
            Classification c = CLASSIFIER.classify(t).orElseThrow();
            assertEquals(FailureClass.TRANSIENT, c.failureClass(), t.toString());
            assertEquals(Provider.UNKNOWN, c.provider());
            assertEquals(0, c.httpStatus());
            assertNull(c.retryAfter());
            assertNull(c.resetAt());
        }
    }

    @Test
    void networkFailureDeepInTheCauseChainIsFound() {
        Throwable t = new CompletionException(new ExecutionException(new UncheckedIOException(
                new SocketTimeoutException("timeout"))));
        assertEquals(FailureClass.TRANSIENT, CLASSIFIER.classify(t).orElseThrow().failureClass());
    }

    @Test
    void jobBugsAndLocalFileErrorsAreNotProviderFailures() {
        assertTrue(CLASSIFIER.classify(new IllegalStateException("bug")).isEmpty());
        assertTrue(CLASSIFIER.classify(new NullPointerException()).isEmpty());
        assertTrue(CLASSIFIER.classify(new FileNotFoundException("prompt.txt")).isEmpty());
        assertTrue(CLASSIFIER.classify(new NoSuchFileException("/tmp/x")).isEmpty());
        assertTrue(CLASSIFIER.classify((Throwable) null).isEmpty());
        assertTrue(CLASSIFIER.outcomeOf(new RuntimeException("bug")).isEmpty());
    }

    @Test
    void aProviderHintLabelsJdkNetworkFailures() {
        Classification c = CLASSIFIER.classify(Provider.GEMINI, new SocketTimeoutException("Read timed out")).orElseThrow();
        assertEquals(Provider.GEMINI, c.provider());
        assertEquals(FailureClass.TRANSIENT, c.failureClass());
        assertTrue(CLASSIFIER.classify(Provider.GEMINI, new IllegalStateException("bug")).isEmpty(),
                "a hint does not make a bug a provider failure");
        assertEquals(Provider.UNKNOWN, CLASSIFIER.classify(Provider.UNKNOWN, new ConnectException("refused"))
                .orElseThrow().provider());
    }

    @Test
    void noResponseIsAlwaysATransientProviderFailure() {
        Classification deadline = CLASSIFIER.classifyNoResponse(Provider.ANTHROPIC,
                new java.util.concurrent.TimeoutException("30 s deadline")).orElseThrow();
        assertEquals(FailureClass.TRANSIENT, deadline.failureClass());
        assertEquals(Provider.ANTHROPIC, deadline.provider());
        assertEquals(0, deadline.httpStatus());
        assertNull(deadline.retryAfter());
        assertEquals("no response: TimeoutException: 30 s deadline", deadline.reason());
        Classification none = CLASSIFIER.classifyNoResponse(null, null).orElseThrow();
        assertEquals(Provider.UNKNOWN, none.provider());
        assertEquals("no response", none.reason());
        Classification io = CLASSIFIER.classifyNoResponse(Provider.OPENAI, new HttpTimeoutException("timed out"))
                .orElseThrow();
        assertEquals(new Outcome.Transient(io.reason(), null), io.toOutcome());
        assertEquals(Provider.OPENAI, io.provider());
    }

    @Test
    void outcomeExceptionIsLeftToTheEngine() {
        OutcomeException e = Outcome.transientFailure("x", new SocketTimeoutException()).toException();
        assertTrue(CLASSIFIER.classify(e).isEmpty());
    }

    @Test
    void cyclicCauseChainEnds() {
        RuntimeException a = new RuntimeException("a");
        RuntimeException b = new RuntimeException("b", a);
        a.initCause(b);
        assertTrue(CLASSIFIER.classify(a).isEmpty());
    }

    @Test
    void transientOutcomeKeepsTheException() {
        SocketTimeoutException e = new SocketTimeoutException("Read timed out");
        Outcome o = CLASSIFIER.outcomeOf(e).orElseThrow();
        assertEquals(new Outcome.Transient("SocketTimeoutException: Read timed out", e), o);
    }

    // ---- outcome mapping ---------------------------------------------------------------------

    @Test
    void everyClassMapsToItsOutcome() {
        Duration d = Duration.ofSeconds(5);
        Instant at = NOW.plusSeconds(60);
        assertEquals(new Outcome.RateLimited(d, "r"), c(FailureClass.RATE_LIMITED, d, null).toOutcome());
        assertEquals(new Outcome.QuotaExhausted(at, "r"), c(FailureClass.QUOTA_EXHAUSTED, d, at).toOutcome());
        assertEquals(new Outcome.Overloaded(d, "r"), c(FailureClass.OVERLOADED, d, null).toOutcome());
        assertEquals(new Outcome.Transient("r", null), c(FailureClass.TRANSIENT, null, null).toOutcome());
        assertEquals(new Outcome.AuthRefused("r"), c(FailureClass.AUTH_REFUSED, null, null).toOutcome());
        assertEquals(new Outcome.Rejected("r"), c(FailureClass.BAD_REQUEST, null, null).toOutcome());
    }

    @Test
    void quotaWithOnlyARetryAfterResetsThatLongAfterNow() {
        Classification c = CLASSIFIER.classify(Provider.OPENAI, 429, Map.of("retry-after", List.of("90")), """
                {"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}""").orElseThrow();
        assertEquals(FailureClass.QUOTA_EXHAUSTED, c.failureClass());
        assertEquals(NOW.plusSeconds(90), c.resetAt());
        assertEquals(new Outcome.QuotaExhausted(NOW.plusSeconds(90), c.reason()), c.toOutcome());
    }

    private static Classification c(FailureClass k, Duration d, Instant at) {
        return new Classification(k, d, at, "r", Provider.UNKNOWN, 0);
    }

    // ---- limits --------------------------------------------------------------------------------

    @Test
    void aStatedResetFurtherThanAWeekSurvivesExactly() {
        // Anthropic's workspace limit, two months away; OpenAI-style retry-after of 20 days
        Classification regain = CLASSIFIER.classify(Provider.ANTHROPIC, 400, null, """
                {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified \
                API usage limits. You will regain access on 2026-08-01 at 00:00 UTC."}}""").orElseThrow();
        assertEquals(FailureClass.QUOTA_EXHAUSTED, regain.failureClass());
        assertEquals(Instant.parse("2026-08-01T00:00:00Z"), regain.resetAt());
        assertEquals(WaitReading.AS_STATED, regain.waitReading());
        Classification quota = CLASSIFIER.classify(Provider.OPENAI, 429, Map.of("retry-after", List.of("1728000")), """
                {"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}""").orElseThrow();
        assertEquals(Duration.ofDays(20), quota.retryAfter());
        assertEquals(NOW.plus(Duration.ofDays(20)), quota.resetAt());
        assertEquals(WaitReading.AS_STATED, quota.waitReading());
    }

    @Test
    void onlyNonsenseBeyondMaxWaitIsCutAndTheClassificationSaysSo() {
        Classification absurd = CLASSIFIER.classify(Provider.UNKNOWN, 429,
                Map.of("retry-after", List.of("99999999999")), null).orElseThrow();
        assertEquals(ProviderClassifier.DEFAULT_MAX_WAIT, absurd.retryAfter());
        assertEquals(WaitReading.CLAMPED, absurd.waitReading());
        Classification farRegain = CLASSIFIER.classify(Provider.ANTHROPIC, 400, null, """
                {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified \
                API usage limits. You will regain access on 2099-01-01 at 00:00 UTC."}}""").orElseThrow();
        assertEquals(NOW.plus(ProviderClassifier.DEFAULT_MAX_WAIT), farRegain.resetAt());
        assertEquals(WaitReading.CLAMPED, farRegain.waitReading());
    }

    @Test
    void anUnreadableStatedWaitIsSkippedAndTheClassificationSaysSo() {
        Classification soon = CLASSIFIER.classify(Provider.UNKNOWN, 429, Map.of("retry-after", List.of("soon"),
                "x-ratelimit-reset-tokens", List.of("2s")), null).orElseThrow();
        assertEquals(Duration.ofSeconds(2), soon.retryAfter(), "the next source is used");
        assertEquals(WaitReading.UNREADABLE, soon.waitReading());
        Classification badDate = CLASSIFIER.classify(Provider.ANTHROPIC, 400, null, """
                {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified \
                API usage limits. You will regain access on 2026-13-45 at 00:00 UTC."}}""").orElseThrow();
        assertEquals(FailureClass.QUOTA_EXHAUSTED, badDate.failureClass());
        assertNull(badDate.resetAt(), "never guessed: unknown, so the engine parks it");
        assertEquals(WaitReading.UNREADABLE, badDate.waitReading());
        Classification plain = CLASSIFIER.classify(Provider.UNKNOWN, 429, Map.of("retry-after", List.of("3")), null)
                .orElseThrow();
        assertEquals(WaitReading.AS_STATED, plain.waitReading());
    }

    @Test
    void aShortConfiguredMaxWaitCutsEvenRealResets() {
        ProviderClassifier shortWait = ProviderClassifier.builder()
                .clock(Clock.fixed(NOW, ZoneOffset.UTC)).maxWait(Duration.ofMinutes(1)).build();
        Classification rate = shortWait.classify(Provider.UNKNOWN, 429, Map.of("retry-after", List.of("3600")), null)
                .orElseThrow();
        assertEquals(Duration.ofMinutes(1), rate.retryAfter());
        assertEquals(WaitReading.CLAMPED, rate.waitReading());
        Classification regain = shortWait.classify(Provider.ANTHROPIC, 400, null, """
                {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified \
                API usage limits. You will regain access on 2026-06-01 at 00:00 UTC."}}""").orElseThrow();
        assertEquals(NOW.plus(Duration.ofMinutes(1)), regain.resetAt());
        assertEquals(WaitReading.CLAMPED, regain.waitReading());
    }

    @Test
    void builderDefaultsAndValidation() {
        ProviderClassifier c = ProviderClassifier.create();
        assertEquals(Duration.ofDays(366), c.maxWait());
        assertEquals(ZoneOffset.UTC, c.clock().getZone());
        assertSame(ProviderClassifier.defaults(), ProviderClassifier.defaults());
        assertThrows(IllegalArgumentException.class, () -> ProviderClassifier.builder().maxWait(Duration.ofSeconds(-1)));
        assertThrows(NullPointerException.class, () -> ProviderClassifier.builder().clock(null));
        assertEquals(Duration.ZERO, ProviderClassifier.builder().maxWait(Duration.ZERO).build()
                .classify(Provider.UNKNOWN, 429, Map.of("retry-after", List.of("5")), null).orElseThrow().retryAfter());
    }

    @Test
    void reasonIsCutAndFreeOfControlCharacters() {
        Classification c = CLASSIFIER.classify(Provider.UNKNOWN, 400, null,
                "{\"error\":{\"message\":\"line1\\nline2\\t" + "y".repeat(2000) + "\"}}").orElseThrow();
        assertTrue(c.reason().length() <= 500);
        assertTrue(c.reason().startsWith("line1 line2 y"), c.reason());
        assertFalse(c.reason().chars().anyMatch(Character::isISOControl));
    }

    // ---- never throws ------------------------------------------------------------------------

    @Test
    void randomGarbageNeverThrows() {
        Random random = new Random(42);
        String[] fragments = {"{", "}", "[", "]", "\"error\"", ":", ",", "\"type\"", "\"overloaded_error\"",
            "data: ", "event: error\n", "\n\n", "\"details\"", "\"@type\"", "google.rpc.RetryInfo", "\"retryDelay\"",
            "\"-5s\"", "null", "999999999999999999999", "<html>", "\u0000", "\uD800", "per day", "Limit 5, Requested 9",
            "try again in 99999999999h", "regain access on 9999-99-99 at 99:99 UTC"};
        String[] headerValues = {"soon", "-1", "1e9", "Infinity", "", " ", "1,2,3", "Wed, 99 Oct 2015 07:28:00 GMT",
            "9223372036854775807", "6m0s", "1h1h", "0.0000000001", "\u0000"};
        String[] headerNames = {"retry-after", "Retry-After-Ms", "x-ratelimit-reset-tokens",
            "x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-reset", "anthropic-ratelimit-tokens-remaining",
            "x-amzn-ErrorType", null};
        for (int i = 0; i < 3000; i++) {
            StringBuilder body = new StringBuilder();
            int n = random.nextInt(20);
            for (int j = 0; j < n; j++) {
                body.append(fragments[random.nextInt(fragments.length)]);
            }
            java.util.HashMap<String, List<String>> headers = new java.util.HashMap<>();
            for (int j = random.nextInt(4); j > 0; j--) {
                List<String> values = new ArrayList<>();
                values.add(headerValues[random.nextInt(headerValues.length)]);
                if (random.nextBoolean()) {
                    values.add(null);
                }
                headers.put(headerNames[random.nextInt(headerNames.length)], values);
            }
            int status = random.nextInt(700) - 50;
            Provider p = Provider.values()[random.nextInt(Provider.values().length)];
            Optional<Classification> found = assertDoesNotThrow(() -> CLASSIFIER.classify(p, status, headers,
                    body.toString()));
            if (found.isEmpty()) {
                assertTrue(status >= 200 && status < 300, "only a clean 2xx is no failure: " + status);
                continue;
            }
            Classification c = found.get();
            assertNotNull(c.failureClass());
            assertNotNull(c.waitReading());
            assertNotNull(c.toOutcome());
            if (c.retryAfter() != null) {
                assertFalse(c.retryAfter().isNegative());
                assertTrue(c.retryAfter().compareTo(ProviderClassifier.DEFAULT_MAX_WAIT) <= 0);
            }
        }
    }

    // ---- HttpResponse path -------------------------------------------------------------------

    @Test
    void successfulResponseIsNoFailure() {
        assertTrue(CLASSIFIER.classify(Provider.OPENAI, response(200, Map.of(), "{\"id\":\"chatcmpl-1\"}")).isEmpty());
        assertTrue(CLASSIFIER.classify(Provider.ANTHROPIC,
                response(200, Map.of(), "{\"id\":\"msg_1\",\"type\":\"message\",\"content\":[]}")).isEmpty());
        assertTrue(CLASSIFIER.classify(Provider.OPENAI, (HttpResponse<?>) null).isEmpty());
    }

    @Test
    void errorEventInsideA200StreamIsAFailure() {
        Classification c = CLASSIFIER.classify(Provider.ANTHROPIC, response(200, Map.of(), """
                event: error
                data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

                """)).orElseThrow();
        assertEquals(FailureClass.OVERLOADED, c.failureClass());
    }

    @Test
    void byteArrayBodiesAreReadAndStreamsAreLeftAlone() {
        Classification bytes = CLASSIFIER.classify(Provider.OPENAI, response(429, Map.of(),
                "{\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}"
                        .getBytes(StandardCharsets.UTF_8))).orElseThrow();
        assertEquals(FailureClass.QUOTA_EXHAUSTED, bytes.failureClass());
        Classification stream = CLASSIFIER.classify(Provider.OPENAI,
                response(429, Map.of("retry-after", List.of("4")), InputStream.nullInputStream())).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, stream.failureClass());
        assertEquals(Duration.ofSeconds(4), stream.retryAfter());
    }

    @Test
    void realJdkHttpClientResponseIsClassified() throws Exception {
        try (ReplayServer server = new ReplayServer()) {
            server.answer(reply(429).header("retry-after", "20").json("""
                    {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has \
                    exceeded your per-minute rate limit"}}"""));
            HttpResponse<String> response = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(server.url() + "/v1/messages"))
                            .POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            Classification c = CLASSIFIER.classify(Provider.ANTHROPIC, response).orElseThrow();
            assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
            assertEquals(Duration.ofSeconds(20), c.retryAfter());
            assertEquals(429, c.httpStatus());
        }
    }

    private static <T> HttpResponse<T> response(int status, Map<String, List<String>> headers, T body) {
        return new HttpResponse<>() {
            @Override
            public int statusCode() {
                return status;
            }

            @Override
            public HttpRequest request() {
                return null;
            }

            @Override
            public Optional<HttpResponse<T>> previousResponse() {
                return Optional.empty();
            }

            @Override
            public HttpHeaders headers() {
                return HttpHeaders.of(headers, (a, b) -> true);
            }

            @Override
            public T body() {
                return body;
            }

            @Override
            public Optional<SSLSession> sslSession() {
                return Optional.empty();
            }

            @Override
            public URI uri() {
                return URI.create("http://127.0.0.1/");
            }

            @Override
            public HttpClient.Version version() {
                return HttpClient.Version.HTTP_1_1;
            }
        };
    }
}
