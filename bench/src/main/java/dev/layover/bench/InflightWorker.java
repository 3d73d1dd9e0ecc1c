package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ObjectName;

/**
 * The worker JVM of the slow-calls benchmark ({@link InflightBench}): one Layover instance of
 * {@code threads} threads, platform or virtual, whose handler makes one blocking HTTP call to the
 * fake provider ({@link HttpURLConnection}: a blocking socket, as SDKs on OkHttp or Apache's client
 * block) that answers after the provider's latency.
 *
 * <p>It prints {@code ready ...} (its Java and GC) once started, then, when the last of
 * {@code jobs} handlers has started (every call in flight), one line {@code SNAPSHOT ...}: the
 * native memory summary of {@code VM.native_memory summary} (jcmd's command, through the
 * DiagnosticCommand MBean: total, Java heap and thread committed, the thread count), the resident
 * set ({@code VmRSS}), and the heap used after a {@code System.gc()} (the live heap, virtual
 * threads' stacks included). When the stop file exists it prints {@code RESULT ...}: the heap used
 * sampled every 10 ms (its peak), the peak resident set ({@code VmHWM}), calls and failed calls.
 *
 * <p>Arguments: mode ({@code platform} or {@code virtual}), JDBC URL, provider URL, threads, jobs,
 * pool size, stop file.
 */
public final class InflightWorker {

    /** The args of a job. */
    public record Call(int n) {}

    /** The job type name. */
    static final String TYPE = "inflight-call";

    private static final AtomicInteger IN_FLIGHT = new AtomicInteger();
    private static final AtomicLong CALLS = new AtomicLong();
    private static final AtomicLong FAILED = new AtomicLong();

    private InflightWorker() {}

    /**
     * The job type; the parent registers the same one to enqueue.
     *
     * @param url the provider, or null for an enqueue-only client
     * @param jobs the jobs of a run (the handler that makes them all in flight triggers the snapshot)
     * @param allIn counted down by that handler
     * @return the job type
     */
    static JobType<Call> type(URI url, int jobs, CountDownLatch allIn) {
        return JobType.builder(TYPE, Call.class)
                .handler((args, ctx) -> {
                    if (IN_FLIGHT.incrementAndGet() == jobs) {
                        allIn.countDown();
                    }
                    try {
                        call(url, args.n());
                        CALLS.incrementAndGet();
                    } catch (Exception e) {
                        FAILED.incrementAndGet();
                        throw e;
                    } finally {
                        IN_FLIGHT.decrementAndGet();
                    }
                    return Outcome.done();
                })
                .build();
    }

    private static void call(URI url, int n) throws Exception {
        byte[] body = ("{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"call " + n + "\"}]}")
                .getBytes(StandardCharsets.UTF_8);
        HttpURLConnection c = (HttpURLConnection) url.toURL().openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setConnectTimeout(30_000);
        c.setReadTimeout(60_000);
        c.setRequestProperty("content-type", "application/json");
        try (OutputStream out = c.getOutputStream()) {
            out.write(body);
        }
        int status = c.getResponseCode();
        try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
            if (in != null) {
                in.readAllBytes();
            }
        }
        if (status != 200) {
            throw new IllegalStateException("provider answered " + status);
        }
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        boolean virtual = args[0].equals("virtual");
        URI url = URI.create(args[2]);
        int threads = Integer.parseInt(args[3]);
        int jobs = Integer.parseInt(args[4]);
        Path stop = Path.of(args[6]);
        AtomicLong peakHeap = new AtomicLong();
        Thread sampler = new Thread(() -> {
            while (true) {
                peakHeap.accumulateAndGet(ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(), Math::max);
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "heap-sampler");
        sampler.setDaemon(true);
        sampler.start();
        CountDownLatch allIn = new CountDownLatch(1);
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[1]);
        cfg.setMaximumPoolSize(Integer.parseInt(args[5]));
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            Layover layover = Layover.builder(ds).register(type(url, jobs, allIn)).threads(threads).prefetch(1)
                    .virtualThreads(virtual).pollInterval(Duration.ofMillis(200)).migrate(false)
                    .workerName("inflight-" + args[0]).start();
            List<String> gcs = new ArrayList<>();
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                gcs.add(gc.getName().replace(' ', '_'));
            }
            System.out.println("ready java=" + System.getProperty("java.runtime.version") + " vm="
                    + System.getProperty("java.vm.vendor").replace(' ', '_') + " gc=" + String.join(",", gcs));
            boolean snapshot = false;
            while (!Files.exists(stop)) {
                if (!snapshot && allIn.await(20, TimeUnit.MILLISECONDS)) {
                    snapshot = true;
                    String nmt = nativeMemory();
                    long rss = procStatus("VmRSS");
                    System.gc();
                    long live = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
                    System.out.println("SNAPSHOT inFlight=" + IN_FLIGHT.get() + " rssKb=" + rss + " liveHeapBytes=" + live
                            + " nmtTotalKb=" + kb(nmt, "Total: reserved=\\d+KB, committed=(\\d+)KB")
                            + " nmtHeapKb=" + kb(nmt, "Java Heap \\(reserved=\\d+KB, committed=(\\d+)KB\\)")
                            + " nmtThreadKb=" + kb(nmt, "Thread \\(reserved=\\d+KB, committed=(\\d+)KB\\)")
                            + " nmtThreads=" + kb(nmt, "\\(threads #(\\d+)\\)"));
                } else if (snapshot) {
                    Thread.sleep(20);
                }
            }
            System.out.println("RESULT peakHeapBytes=" + peakHeap.get() + " hwmKb=" + procStatus("VmHWM") + " calls="
                    + CALLS.get() + " failed=" + FAILED.get());
            layover.stop();
        }
        System.exit(0);
    }

    /** {@code VM.native_memory summary}, or "" when native memory tracking is off. */
    private static String nativeMemory() {
        try {
            return (String) ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                    new Object[] {new String[] {"summary"}}, new String[] {String[].class.getName()});
        } catch (Exception e) {
            return "";
        }
    }

    private static long kb(String text, String regex) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(regex).matcher(text);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    /** A {@code /proc/self/status} field in kB, or -1. */
    private static long procStatus(String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(line.substring(field.length() + 1).replace("kB", "").trim());
                }
            }
        } catch (Exception e) {
            // not Linux
        }
        return -1;
    }
}
