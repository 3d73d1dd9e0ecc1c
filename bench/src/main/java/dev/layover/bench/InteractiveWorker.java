package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.CallFailedException;
import dev.layover.core.InteractiveCalls;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.NotAdmittedException;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.InteractiveSettings;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The JVMs of the interactive benchmark ({@link InteractiveBench}).
 *
 * <ul>
 *   <li>{@code worker}: a Layover instance running the background jobs ({@code interactive-bg}: one
 *       call to the fake provider each, a 429 classified as every job's is) with the key's bucket at
 *       R and the interactive share; prints {@code ready}; stops when the stop file exists.
 *       Arguments: {@code worker JDBC_URL NAME URL KEY RATE SHARE STOP_FILE}.
 *   <li>{@code caller}: interactive calls arriving as a Poisson stream at {@code LAMBDA} a second for
 *       {@code SECONDS}, each on its own thread at its arrival time: through a Layover instance's
 *       {@link InteractiveCalls} ({@code handle}, waiting at most 2 s) or straight to the provider
 *       ({@code direct}). Prints {@code RESULT} with the waits before each call (ms: p50, p95,
 *       max), the calls answered 200 and 429, and those not admitted. Arguments:
 *       {@code caller JDBC_URL URL KEY RATE SHARE MODE LAMBDA SECONDS}.
 * </ul>
 */
public final class InteractiveWorker {

    /** The background job type. */
    static final String TYPE = "interactive-bg";

    /** A background job's args. */
    public record Job(int n) {}

    /**
     * The bucket's burst: half a second of R (the provider holds a second), room for the jitter
     * between a call's admission and its arrival at the provider on a loaded machine.
     */
    static final Duration BURST = Duration.ofMillis(500);

    private InteractiveWorker() {}

    /**
     * @param key the provider key
     * @param url the fake provider's endpoint, or null for an enqueue-only client
     * @return the background job type
     */
    static JobType<Job> type(String key, URI url) {
        return JobType.builder(TYPE, Job.class).providerKey(key).handler((args, ctx) -> {
            HttpResponse<String> r = ChatClient.send(url, "job " + args.n());
            Optional<Classification> failure = ChatClient.classify(FakeProvider.Api.OPENAI_CHAT, r);
            if (failure.isPresent()) {
                throw failure.get().toOutcome().toException();
            }
            return Outcome.done();
        }).build();
    }

    /**
     * @param args see the class comment
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        String jdbcUrl = args[1];
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(jdbcUrl);
        cfg.setMaximumPoolSize(args[0].equals("worker") ? 12 : 6);
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            if (args[0].equals("worker")) {
                worker(ds, args[2], URI.create(args[3]), args[4], Double.parseDouble(args[5]),
                        Double.parseDouble(args[6]), Path.of(args[7]));
            } else {
                caller(ds, URI.create(args[2]), args[3], Double.parseDouble(args[4]), Double.parseDouble(args[5]),
                        args[6], Double.parseDouble(args[7]), Double.parseDouble(args[8]));
            }
        }
        System.exit(0);
    }

    private static Layover.Builder builder(HikariDataSource ds, String name, String key, double rate, double share) {
        return Layover.builder(ds).migrate(false).workerName(name).pollInterval(Duration.ofMillis(Bench.DEFAULT_POLL_MS))
                .bucket(key, BucketSettings.requestsPerSecond(rate).withBurst(BURST))
                .interactive(InteractiveSettings.of(share, Duration.ofSeconds(1)))
                .shutdownMaxWait(Duration.ofSeconds(2));
    }

    private static void worker(HikariDataSource ds, String name, URI url, String key, double rate, double share, Path stop)
            throws Exception {
        Layover layover = builder(ds, name, key, rate, share).register(type(key, url)).threads(8).start();
        System.out.println("ready " + name);
        while (!Files.exists(stop)) {
            Thread.sleep(20);
        }
        layover.stop();
    }

    private static void caller(HikariDataSource ds, URI url, String key, double rate, double share, String mode,
            double lambda, double seconds) throws Exception {
        Layover layover = builder(ds, "interactive-caller", key, rate, share).threads(1).start();
        InteractiveCalls calls = layover.interactive();
        List<Long> waitsMicros = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger ok = new AtomicInteger();
        AtomicInteger limited = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        AtomicInteger other = new AtomicInteger();
        ExecutorService pool = Executors.newCachedThreadPool();
        System.out.println("ready caller");
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long next = start;
        int n = 0;
        while (true) {
            next += (long) (-Math.log(1 - ThreadLocalRandom.current().nextDouble()) / lambda * 1e9); // Poisson arrivals
            if (next >= end) {
                break;
            }
            long delay = next - System.nanoTime();
            if (delay > 0) {
                TimeUnit.NANOSECONDS.sleep(delay);
            }
            int i = n++;
            long arrived = System.nanoTime();
            pool.execute(() -> {
                try {
                    if (mode.equals("direct")) {
                        waitsMicros.add((System.nanoTime() - arrived) / 1000);
                        count(ChatClient.send(url, "question " + i).statusCode(), ok, limited, other);
                    } else {
                        InteractiveCalls.Permit p = calls.admit(key, 0, Duration.ofSeconds(2));
                        waitsMicros.add((System.nanoTime() - arrived) / 1000);
                        HttpResponse<String> r = ChatClient.send(url, "question " + i);
                        count(r.statusCode(), ok, limited, other);
                        Optional<Classification> failure = ChatClient.classify(FakeProvider.Api.OPENAI_CHAT, r);
                        p.record(failure.map(Classification::toOutcome).orElse(Outcome.done()), null);
                    }
                } catch (NotAdmittedException e) {
                    refused.incrementAndGet();
                } catch (CallFailedException e) {
                    other.incrementAndGet();
                } catch (Exception e) {
                    other.incrementAndGet();
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(30, TimeUnit.SECONDS);
        List<Long> w = new ArrayList<>(waitsMicros);
        Collections.sort(w);
        System.out.println(String.format(Locale.ROOT,
                "RESULT arrivals=%d ok=%d rateLimited=%d refused=%d other=%d p50us=%d p95us=%d maxus=%d", n, ok.get(),
                limited.get(), refused.get(), other.get(), pct(w, 0.5), pct(w, 0.95), w.isEmpty() ? -1 : w.get(w.size() - 1)));
        System.out.flush();
        layover.stop();
    }

    private static void count(int status, AtomicInteger ok, AtomicInteger limited, AtomicInteger other) {
        (status == 200 ? ok : status == 429 ? limited : other).incrementAndGet();
    }

    private static long pct(List<Long> sorted, double p) {
        return sorted.isEmpty() ? -1 : sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
    }
}
