package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.DiscoverySettings;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One worker JVM of the provider etiquette benchmark ({@link EtiquetteBench}): {@code threads}
 * worker threads calling the fake provider, in one of three ways.
 *
 * <ul>
 *   <li>{@code bucket}: a Layover worker with the provider's limit configured as a fleet-wide
 *       bucket ({@link BucketSettings#requestsPerSecond} at R, default burst and lease);
 *   <li>{@code learn}: a Layover worker without a bucket: the fleet learns only from 429s
 *       (fleet-wide cooldowns, and the pace a 429 states, learned as a shared bucket);
 *   <li>{@code backoff}: plain threads without a queue, each retrying its call with exponential
 *       backoff and full jitter, the retry-after as a floor (see {@link #backoffMillis}).
 * </ul>
 *
 * <ul>
 *   <li>{@code bucket-sweep}: the {@code bucket} worker with the recovery bench's breaker (open
 *       10 s) and {@link RecoverySweep}, for the outage arm of the faults comparison: the jobs
 *       parked while the breaker is open are replayed when it closes;
 *   <li>{@code discover}: a Layover worker without a bucket against a provider whose 429s state no
 *       limit: the fleet discovers the pace (discovery switched on with DiscoverySettings defaults);
 * </ul>
 *
 * <p>Arguments: mode, JDBC URL, fake provider URL, worker name, threads, provider key, R (requests
 * per second), jobs for this JVM (backoff mode), go file, stop file, poll interval in ms, and
 * optionally the API to speak ({@link FakeProvider.Api}, default OpenAI chat; the URL is that API's). Prints {@code ready} when it
 * can work; a Layover worker starts at once and waits for jobs (the parent enqueues them), the
 * backoff threads start when the go file exists. When the stop file exists it prints one line
 * {@code RESULT ...} with its counters and exits.
 */
public final class EtiquetteWorker {

    /** The args of a chat job. */
    public record Chat(int n) {}

    /** The job type name. */
    static final String TYPE = "chat";

    /** Backoff base, as the OpenAI SDKs use (0.5 s). */
    static final long BACKOFF_BASE_MS = 500;
    /** Backoff cap, as the OpenAI SDKs use (8 s). */
    static final long BACKOFF_CAP_MS = 8_000;

    private static final Map<String, AtomicInteger> SUCCESSES = new ConcurrentHashMap<>();
    private static final AtomicLong RUNS = new AtomicLong();
    private static final AtomicLong LATE_ATTEMPTS = new AtomicLong();
    private static final AtomicLong RATE_LIMITED = new AtomicLong();
    private static final AtomicLong OTHER = new AtomicLong();

    private EtiquetteWorker() {}

    /**
     * The job type of the Layover arms; the parent registers the same one to enqueue.
     *
     * @param key the provider key
     * @param url the fake provider's endpoint, or null for an enqueue-only client
     * @return the job type
     */
    static JobType<Chat> chatType(String key, URI url) {
        return chatType(key, url, FakeProvider.Api.OPENAI_CHAT);
    }

    /**
     * The job type of the Layover arms, calling in one API's shape.
     *
     * @param key the provider key
     * @param url the fake provider's endpoint of that API, or null for an enqueue-only client
     * @param api the API
     * @return the job type
     */
    static JobType<Chat> chatType(String key, URI url, FakeProvider.Api api) {
        return JobType.builder(TYPE, Chat.class)
                .providerKey(key)
                .handler((args, ctx) -> {
                    RUNS.incrementAndGet();
                    if (ctx.attempt() > 1) {
                        LATE_ATTEMPTS.incrementAndGet(); // an attempt was spent before this run
                    }
                    HttpResponse<String> r;
                    try {
                        r = ChatClient.send(api, url, "job " + args.n());
                    } catch (java.io.IOException noAnswer) {
                        // a dropped connection (the fake's fault): TRANSIENT, as a provider SDK's IO error
                        OTHER.incrementAndGet();
                        throw ChatClient.noResponse(api, noAnswer).toOutcome().toException();
                    }
                    Optional<Classification> failure = ChatClient.classify(api, r);
                    if (failure.isPresent()) {
                        if (r.statusCode() == 429) {
                            RATE_LIMITED.incrementAndGet();
                        } else {
                            OTHER.incrementAndGet();
                        }
                        throw failure.get().toOutcome().toException();
                    }
                    count();
                    return Outcome.done();
                })
                .build();
    }

    private static void count() {
        SUCCESSES.computeIfAbsent(Thread.currentThread().getName(), k -> new AtomicInteger()).incrementAndGet();
    }

    /**
     * The per-call backoff after the {@code attempt}-th 429 in a row (from 0): full jitter,
     * {@code uniform(0, min(cap, base * 2^attempt))}, never less than the provider's retry-after.
     *
     * @param attempt 429s of this call so far, minus one
     * @param retryAfterMs the retry-after of the 429
     * @return the sleep in milliseconds
     */
    static long backoffMillis(int attempt, long retryAfterMs) {
        long ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS << Math.min(attempt, 20));
        return Math.max(retryAfterMs, ThreadLocalRandom.current().nextLong(ceiling + 1));
    }

    /**
     * @param args see the class description
     * @throws Exception on failure
     */
    /**
     * The worker JVM's arguments: its heap, and the bucket's sizing when the run sets it
     * ({@code -Dbench.etiquette.bucketShare}, the share of R configured, default 1;
     * {@code -Dbench.etiquette.burstMs}, the bucket's burst, default the bucket's own).
     */
    static List<String> jvmArgs() {
        List<String> out = new java.util.ArrayList<>(List.of("-Xmx256m"));
        for (String p : List.of("bench.etiquette.bucketShare", "bench.etiquette.burstMs")) {
            String v = System.getProperty(p);
            if (v != null) {
                out.add("-D" + p + "=" + v);
            }
        }
        return out;
    }

    /** The {@code bucket} arm's bucket: R times {@code bench.etiquette.bucketShare}, burst as set. */
    private static BucketSettings configuredBucket(double rate) {
        BucketSettings b = BucketSettings.requestsPerSecond(rate * Double.parseDouble(
                System.getProperty("bench.etiquette.bucketShare", "1")));
        String burst = System.getProperty("bench.etiquette.burstMs");
        return burst == null ? b : b.withBurst(Duration.ofMillis(Long.parseLong(burst)));
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        String mode = args[0];
        String jdbcUrl = args[1];
        URI url = URI.create(args[2]);
        String name = args[3];
        int threads = Integer.parseInt(args[4]);
        String key = args[5];
        double rate = Double.parseDouble(args[6]);
        int jobs = Integer.parseInt(args[7]);
        Path go = Path.of(args[8]);
        Path stop = Path.of(args[9]);
        Duration poll = Duration.ofMillis(Long.parseLong(args[10]));
        FakeProvider.Api api = args.length > 11 ? FakeProvider.Api.valueOf(args[11]) : FakeProvider.Api.OPENAI_CHAT;

        List<String> threadNames = new ArrayList<>();
        Layover layover = null;
        HikariDataSource pool = null;
        if (mode.startsWith("backoff")) {
            AtomicInteger next = new AtomicInteger();
            for (int i = 0; i < threads; i++) {
                String tn = name + "-t" + i;
                threadNames.add(tn);
                Thread t = new Thread(() -> backoffLoop(api, url, go, next, jobs), tn);
                t.setDaemon(true);
                t.start();
            }
        } else {
            HikariConfig cfg = new HikariConfig();
            cfg.setJdbcUrl(jdbcUrl);
            cfg.setMaximumPoolSize(threads + 6);
            cfg.setPoolName(name);
            pool = new HikariDataSource(cfg);
            Layover.Builder b = Layover.builder(pool)
                    .register(chatType(key, url, api))
                    .threads(threads)
                    .workerName(name)
                    .pollInterval(poll)
                    .migrate(false)
                    .shutdownMaxWait(Duration.ofSeconds(2));
            if (mode.equals("bucket")) {
                b.bucket(key, configuredBucket(rate));
            } else if (mode.equals("bucket-sweep")) {
                // the outage arm: the recovery bench's breaker and sweep, so that parked jobs come back
                RecoveryBench.Settings rs = RecoveryBench.Settings.full(poll);
                b.bucket(key, BucketSettings.requestsPerSecond(rate))
                        .breaker(key, BreakerSettings.defaults().withOpenFor(rs.trialEvery(), rs.trialEvery()));
                b.plugin(RecoverySweep.builder().checkEvery(rs.checkEvery()).firstBatch(rs.firstBatch()).growthFactor(2)
                        .maxBatch(rs.maxBatch()).spreadOver(rs.spread()).trialEvery(rs.trialEvery(), rs.trialEvery())
                        .trialBackoff(1).build());
            } else if (mode.equals("discover")) {
                b.cooldowns(CooldownSettings.defaults().withDiscovery(DiscoverySettings.defaults()));
            } else if (!mode.equals("learn")) {
                throw new IllegalArgumentException("mode: bucket, bucket-sweep, learn, discover or backoff, was " + mode);
            }
            layover = b.start();
        }
        System.out.println("ready " + name);
        while (!Files.exists(stop)) {
            Thread.sleep(20);
        }
        Map<String, Integer> perThread = new TreeMap<>();
        threadNames.forEach(t -> perThread.put(t, 0));
        SUCCESSES.forEach((t, n) -> perThread.put(t, n.get()));
        StringBuilder counts = new StringBuilder();
        perThread.values().forEach(n -> counts.append(counts.length() == 0 ? "" : ",").append(n));
        System.out.println("RESULT runs=" + RUNS.get() + " lateAttempts=" + LATE_ATTEMPTS.get() + " rateLimited="
                + RATE_LIMITED.get() + " other=" + OTHER.get() + " threads=" + perThread.size() + " successes=" + counts);
        System.out.flush();
        if (layover != null) {
            layover.stop();
            pool.close();
        }
        System.exit(0);
    }

    private static void backoffLoop(FakeProvider.Api api, URI url, Path go, AtomicInteger next, int jobs) {
        try {
            while (!Files.exists(go)) {
                Thread.sleep(1);
            }
            int n;
            while ((n = next.getAndIncrement()) < jobs) {
                int attempt = 0;
                while (true) {
                    RUNS.incrementAndGet();
                    HttpResponse<String> r;
                    try {
                        r = ChatClient.send(api, url, "job " + n);
                    } catch (java.io.IOException e) {
                        OTHER.incrementAndGet();
                        Thread.sleep(backoffMillis(attempt++, 0));
                        continue;
                    }
                    if (r.statusCode() == 200) {
                        count();
                        break;
                    }
                    if (r.statusCode() == 429) {
                        RATE_LIMITED.incrementAndGet();
                    } else {
                        OTHER.incrementAndGet();
                    }
                    Thread.sleep(backoffMillis(attempt++, ChatClient.retryAfterMillis(r)));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            OTHER.incrementAndGet();
            System.out.println("worker thread failed: " + e);
        }
    }
}
