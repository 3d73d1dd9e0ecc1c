package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.genai.Client;
import com.google.genai.types.HttpOptions;
import com.google.genai.types.HttpRetryOptions;
import com.google.genai.types.JobState;
import dev.layover.core.batch.BatchProgress.State;
import dev.layover.core.batch.BatchResultLine.Kind;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.FailureClass;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link GeminiBatches} through google-genai (retries off) against the fake provider's Gemini batch mode. */
@PureTest
class GeminiBatchesTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final Instant T0 = Instant.parse("2026-11-29T12:00:00Z");
    static final String MODEL = "gemini-2.5-flash";

    private final TestClock clock = new TestClock(T0);
    private final FakeProvider fake = FakeProvider.start(clock);
    private final FakeBatches batches = fake.batches();
    private final Client client = Client.builder().apiKey("fake-key")
            .httpOptions(HttpOptions.builder().baseUrl(fake.primary().base().toString()).timeout(10_000)
                    .retryOptions(HttpRetryOptions.builder().attempts(1).httpStatusCodes(List.of()).build()).build())
            .build();
    private final GeminiBatches transport = GeminiBatches.of(client, MODEL);

    @AfterEach
    void close() {
        client.close();
        fake.close();
    }

    static BatchLine line(String id, String text) {
        return new BatchLine(id, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"" + text + "\"}]}],"
                + "\"generationConfig\":{\"maxOutputTokens\":50,\"temperature\":0.2},"
                + "\"systemInstruction\":{\"parts\":[{\"text\":\"be brief\"}]}}");
    }

    @Test
    void describesItsLimits() {
        assertEquals("gemini", transport.name());
        assertEquals(Provider.GEMINI, transport.provider());
        assertEquals(50_000, transport.maxRequests());
        assertEquals(19_000_000L, transport.maxBytes());
        assertEquals(Duration.ofHours(48), transport.completionWindow());
        assertEquals(MODEL, transport.model());
        assertThrows(IllegalArgumentException.class, () -> GeminiBatches.of(client, " "));
    }

    @Test
    void submitsInlinedRequestsPollsAndReadsSucceededAndErroredLinesWithTheirTokens() throws Exception {
        List<BatchLine> lines = List.of(line("lo-1", "hello there"), line("lo-2", "[fail:429] later"),
                line("lo-3", "[fail:400] never"), line("lo-4", "x".repeat(80)));
        String id = transport.submit("lo-batch-1", lines);
        assertTrue(id.startsWith("batches/"), id);

        FakeBatches.Batch b = batches.batches().get(0);
        assertEquals(FakeBatches.Wire.GEMINI, b.wire());
        assertEquals("lo-batch-1", b.metadata().get("displayName"));
        assertEquals("models/" + MODEL, b.metadata().get("model"));
        List<FakeBatches.Request> sent = batches.requests(b.id());
        assertEquals(List.of("lo-1", "lo-2", "lo-3", "lo-4"), sent.stream().map(FakeBatches.Request::customId).toList());
        JsonNode request = JSON.readTree(sent.get(0).body());
        assertEquals("hello there", request.at("/contents/0/parts/0/text").asText(), "contents survive");
        assertEquals(50, request.at("/generationConfig/maxOutputTokens").asInt(), "generationConfig survives");
        assertEquals("be brief", request.at("/systemInstruction/parts/0/text").asText(), "systemInstruction survives");

        assertEquals(State.IN_PROGRESS, GeminiBatches.state(new JobState(JobState.Known.JOB_STATE_PENDING)));
        assertEquals(new BatchProgress(State.ENDED, 4, 2, 2), transport.poll(id));
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(4, results.size());
        BatchResultLine first = results.get(0);
        assertEquals("lo-1", first.customId());
        assertEquals(Kind.SUCCEEDED, first.kind());
        assertEquals(200, first.status());
        assertEquals(5, first.inputTokens(), "(8 system + 11 text characters) / 4 rounded up, as the fake counts");
        assertTrue(first.body().contains("hello there"), first.body());
        assertEquals(results.stream().mapToLong(BatchResultLine::inputTokens).sum(), batches.inputTokens());
        assertEquals(results.stream().mapToLong(BatchResultLine::outputTokens).sum(), batches.outputTokens());

        BatchResultLine limited = results.get(1);
        assertEquals("lo-2", limited.customId());
        assertEquals(Kind.ERRORED, limited.kind());
        assertEquals(429, limited.status(), "gRPC 8 RESOURCE_EXHAUSTED is a 429");
        Classification c = ProviderClassifier.defaults().classify(transport.provider(), limited.status(), Map.of(),
                limited.body()).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass(), "an errored line reads as a direct call's error");
        assertEquals(400, results.get(2).status());
    }

    @Test
    void pollMapsTheStatesAndCancelKeepsWhatWasDone() throws Exception {
        batches.manual();
        String id = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two"), line("c", "three")));
        assertEquals(new BatchProgress(State.IN_PROGRESS, 0, 0, 0), transport.poll(id),
                "no counts while it runs: the SDK keeps none");
        String fakeId = batches.batches().get(0).id();
        assertEquals("BATCH_STATE_RUNNING", batches.batches().get(0).status());
        batches.process(fakeId, 1);
        transport.cancel(id);
        assertEquals(State.IN_PROGRESS, transport.poll(id).state(), "a cancel in flight is still running");
        batches.complete(fakeId);
        assertEquals(State.CANCELLED, transport.poll(id).state());
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(1, results.size(), "cancelled lines have no response: their jobs go back to the queue");
        assertEquals("a", results.get(0).customId());
        assertEquals(0, batches.chargesOf("b"));
    }

    @Test
    void anExpiredBatchGivesItsDoneLines() throws Exception {
        batches.manual();
        String id = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two")));
        batches.process(batches.batches().get(0).id(), 1).expire(batches.batches().get(0).id());
        assertEquals(State.EXPIRED, transport.poll(id).state());
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(id, results::add);
        assertEquals(List.of("a"), results.stream().map(BatchResultLine::customId).toList());
    }

    @Test
    void findRejoinsByTheDisplayName() throws Exception {
        String one = transport.submit("lo-batch-1", List.of(line("a", "one")));
        clock.advance(Duration.ofMinutes(5));
        String two = transport.submit("lo-batch-2", List.of(line("b", "two")));
        assertEquals(Optional.of(one), transport.find("lo-batch-1", 1, T0));
        assertEquals(Optional.of(two), transport.find("lo-batch-2", 1, T0));
        assertEquals(Optional.empty(), transport.find("lo-batch-3", 1, T0));
        assertEquals(Optional.empty(), transport.find("lo-batch-1", 1, T0.plus(Duration.ofMinutes(3))),
                "a batch created before the first attempt is not this one");
    }

    @Test
    void findPagesThroughTheList() throws Exception {
        for (int i = 0; i < 101; i++) {
            transport.submit("lo-batch-" + i, List.of(line("l" + i, "hi")));
        }
        assertEquals(Optional.of("batches/" + batches.batches().get(0).id()), transport.find("lo-batch-0", 1, T0));
    }

    @Test
    void aThousandLinesComeBackEachOnce() throws Exception {
        List<BatchLine> lines = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            lines.add(line("lo-" + i, "line number " + i));
        }
        String id = transport.submit("lo-batch-1", lines);
        assertEquals(new BatchProgress(State.ENDED, 1000, 1000, 0), transport.poll(id));
        Set<String> seen = new HashSet<>();
        transport.results(id, l -> assertTrue(seen.add(l.customId()), l.customId()));
        assertEquals(1000, seen.size());
        assertEquals(0, batches.chargedMoreThanOnce());
    }

    @Test
    void badLinesAreRefusedBeforeAnyCall() {
        assertThrows(IllegalArgumentException.class, () -> transport.submit("lo-batch-1", List.of()));
        IllegalArgumentException notJson = assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(new BatchLine("lo-9", "{not json"))));
        assertTrue(notJson.getMessage().contains("lo-9"), notJson.getMessage());
        IllegalArgumentException noContents = assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(new BatchLine("lo-8", "{\"prompt\":\"hi\"}"))));
        assertTrue(noContents.getMessage().contains("contents"), noContents.getMessage());
        assertEquals(0, batches.created());
    }

    @Test
    void grpcAndHttpCodesBecomeStatuses() {
        assertEquals(429, GeminiBatches.httpStatus(8));
        assertEquals(400, GeminiBatches.httpStatus(3));
        assertEquals(503, GeminiBatches.httpStatus(14));
        assertEquals(500, GeminiBatches.httpStatus(13));
        assertEquals(404, GeminiBatches.httpStatus(404), "an HTTP code stays");
        assertEquals(500, GeminiBatches.httpStatus(null));
    }
}
