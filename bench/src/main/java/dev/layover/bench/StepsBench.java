package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobContext;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.StepOptions;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.Provider;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.Faults;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Steps (issue 45, docs/steps.md): jobs of several provider calls against the fake provider
 * limited to R calls/s (refused calls counting), with a share of calls answered 503, all enqueued
 * at once (the fleet oversubscribed). Two arms in one run, each on a fresh provider key, fake
 * provider and connection pool: the handler with every call a step ({@code ctx.step} with the
 * key), and the same handler without steps (each run starts over). Measured: successful provider
 * calls per job (ideal: the calls of a job), tokens paid for calls whose result was discarded,
 * attempts spent (only 503s may spend them: a rate limit never does), job-row and step-row writes
 * per job (the tables' own counters, {@code pg_stat_user_tables}, read after the arm's pool is
 * closed), and the wall time against the ideal (calls / R). No worker JVM is killed here: one
 * JVM runs both arms (the kill arm is not built).
 */
final class StepsBench {

    private StepsBench() {}

    /**
     * @param jobs jobs per arm
     * @param calls provider calls per job
     * @param rate R: the fake provider's limit, calls per second
     * @param unavailable the share of admitted calls answered 503
     * @param threads worker threads
     * @param poll poll interval
     */
    record Settings(int jobs, int calls, int rate, double unavailable, int threads, Duration poll, double patience) {
        static Settings quick() {
            return new Settings(200, 5, 50, 0.02, 16, Duration.ofMillis(50), 6);
        }

        static Settings full() {
            return new Settings(2_000, 5, 50, 0.02, 16, Duration.ofMillis(50), 4);
        }

        /** @return how long an arm may run before it is stopped and its unfinished jobs counted */
        Duration limit() {
            return Duration.ofMillis((long) (idealSeconds() * patience * 1000) + 30_000);
        }

        double idealSeconds() {
            return (double) jobs * calls / rate;
        }
    }

    /**
     * One arm's figures.
     *
     * @param name with or without steps
     * @param completed jobs completed
     * @param parked jobs parked
     * @param successes successful provider calls
     * @param refused calls answered 429
     * @param unavailable calls answered 503
     * @param tokensDiscarded tokens of successful calls whose result no run kept
     * @param attempts attempts spent, summed over the jobs
     * @param jobRowWrites inserts, updates and deletes of the job table
     * @param stepRowWrites inserts, updates and deletes of the step table
     * @param seconds wall time from the enqueue to the last job's end (or to the arm's limit)
     * @param unfinished jobs still queued when the arm's limit stopped it
     */
    record Arm(String name, long completed, long parked, long successes, long refused, long unavailable,
            long tokensDiscarded, long attempts, long jobRowWrites, long stepRowWrites, double seconds, long unfinished,
            String parkedAs) {}

    record Args(int n) {}

    static List<Arm> measure(String jdbcUrl, Settings s) throws Exception {
        List<Arm> arms = new ArrayList<>();
        arms.add(arm(jdbcUrl, s, true));
        arms.add(arm(jdbcUrl, s, false));
        return arms;
    }

    private static Arm arm(String jdbcUrl, Settings s, boolean steps) throws Exception {
        String name = steps ? "steps-with" : "steps-without";
        String key = "fake:" + name;
        try (FakeProvider fake = FakeProvider.start()) {
            FakeProvider.Endpoint ep = fake.primary().limitPerSecond(s.rate()).countRefused(true)
                    .faults(Faults.none().unavailable(s.unavailable()).seed(45));
            AtomicLong kept = new AtomicLong(); // tokens of the calls whose result a finished job used
            JobType<Args> type = JobType.builder(name, Args.class)
                    .providerKey(key)
                    .policy(JobPolicy.defaults().withMaxAttempts(10).withMaxReschedules(10_000)
                            .withMaxDeferral(Duration.ofHours(1)).withBackoff(Duration.ofMillis(200), Duration.ofSeconds(5)))
                    .handler((a, ctx) -> {
                        long tokens = 0;
                        for (int i = 0; i < s.calls(); i++) {
                            String prompt = "job " + a.n() + " call " + i;
                            long used = steps
                                    ? ctx.step(StepOptions.named("call-" + i).providerKey(key), Long.class,
                                            () -> call(ep, prompt, ctx))
                                    : call(ep, prompt, ctx);
                            tokens += used;
                        }
                        kept.addAndGet(tokens);
                        return Outcome.done();
                    })
                    .build();
            HikariConfig cfg = new HikariConfig();
            cfg.setJdbcUrl(jdbcUrl);
            cfg.setMaximumPoolSize(s.threads() + 8);
            long[] before;
            long start;
            long[] after;
            long completed;
            long parked;
            long attempts;
            long unfinished;
            String parkedAs;
            double seconds;
            try (HikariDataSource pool = new HikariDataSource(cfg)) {
                before = writes(pool);
                Layover layover = Layover.builder(pool).register(type).threads(s.threads()).pollInterval(s.poll())
                        .shutdownMaxWait(Duration.ofSeconds(10)).start();
                try {
                    List<Args> all = new ArrayList<>();
                    for (int i = 0; i < s.jobs(); i++) {
                        all.add(new Args(i));
                    }
                    start = System.nanoTime();
                    for (Args a : all) {
                        layover.enqueue(type, a);
                    }
                    long deadline = System.nanoTime() + s.limit().toNanos();
                    while ((unfinished = BenchDatabase.count(pool, "SELECT count(*) FROM layover.jobs WHERE job_type = '"
                            + name + "'")) > 0 && System.nanoTime() < deadline) {
                        Thread.sleep(100);
                    }
                    seconds = (System.nanoTime() - start) / 1e9;
                } finally {
                    layover.stop();
                }
                completed = BenchDatabase.count(pool, "SELECT count(*) FROM layover.job_history WHERE job_type = '" + name
                        + "' AND outcome = 'completed'");
                parked = BenchDatabase.count(pool, "SELECT count(*) FROM layover.dead_letters WHERE job_type = '" + name + "'");
                parkedAs = parkedAs(pool, name);
                attempts = BenchDatabase.count(pool, "SELECT coalesce(sum(attempts), 0) FROM layover.job_history WHERE job_type = '"
                        + name + "' AND outcome = 'completed'") + BenchDatabase.count(pool, "SELECT coalesce(sum(attempts), 0) "
                        + "FROM layover.jobs WHERE job_type = '" + name + "'");
            }
            // the pool is closed: every backend flushed its table counters on exit
            try (HikariDataSource pool = new HikariDataSource(cfg)) {
                after = settledWrites(pool, before);
            }
            long tokensAll = ep.inputTokens() + ep.outputTokens();
            return new Arm(steps ? "with steps" : "without steps (today)", completed, parked, ep.successes(), ep.rateLimited(),
                    ep.unavailable(), Math.max(0, tokensAll - kept.get()), attempts, after[0] - before[0],
                    after[1] - before[1], seconds, unfinished, parkedAs);
        }
    }

    /** One call; its tokens when it succeeds, else its failure thrown as Layover's outcome. */
    private static long call(FakeProvider.Endpoint ep, String prompt, JobContext ctx) throws Exception {
        HttpResponse<String> r = ChatClient.send(ep.url(), prompt);
        Optional<Classification> failure = ChatClient.classify(r);
        if (failure.isPresent()) {
            throw failure.get().toOutcome().toException();
        }
        return ctx.reportUsage(Provider.OPENAI, r.body()).map(u -> u.totalTokens()).orElse(0L);
    }

    /** The dead letters of a job type by failure type, e.g. {@code rate_limit_exhausted 12}; empty when none. */
    private static String parkedAs(HikariDataSource pool, String jobType) throws Exception {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT failure_type, count(*) FROM layover.dead_letters WHERE job_type = '"
                        + jobType + "' GROUP BY 1 ORDER BY 2 DESC")) {
            List<String> parts = new ArrayList<>();
            while (rs.next()) {
                parts.add(rs.getString(1) + " " + rs.getLong(2));
            }
            return String.join(", ", parts);
        }
    }

    /** Job-table and step-table rows written (inserted + updated + deleted) so far, by the tables' counters. */
    private static long[] writes(HikariDataSource pool) throws Exception {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute("SELECT pg_stat_clear_snapshot()");
            try (ResultSet rs = st.executeQuery("SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables "
                    + "WHERE schemaname = 'layover' AND relname IN ('scheduled_tasks', 'job_steps')")) {
                long[] w = new long[2];
                while (rs.next()) {
                    w[rs.getString(1).equals("scheduled_tasks") ? 0 : 1] = rs.getLong(2);
                }
                return w;
            }
        }
    }

    /** The counters once they stop moving (backends report theirs as they exit). */
    private static long[] settledWrites(HikariDataSource pool, long[] before) throws Exception {
        long[] last = writes(pool);
        for (int i = 0; i < 20; i++) {
            Thread.sleep(500);
            long[] now = writes(pool);
            if (now[0] == last[0] && now[1] == last[1] && now[0] > before[0]) {
                return now;
            }
            last = now;
        }
        return last;
    }
}
