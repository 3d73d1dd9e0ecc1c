package dev.layover.core.reliability;

import dev.layover.core.Layover;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;

/**
 * Shared pieces of the reliability tests: the execution log (one row per handler run, written by
 * the handler itself, so repeats can be counted with SQL), figures printed for the report, and
 * Layover builders tuned for tests.
 */
final class Reliability {

    private Reliability() {}

    /** The execution log: one row per handler run. */
    static final String EXEC_TABLE = """
            CREATE TABLE IF NOT EXISTS public.exec_log (
                job_id  text        NOT NULL,
                worker  text        NOT NULL,
                at      timestamptz NOT NULL DEFAULT clock_timestamp()
            );
            CREATE INDEX IF NOT EXISTS exec_log_job_idx ON public.exec_log (job_id)""";

    static void createExecLog(TestDatabase db) {
        db.execute(EXEC_TABLE);
    }

    /** Records one handler run of {@code jobId} on {@code worker}, autocommitted. */
    static void logExecution(DataSource ds, String jobId, String worker) {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("INSERT INTO public.exec_log (job_id, worker) VALUES (?, ?)")) {
            if (!c.getAutoCommit()) {
                c.setAutoCommit(true);
            }
            ps.setString(1, jobId);
            ps.setString(2, worker);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException("cannot log the execution of " + jobId + ": " + e.getMessage(), e);
        }
    }

    /** Job ids executed more than once. */
    static long repeatedJobs(TestDatabase db) {
        return db.count("select count(*) from (select job_id from public.exec_log group by job_id having count(*) > 1) r");
    }

    /** Handler runs beyond the first, summed over jobs. */
    static long extraExecutions(TestDatabase db) {
        return db.count("select coalesce(sum(n - 1), 0) from (select count(*) n from public.exec_log group by job_id) r");
    }

    static long distinctExecuted(TestDatabase db) {
        return db.count("select count(distinct job_id) from public.exec_log");
    }

    /** Prints the figures of a scenario in one recognizable block of the test output. */
    static void report(String scenario, Map<String, ?> figures) {
        StringBuilder b = new StringBuilder("\n=== RELIABILITY ").append(scenario).append('\n');
        figures.forEach((k, v) -> b.append("    ").append(k).append(": ").append(v).append('\n'));
        System.out.println(b);
    }

    /**
     * Skips the test when a server binary it needs is missing here ({@code missing} says why), but
     * fails it on CI ({@code CI=true}), which installs every one of them ({@code .ci/run}).
     */
    static void requireTool(java.util.Optional<String> missing) {
        if (missing.isPresent() && "true".equals(System.getenv("CI"))) {
            org.junit.jupiter.api.Assertions.fail("CI must provide it (.ci/run installs it): " + missing.get());
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(missing.isEmpty(), () -> "skipped: " + missing.orElse(""));
    }

    static Layover.Builder builder(TestDatabase db) {
        return Layover.builder(db.dataSource())
                .threads(4)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5));
    }
}
