package dev.layover.testing.provider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import dev.layover.testing.provider.FakeProvider.Api;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The fake provider's seeded faults over real HTTP (the JDK's client, one call at a time so that
 * the order of draws is the order of calls): the same seed repeats the same statuses, the shares
 * hold over 2,000 calls, a drop is a connection error, a slow answer is late, and only calls the
 * limits admitted meet a fault.
 */
@PureTest
class FakeProviderFaultsTest {

    /** A status for a call that got no answer. */
    static final int DROPPED = -1;

    private final FakeProvider fake = FakeProvider.start();
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    @AfterEach
    void close() {
        fake.close();
    }

    @Test
    void theSameSeedAnswersTheSameSequenceOfStatuses() throws Exception {
        Faults f = Faults.of(7).unavailable(0.1).serverError(0.1).dropped(0.1)
                .slow(0.05, Duration.ofMillis(1), Duration.ofMillis(3));
        FakeProvider.Endpoint ep = fake.primary().faults(f);
        List<Integer> first = statuses(ep.url(), 200);
        ep.faults(f); // the sequence starts again from the seed
        List<Integer> second = statuses(ep.url(), 200);
        assertEquals(first, second);
        assertTrue(first.contains(503) && first.contains(500) && first.contains(DROPPED) && first.contains(200), first.toString());

        ep.faults(f.seed(8));
        assertNotEquals(first, statuses(ep.url(), 200), "another seed, another sequence");
    }

    @Test
    void theSharesHoldOver2000CallsAndTheCountersAgree() throws Exception {
        FakeProvider.Endpoint ep = fake.primary()
                .faults(Faults.of(11).unavailable(0.05).serverError(0.03).dropped(0.02));
        int n = 2000;
        List<Integer> s = statuses(ep.url(), n);
        int unavailable = count(s, 503);
        int serverError = count(s, 500);
        int dropped = count(s, DROPPED);
        // within 4 standard deviations of the binomial's mean
        within(unavailable, n, 0.05);
        within(serverError, n, 0.03);
        within(dropped, n, 0.02);
        assertEquals(new Faults.Counts(unavailable, serverError, 0, dropped), ep.faultCounts());
        assertEquals(unavailable, ep.unavailable());
        assertEquals(serverError, ep.serverErrors());
        assertEquals(n - unavailable - serverError - dropped, ep.successes());
        assertEquals(n, ep.calls());

        ep.resetCounters();
        assertEquals(new Faults.Counts(0, 0, 0, 0), ep.faultCounts());
    }

    @Test
    void aDroppedConnectionIsAConnectionErrorAndTheEndpointGoesOn() throws Exception {
        FakeProvider.Endpoint ep = fake.primary().faults(Faults.of(1).dropped(1.0));
        assertThrows(IOException.class, () -> call(ep.url()));
        assertEquals(1, ep.faultCounts().dropped());
        assertEquals(0, ep.successes());

        ep.faults(Faults.none());
        assertEquals(200, call(ep.url()).statusCode());
    }

    @Test
    void aSlowAnswerIsLateAndSucceeds() throws Exception {
        FakeProvider.Endpoint ep = fake.primary()
                .faults(Faults.of(3).slow(1.0, Duration.ofMillis(300), Duration.ofMillis(400)));
        for (int i = 0; i < 3; i++) {
            long t = System.nanoTime();
            HttpResponse<String> r = call(ep.url());
            long ms = (System.nanoTime() - t) / 1_000_000;
            assertEquals(200, r.statusCode());
            assertTrue(ms >= 300, "answered after " + ms + " ms");
        }
        assertEquals(3, ep.faultCounts().slow());
        assertEquals(3, ep.successes());
    }

    @Test
    void onlyCallsTheLimitAdmittedMeetAFault() throws Exception {
        // a clock that stands still: the bucket of 5 never refills
        try (FakeProvider still = FakeProvider.start(Clock.fixed(Instant.parse("2026-12-07T12:00:00Z"), ZoneOffset.UTC))) {
            FakeProvider.Endpoint ep = still.primary().limitPerMinute(5).faults(Faults.of(5).unavailable(1.0));
            List<Integer> s = statuses(ep.url(), 8);
            assertEquals(List.of(503, 503, 503, 503, 503, 429, 429, 429), s);
            assertEquals(5, ep.faultCounts().unavailable());
            assertEquals(3, ep.rateLimited());
        }
    }

    @Test
    void eachApiFailsInItsOwnShape() throws Exception {
        FakeProvider.Endpoint ep = fake.primary().faults(Faults.of(9).unavailable(1.0));
        HttpResponse<String> anthropic = post(ep.url(Api.ANTHROPIC_MESSAGES),
                "{\"model\":\"claude-haiku-4-5\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertEquals(529, anthropic.statusCode());
        assertTrue(anthropic.body().contains("overloaded_error"), anthropic.body());
        assertEquals(1, ep.overloaded());
        HttpResponse<String> gemini = post(ep.url(Api.GEMINI_GENERATE_CONTENT),
                "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}");
        assertEquals(503, gemini.statusCode());
        assertTrue(gemini.body().contains("UNAVAILABLE"), gemini.body());

        ep.faults(Faults.of(9).serverError(1.0));
        HttpResponse<String> openAi = call(ep.url());
        assertEquals(500, openAi.statusCode());
        assertTrue(openAi.body().contains("server_error"), openAi.body());
        HttpResponse<String> bedrock = post(ep.url(Api.BEDROCK_CONVERSE),
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}]}");
        assertEquals(500, bedrock.statusCode());
        assertTrue(bedrock.headers().firstValue("x-amzn-ErrorType").orElse("").startsWith("InternalServerException"));
        assertEquals(2, ep.serverErrors());
        assertEquals(new Faults.Counts(2, 2, 0, 0), ep.faultCounts());
    }

    @Test
    void eachEndpointHasItsOwnFaultsAndSequence() throws Exception {
        FakeProvider.Endpoint primary = fake.primary().faults(Faults.of(4).unavailable(1.0));
        FakeProvider.Endpoint secondary = fake.secondary();
        assertEquals(List.of(200, 200, 200), statuses(secondary.url(), 3), "the secondary fails nothing");
        assertEquals(List.of(503, 503), statuses(primary.url(), 2));
        assertEquals(new Faults.Counts(0, 0, 0, 0), secondary.faultCounts());
        assertEquals(Faults.none(), secondary.faults());

        // the same seed on both: the same sequence on each, whatever the other's calls in between
        Faults f = Faults.of(21).unavailable(0.3).serverError(0.2);
        primary.faults(f);
        secondary.faults(f);
        List<Integer> a = new ArrayList<>();
        List<Integer> b = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            a.add(call(primary.url()).statusCode());
            if (i % 2 == 0) {
                b.add(call(secondary.url()).statusCode());
            }
        }
        b.addAll(statuses(secondary.url(), 20));
        assertEquals(a, b);
    }

    @Test
    void badProbabilitiesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> Faults.of(1).unavailable(1.5));
        assertThrows(IllegalArgumentException.class, () -> Faults.of(1).unavailable(0.6).serverError(0.6));
        assertThrows(IllegalArgumentException.class, () -> Faults.of(1).slow(0.1, Duration.ofSeconds(2), Duration.ofSeconds(1)));
        Faults mix = Faults.mix(1, 0.08);
        assertEquals(0.08, mix.total(), 1e-12);
        assertEquals(0.04, mix.unavailable(), 1e-12);
        assertEquals(0.02, mix.serverError(), 1e-12);
    }

    private static void within(int seen, int n, double p) {
        double sd = Math.sqrt(n * p * (1 - p));
        assertTrue(Math.abs(seen - n * p) <= 4 * sd, seen + " of " + n + ", expected about " + n * p);
    }

    private static int count(List<Integer> statuses, int status) {
        return (int) statuses.stream().filter(s -> s == status).count();
    }

    /** {@code n} calls one after another; a call that got no answer is {@link #DROPPED}. */
    private List<Integer> statuses(URI url, int n) throws InterruptedException {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            try {
                out.add(call(url).statusCode());
            } catch (IOException e) {
                out.add(DROPPED);
            }
        }
        return out;
    }

    private HttpResponse<String> call(URI url) throws IOException, InterruptedException {
        return post(url, "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    }

    private HttpResponse<String> post(URI url, String body) throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(10))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return http.send(req, HttpResponse.BodyHandlers.ofString());
    }
}
