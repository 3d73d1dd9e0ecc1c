package dev.layover.bench;

import dev.layover.bench.InflightWorker.Call;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;

/**
 * Hundreds of slow calls in flight in one worker JVM (issue 23, part 5): {@code jobs} jobs, each
 * making one blocking HTTP call to the fake provider, which answers after {@code callTime}; one
 * worker JVM ({@link InflightWorker}) of {@code threads} = {@code jobs} threads, so every call is in
 * flight at once. Two arms, each in its own child JVM of the same Java 21+ installation (the newest
 * {@link JvmProcess#javaAtLeast} finds) with the same options ({@code -Xmx}, native memory
 * tracking): handlers on platform threads (the default) and on virtual threads
 * ({@code virtualThreads(true)}). Rounds alternate the arms' order.
 *
 * <p>Measured: wall time from the enqueue of every job (one {@code enqueueBatch}, the worker
 * running and idle) to the last row gone from the job table; calls in flight at the provider at
 * most; the worker's heap (peak of a 10 ms sampling, and live after a GC with every call in
 * flight); its native memory with every call in flight ({@code VM.native_memory summary}: committed
 * outside the Java heap, and the {@code Thread} category) and its resident set (then, and its
 * peak). Without a Java 21+ only the platform arm runs, on this JVM.
 */
public final class InflightBench {

    /**
     * @param jobs jobs (and worker threads: all in flight at once)
     * @param callTime how long the provider takes to answer each call
     * @param rounds rounds of both arms
     * @param pool the worker's connection pool
     * @param heapMb the worker's {@code -Xmx}
     */
    public record Settings(int jobs, Duration callTime, int rounds, int pool, int heapMb) {
        /** @return the settings: 1,000 calls of 5 s, three rounds */
        public static Settings full() {
            return new Settings(1000, Duration.ofSeconds(5), 3, 20, 1024);
        }

        /** @return a smoke test */
        public static Settings quick() {
            return new Settings(50, Duration.ofSeconds(1), 1, 10, 256);
        }
    }

    /**
     * One arm of one round.
     *
     * @param round the round, from 1
     * @param virtual whether handlers ran on virtual threads
     * @param java the worker's {@code java.runtime.version}
     * @param gc the worker's collectors
     * @param wallSeconds enqueue to the last row gone
     * @param providerMaxInFlight calls in flight at the provider at most
     * @param providerSuccesses calls the provider answered 200
     * @param failed calls the worker saw fail
     * @param peakHeapBytes heap used, peak of a 10 ms sampling (whole run)
     * @param liveHeapBytes heap used after a GC with every call in flight; -1 when never all in flight
     * @param nmtTotalKb native memory tracking, total committed, every call in flight
     * @param nmtHeapKb of it, the Java heap
     * @param nmtThreadKb of it, the {@code Thread} category (stacks and thread structures)
     * @param nmtThreads threads NMT counts (platform threads: virtual ones are not OS threads)
     * @param rssKb resident set with every call in flight
     * @param hwmKb resident set, peak
     */
    public record Result(int round, boolean virtual, String java, String gc, double wallSeconds, int providerMaxInFlight,
            int providerSuccesses, long failed, long peakHeapBytes, long liveHeapBytes, long nmtTotalKb, long nmtHeapKb,
            long nmtThreadKb, long nmtThreads, long rssKb, long hwmKb) {

        /** @return the arm's label */
        public String arm() {
            return virtual ? "virtual threads" : "platform threads";
        }

        /** @return native memory committed outside the Java heap (NMT), kB; -1 when not measured */
        public long nmtNonHeapKb() {
            return nmtTotalKb < 0 || nmtHeapKb < 0 ? -1 : nmtTotalKb - nmtHeapKb;
        }
    }

    private InflightBench() {}

    /**
     * @param ds the bench database (enqueues, counts)
     * @param jdbcUrl its URL, for the worker
     * @param s the settings
     * @param notes where a missing Java 21+ is said
     * @return every arm of every round, in the order run
     * @throws Exception on failure
     */
    public static List<Result> measure(DataSource ds, String jdbcUrl, Settings s, List<String> notes) throws Exception {
        Optional<Path> java21 = JvmProcess.javaAtLeast(21);
        if (java21.isEmpty()) {
            notes.add("no Java 21 or newer found (-Dlayover.test.java, /usr/lib/jvm): only the platform-thread arm ran, on "
                    + "this JVM (Java " + Runtime.version() + ")");
        }
        List<Result> out = new ArrayList<>();
        try (FakeProvider fake = FakeProvider.start()) {
            fake.primary().unlimited().latency(s.callTime());
            JobType<Call> type = InflightWorker.type(null, s.jobs(), new CountDownLatch(1));
            Layover client = Layover.builder(ds).register(type).migrate(false).build();
            try {
                for (int round = 1; round <= s.rounds(); round++) {
                    boolean[] order = java21.isEmpty() ? new boolean[] {false}
                            : round % 2 == 1 ? new boolean[] {false, true} : new boolean[] {true, false};
                    for (boolean virtual : order) {
                        out.add(arm(ds, jdbcUrl, s, fake, client, type, java21, virtual, round));
                    }
                }
            } finally {
                client.stop();
            }
        }
        return out;
    }

    private static Result arm(DataSource ds, String jdbcUrl, Settings s, FakeProvider fake, Layover client,
            JobType<Call> type, Optional<Path> java21, boolean virtual, int round) throws Exception {
        if (count(ds) != 0) {
            throw new IllegalStateException("jobs of " + InflightWorker.TYPE + " left from an earlier arm");
        }
        String mode = virtual ? "virtual" : "platform";
        Path dir = Files.createTempDirectory("layover-inflight");
        Path stop = dir.resolve("stop");
        List<String> jvm = List.of("-Xmx" + s.heapMb() + "m", "-XX:NativeMemoryTracking=summary");
        List<String> args = List.of(mode, jdbcUrl, fake.primary().url().toString(), String.valueOf(s.jobs()),
                String.valueOf(s.jobs()), String.valueOf(s.pool()), stop.toString());
        String name = "inflight-" + mode + "-" + round;
        try (JvmProcess w = java21.isPresent()
                ? JvmProcess.start(java21.get(), InflightWorker.class, name, jvm, args, Map.of())
                : JvmProcess.start(InflightWorker.class, name, jvm, args)) {
            w.awaitOutput("ready", Duration.ofSeconds(120));
            fake.primary().resetCounters();
            List<Call> calls = new ArrayList<>();
            for (int i = 0; i < s.jobs(); i++) {
                calls.add(new Call(i));
            }
            long t0 = System.nanoTime();
            client.enqueueBatch(type, calls);
            long deadline = t0 + Duration.ofMinutes(10).toNanos();
            while (count(ds) > 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(name + ": jobs left after 10 minutes; output:\n" + w.output());
                }
                Thread.sleep(10);
            }
            double wall = (System.nanoTime() - t0) / 1e9;
            Files.createFile(stop);
            w.awaitOutput("RESULT", Duration.ofSeconds(60));
            String ready = line(w, "ready");
            String snap = w.output().contains("SNAPSHOT") ? line(w, "SNAPSHOT") : "";
            String result = line(w, "RESULT");
            w.waitFor(Duration.ofSeconds(60));
            return new Result(round, virtual, text(ready, "java"), text(ready, "gc"), wall, fake.primary().maxInFlight(),
                    fake.primary().successes(), field(result, "failed"), field(result, "peakHeapBytes"),
                    field(snap, "liveHeapBytes"), field(snap, "nmtTotalKb"), field(snap, "nmtHeapKb"),
                    field(snap, "nmtThreadKb"), field(snap, "nmtThreads"), field(snap, "rssKb"), field(result, "hwmKb"));
        } finally {
            Files.deleteIfExists(stop);
            Files.deleteIfExists(dir);
        }
    }

    private static long count(DataSource ds) throws Exception {
        try (var c = ds.getConnection();
                var st = c.prepareStatement("select count(*) from layover.jobs where job_type = ?")) {
            st.setString(1, InflightWorker.TYPE);
            try (var rs = st.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static String line(JvmProcess w, String start) {
        return w.output().lines().filter(l -> l.startsWith(start)).findFirst().orElseThrow();
    }

    private static String text(String line, String name) {
        for (String f : line.split(" ")) {
            if (f.startsWith(name + "=")) {
                return f.substring(name.length() + 1);
            }
        }
        return "?";
    }

    private static long field(String line, String name) {
        String v = text(line, name);
        return v.equals("?") ? -1 : Long.parseLong(v);
    }
}
