package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.FailureClass;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.FakeProvider.Phase;
import dev.layover.testing.provider.FakeProvider.Stage;
import dev.layover.testing.provider.FakeProvider.Style;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The fake provider speaks OpenAI's shapes, and Layover's classifier reads them as the real ones. */
class FakeProviderTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final FakeProvider fake = FakeProvider.start();

    @AfterEach
    void close() {
        fake.close();
    }

    private static HttpResponse<String> post(URI url, String content, String style) throws Exception {
        String body = JSON.createObjectNode().put("model", "gpt-4o-mini")
                .set("messages", JSON.createArrayNode().add(JSON.createObjectNode().put("role", "user").put("content", content)))
                .toString();
        HttpRequest.Builder b = HttpRequest.newBuilder(url).POST(HttpRequest.BodyPublishers.ofString(body));
        if (style != null) {
            b.header("x-fake-style", style);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String content(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body()).path("choices").path(0).path("message").path("content").asText();
    }

    private static Classification classify(HttpResponse<String> r) {
        return ProviderClassifier.defaults().classify(Provider.OPENAI, r).orElseThrow();
    }

    @Test
    void aTranslationRequestIsAnsweredDeterministically() throws Exception {
        HttpResponse<String> r = post(fake.primary().url(), "{\"segments\":[\"Hello\",\"World\"],\"target\":\"fr\"}", null);
        assertEquals(200, r.statusCode());
        JsonNode answer = JSON.readTree(content(r));
        assertEquals("<TRANSLATED:fr> Hello", answer.get("segments").get(0).asText());
        assertEquals("<TRANSLATED:fr> World", answer.get("segments").get(1).asText());
        assertEquals("stop", JSON.readTree(r.body()).path("choices").path(0).path("finish_reason").asText());
        assertEquals("<ECHO> hi", content(post(fake.primary().url(), "hi", null)));
    }

    @Test
    void answersCanBeFencedChattyOrTruncated() throws Exception {
        String req = "{\"segments\":[\"a\"],\"target\":\"de\"}";
        assertTrue(content(post(fake.primary().url(), req, "fenced")).startsWith("```json\n{"));
        assertTrue(content(post(fake.primary().url(), req, "chatty")).startsWith("Sure!"));
        HttpResponse<String> cut = post(fake.primary().url(), req, "truncated");
        assertEquals("length", JSON.readTree(cut.body()).path("choices").path(0).path("finish_reason").asText());
        fake.secondary().styleEvery(Style.FENCED, 2);
        assertTrue(content(post(fake.secondary().url(), "x", null)).startsWith("<ECHO>"));
        assertTrue(content(post(fake.secondary().url(), "x", null)).startsWith("```json"));
    }

    @Test
    void overTheLimitItAnswers429WithOpenAisHeadersAndTheClassifierWaitsAsTold() throws Exception {
        fake.primary().limitPerMinute(2);
        assertEquals(200, post(fake.primary().url(), "1", null).statusCode());
        assertEquals(200, post(fake.primary().url(), "2", null).statusCode());
        HttpResponse<String> r = post(fake.primary().url(), "3", null);
        assertEquals(429, r.statusCode());
        assertEquals("30", r.headers().firstValue("retry-after").orElseThrow(), "one request per 30 s");
        assertEquals("2", r.headers().firstValue("x-ratelimit-limit-requests").orElseThrow());
        assertEquals("0", r.headers().firstValue("x-ratelimit-remaining-requests").orElseThrow());
        assertTrue(r.headers().firstValue("x-ratelimit-reset-requests").orElseThrow().matches("\\d+s|\\d+m\\d+s"));
        JsonNode err = JSON.readTree(r.body()).get("error");
        assertEquals("rate_limit_exceeded", err.get("code").asText());
        assertEquals("requests", err.get("type").asText());
        assertTrue(err.get("param").isNull());
        Classification c = classify(r);
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(Duration.ofSeconds(30), c.retryAfter());
        assertEquals(1, fake.primary().rateLimited());
        assertEquals(0, fake.secondary().calls(), "the secondary has its own bucket and counters");
        assertEquals(200, post(fake.secondary().url(), "4", null).statusCode());
    }

    @Test
    void refusedCallsCanCountAgainstTheLimit() throws Exception {
        fake.primary().limitPerSecond(1).countRefused(true);
        post(fake.primary().url(), "1", null);
        assertEquals(429, post(fake.primary().url(), "2", null).statusCode());
        Thread.sleep(1100);
        assertEquals(429, post(fake.primary().url(), "3", null).statusCode(), "the refused call took the refill");
    }

    @Test
    void scriptedPhasesGiveTheProvidersOwnErrorShapes() throws Exception {
        fake.primary().script(new Stage(Phase.THROTTLED, Duration.ofMillis(300)), new Stage(Phase.OUTAGE, Duration.ofMillis(300)),
                new Stage(Phase.OVERLOADED, Duration.ofMillis(300)), new Stage(Phase.NORMAL, Duration.ZERO));
        assertEquals(FailureClass.RATE_LIMITED, classify(post(fake.primary().url(), "x", null)).failureClass());
        Thread.sleep(300);
        HttpResponse<String> outage = post(fake.primary().url(), "x", null);
        assertEquals(503, outage.statusCode());
        assertEquals(FailureClass.OVERLOADED, classify(outage).failureClass());
        Thread.sleep(300);
        HttpResponse<String> overloaded = post(fake.primary().url(), "x", null);
        assertEquals(529, overloaded.statusCode());
        assertTrue(overloaded.body().contains("overloaded_error"));
        assertEquals(FailureClass.OVERLOADED, classify(overloaded).failureClass());
        Thread.sleep(300);
        assertEquals(200, post(fake.primary().url(), "x", null).statusCode(), "recovered");
        fake.primary().phase(Phase.REJECTING);
        assertEquals(FailureClass.BAD_REQUEST, classify(post(fake.primary().url(), "x", null)).failureClass());
        fake.primary().phase(Phase.UNAUTHORIZED);
        assertEquals(FailureClass.AUTH_REFUSED, classify(post(fake.primary().url(), "x", null)).failureClass());
        assertEquals(1, fake.primary().unavailable());
        assertEquals(1, fake.primary().overloaded());
        assertEquals(2, fake.primary().refused());
        assertEquals(1, fake.primary().successes());
        assertEquals(6, fake.primary().calls());
        assertEquals(6, fake.primary().perSecond().values().stream().mapToInt(Integer::intValue).sum());
        assertTrue(fake.primary().maxInFlight() >= 1);
    }
}
