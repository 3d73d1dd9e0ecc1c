package dev.layover.dlq;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** A job type calling the fake provider over plain HTTP, small provider-state settings, and audit readers. */
final class RecoveryFixtures {

    private RecoveryFixtures() {}

    /** The fake provider's key. */
    static final String KEY = "fake:primary";

    /** The args of the chat job type. */
    record Chat(String text) {}

    /** Cooldowns of a few milliseconds, so that they never hold a test up. */
    static final CooldownSettings TINY_COOLDOWNS = new CooldownSettings(Duration.ofMillis(10), Duration.ofMillis(20),
            Duration.ofMillis(10), Duration.ofMillis(20), Duration.ofSeconds(1));

    /** A breaker that never opens by itself (the tests that need an open one force it). */
    static final BreakerSettings NEVER_OPENS = BreakerSettings.defaults()
            .withThresholds(Duration.ofSeconds(60), 1000, 1000, 1.0);

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    /**
     * A job type {@code chat} with provider key {@value #KEY} whose handler sends one chat
     * completion to {@code url}: an error response is thrown as its classified outcome; an answer
     * counts one success for the job id in {@code successes}.
     */
    static JobType<Chat> chat(URI url, JobPolicy policy, Map<String, AtomicInteger> successes) {
        return JobType.builder("chat", Chat.class)
                .providerKey(KEY)
                .policy(policy)
                .handler((args, ctx) -> {
                    complete(url, args.text());
                    successes.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
                    return null;
                })
                .build();
    }

    static Map<String, AtomicInteger> counter() {
        return new ConcurrentHashMap<>();
    }

    /**
     * One OpenAI chat completion with the JDK's client.
     *
     * @throws dev.layover.core.outcome.OutcomeException the classified outcome of an error response
     */
    static String complete(URI url, String prompt) throws IOException, InterruptedException {
        String body = JSON.createObjectNode()
                .put("model", "gpt-4o-mini")
                .set("messages", JSON.createArrayNode().add(JSON.createObjectNode().put("role", "user")
                        .put("content", prompt)))
                .toString();
        HttpRequest req = HttpRequest.newBuilder(url)
                .timeout(Duration.ofSeconds(10))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        HttpResponse<String> r = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
        Optional<Classification> failure = ProviderClassifier.defaults().classify(Provider.OPENAI, r);
        if (failure.isPresent()) {
            throw failure.get().toOutcome().toException();
        }
        JsonNode n = JSON.readTree(r.body());
        return n.path("choices").path(0).path("message").path("content").asText();
    }

    /** The counts of the sweep's batches (audit rows of kind sweep), oldest first. */
    static List<Long> sweepBatches(TestDatabase db) {
        List<Long> out = new ArrayList<>();
        for (Map<String, Object> r : db.rows("select count from layover.audit_log where actor = 'recovery-sweep' "
                + "and action = 'replay' and details ->> 'kind' = 'sweep' order by id")) {
            out.add(((Number) r.get("count")).longValue());
        }
        return out;
    }

    /** The run times of the trials (audit rows of kind trial), oldest first. */
    static List<Instant> trialRunTimes(TestDatabase db) {
        List<Instant> out = new ArrayList<>();
        for (Map<String, Object> r : db.rows("select details ->> 'run_at' as run_at from layover.audit_log "
                + "where actor = 'recovery-sweep' and action = 'replay' and details ->> 'kind' = 'trial' order by id")) {
            out.add(Instant.parse((String) r.get("run_at")));
        }
        return out;
    }

    /** Marks a key's breaker closed now, as a close by any worker or console would leave it. */
    static void closedNow(TestDatabase db, String key) {
        db.update("""
                insert into layover.breakers (provider_key, state, opened_at, closed_at, reason, changed_at, changed_by)
                values (?, 'closed', now() - interval '1 minute', now(), 'test: closed', now(), 'test')
                on conflict (provider_key) do update set state = 'closed', closed_at = now(), open_until = null,
                    reason = 'test: closed', changed_at = now()""", key);
    }

    /** Waits until no job is live. */
    static void awaitNoJobs(TestDatabase db) {
        dev.layover.testing.Await.equal(Fixtures.WAIT, "live jobs", 0L,
                () -> db.count("select count(*) from layover.jobs where job_type <> 'layover-recovery-sweep'"));
    }

    static JobPolicy quickPolicy(int attempts) {
        return JobPolicy.defaults().withMaxAttempts(attempts).withBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
    }
}
