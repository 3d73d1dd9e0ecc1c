package dev.layover.core.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.StatementWatch;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * What 10,000 run-time schedules cost an idle fleet: each poll of each instance is one statement
 * against {@code layover.schedules} (the peek), which probes {@code schedules_due_idx} and reads no
 * schedule that is not due; no claim runs while nothing is due. Prints the peek's database time
 * with 10,000 schedules and with 10 (a ratio measured in the same run).
 */
@DatabaseTest
class ScheduleIdleCostTest {

    record Tick(String note) {}

    private static final String INSERT = "insert into layover.schedules (tenant, name, job_type, every_ms, args, "
            + "next_at, due_at, source) select 't' || (i % 100), 's' || i, 'tick', 3600000, '{\"note\":\"x\"}', "
            + "now() + (i || ' seconds')::interval + interval '1 hour', now() + (i || ' seconds')::interval "
            + "+ interval '1 hour', 'api' from generate_series(1, ?) i";

    @Test
    void tenThousandIdleSchedulesCostOneIndexedStatementPerPoll(TestDatabase db) throws Exception {
        db.update(INSERT, 10_000);
        db.execute("analyze layover.schedules");
        AtomicInteger peeks = new AtomicInteger();
        AtomicInteger others = new AtomicInteger();
        DataSource watched = StatementWatch.of(db.dataSource(), sql -> {
            if (sql.contains("layover.schedules")) {
                if (sql.contains("LIMIT 1") && !sql.contains("FOR UPDATE")) {
                    peeks.incrementAndGet();
                } else {
                    others.incrementAndGet();
                }
            }
        });
        JobType<Tick> tick = JobType.of("tick", Tick.class, (a, c) -> null);
        Duration poll = Duration.ofMillis(50);
        long started;
        try (Layover layover = Layover.builder(watched).register(tick).threads(2).schedulePollInterval(poll).start()) {
            others.set(0); // the start's reconciliation of code schedules (none here) is not the idle cost
            peeks.set(0);
            started = System.nanoTime();
            Await.until(Duration.ofSeconds(30), "40 polls", () -> peeks.get() >= 40);
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        assertEquals(0, others.get(), "no claim, no other statement on layover.schedules while nothing is due");
        System.out.printf("idle: %d peeks in %.2f s with a %d ms poll interval: %.1f statements/s per instance "
                + "(%.1f/s at the default 1 s poll)%n", peeks.get(), seconds, poll.toMillis(), peeks.get() / seconds, 1.0);

        String plan = explain(db, "10000");
        assertTrue(plan.contains("schedules_due_idx"), "the peek probes the due index: " + plan);
        double many = peekMillis(db);
        db.execute("delete from layover.schedules where name not in ('s1','s2','s3','s4','s5','s6','s7','s8','s9','s10')");
        db.execute("vacuum analyze layover.schedules");
        double few = peekMillis(db);
        System.out.printf("peek database time: %.4f ms with 10,000 schedules, %.4f ms with 10: ratio %.2f%n",
                many, few, many / few);
    }

    @Test
    void tenThousandSchedulesDueAtOnceAreEnqueuedOnceEach(TestDatabase db) {
        db.update(INSERT, 10_000);
        // all due, up to an hour late; each runs its last occurrence once
        db.execute("update layover.schedules set missed = 'run_last', next_at = now() - interval '1 hour', "
                + "due_at = now() - interval '1 hour' + (random() * interval '1 hour')");
        JobType<Tick> tick = JobType.of("tick", Tick.class, (a, c) -> null);
        try (Layover layover = Layover.builder(db.dataSource()).register(tick).threads(2)
                .schedulePollInterval(Duration.ofMillis(50)).history(false).build()) {
            layover.control().pauseJobType("tick", "test", "measure the scheduler alone: the jobs wait");
            long started = System.nanoTime();
            layover.start();
            Await.until(Duration.ofMinutes(3), "10,000 occurrences enqueued", () -> db.count(
                    "select count(*) from layover.schedules where last_job_id is not null") == 10_000);
            double seconds = (System.nanoTime() - started) / 1e9;
            System.out.printf("10,000 schedules due at once: all enqueued in %.2f s (%.0f occurrences/s, one claim "
                    + "transaction per 100 schedules; the job type paused, so the scheduler alone)%n", seconds,
                    10_000 / seconds);
        }
        assertEquals(10_000, db.count("select count(distinct last_job_id) from layover.schedules"));
        assertEquals(0, db.count("select count(*) from layover.schedules where next_at <= now()"),
                "every schedule moved to its next occurrence");
    }

    private static String explain(TestDatabase db, String label) throws Exception {
        List<String> lines = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(
                "explain (analyze, buffers) select 1 from layover.schedules s where s.due_at <= now() "
                        + "and s.job_type = any (array['tick']) and (not s.args_from_code or (s.tenant = '' and "
                        + "s.name = any (array[]::text[]))) limit 1"); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                lines.add(rs.getString(1));
            }
        }
        return String.join("\n", lines);
    }

    /** The peek's execution time as the server measures it, the mean of 200 runs. */
    private static double peekMillis(TestDatabase db) throws Exception {
        double total = 0;
        int n = 200;
        for (int i = 0; i < n; i++) {
            String plan = explain(db, "");
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("Execution Time: ([0-9.]+) ms").matcher(plan);
            assertTrue(m.find(), plan);
            total += Double.parseDouble(m.group(1));
        }
        return total / n;
    }
}
