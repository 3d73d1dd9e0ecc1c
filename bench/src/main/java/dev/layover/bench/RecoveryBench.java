package dev.layover.bench;

import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * Recovery after an outage: N jobs meet a provider that answers 503, the first failures open the
 * key's circuit breaker and every job is parked ({@code provider_unavailable} after its attempts,
 * {@code breaker_open} when picked while the breaker is open) — the real path, not dead letters
 * inserted by hand. The recovery trial then tests the provider while it is still down (it fails,
 * the breaker opens again), and at that moment the provider comes back: the worst moment, since
 * the next trial is a whole trial interval away. Measured: the time from the provider's return to
 * the last job's successful call, against the ideal {@code trial interval + N / R}, and successful
 * calls per job (any job answered twice is a duplicate).
 *
 * <p>One Layover instance in this JVM ({@code threads} workers, default poll interval), the
 * provider's limit configured as its bucket, and the {@link RecoverySweep} configured as {@link
 * Settings} say.
 */
public final class RecoveryBench {

    /** The provider key of the benchmark's jobs. */
    static final String KEY = "fake:recovery";

    /**
     * @param rate R, the provider's limit (requests per second), also the bucket
     * @param jobs jobs parked by the outage
     * @param threads Layover worker threads
     * @param pollInterval the workers' poll interval
     * @param trialEvery the trial interval (the breaker's open period is set to it as well)
     * @param checkEvery the sweep's interval
     * @param firstBatch the sweep's first batch
     * @param maxBatch the sweep's largest batch
     * @param spread the sweep's spread (and time between batches)
     * @param policy the job type's limits
     */
    public record Settings(int rate, int jobs, int threads, Duration pollInterval, Duration trialEvery,
            Duration checkEvery, int firstBatch, int maxBatch, Duration spread, JobPolicy policy) {
        /**
         * @param pollInterval the workers' poll interval
         * @return the case: 10,000 jobs, R = 50/s ({@code -Dbench.recovery.jobs=N} for fewer)
         */
        public static Settings full(Duration pollInterval) {
            return new Settings(50, Integer.getInteger("bench.recovery.jobs", 10_000), 16, pollInterval,
                    Duration.ofSeconds(10), Duration.ofSeconds(1), 50, 500, Duration.ofSeconds(5), POLICY);
        }

        /**
         * @param pollInterval the workers' poll interval
         * @return a smoke test
         */
        public static Settings quick(Duration pollInterval) {
            return new Settings(50, 100, 16, pollInterval, Duration.ofSeconds(2), Duration.ofMillis(100), 20, 500,
                    Duration.ofSeconds(1), JobPolicy.defaults().withMaxAttempts(1));
        }

        /** @return the ideal: trial interval + jobs / R, in seconds */
        double ideal() {
            return trialEvery.toMillis() / 1000.0 + (double) jobs / rate;
        }

        String describe() {
            return "RecoverySweep checkEvery " + seconds(checkEvery) + ", firstBatch " + firstBatch + ", growthFactor 2, "
                    + "maxBatch " + maxBatch + ", spreadOver " + seconds(spread) + ", trialEvery " + seconds(trialEvery)
                    + " (trialBackoff 1); breaker openFor " + seconds(trialEvery) + " (max " + seconds(trialEvery)
                    + "); bucket " + rate + "/s; job policy " + policy.maxAttempts() + " attempts, backoff "
                    + seconds(policy.backoffBase()) + " to " + seconds(policy.backoffCap()) + "; " + threads
                    + " worker threads, poll interval " + seconds(pollInterval);
        }
    }

    /**
     * @param jobs jobs parked
     * @param parkedBreakerOpen of which parked {@code breaker_open}
     * @param parkedUnavailable of which parked {@code provider_unavailable}
     * @param parkSeconds time from enqueue to all parked
     * @param toClose time from the provider's return to the breaker's close
     * @param closeToDone time from the close to the last successful call
     * @param total time from the provider's return to the last successful call
     * @param ideal trial interval + jobs / R
     * @param distinctDone jobs with a successful call
     * @param duplicates jobs with more than one successful call
     * @param providerSuccesses successful calls counted by the fake provider
     * @param rateLimited 429s during the recovery
     * @param inReview dead letters in review at the end
     * @param batches the sweep's batch sizes, in order
     * @param config what was configured
     */
    public record Result(int jobs, long parkedBreakerOpen, long parkedUnavailable, double parkSeconds, double toClose,
            double closeToDone, double total, double ideal, long distinctDone, long duplicates, long providerSuccesses,
            long rateLimited, long inReview, List<Long> batches, String config) {
        /** @return total / ideal */
        double ratio() {
            return total / ideal;
        }
    }

    /**
     * The job type's limits: 3 attempts, backoff 1-4 s, so that the few jobs that reached the
     * provider before the breaker opened park {@code provider_unavailable} within seconds instead
     * of retrying for minutes (the default: 10 attempts, backoff 2 s to 10 min).
     */
    static final JobPolicy POLICY = JobPolicy.defaults().withMaxAttempts(3)
            .withBackoff(Duration.ofSeconds(1), Duration.ofSeconds(4));

    /** Args of a recovery job. */
    public record Work(int n) {}

    private RecoveryBench() {}

    /**
     * @param ds the database (migrated), with a pool of at least {@code threads + 6}
     * @param s the settings
     * @return the result
     * @throws Exception on failure, or when the recovery does not finish within five times the ideal
     */
    public static Result measure(DataSource ds, Settings s) throws Exception {
        Map<Integer, AtomicInteger> successes = new ConcurrentHashMap<>();
        AtomicLong lastSuccess = new AtomicLong();
        try (FakeProvider fake = FakeProvider.start()) {
            FakeProvider.Endpoint ep = fake.primary();
            ep.limitPerSecond(s.rate()).phase(FakeProvider.Phase.OUTAGE);
            URI url = ep.url();
            JobType<Work> type = JobType.builder("recover", Work.class)
                    .providerKey(KEY)
                    .policy(s.policy())
                    .handler((args, ctx) -> {
                        HttpResponse<String> r = ChatClient.send(url, "job " + args.n());
                        Optional<Classification> failure = ChatClient.classify(r);
                        if (failure.isPresent()) {
                            throw failure.get().toOutcome().toException();
                        }
                        successes.computeIfAbsent(args.n(), k -> new AtomicInteger()).incrementAndGet();
                        lastSuccess.accumulateAndGet(System.nanoTime(), Math::max);
                        return Outcome.done();
                    })
                    .build();
            Layover layover = Layover.builder(ds)
                    .register(type)
                    .threads(s.threads())
                    .pollInterval(s.pollInterval())
                    .shutdownMaxWait(Duration.ofSeconds(5))
                    .bucket(KEY, BucketSettings.requestsPerSecond(s.rate()))
                    .breaker(KEY, BreakerSettings.defaults().withOpenFor(s.trialEvery(), s.trialEvery()))
                    .plugin(RecoverySweep.builder()
                            .checkEvery(s.checkEvery())
                            .firstBatch(s.firstBatch()).growthFactor(2).maxBatch(s.maxBatch())
                            .spreadOver(s.spread())
                            .trialEvery(s.trialEvery(), s.trialEvery()).trialBackoff(1)
                            .build())
                    .start();
            try {
                List<Work> args = new ArrayList<>();
                for (int i = 0; i < s.jobs(); i++) {
                    args.add(new Work(i));
                }
                long t0 = System.nanoTime();
                layover.enqueueBatch(type, args);
                long limit = (long) (60 + s.jobs() / 100.0);
                awaitValue(ds, "select count(*) from layover.dead_letters where provider_key = '" + KEY
                        + "' and state = 'parked'", s.jobs(), Duration.ofSeconds(limit), "every job parked");
                awaitValue(ds, "select count(*) from layover.jobs where job_type = 'recover'", 0, Duration.ofSeconds(limit),
                        "no live job");
                double parkSeconds = (System.nanoTime() - t0) / 1e9;
                long breakerOpen = EtiquetteBench.value(ds, "select count(*) from layover.dead_letters where provider_key = '"
                        + KEY + "' and failure_type = 'breaker_open'");
                long unavailable = EtiquetteBench.value(ds, "select count(*) from layover.dead_letters where provider_key = '"
                        + KEY + "' and failure_type = 'provider_unavailable'");

                // the trial, while the provider is still down: it fails and parks its job again
                int down = ep.unavailable();
                long deadline = System.nanoTime() + s.trialEvery().multipliedBy(3).plusSeconds(30).toNanos();
                while (ep.unavailable() == down) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("no recovery trial within " + s.trialEvery().multipliedBy(3));
                    }
                    Thread.sleep(5);
                }
                // the provider is back, just after a failed trial
                ep.phase(FakeProvider.Phase.NORMAL);
                long back = System.nanoTime();
                if (EtiquetteBench.TRACE) {
                    EtiquetteBench.trace(ds, ep, back, back + (long) (s.ideal() * 3e9));
                }
                Instant backAt = Instant.now();
                int rateLimitedBefore = ep.rateLimited();
                long end = back + (long) (s.ideal() * 5e9) + 60_000_000_000L;
                while (successes.size() < s.jobs()) {
                    if (System.nanoTime() > end) {
                        throw new IllegalStateException("recovery did not finish: " + successes.size() + " of " + s.jobs()
                                + " done after " + (System.nanoTime() - back) / 1e9 + " s");
                    }
                    Thread.sleep(20);
                }
                double total = (lastSuccess.get() - back) / 1e9;
                layover.awaitCompletions(Duration.ofSeconds(30));
                Instant closedAt = timestamp(ds, "select closed_at from layover.breakers where provider_key = '" + KEY + "'");
                double toClose = closedAt == null ? Double.NaN : Duration.between(backAt, closedAt).toMillis() / 1000.0;
                long duplicates = successes.values().stream().filter(n -> n.get() > 1).count();
                long inReview = EtiquetteBench.value(ds, "select count(*) from layover.dead_letters where provider_key = '"
                        + KEY + "' and state = 'review'");
                List<Long> batches = longs(ds, "select count from layover.audit_log where actor = 'recovery-sweep' "
                        + "and action = 'replay' and subject = '" + KEY + "' and details ->> 'kind' = 'sweep' order by id");
                return new Result(s.jobs(), breakerOpen, unavailable, parkSeconds, toClose, total - toClose, total,
                        s.ideal(), successes.size(), duplicates, ep.successes(), ep.rateLimited() - rateLimitedBefore,
                        inReview, batches, s.describe());
            } finally {
                layover.stop();
            }
        }
    }

    private static void awaitValue(DataSource ds, String sql, long expected, Duration timeout, String what)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        long v;
        while ((v = EtiquetteBench.value(ds, sql)) != expected) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(what + ": " + v + " instead of " + expected + " after " + timeout);
            }
            Thread.sleep(50);
        }
    }

    private static Instant timestamp(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            if (!rs.next()) {
                return null;
            }
            Timestamp t = rs.getTimestamp(1);
            return t == null ? null : t.toInstant();
        }
    }

    private static List<Long> longs(DataSource ds, String sql) throws Exception {
        List<Long> out = new ArrayList<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }

    static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }
}
