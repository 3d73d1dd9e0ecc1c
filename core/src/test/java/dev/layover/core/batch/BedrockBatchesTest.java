package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.net.URI;
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
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.bedrock.BedrockClient;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@link BedrockBatches} through AWS SDK v2's bedrock and s3 clients (retries off) against the fake
 * provider's batch inference and the S3 it reads and writes.
 */
@PureTest
class BedrockBatchesTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final Instant T0 = Instant.parse("2026-11-29T12:00:00Z");
    static final StaticCredentialsProvider CREDENTIALS =
            StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG"));
    static final URI LOCATION = URI.create("s3://layover-test/batches/");
    static final String MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0";

    private final TestClock clock = new TestClock(T0);
    private final FakeProvider fake = FakeProvider.start(clock);
    private final FakeBatches batches = fake.batches().bedrockMinimumRecords(1);
    private final BedrockClient bedrock = BedrockClient.builder().region(Region.US_EAST_1).credentialsProvider(CREDENTIALS)
            .endpointOverride(fake.primary().base()).httpClient(UrlConnectionHttpClient.builder().build())
            .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())).build();
    private final S3Client s3 = S3Client.builder().region(Region.US_EAST_1).credentialsProvider(CREDENTIALS)
            .endpointOverride(URI.create(fake.primary().base() + "/s3")).forcePathStyle(true)
            .httpClient(UrlConnectionHttpClient.builder().build())
            .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())).build();
    private final BedrockBatches transport = BedrockBatches.builder(bedrock, S3BatchStorage.of(s3)).modelId(MODEL)
            .roleArn("arn:aws:iam::000000000000:role/bedrock-batch").location(LOCATION).build();

    @AfterEach
    void close() {
        bedrock.close();
        s3.close();
        fake.close();
    }

    static BatchLine line(String id, String text) {
        return new BatchLine(id, "{\"anthropic_version\":\"bedrock-2023-05-31\",\"max_tokens\":50,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]}");
    }

    @Test
    void describesItsLimitsAndRefusesAnIncompleteSetup() {
        assertEquals("bedrock", transport.name());
        assertEquals(Provider.BEDROCK, transport.provider());
        assertEquals(50_000, transport.maxRequests());
        assertEquals(990_000_000L, transport.maxBytes());
        assertEquals(Duration.ofHours(24), transport.completionWindow());
        BedrockBatches.Builder b = BedrockBatches.builder(bedrock, S3BatchStorage.of(s3));
        assertThrows(IllegalStateException.class, b::build);
        assertThrows(IllegalArgumentException.class, () -> b.location(URI.create("https://bucket/x")));
        assertThrows(IllegalArgumentException.class, () -> b.timeout(Duration.ofHours(12)));
        assertThrows(IllegalArgumentException.class, () -> b.timeout(Duration.ofMinutes(24 * 60 + 30)));
        assertThrows(IllegalArgumentException.class, () -> b.jobNamePrefix("bad prefix"));
        assertEquals(Duration.ofHours(72), BedrockBatches.builder(bedrock, S3BatchStorage.of(s3)).modelId(MODEL)
                .roleArn("arn:aws:iam::0:role/r").location(LOCATION).timeout(Duration.ofHours(72)).maxRequests(10)
                .build().completionWindow());
    }

    @Test
    void recordIdsAreLettersAndDigitsAndComeBackAsTheCustomIds() {
        for (String id : List.of("lo-12", "lo-0", "Zebra", "a_b.c", "é-ü", "lo-9223372036854775807")) {
            String record = BedrockBatches.recordId(id);
            assertTrue(record.matches("[A-Za-z0-9]+"), record);
            assertEquals(id, BedrockBatches.customId(record));
        }
        assertEquals("loZ2D12", BedrockBatches.recordId("lo-12"));
        assertEquals("Z5Aebra", BedrockBatches.recordId("Zebra"));
    }

    @Test
    void submitsThroughS3PollsAndReadsTheOutputWhateverItsOrder() throws Exception {
        List<BatchLine> lines = List.of(line("lo-1", "hello there"), line("lo-2", "[fail:429] later"),
                line("lo-3", "[fail:400] never"), line("lo-4", "x".repeat(80)));
        String arn = transport.submit("lo-batch-1", lines);
        assertTrue(arn.startsWith("arn:aws:bedrock:"), arn);

        FakeBatches.Batch b = batches.batches().get(0);
        assertEquals(FakeBatches.Wire.BEDROCK, b.wire());
        assertEquals("layover-lo-batch-1", b.metadata().get("jobName"));
        assertEquals(MODEL, b.metadata().get("modelId"));
        String input = fake.batches().s3().text(URI.create("s3://layover-test/batches/lo-batch-1/input.jsonl"))
                .orElseThrow();
        JsonNode first = JSON.readTree(input.lines().findFirst().orElseThrow());
        assertEquals("loZ2D1", first.get("recordId").asText());
        assertEquals(JSON.readTree(lines.get(0).body()), first.get("modelInput"), "the body is the record's modelInput");
        assertEquals(List.of("loZ2D1", "loZ2D2", "loZ2D3", "loZ2D4"),
                batches.requests(b.id()).stream().map(FakeBatches.Request::customId).toList());

        assertEquals(new BatchProgress(State.ENDED, 4, 2, 2), transport.poll(arn));
        assertEquals("PartiallyCompleted", batches.batches().get(0).status());
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(arn, results::add);
        assertEquals(List.of("lo-4", "lo-3", "lo-2", "lo-1"), results.stream().map(BatchResultLine::customId).toList(),
                "Bedrock keeps no order: the record ids say which line is which");
        BatchResultLine hello = results.get(3);
        assertEquals(Kind.SUCCEEDED, hello.kind());
        assertEquals(200, hello.status());
        assertTrue(hello.body().contains("hello there"), hello.body());
        assertTrue(hello.inputTokens() > 0 && hello.outputTokens() > 0, hello.toString());
        assertEquals(results.stream().mapToLong(BatchResultLine::inputTokens).sum(), batches.inputTokens());
        assertEquals(results.stream().mapToLong(BatchResultLine::outputTokens).sum(), batches.outputTokens());
        BatchResultLine limited = results.get(2);
        assertEquals(Kind.ERRORED, limited.kind());
        assertEquals(429, limited.status());
        Classification c = ProviderClassifier.defaults().classify(transport.provider(), limited.status(), Map.of(),
                limited.body()).orElseThrow();
        assertEquals(FailureClass.RATE_LIMITED, c.failureClass());
        assertEquals(400, results.get(1).status());
        assertTrue(fake.batches().s3().text(URI.create("s3://layover-test/batches/lo-batch-1/output/"
                + b.id() + "/manifest.json.out")).orElseThrow().contains("\"totalRecordCount\":4"));
    }

    @Test
    void converseRecordsAreAnsweredAsConverse() throws Exception {
        BedrockBatches converse = BedrockBatches.builder(bedrock, S3BatchStorage.of(s3)).modelId(MODEL)
                .roleArn("arn:aws:iam::000000000000:role/bedrock-batch").location(LOCATION).converse().build();
        String arn = converse.submit("lo-batch-1", List.of(new BatchLine("lo-1",
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi there\"}]}],"
                        + "\"inferenceConfig\":{\"maxTokens\":20}}")));
        assertEquals(State.ENDED, converse.poll(arn).state());
        List<BatchResultLine> results = new ArrayList<>();
        converse.results(arn, results::add);
        JsonNode output = JSON.readTree(results.get(0).body());
        assertTrue(output.has("output") && output.path("usage").has("inputTokens"), output.toString());
        assertEquals(output.path("usage").path("inputTokens").asLong(), results.get(0).inputTokens());
    }

    @Test
    void aJobBelowBedrocksMinimumFailsAndHasNoLines() throws Exception {
        batches.bedrockMinimumRecords(100);
        String arn = transport.submit("lo-batch-1", List.of(line("lo-1", "one"), line("lo-2", "two")));
        assertEquals(State.FAILED, transport.poll(arn).state(), "Bedrock refuses fewer than 100 records");
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(arn, results::add);
        assertEquals(List.of(), results);
        assertEquals(0, batches.chargesOf(BedrockBatches.recordId("lo-1")));
    }

    @Test
    void stopKeepsWhatWasDoneAndTheRestGoesBack() throws Exception {
        batches.manual();
        String arn = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two"), line("c", "three")));
        String id = batches.batches().get(0).id();
        assertEquals(State.IN_PROGRESS, transport.poll(arn).state());
        batches.process(id, 1);
        transport.cancel(arn);
        assertEquals(State.CANCELLING, transport.poll(arn).state());
        batches.complete(id);
        assertEquals(State.CANCELLED, transport.poll(arn).state());
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(arn, results::add);
        assertEquals(List.of("a"), results.stream().map(BatchResultLine::customId).toList(),
                "records not processed are not in the output");
        assertEquals(0, batches.chargesOf(BedrockBatches.recordId("b")));
    }

    @Test
    void anExpiredJobGivesItsDoneLines() throws Exception {
        batches.manual();
        String arn = transport.submit("lo-batch-1", List.of(line("a", "one"), line("b", "two")));
        String id = batches.batches().get(0).id();
        batches.process(id, 1).expire(id);
        assertEquals(State.EXPIRED, transport.poll(arn).state());
        List<BatchResultLine> results = new ArrayList<>();
        transport.results(arn, results::add);
        assertEquals(List.of("a"), results.stream().map(BatchResultLine::customId).toList());
    }

    @Test
    void findRejoinsByTheJobNameAndASecondSubmitOfTheSameRefIsTheSameJob() throws Exception {
        String one = transport.submit("lo-batch-1", List.of(line("a", "one")));
        clock.advance(Duration.ofMinutes(5));
        String two = transport.submit("lo-batch-2", List.of(line("b", "two")));
        assertEquals(Optional.of(one), transport.find("lo-batch-1", 1, T0));
        assertEquals(Optional.of(two), transport.find("lo-batch-2", 1, T0));
        assertEquals(Optional.empty(), transport.find("lo-batch-3", 1, T0));
        assertEquals(Optional.empty(), transport.find("lo-batch-1", 1, T0.plus(Duration.ofMinutes(3))),
                "a job submitted before the first attempt is not this one");
        assertEquals(one, transport.submit("lo-batch-1", List.of(line("a", "one"))),
                "the client request token makes a resubmit the same job");
        assertEquals(2, batches.created());
    }

    @Test
    void aThousandRecordsComeBackEachOnce() throws Exception {
        List<BatchLine> lines = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            lines.add(line("lo-" + i, "line number " + i));
        }
        String arn = transport.submit("lo-batch-1", lines);
        assertEquals(new BatchProgress(State.ENDED, 1000, 1000, 0), transport.poll(arn));
        Set<String> seen = new HashSet<>();
        transport.results(arn, l -> assertTrue(seen.add(l.customId()), l.customId()));
        assertEquals(1000, seen.size());
        assertEquals(0, batches.chargedMoreThanOnce());
    }

    @Test
    void badLinesAreRefusedBeforeAnyCall() {
        assertThrows(IllegalArgumentException.class, () -> transport.submit("lo-batch-1", List.of()));
        IllegalArgumentException notJson = assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(new BatchLine("lo-9", "{not json"))));
        assertTrue(notJson.getMessage().contains("lo-9"), notJson.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> transport.submit("lo-batch-1", List.of(line("lo-1", "a"), line("lo-1", "b"))));
        assertEquals(0, batches.created());
        assertEquals(List.of(), fake.batches().s3().keys(), "nothing was written");
    }

    @Test
    void everyStatusIsMapped() {
        assertEquals(State.IN_PROGRESS, BedrockBatches.state("Submitted"));
        assertEquals(State.IN_PROGRESS, BedrockBatches.state("Scheduled"));
        assertEquals(State.CANCELLING, BedrockBatches.state("Stopping"));
        assertEquals(State.ENDED, BedrockBatches.state("Completed"));
        assertEquals(State.FAILED, BedrockBatches.state("Failed"));
        assertThrows(IllegalStateException.class, () -> BedrockBatches.state("Paused"));
    }
}
