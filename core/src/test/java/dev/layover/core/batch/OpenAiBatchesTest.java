package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
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
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link OpenAiBatches} through openai-java (retries off) against the fake provider's Batch API. */
@PureTest
class OpenAiBatchesTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final Instant T0 = Instant.parse("2026-11-29T12:00:00Z");

    private final TestClock clock = new TestClock(T0);
    private final FakeProvider fake = FakeProvider.start(clock);
    private final FakeBatches batches = fake.batches();
    private final OpenAIClient client = client(Duration.ofSeconds(30));
    private final OpenAiBatches transport = OpenAiBatches.of(client);

    @AfterEach
    void close() {
        client.close();
        fake.close();
    }

    private OpenAIClient client(Duration timeout) {
        return OpenAIOkHttpClient.builder().apiKey("sk-fake").baseUrl(fake.primary().base() + "/v1")
                .maxRetries(0).timeout(timeout).build();
    }

    static BatchLine line(String id, String text) {
        return new BatchLine(id, "{\"model\":\"gpt-4o-mini\",\"max_completion_tokens\":50,\n  \"messages\":"
                + "[{\"role\":\"user\",\"content\":\"" + text + "\"}]}");
    }

    @Test
    void describesItsLimits() {
        assertEquals("openai", transport.name());
        assertEquals(50_000, transport.maxRequests());
        assertEquals(200_000_000L, transport.maxBytes());
        assertEquals(Duration.ofHours(24), transport.completionWindow());
        assertEquals(dev.layover.core.provider.Provider.OPENAI, transport.provider());
        assertEquals("/v1/chat/completions", transport.endpoint());
        OpenAiBatches responses = transport.endpoint("/v1/responses");
        assertEquals("/v1/responses", responses.endpoint());
        assertEquals("/v1/chat/completions", transport.endpoint(), "endpoint(..) makes a copy");
        assertThrows(IllegalArgumentException.class, () -> transport.endpoint("chat/completions"));
    }

    @Test
    void submitsPollsAndReadsSucceededAndErroredLinesWithTheirTokens() throws Exception {
        List<BatchLine> lines = List.of(line("lo-1", "hello there"), line("lo-2", "[fail:429] later"),
                line("lo-3", "[fail:400] never"), line("lo-4", "x".repeat(80)));
        String id = transport.submit("lo-batch-1", lines);

        FakeBatches.Batch b = batches.batches().get(0);
        assertEquals(id, b.id());
        assertEquals(Map.of("layover_ref", "lo-batch-1"), b.metadata());
        List<FakeBatches.Request> sent = batches.requests(id);
        for (int i = 0; i < lines.size(); i++) {
            assertEquals(lines.get(i).customId(), sent.get(i).customId());
            assertEquals(JSON.readTree(lines.get(i).body()), JSON.readTree(sent.get(i).body()), "the body survives");
        }

        assertEquals(new BatchProgress(State.ENDED, 4, 2, 2), transport.poll(id));
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(4, results.size());
        BatchResultLine first = results.get(0);
        assertEquals("lo-1", first.customId());
        assertEquals(Kind.SUCCEEDED, first.kind());
        assertEquals(200, first.status());
        assertEquals(3, first.inputTokens());
        assertEquals(5, first.outputTokens());
        assertTrue(first.body().contains("<ECHO> hello there"), first.body());
        BatchResultLine fourth = results.get(1);
        assertEquals("lo-4", fourth.customId(), "the output file comes first, then the error file");
        assertEquals(20, fourth.inputTokens());
        assertEquals(results.stream().mapToLong(BatchResultLine::inputTokens).sum(), batches.inputTokens());
        assertEquals(results.stream().mapToLong(BatchResultLine::outputTokens).sum(), batches.outputTokens());
        BatchResultLine limited = results.get(2);
        assertEquals("lo-2", limited.customId());
        assertEquals(Kind.ERRORED, limited.kind());
        assertEquals(429, limited.status());
        assertTrue(limited.body().contains("rate_limit_exceeded"), limited.body());
        assertEquals(0, limited.inputTokens());
        assertEquals(400, results.get(3).status());
    }

    @Test
    void pollMapsEveryStatus() throws Exception {
        batches.manual();
        String id = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two"), line("c", "three")));
        assertEquals(new BatchProgress(State.IN_PROGRESS, 3, 0, 0), transport.poll(id));
        batches.process(id, 1);
        assertEquals(new BatchProgress(State.IN_PROGRESS, 3, 1, 0), transport.poll(id));
        batches.process(id, 2);
        assertEquals("finalizing", batches.batches().get(0).status());
        assertEquals(State.IN_PROGRESS, transport.poll(id).state());
        batches.complete(id);
        assertEquals(new BatchProgress(State.ENDED, 3, 3, 0), transport.poll(id));
        assertThrows(IllegalStateException.class, () -> OpenAiBatches.state("paused"));

        // a duplicate custom id fails OpenAI's validation of the whole file
        String failed = transport.submit("lo-batch-2", List.of(line("d", "x"), line("d", "y")));
        assertEquals(State.FAILED, transport.poll(failed).state());
        List<BatchResultLine> none = new ArrayList<>();
        transport.results(failed, none::add);
        assertEquals(List.of(), none, "a failed batch has no result lines");
    }

    @Test
    void cancelKeepsWhatWasDoneAndCancelsTheRest() throws Exception {
        batches.manual();
        String id = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two"), line("c", "three")));
        batches.process(id, 1);
        transport.cancel(id);
        assertEquals(State.CANCELLING, transport.poll(id).state());
        batches.complete(id);
        BatchProgress p = transport.poll(id);
        assertEquals(State.CANCELLED, p.state());
        assertEquals(1, p.succeeded());
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(List.of(Kind.SUCCEEDED, Kind.CANCELLED, Kind.CANCELLED), results.stream().map(BatchResultLine::kind).toList());
        assertEquals(new BatchResultLine("b", Kind.CANCELLED, 0, "", 0, 0), results.get(1));
        assertEquals(0, batches.chargesOf("b"));
    }

    @Test
    void anExpiredBatchGivesItsDoneLinesAndExpiresTheRest() throws Exception {
        batches.manual();
        String id = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "[fail:500] boom"), line("c", "three")));
        batches.process(id, 2).expire(id);
        assertEquals(State.EXPIRED, transport.poll(id).state());
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(3, results.size());
        assertEquals(Kind.SUCCEEDED, results.get(0).kind());
        assertEquals(Kind.ERRORED, results.get(1).kind());
        assertEquals(500, results.get(1).status());
        assertEquals(new BatchResultLine("c", Kind.EXPIRED, 0, "", 0, 0), results.get(2));
    }

    @Test
    void findRejoinsByTheRefInTheMetadata() throws Exception {
        String one = transport.submit("lo-batch-1", List.of(line("a", "one")));
        clock.advance(Duration.ofMinutes(5));
        String two = transport.submit("lo-batch-2", List.of(line("b", "two")));
        assertEquals(Optional.of(one), transport.find("lo-batch-1", 1, T0));
        assertEquals(Optional.of(two), transport.find("lo-batch-2", 1, T0));
        assertEquals(Optional.empty(), transport.find("lo-batch-3", 1, T0));
        assertEquals(Optional.of(one), transport.find("lo-batch-1", 1, T0.plusSeconds(30)),
                "a minute of slack for the clocks");
        assertEquals(Optional.empty(), transport.find("lo-batch-1", 1, T0.plus(Duration.ofMinutes(3))),
                "a batch created before the first attempt is not this one");
    }

    @Test
    void findPagesThroughTheList() throws Exception {
        // the list gives 100 a page, newest first: the oldest of 101 is on the second page
        for (int i = 0; i < 101; i++) {
            transport.submit("lo-batch-" + i, List.of(line("l" + i, "hi")));
        }
        assertEquals(Optional.of(batches.batches().get(0).id()), transport.find("lo-batch-0", 1, T0));
    }

    @Test
    void aSubmitKilledWhileTheCreateIsHeldIsFoundAfterwards() throws Exception {
        batches.holdCreate();
        OpenAIClient impatient = client(Duration.ofSeconds(2));
        try {
            CompletableFuture<String> submit = CompletableFuture.supplyAsync(() -> {
                try {
                    return OpenAiBatches.of(impatient).submit("lo-batch-1", List.of(line("a", "one")));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Await.equal(Duration.ofSeconds(10), "the create is held", 1, batches::heldCreates);
            assertThrows(ExecutionException.class, submit::get, "the client gave up mid-submit");
        } finally {
            impatient.close();
        }
        String created = batches.batches().get(0).id();
        assertEquals(Optional.of(created), transport.find("lo-batch-1", 1, T0));
        batches.releaseCreate();
    }

    @Test
    void aFewThousandLinesAreStreamed() throws Exception {
        List<BatchLine> lines = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            lines.add(line("lo-" + i, "line number " + i));
        }
        String id = transport.submit("lo-batch-1", lines);
        assertEquals(new BatchProgress(State.ENDED, 3000, 3000, 0), transport.poll(id));
        Set<String> seen = new HashSet<>();
        long[] input = {0};
        transport.results(id, l -> {
            assertEquals(Kind.SUCCEEDED, l.kind());
            seen.add(l.customId());
            input[0] += l.inputTokens();
        });
        assertEquals(3000, seen.size());
        assertEquals(batches.inputTokens(), input[0]);
        assertEquals(0, batches.chargedMoreThanOnce());
    }

    @Test
    void badLinesAreRefusedBeforeAnyCall() {
        assertThrows(IllegalArgumentException.class, () -> transport.submit("lo-batch-1", List.of()));
        IllegalArgumentException notJson = assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(new BatchLine("lo-9", "{not json"))));
        assertTrue(notJson.getMessage().contains("lo-9"), notJson.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(new BatchLine("lo-9", "[1,2]"))));
        assertEquals(0, batches.created());
    }

    @Test
    void readsTheResponsesApiUsage() {
        BatchResultLine l = OpenAiBatches.line("{\"id\":\"batch_req_1\",\"custom_id\":\"lo-1\",\"response\":"
                + "{\"status_code\":200,\"request_id\":\"r\",\"body\":{\"object\":\"response\",\"output\":[],"
                + "\"usage\":{\"input_tokens\":12,\"output_tokens\":34,\"total_tokens\":46}}},\"error\":null}");
        assertEquals(Kind.SUCCEEDED, l.kind());
        assertEquals(12, l.inputTokens());
        assertEquals(34, l.outputTokens());
        BatchResultLine invalid = OpenAiBatches.line("{\"id\":\"batch_req_2\",\"custom_id\":\"lo-2\",\"response\":null,"
                + "\"error\":{\"code\":\"invalid_request\",\"message\":\"bad\"}}");
        assertEquals(Kind.ERRORED, invalid.kind());
        assertEquals(400, invalid.status());
        assertThrows(IllegalStateException.class, () -> OpenAiBatches.line("{\"response\":null}"));
    }
}
