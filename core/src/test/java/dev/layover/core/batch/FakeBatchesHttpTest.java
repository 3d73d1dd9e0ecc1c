package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.testing.Await;
import dev.layover.testing.PureTest;
import dev.layover.testing.TestClock;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The fake provider's batch APIs over plain HTTP: OpenAI's Files and Batch API and Anthropic's
 * Message Batches, their JSON shapes, their state machines and the fake's test controls.
 */
@PureTest
class FakeBatchesHttpTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final Instant T0 = Instant.parse("2026-11-29T12:00:00Z");

    private final TestClock clock = new TestClock(T0);
    private final FakeProvider fake = FakeProvider.start(clock);
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void close() {
        fake.close();
    }

    // ---- OpenAI ----------------------------------------------------------------------------------

    @Test
    void openAiBatchGoesFromValidatingToCompletedWithOutputAndErrorFiles() throws Exception {
        String fileId = upload(openAiLine("a", "hello there") + openAiLine("b", "[fail:429] slow down")
                + openAiLine("c", "x".repeat(40)));
        JsonNode created = post("/v1/batches", "{\"input_file_id\":\"" + fileId + "\",\"endpoint\":"
                + "\"/v1/chat/completions\",\"completion_window\":\"24h\",\"metadata\":{\"layover_ref\":\"lo-batch-7\"}}", 200);
        assertEquals("batch", created.path("object").asText());
        assertEquals("validating", created.path("status").asText());
        assertEquals(fileId, created.path("input_file_id").asText());
        assertEquals("/v1/chat/completions", created.path("endpoint").asText());
        assertEquals("24h", created.path("completion_window").asText());
        assertEquals("lo-batch-7", created.path("metadata").path("layover_ref").asText());
        assertEquals(T0.getEpochSecond(), created.path("created_at").asLong());
        assertEquals(T0.plus(Duration.ofHours(24)).getEpochSecond(), created.path("expires_at").asLong());
        assertTrue(created.path("output_file_id").isNull());
        assertEquals(0, fake.batches().inputTokens(), "nothing is charged before the batch runs");

        String id = created.path("id").asText();
        JsonNode done = get("/v1/batches/" + id, 200);
        assertEquals("completed", done.path("status").asText(), "done at the first poll by default");
        assertEquals(3, done.path("request_counts").path("total").asInt());
        assertEquals(2, done.path("request_counts").path("completed").asInt());
        assertEquals(1, done.path("request_counts").path("failed").asInt());
        assertTrue(done.path("completed_at").isNumber());
        assertTrue(done.path("in_progress_at").isNumber());

        List<JsonNode> output = lines(text("/v1/files/" + done.path("output_file_id").asText() + "/content"));
        assertEquals(2, output.size());
        JsonNode a = output.get(0);
        assertEquals("a", a.path("custom_id").asText());
        assertTrue(a.path("id").asText().startsWith("batch_req_"));
        assertTrue(a.path("error").isNull());
        assertEquals(200, a.path("response").path("status_code").asInt());
        assertFalse(a.path("response").path("request_id").asText().isEmpty());
        JsonNode body = a.path("response").path("body");
        assertEquals("chat.completion", body.path("object").asText());
        assertEquals("<ECHO> hello there", body.path("choices").get(0).path("message").path("content").asText());
        // "hello there" is 11 characters: 3 input tokens; the answer's 18 characters: 5 output tokens
        assertEquals(3, body.path("usage").path("prompt_tokens").asLong());
        assertEquals(5, body.path("usage").path("completion_tokens").asLong());
        long input = 0;
        long outputTokens = 0;
        for (JsonNode l : output) {
            input += l.path("response").path("body").path("usage").path("prompt_tokens").asLong();
            outputTokens += l.path("response").path("body").path("usage").path("completion_tokens").asLong();
        }
        assertEquals(input, fake.batches().inputTokens());
        assertEquals(outputTokens, fake.batches().outputTokens());

        List<JsonNode> errors = lines(text("/v1/files/" + done.path("error_file_id").asText() + "/content"));
        assertEquals(1, errors.size());
        JsonNode b = errors.get(0);
        assertEquals("b", b.path("custom_id").asText());
        assertEquals(429, b.path("response").path("status_code").asInt());
        assertEquals("rate_limit_exceeded", b.path("response").path("body").path("error").path("code").asText());
        assertEquals(1, fake.batches().chargesOf("a"));
        assertEquals(1, fake.batches().chargesOf("b"), "an errored line is charged");
        assertEquals(0, fake.batches().chargedMoreThanOnce());
        assertEquals(1, fake.batches().created());
    }

    @Test
    void openAiFileUploadAnswersAFileObject() throws Exception {
        HttpResponse<String> r = uploadRaw(openAiLine("a", "hi"), "batch");
        assertEquals(200, r.statusCode());
        JsonNode f = JSON.readTree(r.body());
        assertEquals("file", f.path("object").asText());
        assertEquals("batch", f.path("purpose").asText());
        assertEquals("in.jsonl", f.path("filename").asText());
        assertEquals(openAiLine("a", "hi").getBytes(StandardCharsets.UTF_8).length, f.path("bytes").asInt());
        assertEquals(openAiLine("a", "hi"), text("/v1/files/" + f.path("id").asText() + "/content"));
        assertEquals(400, uploadRaw(openAiLine("a", "hi"), "fine-tune").statusCode());
        assertEquals(404, http.send(request("/v1/files/file-nope/content").GET().build(),
                HttpResponse.BodyHandlers.ofString()).statusCode());
    }

    @Test
    void openAiMalformedInputFailsTheBatchWithItsErrors() throws Exception {
        String fileId = upload(openAiLine("a", "hi") + openAiLine("a", "again") + "not json\n");
        String id = createOpenAi(fileId, "lo-batch-1");
        JsonNode b = get("/v1/batches/" + id, 200);
        assertEquals("failed", b.path("status").asText());
        assertTrue(b.path("failed_at").isNumber());
        JsonNode data = b.path("errors").path("data");
        assertEquals(2, data.size());
        assertEquals("duplicate_custom_id", data.get(0).path("code").asText());
        assertEquals(2, data.get(0).path("line").asInt());
        assertEquals(3, data.get(1).path("line").asInt());
        assertEquals(0, fake.batches().chargesOf("a"));
        post("/v1/batches", "{\"input_file_id\":\"file-nope\",\"endpoint\":\"/v1/chat/completions\","
                + "\"completion_window\":\"24h\"}", 404);
        post("/v1/batches", "{\"input_file_id\":\"" + fileId + "\",\"endpoint\":\"/v1/chat/completions\","
                + "\"completion_window\":\"48h\"}", 400);
    }

    @Test
    void openAiListIsNewestFirstAndPages() throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(createOpenAi(upload(openAiLine("l" + i, "hi")), "lo-batch-" + i));
            clock.advance(Duration.ofSeconds(1));
        }
        JsonNode first = get("/v1/batches?limit=2", 200);
        assertEquals("list", first.path("object").asText());
        assertEquals(List.of(ids.get(4), ids.get(3)), idsOf(first));
        assertTrue(first.path("has_more").asBoolean());
        assertEquals(ids.get(3), first.path("last_id").asText());
        JsonNode next = get("/v1/batches?limit=2&after=" + ids.get(3), 200);
        assertEquals(List.of(ids.get(2), ids.get(1)), idsOf(next));
        JsonNode last = get("/v1/batches?limit=2&after=" + ids.get(1), 200);
        assertEquals(List.of(ids.get(0)), idsOf(last));
        assertFalse(last.path("has_more").asBoolean());
        get("/v1/batches?limit=0", 400);
    }

    @Test
    void openAiManualBatchMovesWhenTheTestSaysAndExpiresOrCancels() throws Exception {
        fake.batches().manual();
        String id = createOpenAi(upload(openAiLine("a", "one") + openAiLine("b", "two")), "lo-batch-1");
        assertEquals("in_progress", get("/v1/batches/" + id, 200).path("status").asText());
        fake.batches().process(id, 1);
        JsonNode half = get("/v1/batches/" + id, 200);
        assertEquals("in_progress", half.path("status").asText());
        assertEquals(1, half.path("request_counts").path("completed").asInt());
        fake.batches().expire(id);
        JsonNode expired = get("/v1/batches/" + id, 200);
        assertEquals("expired", expired.path("status").asText());
        assertTrue(expired.path("expired_at").isNumber());
        assertEquals(1, lines(text("/v1/files/" + expired.path("output_file_id").asText() + "/content")).size());
        JsonNode e = lines(text("/v1/files/" + expired.path("error_file_id").asText() + "/content")).get(0);
        assertEquals("b", e.path("custom_id").asText());
        assertTrue(e.path("response").isNull());
        assertEquals("batch_expired", e.path("error").path("code").asText());
        assertEquals(0, fake.batches().chargesOf("b"), "an expired line is not charged");

        String other = createOpenAi(upload(openAiLine("c", "three") + openAiLine("d", "four")), "lo-batch-2");
        fake.batches().process(other, 2);
        assertEquals("finalizing", get("/v1/batches/" + other, 200).path("status").asText());
        fake.batches().complete(other);
        assertEquals("completed", get("/v1/batches/" + other, 200).path("status").asText());

        String cancelled = createOpenAi(upload(openAiLine("f", "five") + openAiLine("g", "six")), "lo-batch-3");
        fake.batches().process(cancelled, 1);
        JsonNode cancelling = post("/v1/batches/" + cancelled + "/cancel", "", 200);
        assertEquals("cancelling", cancelling.path("status").asText());
        assertTrue(cancelling.path("cancelling_at").isNumber());
        assertEquals("cancelling", get("/v1/batches/" + cancelled, 200).path("status").asText(), "manual: held");
        fake.batches().complete(cancelled);
        JsonNode c = get("/v1/batches/" + cancelled, 200);
        assertEquals("cancelled", c.path("status").asText());
        JsonNode g = lines(text("/v1/files/" + c.path("error_file_id").asText() + "/content")).get(0);
        assertEquals("batch_cancelled", g.path("error").path("code").asText());
        assertEquals(0, fake.batches().chargesOf("g"));
        post("/v1/batches/" + cancelled + "/cancel", "", 409);
        get("/v1/batches/batch_nope", 404);
    }

    @Test
    void aProcessingDelayKeepsTheBatchInProgressUntilItHasPassed() throws Exception {
        fake.batches().processingDelay(Duration.ofMinutes(10));
        String id = createOpenAi(upload(openAiLine("a", "one")), "lo-batch-1");
        assertEquals("in_progress", get("/v1/batches/" + id, 200).path("status").asText());
        clock.advance(Duration.ofMinutes(10));
        assertEquals("completed", get("/v1/batches/" + id, 200).path("status").asText());
    }

    @Test
    void aHeldCreateStoresTheBatchButRepliesOnlyWhenReleased() throws Exception {
        String fileId = upload(openAiLine("a", "one"));
        fake.batches().holdCreate();
        CompletableFuture<HttpResponse<String>> reply = http.sendAsync(request("/v1/batches")
                .POST(HttpRequest.BodyPublishers.ofString("{\"input_file_id\":\"" + fileId + "\",\"endpoint\":"
                        + "\"/v1/chat/completions\",\"completion_window\":\"24h\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        Await.equal(Duration.ofSeconds(10), "the create is held", 1, () -> fake.batches().heldCreates());
        assertEquals(1, fake.batches().batches().size(), "the batch exists while its reply is held");
        assertFalse(reply.isDone());
        fake.batches().releaseCreate();
        HttpResponse<String> r = reply.get();
        assertEquals(200, r.statusCode());
        assertEquals(fake.batches().batches().get(0).id(), JSON.readTree(r.body()).path("id").asText());
    }

    // ---- Anthropic -------------------------------------------------------------------------------

    @Test
    void anthropicBatchEndsWithSucceededAndErroredResults() throws Exception {
        JsonNode created = post("/v1/messages/batches", "{\"requests\":[" + anthropicRequest("a", "hello there") + ","
                + anthropicRequest("b", "[fail:529] busy") + "," + anthropicRequest("c", "[fail:400] bad") + "]}", 200);
        assertEquals("message_batch", created.path("type").asText());
        assertEquals("in_progress", created.path("processing_status").asText());
        assertEquals(3, created.path("request_counts").path("processing").asInt());
        assertTrue(created.path("results_url").isNull());
        assertTrue(created.path("ended_at").isNull());
        assertEquals(T0.toString(), Instant.parse(created.path("created_at").asText()).toString());
        assertEquals(T0.plus(Duration.ofHours(24)), Instant.parse(created.path("expires_at").asText()));
        assertFalse(created.has("metadata"), "Anthropic batches have no metadata");

        String id = created.path("id").asText();
        JsonNode ended = get("/v1/messages/batches/" + id, 200);
        assertEquals("ended", ended.path("processing_status").asText());
        JsonNode counts = ended.path("request_counts");
        assertEquals(0, counts.path("processing").asInt());
        assertEquals(1, counts.path("succeeded").asInt());
        assertEquals(2, counts.path("errored").asInt());
        assertEquals(fake.baseUri() + "/v1/messages/batches/" + id + "/results", ended.path("results_url").asText());
        assertTrue(ended.path("ended_at").isTextual());

        List<JsonNode> results = lines(text("/v1/messages/batches/" + id + "/results"));
        assertEquals(3, results.size());
        JsonNode a = results.get(0).path("result");
        assertEquals("succeeded", a.path("type").asText());
        assertEquals("message", a.path("message").path("type").asText());
        assertEquals("claude-haiku-4-5", a.path("message").path("model").asText());
        assertEquals(3, a.path("message").path("usage").path("input_tokens").asLong());
        assertEquals(5, a.path("message").path("usage").path("output_tokens").asLong());
        JsonNode b = results.get(1).path("result");
        assertEquals("errored", b.path("type").asText());
        assertEquals("error", b.path("error").path("type").asText());
        assertEquals("overloaded_error", b.path("error").path("error").path("type").asText());
        assertEquals("invalid_request_error", results.get(2).path("result").path("error").path("error").path("type").asText());
        assertEquals(3, fake.batches().inputTokens());
        assertEquals(1, fake.batches().chargesOf("c"));
    }

    @Test
    void anthropicCreateRefusesBadRequests() throws Exception {
        JsonNode dup = post("/v1/messages/batches", "{\"requests\":[" + anthropicRequest("a", "x") + ","
                + anthropicRequest("a", "y") + "]}", 400);
        assertEquals("invalid_request_error", dup.path("error").path("type").asText());
        post("/v1/messages/batches", "{\"requests\":[]}", 400);
        post("/v1/messages/batches", "{\"requests\":[" + anthropicRequest("bad id!", "x") + "]}", 400);
        post("/v1/messages/batches", "{\"requests\":[{\"custom_id\":\"a\",\"params\":{\"model\":\"m\"}}]}", 400);
        assertEquals(0, fake.batches().created());
        get("/v1/messages/batches/msgbatch_nope", 404);
    }

    @Test
    void anthropicResultsWaitForTheEndAndCancelAndExpireAsTheRealApi() throws Exception {
        fake.batches().manual();
        String id = createAnthropic(anthropicRequest("a", "one") + "," + anthropicRequest("b", "two"));
        JsonNode notYet = get("/v1/messages/batches/" + id + "/results", 404);
        assertEquals("not_found_error", notYet.path("error").path("type").asText());
        fake.batches().process(id, 1);
        JsonNode canceling = post("/v1/messages/batches/" + id + "/cancel", "", 200);
        assertEquals("canceling", canceling.path("processing_status").asText());
        assertEquals(T0, Instant.parse(canceling.path("cancel_initiated_at").asText()));
        fake.batches().complete(id);
        JsonNode ended = get("/v1/messages/batches/" + id, 200);
        assertEquals("ended", ended.path("processing_status").asText());
        assertEquals(1, ended.path("request_counts").path("succeeded").asInt());
        assertEquals(1, ended.path("request_counts").path("canceled").asInt());
        List<JsonNode> results = lines(text("/v1/messages/batches/" + id + "/results"));
        assertEquals("canceled", results.get(1).path("result").path("type").asText());

        fake.batches().processingDelay(Duration.ZERO).expireNext();
        String expiring = createAnthropic(anthropicRequest("c", "three"));
        JsonNode e = get("/v1/messages/batches/" + expiring, 200);
        assertEquals("ended", e.path("processing_status").asText());
        assertEquals(1, e.path("request_counts").path("expired").asInt());
        assertEquals("expired", lines(text("/v1/messages/batches/" + expiring + "/results")).get(0)
                .path("result").path("type").asText());
        assertEquals(0, fake.batches().chargesOf("c"));
        assertEquals(0, fake.batches().chargesOf("b"));
    }

    @Test
    void anthropicListIsNewestFirstWithAfterAndBeforeIds() throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(createAnthropic(anthropicRequest("r" + i, "hi")));
            clock.advance(Duration.ofSeconds(1));
        }
        createOpenAi(upload(openAiLine("o", "hi")), "lo-batch-9");
        JsonNode first = get("/v1/messages/batches?limit=2", 200);
        assertEquals(List.of(ids.get(4), ids.get(3)), idsOf(first));
        assertTrue(first.path("has_more").asBoolean());
        assertEquals(ids.get(4), first.path("first_id").asText());
        assertEquals(ids.get(3), first.path("last_id").asText());
        JsonNode after = get("/v1/messages/batches?limit=2&after_id=" + ids.get(3), 200);
        assertEquals(List.of(ids.get(2), ids.get(1)), idsOf(after));
        JsonNode before = get("/v1/messages/batches?limit=2&before_id=" + ids.get(1), 200);
        assertEquals(List.of(ids.get(3), ids.get(2)), idsOf(before));
        assertTrue(before.path("has_more").asBoolean());
        JsonNode all = get("/v1/messages/batches?limit=100", 200);
        assertEquals(5, all.path("data").size(), "an OpenAI batch is not an Anthropic one");
        assertFalse(all.path("has_more").asBoolean());
    }

    // ---- helpers ---------------------------------------------------------------------------------

    static String openAiLine(String id, String text) {
        return "{\"custom_id\":\"" + id + "\",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":"
                + "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]}}\n";
    }

    static String anthropicRequest(String id, String text) {
        return "{\"custom_id\":\"" + id + "\",\"params\":{\"model\":\"claude-haiku-4-5\",\"max_tokens\":100,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]}}";
    }

    private String upload(String jsonl) throws Exception {
        HttpResponse<String> r = uploadRaw(jsonl, "batch");
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body()).path("id").asText();
    }

    private HttpResponse<String> uploadRaw(String jsonl, String purpose) throws Exception {
        String boundary = "----layover-test-boundary";
        String body = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + purpose + "\r\n"
                + "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
                + "Content-Type: application/jsonl\r\n\r\n" + jsonl + "\r\n--" + boundary + "--\r\n";
        return http.send(request("/v1/files").header("content-type", "multipart/form-data; boundary=" + boundary)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private String createOpenAi(String fileId, String ref) throws Exception {
        return post("/v1/batches", "{\"input_file_id\":\"" + fileId + "\",\"endpoint\":\"/v1/chat/completions\","
                + "\"completion_window\":\"24h\",\"metadata\":{\"layover_ref\":\"" + ref + "\"}}", 200).path("id").asText();
    }

    private String createAnthropic(String requests) throws Exception {
        return post("/v1/messages/batches", "{\"requests\":[" + requests + "]}", 200).path("id").asText();
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create(fake.baseUri() + path)).timeout(Duration.ofSeconds(10));
    }

    private JsonNode post(String path, String body, int status) throws Exception {
        HttpResponse<String> r = http.send(request(path).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(status, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private JsonNode get(String path, int status) throws Exception {
        HttpResponse<String> r = http.send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(status, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private String text(String path) throws Exception {
        HttpResponse<String> r = http.send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return r.body();
    }

    private static List<JsonNode> lines(String jsonl) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (String l : jsonl.split("\n")) {
            if (!l.isBlank()) {
                out.add(JSON.readTree(l));
            }
        }
        return out;
    }

    private static List<String> idsOf(JsonNode list) {
        List<String> ids = new ArrayList<>();
        list.path("data").forEach(b -> ids.add(b.path("id").asText()));
        return ids;
    }
}
