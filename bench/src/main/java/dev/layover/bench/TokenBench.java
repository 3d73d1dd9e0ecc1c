package dev.layover.bench;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.tokens.CalibratedEstimator;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.sql.DataSource;

/**
 * Token limits: how much of a provider's tokens-per-minute limit T turns into useful tokens. The
 * fake provider limits combined tokens to T a minute (its bucket holds a minute; it takes input +
 * the request's {@code max_tokens} when a call arrives and gives the unused output back when it
 * answers) and no request limit binds; two Layover instances of {@code threads} workers each share
 * the key. Offered load: the provider's first minute of tokens enqueued at once, then a stream at
 * five times what T allows. Prompts vary 10x in size (100 to 1,000 input tokens), answers use
 * 20-100 % of a 300-token ceiling. Arms:
 *
 * <ul>
 *   <li><b>token limit</b>: the bucket limits tokens at 0.97 T; each call reserves its estimate
 *       (a {@link CalibratedEstimator} that has seen 50 earlier reports of the key and learns from
 *       every report, + the ceiling) and reports its usage from the raw JSON
 *       ({@code ctx.reportUsage(Provider.OPENAI, body)});
 *   <li><b>request-only</b>: a request bucket sized from the average tokens per call
 *       (0.97 T / average), what a team without token limits configures;
 *   <li><b>each JVM counting locally</b>: what per-replica gateways do, two counters that each
 *       believe they own the limit: the jobs are split between two keys ({@code #a}, {@code #b})
 *       on the one provider endpoint, each key's bucket limiting tokens at the full 0.97 T (two
 *       replicas, each counting its own calls);
 *   <li><b>learning</b>: no bucket configured; each call reserves its estimate as in the token
 *       arm and reports the response's rate-limit headers ({@code ctx.reportLimits}), from which
 *       the fleet learns the key's token limit ({@code x-ratelimit-limit-tokens}, at the learned
 *       pace's share of it) and corrects its count ({@code x-ratelimit-remaining-tokens}).
 * </ul>
 *
 * Figures from the fake's counters in a steady window after a warm-up that spends the provider's
 * initial minute of tokens: useful tokens (input + output of answered calls) per minute over T,
 * and the share of calls answered 429. The estimate's error against the reported input is the
 * token arm's.
 */
public final class TokenBench {

    private static final String KEY = "openai:gpt-4o-mini";
    private static final int CEILING = 300;
    private static final String WORDS = "the quick brown fox jumps over the lazy dog while a translation job waits ";
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    /**
     * @param tokensPerMinute T
     * @param threads worker threads per instance (two instances)
     * @param warmUp time before the window
     * @param window the measured window
     * @param pollInterval the workers' poll interval
     * @param offered the stream's offered load, as a multiple of what T allows
     */
    public record Settings(long tokensPerMinute, int threads, Duration warmUp, Duration window, Duration pollInterval,
            int offered) {

        /**
         * @param poll the workers' poll interval
         * @return T = 600,000/min, 2 x 8 threads, 15 s warm-up, 30 s window, 5x offered load (the
         *     system property {@code layover.bench.tokens.offered} says otherwise)
         */
        public static Settings full(Duration poll) {
            return new Settings(600_000, 8, Duration.ofSeconds(15), Duration.ofSeconds(30), poll,
                    Integer.getInteger("layover.bench.tokens.offered", 5));
        }

        /**
         * @param poll the workers' poll interval
         * @return a smoke test
         */
        public static Settings quick(Duration poll) {
            return new Settings(60_000, 8, Duration.ofSeconds(2), Duration.ofSeconds(3), poll, 5);
        }

        int jobs() {
            // 5x the tokens T allows in the run, at 730 tokens a call on average, plus the minute the provider holds
            double seconds = (warmUp.toMillis() + window.toMillis()) / 1000.0;
            return (int) ((offered * tokensPerMinute / 60.0 * seconds + tokensPerMinute) / 730) + 1;
        }
    }

    /**
     * One arm.
     *
     * @param arm its label
     * @param usefulPerT useful tokens per minute in the window, over T
     * @param share429 calls answered 429 over calls, in the window
     * @param calls calls in the window
     * @param estimateMedian median relative error of the input estimate against reported usage (NaN: no estimate)
     * @param estimateP95 its 95th percentile
     * @param attemptsSpent attempts the arm's jobs spent (live jobs' {@code consecutive_failures}
     *     at the end, plus dead letters): a 429 spends none
     */
    public record Result(String arm, double usefulPerT, double share429, long calls, double estimateMedian,
            double estimateP95, long attemptsSpent) {}

    /** A job: a prompt of {@code inputTokens} as the fake counts them (characters / 4). */
    public record Prompt(int inputTokens, String text) {}

    private TokenBench() {}

    /**
     * Runs both arms.
     *
     * @param ds the database (Layover's schema migrated)
     * @param s the settings
     * @return the token arm, then the request-only arm
     */
    public static List<Result> measure(DataSource ds, Settings s) throws Exception {
        List<Result> out = new ArrayList<>();
        for (Arm a : Arm.values()) {
            out.add(arm(ds, s, a));
        }
        return out;
    }

    /** The arms, in the order they run and print. */
    enum Arm {
        TOKENS("token limit at 0.97 T (reserve, settle)"),
        REQUESTS("request-only bucket, 0.97 T / avg tokens"),
        LOCAL("each JVM counting tokens locally against 0.97 T"),
        LEARNING("no bucket configured: token limits learned from the provider's headers and 429s");

        final String label;

        Arm(String label) {
            this.label = label;
        }
    }

    private static Result arm(DataSource ds, Settings s, Arm arm) throws Exception {
        boolean tokens = arm != Arm.REQUESTS;
        clean(ds);
        try (FakeProvider fake = FakeProvider.start()) {
            fake.primary().tokenLimitPerMinute(s.tokensPerMinute()).outputShare(0.2, 1.0);
            URI url = fake.primary().url();
            CalibratedEstimator calibrated = CalibratedEstimator.create();
            // a deployment keeps its calibration (export/importState); here: 50 earlier reports of the key
            for (int i = 0; i < 50; i++) {
                int n = 100 + (int) ((i * 104_729L) % 901);
                calibrated.observe(KEY, calibrated.estimate(KEY, text(n)).rawTokens(), n);
            }
            ConcurrentLinkedQueue<double[]> errors = new ConcurrentLinkedQueue<>();
            JobType.Builder<Prompt> b = JobType.builder("tokens-" + arm.name().toLowerCase(java.util.Locale.ROOT), Prompt.class)
                    .providerKey(p -> arm == Arm.LOCAL ? KEY + (p.inputTokens() % 2 == 0 ? "#a" : "#b") : KEY)
                    .handler((p, ctx) -> {
                        CalibratedEstimator.Estimate e = calibrated.estimate(KEY, p.text());
                        HttpResponse<String> r = send(url, p.text());
                        if (arm == Arm.LEARNING) {
                            RateLimitHeaders.read(r.headers(), Instant.now()).ifPresent(ctx::reportLimits);
                        }
                        if (r.statusCode() == 200) {
                            Optional<TokenUsage> u = ctx.reportUsage(Provider.OPENAI, r.body());
                            u.ifPresent(usage -> {
                                calibrated.observe(e, usage);
                                errors.add(new double[] {(e.tokens() - usage.totalInputTokens()) / (double) usage.totalInputTokens()});
                            });
                            return Outcome.done();
                        }
                        return ChatClient.classify(r).map(c -> c.toOutcome()).orElse(Outcome.retry("HTTP " + r.statusCode()));
                    });
            if (tokens) {
                b.tokenEstimate(p -> TokenEstimate.of(calibrated.estimate(KEY, p.text()).tokens(), CEILING));
            }
            JobType<Prompt> type = b.build();
            double t = s.tokensPerMinute() * 0.97;
            BucketSettings bucket = tokens ? BucketSettings.tokensPerMinute(t)
                    : BucketSettings.requestsPerMinute(t / (550 + 0.6 * CEILING));
            List<Layover> instances = new ArrayList<>();
            try {
                for (String name : new String[] {"tokens-a", "tokens-b"}) {
                    Layover.Builder lb = Layover.builder(ds).workerName(name).register(type).threads(s.threads())
                            .pollInterval(s.pollInterval()).history(false).migrate(false)
                            .shutdownMaxWait(Duration.ofSeconds(5));
                    if (arm == Arm.LOCAL) {
                        lb.bucket(KEY + "#a", bucket).bucket(KEY + "#b", bucket);
                    } else if (arm != Arm.LEARNING) {
                        lb.bucket(KEY, bucket);
                    }
                    instances.add(lb.start());
                }
                List<Prompt> prompts = new ArrayList<>();
                for (int i = 0; i < s.jobs(); i++) {
                    int n = 100 + (int) ((i * 7919L) % 901); // 100 to 1,000 tokens, spread evenly
                    prompts.add(new Prompt(n, text(n)));
                }
                // the provider's first minute at once, then the rest as a stream at 5x what T allows
                int burst = (int) (s.tokensPerMinute() / 730);
                instances.get(0).enqueueBatch(type, prompts.subList(0, burst));
                long started = System.nanoTime();
                Instant from = Instant.now().plus(s.warmUp());
                long end = started + s.warmUp().plus(s.window()).toNanos();
                int next = burst;
                double perSecond = s.offered() * s.tokensPerMinute() / 60.0 / 730;
                while (System.nanoTime() < end) { // a benchmark's offered load, not a test wait
                    int due = Math.min(prompts.size(), burst + (int) ((System.nanoTime() - started) / 1e9 * perSecond));
                    if (due > next) {
                        instances.get((next / 10) % 2).enqueueBatch(type, prompts.subList(next, due));
                        next = due;
                    }
                    Thread.sleep(100);
                }
                Instant to = Instant.now();
                return result(arm.label + ", " + s.offered() + "x offered", fake.primary(), from, to, s,
                        arm == Arm.TOKENS ? errors : new ConcurrentLinkedQueue<>(), attemptsSpent(ds, type.name()));
            } finally {
                instances.forEach(Layover::stop);
            }
        }
    }

    private static long attemptsSpent(DataSource ds, String type) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                java.sql.ResultSet rs = st.executeQuery("select (select coalesce(sum(consecutive_failures), 0) from"
                        + " layover.scheduled_tasks where task_name = '" + type + "') + (select count(*) from"
                        + " layover.dead_letters where job_type = '" + type + "')")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static Result result(String arm, FakeProvider.Endpoint ep, Instant from, Instant to, Settings s,
            ConcurrentLinkedQueue<double[]> errors, long attempts) {
        long useful = 0;
        for (FakeProvider.Usage u : ep.usages()) {
            if (!u.at().isBefore(from) && u.at().isBefore(to)) {
                useful += u.inputTokens() + u.outputTokens();
            }
        }
        long calls = ep.usages().stream().filter(u -> !u.at().isBefore(from) && u.at().isBefore(to)).count();
        double minutes = Duration.between(from, to).toNanos() / 60e9;
        List<Double> abs = new ArrayList<>();
        for (double[] e : errors) {
            abs.add(Math.abs(e[0]));
        }
        Collections.sort(abs);
        double median = abs.isEmpty() ? Double.NaN : abs.get(abs.size() / 2);
        double p95 = abs.isEmpty() ? Double.NaN : abs.get(Math.min(abs.size() - 1, (int) Math.ceil(abs.size() * 0.95) - 1));
        return new Result(arm, useful / minutes / s.tokensPerMinute(),
                ep.calls() == 0 ? 0 : ep.rateLimited() / (double) ep.calls(), calls, median, p95, attempts);
    }

    private static String text(int tokens) {
        StringBuilder sb = new StringBuilder(tokens * 4);
        while (sb.length() < tokens * 4) {
            sb.append(WORDS);
        }
        return sb.substring(0, tokens * 4);
    }

    private static HttpResponse<String> send(URI url, String prompt) throws Exception {
        String body = "{\"model\":\"gpt-4o-mini\",\"max_completion_tokens\":" + CEILING
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
        return HTTP.send(HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(10))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void clean(DataSource ds) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("select layover.forget_provider_keys(array['" + KEY + "', '" + KEY + "#a', '" + KEY + "#b'])");
            st.execute("delete from layover.scheduled_tasks where task_name like 'tokens-%'");
        }
    }
}
