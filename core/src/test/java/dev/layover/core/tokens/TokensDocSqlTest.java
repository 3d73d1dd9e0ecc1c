package dev.layover.core.tokens;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The SQL of docs/tokens.md runs against history written by real runs: calls through openai-java
 * to the fake provider, usage reported from the SDK's {@code ChatCompletion}, a tenant as limit key.
 */
@DatabaseTest
class TokensDocSqlTest {

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);
    private static final String KEY = "openai:gpt-4o-mini";

    /** A tenant's prompt; {@code fail}: the answer is unusable and the job parks after the call. */
    public record Ask(String tenant, String prompt, boolean fail, boolean report) {}

    private final FakeProvider fake = FakeProvider.start();
    private final OpenAIClient client = OpenAIOkHttpClient.builder().apiKey("sk-fake")
            .baseUrl(fake.primary().base() + "/v1").maxRetries(0).timeout(Duration.ofSeconds(10)).build();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
        client.close();
        fake.close();
    }

    @Test
    void theDocumentedQueriesCountATenantsTokensAndThoseSpentOnFailedCalls(TestDatabase db) throws Exception {
        AtomicLong used42 = new AtomicLong();
        AtomicLong failed42 = new AtomicLong();
        JobType<Ask> ask = JobType.builder("ask", Ask.class)
                .providerKey(KEY)
                .limitKeys(a -> List.of("tenant:" + a.tenant()))
                .tokenEstimate(a -> TokenEstimate.of((a.prompt().length() + 3) / 4, 64))
                .handler((a, ctx) -> {
                    ChatCompletion c = client.chat().completions().create(ChatCompletionCreateParams.builder()
                            .model("gpt-4o-mini").addUserMessage(a.prompt()).maxCompletionTokens(64).build());
                    if (!a.report()) {
                        return Outcome.done();
                    }
                    TokenUsage u = ctx.reportUsage(c).orElseThrow();
                    if (a.tenant().equals("42")) {
                        used42.addAndGet(u.totalTokens());
                        if (a.fail()) {
                            failed42.addAndGet(u.totalTokens());
                        }
                    }
                    return a.fail() ? Outcome.rejected("the answer is not the JSON asked for") : Outcome.done();
                })
                .build();
        layover = Layover.builder(db.dataSource()).register(ask).threads(4).pollInterval(Duration.ofMillis(50))
                .bucket(KEY, BucketSettings.requestsPerMinute(600).withTokensPerMinute(100_000))
                .bucket("tenant:*", BucketSettings.tokensPerMinute(50_000))
                .start();
        List<Ask> asks = new ArrayList<>();
        asks.add(new Ask("42", "a".repeat(400), false, true));
        asks.add(new Ask("42", "b".repeat(1200), false, true));
        asks.add(new Ask("42", "c".repeat(800), true, true));
        asks.add(new Ask("42", "d".repeat(100), false, false));
        asks.add(new Ask("7", "e".repeat(2000), false, true));
        layover.enqueueBatch(ask, asks);
        Await.equal(Duration.ofSeconds(30), "history rows", 5L, () -> db.count("select count(*) from layover.job_history"));

        String doc = Files.readString(Path.of("..", "docs", "tokens.md"));
        List<String> queries = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(doc);
        while (m.find()) {
            queries.add(m.group(1).strip());
        }
        assertEquals(3, queries.size(), "the documented queries");
        List<List<Map<String, Object>>> results = new ArrayList<>();
        for (String q : queries) {
            List<Map<String, Object>> rows = db.rows(q.endsWith(";") ? q.substring(0, q.length() - 1) : q);
            assertFalse(rows.isEmpty(), "no row for:\n" + q);
            results.add(rows);
        }
        Map<String, Object> tenant = results.get(0).get(0);
        assertEquals(used42.get(), ((Number) tenant.get("tokens_used")).longValue(), "tenant 42's reported tokens");
        assertEquals(failed42.get(), ((Number) tenant.get("tokens_on_failed_calls")).longValue(), "on the parked one");
        assertEquals(1L, ((Number) tenant.get("jobs_without_usage")).longValue());
        assertEquals(KEY, results.get(1).get(0).get("provider_key"));
        assertEquals(4L, ((Number) results.get(1).get(0).get("calls")).longValue(), "four calls reported usage");
        assertEquals(List.of(KEY, "tenant:42", "tenant:7"),
                results.get(2).stream().map(r -> (String) r.get("provider_key")).distinct().toList(),
                "the token dimension of each bucket, the tenants' from their pattern");
    }
}
