package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.batch.BatchProgress.State;
import dev.layover.core.batch.BatchResultLine.Kind;
import dev.layover.testing.Await;
import dev.layover.testing.PureTest;
import dev.layover.testing.TestClock;
import dev.layover.testing.provider.FakeBatches;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link AnthropicBatches} through anthropic-java (retries off) against the fake provider's Message Batches. */
@PureTest
class AnthropicBatchesTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final Instant T0 = Instant.parse("2026-11-29T12:00:00Z");

    private final TestClock clock = new TestClock(T0);
    private final FakeProvider fake = FakeProvider.start(clock);
    private final FakeBatches batches = fake.batches();
    private final AnthropicClient client = client(Duration.ofSeconds(30));
    private final AnthropicBatches transport = AnthropicBatches.of(client);

    @AfterEach
    void close() {
        client.close();
        fake.close();
    }

    private AnthropicClient client(Duration timeout) {
        return AnthropicOkHttpClient.builder().apiKey("sk-ant-fake").baseUrl(fake.secondary().base().toString())
                .maxRetries(0).timeout(timeout).build();
    }

    static BatchLine line(String id, String text) {
        return new BatchLine(id, "{\"model\":\"claude-haiku-4-5\",\"max_tokens\":64,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]}");
    }

    @Test
    void describesItsLimits() {
        assertEquals("anthropic", transport.name());
        assertEquals(100_000, transport.maxRequests());
        assertEquals(256_000_000L, transport.maxBytes());
        assertEquals(Duration.ofHours(24), transport.completionWindow());
        assertEquals(dev.layover.core.provider.Provider.ANTHROPIC, transport.provider());
    }

    @Test
    void theParamsSurviveTheRoundTrip() throws Exception {
        String rich = "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":300,\"system\":\"Translate to French.\","
                + "\"temperature\":0.25,\"stop_sequences\":[\"END\"],\"metadata\":{\"user_id\":\"u-1\"},"
                + "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Good morning\"}]},"
                + "{\"role\":\"assistant\",\"content\":\"Bonjour\"},{\"role\":\"user\",\"content\":\"And good night\"}],"
                + "\"some_future_field\":{\"kept\":true}}";
        String id = transport.submit("lo-batch-1", List.of(new BatchLine("lo-1", rich), line("lo-2", "hi")));
        List<FakeBatches.Request> sent = batches.requests(id);
        assertEquals("lo-1", sent.get(0).customId());
        assertEquals(JSON.readTree(rich), JSON.readTree(sent.get(0).body()));
        assertEquals(JSON.readTree(line("lo-2", "hi").body()), JSON.readTree(sent.get(1).body()));
    }

    @Test
    void submitsPollsAndReadsResultsWithTokensAndErrorStatuses() throws Exception {
        List<BatchLine> lines = List.of(line("lo-1", "hello there"), line("lo-2", "[fail:400] bad"),
                line("lo-3", "[fail:429] later"), line("lo-4", "[fail:500] boom"), line("lo-5", "[fail:529] busy"),
                line("lo-6", "[fail:401] who"), line("lo-7", "[fail:413] big"));
        String id = transport.submit("lo-batch-1", lines);
        assertEquals(new BatchProgress(State.ENDED, 7, 1, 6), transport.poll(id));
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(7, results.size());
        BatchResultLine ok = results.get(0);
        assertEquals(Kind.SUCCEEDED, ok.kind());
        assertEquals(200, ok.status());
        assertEquals(3, ok.inputTokens());
        assertEquals(5, ok.outputTokens());
        assertEquals(batches.inputTokens(), ok.inputTokens());
        assertTrue(JSON.readTree(ok.body()).path("content").get(0).path("text").asText().contains("hello there"), ok.body());
        assertEquals(List.of(400, 429, 500, 529, 401, 413), results.subList(1, 7).stream().map(BatchResultLine::status).toList());
        BatchResultLine overloaded = results.get(4);
        assertEquals(Kind.ERRORED, overloaded.kind());
        assertEquals("overloaded_error", JSON.readTree(overloaded.body()).path("error").path("type").asText(), overloaded.body());
        assertEquals(0, overloaded.inputTokens());
    }

    @Test
    void theErrorTypesHaveTheirStatuses() {
        assertEquals(400, AnthropicBatches.status("invalid_request_error"));
        assertEquals(401, AnthropicBatches.status("authentication_error"));
        assertEquals(403, AnthropicBatches.status("permission_error"));
        assertEquals(404, AnthropicBatches.status("not_found_error"));
        assertEquals(413, AnthropicBatches.status("request_too_large"));
        assertEquals(429, AnthropicBatches.status("rate_limit_error"));
        assertEquals(500, AnthropicBatches.status("api_error"));
        assertEquals(529, AnthropicBatches.status("overloaded_error"));
        assertEquals(500, AnthropicBatches.status("something_new"));
    }

    @Test
    void pollMapsTheStatesAndCancelKeepsWhatWasDone() throws Exception {
        batches.manual();
        String id = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two"), line("c", "three")));
        assertEquals(new BatchProgress(State.IN_PROGRESS, 3, 0, 0), transport.poll(id));
        batches.process(id, 1);
        assertEquals(new BatchProgress(State.IN_PROGRESS, 3, 1, 0), transport.poll(id));
        transport.cancel(id);
        assertEquals(State.CANCELLING, transport.poll(id).state());
        batches.complete(id);
        assertEquals(new BatchProgress(State.CANCELLED, 3, 1, 0), transport.poll(id));
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(List.of(Kind.SUCCEEDED, Kind.CANCELLED, Kind.CANCELLED), results.stream().map(BatchResultLine::kind).toList());
        assertEquals(new BatchResultLine("c", Kind.CANCELLED, 0, "", 0, 0), results.get(2));
        assertEquals(0, batches.chargesOf("c"));

        String done = transport.submit("lo-batch-2", List.of(line("d", "four")));
        batches.complete(done);
        assertEquals(new BatchProgress(State.ENDED, 1, 1, 0), transport.poll(done));
    }

    @Test
    void anExpiredBatchGivesItsDoneLinesAndExpiresTheRest() throws Exception {
        batches.manual();
        String id = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two")));
        batches.process(id, 1).expire(id);
        assertEquals(new BatchProgress(State.EXPIRED, 2, 1, 0), transport.poll(id));
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(Kind.SUCCEEDED, results.get(0).kind());
        assertEquals(new BatchResultLine("b", Kind.EXPIRED, 0, "", 0, 0), results.get(1));

        batches.processingDelay(Duration.ZERO).expireNext();
        String next = transport.submit("lo-batch-2", List.of(line("c", "three")));
        assertEquals(State.EXPIRED, transport.poll(next).state());
        assertEquals(0, batches.chargesOf("c"));
    }

    @Test
    void findRejoinsTheOneBatchOfThatSizeSinceTheFirstAttempt() throws Exception {
        String two = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two")));
        clock.advance(Duration.ofMinutes(10));
        String three = transport.submit("lo-batch-2", List.of(line("c", "x"), line("d", "y"), line("e", "z")));
        assertEquals(Optional.of(two), transport.find("lo-batch-1", 2, T0));
        assertEquals(Optional.of(three), transport.find("lo-batch-2", 3, T0));
        assertEquals(Optional.empty(), transport.find("lo-batch-9", 4, T0));
        assertEquals(Optional.empty(), transport.find("lo-batch-1", 2, T0.plus(Duration.ofMinutes(5))),
                "a batch created before the first attempt is not this one");
    }

    @Test
    void twoCandidatesMakeTheRejoinAmbiguous() throws Exception {
        String one = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two")));
        clock.advance(Duration.ofSeconds(1));
        String other = transport.submit("lo-batch-2", List.of(line("c", "x"), line("d", "y")));
        AnthropicBatches.AmbiguousRejoinException e = assertThrows(AnthropicBatches.AmbiguousRejoinException.class,
                () -> transport.find("lo-batch-1", 2, T0));
        assertEquals(List.of(other, one), e.candidates());
        assertTrue(e.getMessage().contains("ambiguous"), e.getMessage());
        assertEquals(Optional.of(other), transport.find("lo-batch-2", 2, T0.plusMillis(500)));
    }

    @Test
    void findPagesThroughTheList() throws Exception {
        // the list gives 100 a page, newest first: the oldest of 101 is on the second page
        String big = transport.submit("lo-batch-big", List.of(line("x", "1"), line("y", "2")));
        for (int i = 0; i < 100; i++) {
            transport.submit("lo-batch-after-" + i, List.of(line("m" + i, "hi")));
        }
        assertEquals(Optional.of(big), transport.find("lo-batch-big", 2, T0));
    }

    @Test
    void aSubmitKilledWhileTheCreateIsHeldIsFoundAfterwards() throws Exception {
        batches.holdCreate();
        AnthropicClient impatient = client(Duration.ofSeconds(2));
        try {
            CompletableFuture<String> submit = CompletableFuture.supplyAsync(() -> {
                try {
                    return AnthropicBatches.of(impatient).submit("lo-batch-1", List.of(line("a", "one")));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Await.equal(Duration.ofSeconds(10), "the create is held", 1, batches::heldCreates);
            assertThrows(ExecutionException.class, submit::get, "the client gave up mid-submit");
        } finally {
            impatient.close();
        }
        assertEquals(Optional.of(batches.batches().get(0).id()), transport.find("lo-batch-1", 1, T0));
        batches.releaseCreate();
    }

    @Test
    void aFewThousandLinesAreStreamed() throws Exception {
        List<BatchLine> lines = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            lines.add(line("lo-" + i, (i % 100 == 0 ? "[fail:529] " : "") + "line number " + i));
        }
        String id = transport.submit("lo-batch-1", lines);
        assertEquals(new BatchProgress(State.ENDED, 3000, 2970, 30), transport.poll(id));
        Set<String> seen = new HashSet<>();
        long[] input = {0};
        int[] errored = {0};
        transport.results(id, l -> {
            seen.add(l.customId());
            input[0] += l.inputTokens();
            if (l.kind() == Kind.ERRORED) {
                errored[0]++;
            }
        });
        assertEquals(3000, seen.size());
        assertEquals(30, errored[0]);
        assertEquals(batches.inputTokens(), input[0]);
    }

    @Test
    void badLinesAreRefusedBeforeAnyCall() {
        assertThrows(IllegalArgumentException.class, () -> transport.submit("lo-batch-1", List.of()));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(new BatchLine("lo-9", "not json"))));
        assertTrue(e.getMessage().contains("lo-9"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(new BatchLine("lo-9", "\"text\""))));
        assertEquals(0, batches.created());
    }
}
