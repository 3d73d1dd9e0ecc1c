package dev.layover.console;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.FallbackChain;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.Await;
import dev.layover.testing.TestDatabase;
import java.time.Duration;

/**
 * A console over a Layover that has lived a little, as an operator meets it after the demo: a
 * model key served by a fallback chain whose primary answers 429 (the secondary carries the
 * traffic), a key cooling down after a 429 with its jobs waiting behind it, a key whose breaker
 * is open with jobs parked {@code breaker_open}, a job retrying with a long error, jobs due in two
 * hours, a limit set at run time, a pause, dead letters of several failure types with long
 * errors, finished jobs in the history and the time series. Everything through Layover's own API,
 * the console's API, or (dead letters of other failure types) straight into the table.
 */
final class BusyConsole implements AutoCloseable {

    static final String MODEL = "openai:gpt-4o-mini";
    static final String PRIMARY = MODEL + "@primary";
    static final String SECONDARY = MODEL + "@secondary";
    static final String COOLING = "anthropic:claude-haiku-4-5";
    static final String BROKEN = "openai:text-embedding-3-small";
    static final String WORKER = "worker-7f3c9a2e.eu-west-1.compute.internal#48213";

    record Doc(String documentId, String text) {}

    final Layover layover;
    final ReplayConsole console;
    final ApiClient api;
    final long deadLetterId;
    final long batchId;

    BusyConsole(TestDatabase db) {
        FallbackChain<String> chain = FallbackChain.<String>builder().endpoint(PRIMARY, "primary")
                .endpoint(SECONDARY, "secondary").build();
        JobType<Doc> translate = JobType.builder("translate", Doc.class).providerKey(MODEL)
                .handler((args, ctx) -> {
                    chain.call(ctx, ep -> {
                        if (ep.client().equals("primary")) {
                            throw Outcome.rateLimited(Duration.ofMillis(300), "429 Rate limit reached for gpt-4o-mini "
                                    + "in organization org-demo on requests per min (RPM): Limit 500, Used 500").toException();
                        }
                        return "translated";
                    });
                    return Outcome.done();
                }).build();
        JobType<Doc> summarize = JobType.builder("summarize", Doc.class).providerKey(COOLING)
                .policy(JobPolicy.defaults().withMaxDeferral(Duration.ofHours(2)))
                .handler((args, ctx) -> Outcome.rateLimited(Duration.ofMinutes(20), "429 rate_limit_error: This request "
                        + "would exceed the rate limit for your organization of 50 requests per minute"))
                .build();
        JobType<Doc> embed = JobType.builder("embed", Doc.class).providerKey(BROKEN)
                .handler((args, ctx) -> Outcome.done()).build();
        JobType<Doc> enrich = JobType.builder("enrich-customer-profile-with-crm-history", Doc.class).providerKey(MODEL)
                .policy(JobPolicy.defaults().withMaxAttempts(8).withBackoff(Duration.ofMinutes(20), Duration.ofHours(1)))
                .handler((args, ctx) -> {
                    throw new IllegalStateException("upstream CRM answered 502 Bad Gateway while reading the account "
                            + "history of customer " + args.documentId() + ": connection reset by peer after 30012 ms; "
                            + "the gateway's own retry budget was spent");
                }).build();
        layover = Layover.builder(db.dataSource()).register(translate, summarize, embed, enrich).threads(4)
                .workerName(WORKER).pollInterval(Duration.ofMillis(50)).shutdownMaxWait(Duration.ofSeconds(5))
                .timeSeriesFlushInterval(Duration.ofSeconds(1))
                .bucket(MODEL, BucketSettings.requestsPerMinute(500))
                .plugin(RecoverySweep.plugin())
                .start();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);

        for (int i = 0; i < 40; i++) {
            layover.enqueue(translate, new Doc("doc-" + i, "Bonjour " + i));
        }
        layover.providerStates().forceOpen(BROKEN, Duration.ofMinutes(7), "503 from every region since 11:02");
        for (int i = 0; i < 12; i++) {
            layover.enqueue(embed, new Doc("emb-" + i, "vector " + i));
        }
        for (int i = 0; i < 30; i++) {
            layover.enqueue(summarize, new Doc("sum-" + i, "A long report " + i));
        }
        layover.enqueue(enrich, new Doc("customer-00042917", "profile"));
        for (int i = 0; i < 25; i++) {
            layover.enqueue(translate, new Doc("later-" + i, "Plus tard " + i),
                    EnqueueOptions.key("invoice-2026-000" + (1000 + i) + "-translation").withDelay(Duration.ofHours(2)));
        }
        Await.until(Duration.ofSeconds(60), "the translations done, the embeddings parked, the summaries waiting",
                () -> db.count("select count(*) from layover.job_history where job_type = 'translate'") >= 40
                        && db.count("select count(*) from layover.dead_letters where failure_type = 'breaker_open'") == 12
                        // the summaries the pick took before the key cooled met the 429 (rescheduled);
                        // the rest wait for the cooldown untouched (scheduled): how many of each is timing
                        && db.count("select count(*) from layover.jobs where job_type = 'summarize' and state = 'rescheduled'") >= 1
                        && db.count("select count(*) from layover.jobs where job_type = 'summarize'"
                                + " and state in ('rescheduled', 'scheduled')") == 30
                        && db.count("select count(*) from layover.jobs where job_type like 'enrich%' and state = 'retrying'") == 1);
        Fixtures.deadLetter("invoice-2026-0001017-translation").type("translate").provider(MODEL).failure("auth_refused")
                .error("com.openai.errors.UnauthorizedException", "401 Incorrect API key provided: sk-proj-****abcd. You can "
                        + "find your API key at https://platform.openai.com/account/api-keys.").insert(db);
        deadLetterId = Fixtures.deadLetter("doc-rejected-77").type("translate").provider(MODEL).failure("rejected")
                .error("com.openai.errors.BadRequestException", "400 This model's maximum context length is 128000 tokens. "
                        + "However, your messages resulted in 131072 tokens. Please reduce the length of the messages.")
                .insert(db);
        Fixtures.deadLetter("emb-legacy-3").type("embed").provider(BROKEN).failure("provider_unavailable")
                .error("com.openai.errors.InternalServerException", "503 The server is overloaded or not ready yet.").insert(db);
        // a batch of the provider's batch API (issue 24), ended, with its lines
        batchId = ConsoleBatchesTest.batch(db, MODEL, "ended", 6, 5, 1, 0, 48_000, null);
        ConsoleBatchesTest.lines(db, batchId, "nightly-summary-of-account-activity", 6);
        api.post("/api/limits", "{\"key\": \"" + MODEL + "\", \"requestsPerMinute\": 300, \"reason\": \"tier lowered by the provider\"}");
        api.post("/api/pauses/job-type/nightly-digest/pause", "{\"reason\": \"waiting for the new template\"}");
        Await.until(Duration.ofSeconds(20), "the worker applies the limit", () -> db.count(
                "select count(*) from layover.workers where limits -> '" + MODEL + "' is not null") == 1);
        Await.until(Duration.ofSeconds(20), "the endpoints' calls flushed", () -> db.count(
                "select count(*) from layover.time_series where counter = 'chain_call'") > 0);
    }

    @Override
    public void close() {
        console.close();
        layover.stop();
    }
}
