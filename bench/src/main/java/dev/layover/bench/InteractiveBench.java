package dev.layover.bench;

import dev.layover.bench.InteractiveWorker.Job;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.provider.FakeProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * One budget for interactive and background calls (issue 48): a key limited to R requests a second
 * at the fake provider (a refused call counts against it too, its bucket holds one second), the
 * same R as the key's bucket (which holds half a second: {@link InteractiveWorker#BURST}); a
 * background backlog five times what R allows over the run, on two worker JVMs
 * ({@link InteractiveWorker} {@code worker}, 8 threads each); interactive calls arriving as a
 * Poisson stream at 0.2 R from a third JVM ({@code caller}). Two arms, each with a new fake
 * provider and a new backlog: the interactive calls through Layover's {@code InteractiveCalls} with
 * an interactive share of 0.25, and straight to the provider (as without Layover in the web
 * request's path).
 *
 * <p>Measured over the caller's stream: the interactive calls' wait before calling (p50, p95, max),
 * how many the provider answered 429 and how many Layover did not admit within 2 s, the background
 * and total goodput (200s a second at the provider), the provider's 429s; and, from the bucket row
 * sampled every 20 ms (database time), how long after the last interactive call the background took
 * the reserved share back (its free permits below half the share of its capacity).
 */
public final class InteractiveBench {

    static final String KEY = "openai:interactive-bench";

    /**
     * @param rate R, requests a second (the provider's limit and the bucket's)
     * @param seconds how long the interactive stream runs
     * @param share the interactive share of the handle arm
     */
    public record Settings(int rate, int seconds, double share) {
        /** @return the settings: R = 50/s, a 30 s stream, share 0.25 */
        public static Settings full() {
            return new Settings(50, 30, 0.25);
        }

        /** @return a smoke test */
        public static Settings quick() {
            return new Settings(50, 8, 0.25);
        }
    }

    /**
     * One arm.
     *
     * @param arm {@code handle} or {@code direct}
     * @param arrivals interactive calls that arrived
     * @param p50Ms their wait before calling, median
     * @param p95Ms 95th percentile
     * @param maxMs most
     * @param interactive429 interactive calls the provider answered 429
     * @param notAdmitted interactive calls Layover did not admit within 2 s
     * @param interactiveOk interactive calls answered 200
     * @param backgroundPerSecond background goodput
     * @param totalPerSecond total goodput (every 200 at the provider)
     * @param provider429 every 429 of the provider (background's too)
     * @param takeBackSeconds after the last interactive call, when background had taken the share
     *     back; -1 when not seen (or the direct arm)
     * @param seconds the measured span
     */
    public record Arm(String arm, int arrivals, double p50Ms, double p95Ms, double maxMs, int interactive429,
            int notAdmitted, int interactiveOk, double backgroundPerSecond, double totalPerSecond, int provider429,
            double takeBackSeconds, double seconds) {

        String row(int rate) {
            return String.format(Locale.ROOT, "| %s | %d | %.1f / %.1f / %.1f | %d (%.1f %%) | %d | %.1f | %.1f (%.2f R) | %d | %s |",
                    arm, arrivals, p50Ms, p95Ms, maxMs, interactive429, arrivals == 0 ? 0 : 100.0 * interactive429 / arrivals,
                    notAdmitted, backgroundPerSecond, totalPerSecond, totalPerSecond / rate, provider429,
                    takeBackSeconds < 0 ? "–" : String.format(Locale.ROOT, "%.2f s", takeBackSeconds));
        }
    }

    private InteractiveBench() {}

    /**
     * @param ds the bench database
     * @param jdbcUrl its URL, for the child JVMs
     * @param s the settings
     * @return the two arms: through the handle, then direct
     * @throws Exception on failure
     */
    public static List<Arm> measure(DataSource ds, String jdbcUrl, Settings s) throws Exception {
        List<Arm> out = new ArrayList<>();
        out.add(arm(ds, jdbcUrl, s, "handle"));
        out.add(arm(ds, jdbcUrl, s, "direct"));
        return out;
    }

    private static Arm arm(DataSource ds, String jdbcUrl, Settings s, String mode) throws Exception {
        execute(ds, "delete from layover.scheduled_tasks where task_name = '" + InteractiveWorker.TYPE + "'");
        execute(ds, "select layover.forget_provider_keys(array['" + KEY + "'])");
        Path dir = Files.createTempDirectory("layover-interactive");
        Path stop = dir.resolve("stop");
        try (FakeProvider fake = FakeProvider.start()) {
            fake.primary().limitPerSecond(s.rate()).countRefused(true);
            String url = fake.primary().url().toString();
            String share = String.valueOf(s.share());
            List<JvmProcess> workers = new ArrayList<>();
            try {
                for (int w = 1; w <= 2; w++) {
                    workers.add(JvmProcess.start(InteractiveWorker.class, "interactive-worker-" + w, List.of("-Xmx256m"),
                            List.of("worker", jdbcUrl, "interactive-worker-" + w, url, KEY, String.valueOf(s.rate()), share,
                                    stop.toString())));
                }
                for (JvmProcess w : workers) {
                    w.awaitOutput("ready", Duration.ofSeconds(120));
                }
                // the backlog: five times what R allows over the stream (and the warm-up)
                JobType<Job> type = InteractiveWorker.type(KEY, null);
                Layover client = Layover.builder(ds).register(type).migrate(false).build();
                List<Job> jobs = new ArrayList<>();
                for (int i = 0; i < 5 * s.rate() * (s.seconds() + 10); i++) {
                    jobs.add(new Job(i));
                }
                client.enqueueBatch(type, jobs);
                client.stop();
                Thread.sleep(3000); // the background saturates the key
                try (JvmProcess caller = JvmProcess.start(InteractiveWorker.class, "interactive-caller", List.of("-Xmx256m"),
                        List.of("caller", jdbcUrl, url, KEY, String.valueOf(s.rate()), share, mode,
                                String.valueOf(0.2 * s.rate()), String.valueOf(s.seconds())))) {
                    caller.awaitOutput("ready caller", Duration.ofSeconds(120));
                    fake.primary().resetCounters();
                    long t0 = System.nanoTime();
                    Sampler sampler = new Sampler(ds, s);
                    Thread st = new Thread(sampler, "interactive-sampler");
                    st.start();
                    caller.awaitOutput("RESULT", Duration.ofSeconds(s.seconds() + 120L));
                    double span = (System.nanoTime() - t0) / 1e9;
                    int successes = fake.primary().successes();
                    int limited = fake.primary().rateLimited();
                    Thread.sleep(3000); // the sampler sees the share taken back
                    sampler.stop = true;
                    st.join();
                    String r = caller.output().lines().filter(l -> l.startsWith("RESULT")).findFirst().orElseThrow();
                    caller.waitFor(Duration.ofSeconds(30));
                    int ok = (int) field(r, "ok");
                    return new Arm(mode, (int) field(r, "arrivals"), field(r, "p50us") / 1000.0, field(r, "p95us") / 1000.0,
                            field(r, "maxus") / 1000.0, (int) field(r, "rateLimited"), (int) field(r, "refused"), ok,
                            (successes - ok) / span, successes / span, limited,
                            mode.equals("handle") ? sampler.takeBack() : -1, span);
                }
            } finally {
                Files.createFile(stop);
                for (JvmProcess w : workers) {
                    w.waitFor(Duration.ofSeconds(60));
                    w.close();
                }
                Files.deleteIfExists(stop);
                Files.deleteIfExists(dir);
                execute(ds, "delete from layover.scheduled_tasks where task_name = '" + InteractiveWorker.TYPE + "'");
            }
        }
    }

    /**
     * Samples the key's bucket row every 20 ms: the last interactive call (database time) and the
     * request permits free; the take-back is the first sample after the last interactive call
     * whose free permits are below the reserved share.
     */
    private static final class Sampler implements Runnable {
        private final DataSource ds;
        private final double threshold;
        private volatile boolean stop;
        private final List<double[]> samples = new ArrayList<>(); // {interactive_at epoch, since s, free}

        Sampler(DataSource ds, Settings s) {
            this.ds = ds;
            this.threshold = s.share() * s.rate() * InteractiveWorker.BURST.toMillis() / 1000.0 / 2;
        }

        @Override
        public void run() {
            try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "select extract(epoch from b.interactive_at), extract(epoch from clock_timestamp() - b.interactive_at), "
                            + "layover.gcra_free(b.request_tat, clock_timestamp(), b.requests_per_minute / 60.0, "
                            + "layover.bucket_capacity(b.requests_per_minute, b.burst_ms)) "
                            + "from layover.buckets b where b.provider_key = ? and b.interactive_at is not null")) {
                ps.setString(1, KEY);
                while (!stop) {
                    try (ResultSet rs = ps.executeQuery()) {
                        if (rs.next()) {
                            synchronized (samples) {
                                samples.add(new double[] {rs.getDouble(1), rs.getDouble(2), rs.getDouble(3)});
                            }
                        }
                    }
                    Thread.sleep(20);
                }
            } catch (Exception e) {
                System.err.println("interactive sampler: " + e);
            }
        }

        double takeBack() {
            synchronized (samples) {
                if (samples.isEmpty()) {
                    return -1;
                }
                double last = samples.get(samples.size() - 1)[0];
                for (double[] x : samples) {
                    if (x[0] == last && x[2] < threshold) {
                        return x[1];
                    }
                }
                return -1;
            }
        }
    }

    private static void execute(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); var st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private static long field(String line, String name) {
        for (String f : line.split(" ")) {
            if (f.startsWith(name + "=")) {
                return Long.parseLong(f.substring(name.length() + 1));
            }
        }
        return -1;
    }
}
