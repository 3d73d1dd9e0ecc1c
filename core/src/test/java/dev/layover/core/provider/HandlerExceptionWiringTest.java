package dev.layover.core.provider;

import static dev.layover.core.provider.ReplayServer.reply;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A handler that lets the real openai-java client's exception escape, with no code of its own,
 * gets the outcome of the exception's class: the engine classifies it.
 */
@DatabaseTest
class HandlerExceptionWiringTest {

    record Prompt(String text) {}

    private ReplayServer server;
    private OpenAIClient client;
    private Layover layover;
    private JobType<Prompt> ask;

    @BeforeEach
    void start(TestDatabase db) throws Exception {
        server = new ReplayServer();
        client = OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(server.url() + "/v1")
                .maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        ask = JobType.builder("ask", Prompt.class)
                .providerKey("openai:gpt-4o-mini")
                .handler((args, ctx) -> {
                    client.chat().completions().create(ChatCompletionCreateParams.builder()
                            .model("gpt-4o-mini").addUserMessage(args.text()).build());
                    return null;
                })
                .build();
        layover = Layover.builder(db.dataSource()).register(ask).threads(2).pollInterval(Duration.ofMillis(50)).start();
    }

    @AfterEach
    void stop() {
        layover.stop();
        client.close();
        server.close();
    }

    @Test
    void anOpenAi429EscapingTheHandlerReschedulesWithoutSpendingAnAttempt(TestDatabase db) {
        server.answer(reply(429).header("retry-after", "20").json(
                "{\"error\":{\"message\":\"Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3,"
                        + " Requested 1.\",\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}"));
        String id = layover.enqueue(ask, new Prompt("hi")).id();
        Await.equal(Duration.ofSeconds(20), "reschedules", 1, () -> db.value("select reschedules from layover.jobs where id = ?", id));
        Map<String, Object> row = db.row("select * from layover.jobs where id = ?", id);
        assertEquals(0, row.get("attempts"));
        assertEquals("rate_limited", row.get("reschedule_reason"));
        long wait = Duration.between(Instant.now(), ((Timestamp) row.get("run_at")).toInstant()).toSeconds();
        assertTrue(wait >= 18 && wait <= 26, "retry-after 20 s plus jitter, was " + wait);
        assertEquals(1, server.requests(), "the SDK did not retry by itself");
        assertEquals(3 * 0.95, (Double) db.value("select requests_per_minute from layover.provider_keys "
                + "where provider_key = 'openai:gpt-4o-mini' and pace_learned_until is not null"), 1e-9,
                "the fleet learned 95 % of the 3 RPM the message stated as its pace");
    }

    @Test
    void anOpenAi503EscapingTheHandlerSpendsAnAttemptAsOverloaded(TestDatabase db) {
        server.answer(reply(503).json("{\"error\":{\"message\":\"The server is overloaded\",\"type\":\"server_error\"}}"));
        String id = layover.enqueue(ask, new Prompt("hi")).id();
        Await.equal(Duration.ofSeconds(20), "attempts", 1, () -> db.value("select attempts from layover.jobs where id = ?", id));
        assertEquals("overloaded", db.value("select last_error->>'kind' from layover.jobs where id = ?", id));
    }

    @Test
    void anOpenAi401EscapingTheHandlerParksAsAuthRefused(TestDatabase db) {
        server.answer(reply(401).json("{\"error\":{\"message\":\"Incorrect API key provided: sk-test.\","
                + "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}"));
        String id = layover.enqueue(ask, new Prompt("hi")).id();
        Await.equal(Duration.ofSeconds(20), "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        assertEquals("auth_refused", db.value("select failure_type from layover.dead_letters where job_id = ?", id));
        assertEquals(0, db.value("select attempts from layover.dead_letters where job_id = ?", id));
    }

    /**
     * Anthropic's spend limit names the day access comes back, often weeks away: the date reaches
     * the key's cooldown as stated (no 7-day cut), and the job, whose wait would exceed its
     * maxDeferral (1 h), parks {@code quota_exhausted} at once without spending an attempt.
     */
    @Test
    void anAnthropicSpendLimitWeeksAwayCoolsTheKeyUntilTheStatedDayAndParksTheJob(TestDatabase db) {
        java.time.LocalDate day = java.time.LocalDate.now(java.time.ZoneOffset.UTC).withDayOfMonth(1).plusMonths(2);
        Instant regain = day.atStartOfDay(java.time.ZoneOffset.UTC).toInstant();
        server.answer(reply(400).json("{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
                + "\"message\":\"You have reached your specified workspace API usage limits. You will regain access on "
                + day + " at 00:00 UTC.\"}}"));
        com.anthropic.client.AnthropicClient anthropic = com.anthropic.client.okhttp.AnthropicOkHttpClient.builder()
                .apiKey("test-key").baseUrl(server.url()).maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        JobType<Prompt> claude = JobType.builder("claude", Prompt.class)
                .providerKey("anthropic:claude-haiku-4-5")
                .handler((args, ctx) -> {
                    anthropic.messages().create(com.anthropic.models.messages.MessageCreateParams.builder()
                            .model(com.anthropic.models.messages.Model.CLAUDE_HAIKU_4_5).maxTokens(16)
                            .addUserMessage(args.text()).build());
                    return null;
                })
                .build();
        Layover worker = Layover.builder(db.dataSource()).register(claude).threads(1).pollInterval(Duration.ofMillis(50))
                .migrate(false).start();
        try {
            String id = worker.enqueue(claude, new Prompt("hi")).id();
            Await.equal(Duration.ofSeconds(20), "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
            Map<String, Object> dl = db.row("select failure_type, attempts from layover.dead_letters where job_id = ?", id);
            assertEquals("quota_exhausted", dl.get("failure_type"));
            assertEquals(0, dl.get("attempts"), "a spent quota is not the job's failure");
            assertEquals(Timestamp.from(regain), db.value(
                    "select until from layover.cooldowns where provider_key = 'anthropic:claude-haiku-4-5'"),
                    "the key waits until the stated day, not 7 days");
            assertEquals(1, server.requests());
        } finally {
            worker.stop();
            anthropic.close();
        }
    }
}
