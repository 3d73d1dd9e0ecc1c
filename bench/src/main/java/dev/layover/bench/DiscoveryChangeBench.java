package dev.layover.bench;

import dev.layover.bench.EtiquetteWorker.Chat;
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
import javax.sql.DataSource;

/**
 * How fast a discovered pace follows a limit that changes mid-run: the fake provider's 429s state
 * nothing (one worker JVM speaks Gemini, the other Bedrock), refused calls count against the
 * limit, and R changes at run time (50, then 20, then 80 requests/s by default). Sampled every
 * 250 ms: the discovered rate ({@code layover.provider_keys.requests_per_minute}) and the
 * provider's counters. Per phase: the time from the change until the discovered rate is within
 * 10 % of the new R, the time until one second's goodput is, and goodput and 429 share over the
 * phase's second half (its steady state).
 */
public final class DiscoveryChangeBench {

    /**
     * One limit of the run.
     *
     * @param rate R in requests per second
     * @param duration how long it holds
     */
    public record Stage(int rate, Duration duration) {}

    /**
     * @param jvms worker JVMs
     * @param threads worker threads per JVM
     * @param stages the limits, in order
     * @param pollInterval the workers' poll interval
     */
    public record Settings(int jvms, int threads, List<Stage> stages, Duration pollInterval) {
        /**
         * @param poll the workers' poll interval
         * @return the run: 50/s for 30 s, 20/s for 30 s, 80/s for 40 s; 2 JVMs × 8 threads;
         *     {@code -Dbench.discovery.stages=50:30,80:40} (rate per second : seconds, in order) runs others
         */
        public static Settings full(Duration poll) {
            List<Stage> stages = new ArrayList<>();
            for (String st : System.getProperty("bench.discovery.stages", "50:30,20:30,80:40").split(",")) {
                String[] rs = st.trim().split(":");
                stages.add(new Stage(Integer.parseInt(rs[0]), Duration.ofSeconds(Long.parseLong(rs[1]))));
            }
            return new Settings(2, 8, List.copyOf(stages), poll);
        }

        int jobs() {
            double n = 0;
            for (Stage st : stages) {
                n += st.rate() * st.duration().toMillis() / 1000.0;
            }
            return (int) (n * 1.5);
        }
    }

    /**
     * One stage's figures.
     *
     * @param rate R
     * @param rateWithin10 seconds from the change until the discovered rate was within 10 % of R
     *     (NaN: never within the stage)
     * @param goodputWithin10 seconds until one second's successful calls were within 10 % of R (NaN: never)
     * @param goodputSecondHalf successful calls per second over the stage's second half, over R
     * @param share429SecondHalf 429s over calls in the stage's second half
     * @param share429 429s over calls in the whole stage
     * @param rateAtEnd the discovered rate at the stage's end, requests per second
     */
    public record StageResult(int rate, double rateWithin10, double goodputWithin10, double goodputSecondHalf,
            double share429SecondHalf, double share429, double rateAtEnd) {}

    /**
     * @param stages per stage
     * @param attemptsSpent attempts spent on rate limits (should be 0)
     */
    public record Result(List<StageResult> stages, long attemptsSpent) {}

    private record Sample(long nanos, double rate, long calls, long rateLimited, long successes) {}

    private DiscoveryChangeBench() {}

    /**
     * Runs the stages once.
     *
     * @param ds the database (migrated)
     * @param jdbcUrl its URL, for the worker JVMs
     * @param s the settings
     * @return the figures
     * @throws Exception on failure
     */
    public static Result measure(DataSource ds, String jdbcUrl, Settings s) throws Exception {
        String key = "fake:discover-change";
        ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name = '" + EtiquetteWorker.TYPE + "'");
        ThroughputBench.exec(ds, "delete from layover.buckets where provider_key = '" + key + "'");
        Path dir = Files.createTempDirectory("layover-discover");
        Path go = dir.resolve("go");
        Path stop = dir.resolve("stop");
        List<JvmProcess> workers = new ArrayList<>();
        try (FakeProvider fake = FakeProvider.start()) {
            FakeProvider.Endpoint ep = fake.primary();
            ep.phase(FakeProvider.Phase.NORMAL).unlimited().statesNoLimit(true);
            int jobs = s.jobs();
            for (int i = 0; i < s.jvms(); i++) {
                String name = "dsc-" + i;
                FakeProvider.Api api = i % 2 == 0 ? FakeProvider.Api.GEMINI_GENERATE_CONTENT : FakeProvider.Api.BEDROCK_CONVERSE;
                workers.add(JvmProcess.start(EtiquetteWorker.class, name, List.of("-Xmx256m"), List.of("discover", jdbcUrl,
                        ep.url(api).toString(), name, String.valueOf(s.threads()), key, "0", "0", go.toString(),
                        stop.toString(), String.valueOf(s.pollInterval().toMillis()), api.name())));
            }
            for (JvmProcess w : workers) {
                w.awaitOutput("ready", Duration.ofSeconds(120));
            }
            JobType<Chat> type = EtiquetteWorker.chatType(key, null);
            List<Chat> args = new ArrayList<>();
            for (int i = 0; i < jobs; i++) {
                args.add(new Chat(i));
            }
            Layover client = Layover.builder(ds).register(type).migrate(false).build();
            ep.limitPerSecond(s.stages().get(0).rate()).countRefused(true);
            ep.resetCounters();
            long t0 = System.nanoTime();
            client.enqueueBatch(type, args);
            List<Sample> samples = new ArrayList<>();
            List<Long> stageStarts = new ArrayList<>();
            long stageEnd = t0;
            for (int i = 0; i < s.stages().size(); i++) {
                Stage st = s.stages().get(i);
                if (i > 0) {
                    ep.changeLimitPerSecond(st.rate());
                }
                long begin = System.nanoTime();
                stageStarts.add(begin);
                stageEnd = begin + st.duration().toNanos();
                while (System.nanoTime() < stageEnd) {
                    samples.add(sample(ds, ep, key));
                    Thread.sleep(250);
                }
            }
            Files.createFile(stop);
            long lateAttempts = 0;
            for (JvmProcess w : workers) {
                w.awaitOutput("RESULT", Duration.ofSeconds(60));
                String line = w.output().lines().filter(l -> l.startsWith("RESULT")).findFirst().orElseThrow();
                for (String part : line.split(" ")) {
                    if (part.startsWith("lateAttempts=")) {
                        lateAttempts += Long.parseLong(part.substring("lateAttempts=".length()));
                    }
                }
            }
            long spent = lateAttempts + EtiquetteBench.value(ds, "select coalesce(sum(attempts), 0) from layover.jobs "
                    + "where job_type = '" + EtiquetteWorker.TYPE + "'") + EtiquetteBench.value(ds,
                    "select count(*) from layover.dead_letters where provider_key = '" + key + "'");
            List<StageResult> out = new ArrayList<>();
            for (int i = 0; i < s.stages().size(); i++) {
                long from = stageStarts.get(i);
                long to = i + 1 < stageStarts.size() ? stageStarts.get(i + 1) : stageEnd;
                out.add(stage(s.stages().get(i).rate(), samples, from, to));
            }
            if (Boolean.getBoolean("bench.discovery.trace")) {
                // the run's course, one line a second: seconds from the start, discovered rate, calls/s, 429s/s, successes/s
                Sample prev = null;
                for (Sample x : samples) {
                    if (prev == null || x.nanos() - prev.nanos() >= 1_000_000_000L) {
                        if (prev != null) {
                            double dt = (x.nanos() - prev.nanos()) / 1e9;
                            System.out.printf(java.util.Locale.ROOT, "trace %6.1f s  rate %6.1f/s  calls %5.1f/s  429s %5.1f/s  ok %5.1f/s%n",
                                    (x.nanos() - t0) / 1e9, x.rate(), (x.calls() - prev.calls()) / dt,
                                    (x.rateLimited() - prev.rateLimited()) / dt, (x.successes() - prev.successes()) / dt);
                        }
                        prev = x;
                    }
                }
            }
            return new Result(out, spent);
        } finally {
            for (JvmProcess w : workers) {
                w.close();
            }
            ThroughputBench.exec(ds, "delete from layover.scheduled_tasks where task_name = '" + EtiquetteWorker.TYPE + "'");
            Files.deleteIfExists(go);
            Files.deleteIfExists(stop);
            Files.deleteIfExists(dir);
        }
    }

    private static Sample sample(DataSource ds, FakeProvider.Endpoint ep, String key) throws Exception {
        double rate = Double.NaN;
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "select requests_per_minute / 60.0 from layover.provider_keys where provider_key = ? and pace_source = 'discovered'")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    rate = rs.getDouble(1);
                }
            }
        }
        return new Sample(System.nanoTime(), rate, ep.calls(), ep.rateLimited(), ep.successes());
    }

    private static StageResult stage(int r, List<Sample> all, long from, long to) {
        List<Sample> in = all.stream().filter(x -> x.nanos() >= from && x.nanos() < to).toList();
        double rateWithin = Double.NaN;
        double goodWithin = Double.NaN;
        for (Sample x : in) {
            if (Double.isNaN(rateWithin) && Math.abs(x.rate() - r) <= 0.1 * r) {
                rateWithin = (x.nanos() - from) / 1e9;
            }
        }
        for (int i = 0; i < in.size() && Double.isNaN(goodWithin); i++) {
            for (int j = i + 1; j < in.size(); j++) {
                double secs = (in.get(j).nanos() - in.get(i).nanos()) / 1e9;
                if (secs >= 1.0) {
                    double perSecond = (in.get(j).successes() - in.get(i).successes()) / secs;
                    if (Math.abs(perSecond - r) <= 0.1 * r) {
                        goodWithin = (in.get(j).nanos() - from) / 1e9;
                    }
                    break;
                }
            }
        }
        Sample first = in.get(0);
        Sample mid = in.stream().filter(x -> x.nanos() >= from + (to - from) / 2).findFirst().orElse(first);
        Sample last = in.get(in.size() - 1);
        double secs = (last.nanos() - mid.nanos()) / 1e9;
        long calls = last.calls() - mid.calls();
        long allCalls = last.calls() - first.calls();
        return new StageResult(r, rateWithin, goodWithin, (last.successes() - mid.successes()) / secs / r,
                calls == 0 ? 0 : (double) (last.rateLimited() - mid.rateLimited()) / calls,
                allCalls == 0 ? 0 : (double) (last.rateLimited() - first.rateLimited()) / allCalls, last.rate());
    }
}
