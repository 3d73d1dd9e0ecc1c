package dev.layover.samples;

import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import java.io.IOException;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * The foundation demo: jobs that succeed, jobs rate limited by a simulated provider (rescheduled
 * without spending an attempt), jobs that fail and are retried, and jobs that are parked. Prints
 * what happened, read back with SQL, and exits.
 */
public final class Demo {

    /** Arguments of every demo job. */
    public record Task(int n) {}

    /** What the demo saw. */
    public record Report(int completed, int rateLimited, int attemptsSpentOnRateLimits, int retried,
            Map<String, Long> parkedByFailureType) {}

    private Demo() {}

    /**
     * Runs the demo on a database and returns its report.
     *
     * @param dataSource a Postgres data source
     * @param out where to print
     * @return the report
     * @throws Exception if the demo fails
     */
    public static Report run(DataSource dataSource, PrintStream out) throws Exception {
        AtomicInteger completed = new AtomicInteger();
        AtomicInteger rateLimited = new AtomicInteger();
        AtomicInteger retried = new AtomicInteger();
        AtomicInteger rateLimitAttempts = new AtomicInteger();
        Map<Integer, AtomicInteger> calls = new ConcurrentHashMap<>();
        JobPolicy quick = JobPolicy.defaults().withMaxAttempts(3).withBackoff(Duration.ofMillis(50), Duration.ofMillis(400));

        // a provider that answers 429 (retry after 1 s) to the first call of every job
        JobType<Task> callProvider = JobType.builder("call-provider", Task.class).policy(quick)
                .providerKey("demo:provider")
                .handler((args, ctx) -> {
                    if (calls.computeIfAbsent(args.n(), k -> new AtomicInteger()).incrementAndGet() == 1) {
                        rateLimited.incrementAndGet();
                        if (ctx.attempt() > 1) {
                            rateLimitAttempts.incrementAndGet();
                        }
                        return Outcome.rateLimited(Duration.ofSeconds(1), "429 Too Many Requests, retry-after: 1");
                    }
                    completed.incrementAndGet();
                    return Outcome.done();
                }).build();
        // fails twice with an IO error, then succeeds: two attempts spent
        JobType<Task> flaky = JobType.builder("flaky", Task.class).policy(quick.withMaxAttempts(5))
                .handler((args, ctx) -> {
                    if (ctx.attempt() <= 2) {
                        retried.incrementAndGet();
                        throw new IOException("connection reset (attempt " + ctx.attempt() + ")");
                    }
                    completed.incrementAndGet();
                    return Outcome.done();
                }).build();
        // always fails: parked as job_error after 3 attempts, args kept for a replay
        JobType<Task> doomed = JobType.builder("doomed", Task.class).policy(quick)
                .handler((args, ctx) -> {
                    throw new IllegalStateException("customer " + args.n() + " has no address");
                }).build();
        // refused by the provider: parked at once, no attempt spent
        JobType<Task> rejected = JobType.builder("rejected", Task.class).policy(quick)
                .handler((args, ctx) -> Outcome.rejected("400 Bad Request: prompt too long")).build();

        try (Layover layover = Layover.builder(dataSource).register(callProvider, flaky, doomed, rejected)
                .threads(8).pollInterval(Duration.ofMillis(100)).start()) {
            for (int i = 0; i < 20; i++) {
                layover.enqueue(callProvider, new Task(i));
            }
            for (int i = 0; i < 5; i++) {
                layover.enqueue(flaky, new Task(i));
            }
            for (int i = 0; i < 2; i++) {
                layover.enqueue(doomed, new Task(i));
                layover.enqueue(rejected, new Task(i));
            }
            out.println("enqueued 29 jobs: 20 call a rate-limited provider, 5 are flaky, 2 are doomed, 2 are rejected");
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (count(dataSource, "select count(*) from layover.jobs") > 0 && System.nanoTime() < deadline) {
                out.printf("  waiting: %s%n", summary(dataSource));
                Thread.sleep(500);
            }
            layover.awaitCompletions(Duration.ofSeconds(5));
        }

        Map<String, Long> parked = new java.util.TreeMap<>();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select failure_type, count(*) from layover.dead_letters group by 1")) {
            while (rs.next()) {
                parked.put(rs.getString(1), rs.getLong(2));
            }
        }
        Report r = new Report(completed.get(), rateLimited.get(), rateLimitAttempts.get(), retried.get(), parked);
        out.println();
        out.println("completed                      " + r.completed());
        out.println("429s received (rescheduled)    " + r.rateLimited());
        out.println("attempts spent on rate limits  " + r.attemptsSpentOnRateLimits());
        out.println("failed runs retried            " + r.retried());
        out.println("parked by failure type         " + r.parkedByFailureType());
        out.println();
        out.println("the dead letters, as SQL sees them:");
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select job_type, failure_type, attempts, args, error_message"
                        + " from layover.dead_letters order by id")) {
            while (rs.next()) {
                out.printf("  %-9s %-10s attempts=%d args=%s error=%s%n", rs.getString(1), rs.getString(2),
                        rs.getInt(3), rs.getString(4), rs.getString(5));
            }
        }
        return r;
    }

    private static String summary(DataSource ds) throws Exception {
        StringBuilder b = new StringBuilder();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select state, count(*) from layover.jobs group by 1 order by 1")) {
            while (rs.next()) {
                b.append(rs.getString(1)).append('=').append(rs.getLong(2)).append(' ');
            }
        }
        return b.append("parked=").append(count(ds, "select count(*) from layover.dead_letters")).toString();
    }

    private static long count(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * @param args {@code --jdbc-url URL} to use a running Postgres; default: an embedded one
     * @throws Exception if the demo fails
     */
    public static void main(String[] args) throws Exception {
        try (SampleDatabase db = SampleDatabase.open(args, 16)) {
            System.out.println("Layover demo on " + db.description());
            run(db.dataSource(), System.out);
        }
    }
}
