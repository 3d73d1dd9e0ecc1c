package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.migrations.LayoverMigrations;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.ReplicatedPostgres;
import dev.layover.testing.ReplicatedPostgres.Replication;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Scenario 3: Postgres fails over. A primary with a synchronous streaming standby
 * ({@link ReplicatedPostgres}); two worker JVMs whose JDBC URL names both hosts with
 * {@code targetServerType=primary} run 5,000 jobs; in the middle the primary is killed (immediate
 * shutdown) and, once both workers have noticed, the standby is promoted. No job is lost; a job runs
 * twice only if its handler had already started when the primary died (its outcome's write may
 * have died with the primary); jobs flow again within 30 s of the promotion.
 *
 * <p>The handlers record their runs in a file per worker (the old primary is gone with whatever it
 * held): a line {@code id worker epochMillis} at the start of each run.
 *
 * <p>When the kill lands between a pick's commit and its reply, the picked rows are in a live
 * worker's name but it never got them; 3 of 14 runs here left such rows {@code running} for good
 * until the lifeline gave orphan picks back (see {@link #aPickWhoseReplyWasLostRunsWhileTheWorkerLives}).
 */
@ProcessTest
class FailoverReliabilityTest {

    private static final int JOBS = 5000;

    @Test
    void killingThePrimaryMidRunLosesNothingAndJobsFlowOnThePromotedStandbyWithin30Seconds() throws Exception {
        Reliability.requireTool(ReplicatedPostgres.unavailable());
        try (ReplicatedPostgres pg = ReplicatedPostgres.start(Replication.SYNCHRONOUS)) {
            pg.createDatabase("layover");
            String url = pg.jdbcUrl("layover");
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setURL(url);
            LayoverMigrations.migrate(ds);
            JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> Outcome.done());
            List<WorkerMain.Item> items = new ArrayList<>();
            for (int i = 0; i < JOBS; i++) {
                items.add(new WorkerMain.Item(i));
            }
            Layover.builder(ds).register(rel).migrate(false).build().enqueueBatch(rel, items);

            Path dir = Paths.get("target", "jvm-processes");
            Files.createDirectories(dir);
            List<Path> files = new ArrayList<>();
            List<JvmProcess> workers = new ArrayList<>();
            try {
                for (String name : new String[] {"failover-a", "failover-b"}) {
                    Path f = dir.resolve(name + "-" + System.nanoTime() + ".exec");
                    files.add(f);
                    workers.add(JvmProcess.start(WorkerMain.class, name,
                            List.of("-Xmx256m"),
                            List.of(url, name, "4", "20", f.toString())));
                }
                for (JvmProcess w : workers) {
                    w.awaitOutput("started " + w.name(), Duration.ofSeconds(60));
                }
                Await.until(Duration.ofSeconds(60), "a third of the jobs ran", () -> executions(files).size() >= JOBS / 3);

                long killedAt = System.currentTimeMillis();
                pg.killPrimary();
                for (JvmProcess w : workers) {
                    w.awaitOutput("the database is unreachable", Duration.ofSeconds(30));
                }
                long noticedAt = System.currentTimeMillis();
                pg.promoteStandby();
                long promotedAt = System.currentTimeMillis();

                Await.until(Duration.ofSeconds(60), "a job started after the promotion", () -> executions(files).stream()
                        .anyMatch(e -> e.at() > promotedAt));
                long flowingAt = executions(files).stream().mapToLong(Execution::at).filter(t -> t > promotedAt).min()
                        .orElseThrow();
                PGSimpleDataSource check = new PGSimpleDataSource();
                check.setURL(pg.primaryJdbcUrl("layover"));
                boolean allDone = awaitNoJobRows(check, Duration.ofSeconds(120));
                long doneAt = System.currentTimeMillis();
                List<String> left = rows(check, "select id || ' ' || state || ' picked_by=' || coalesce(picked_by, '-')"
                        + " || ' heartbeat_at=' || coalesce(heartbeat_at::text, '-') from layover.jobs order by id");

                List<Execution> execs = executions(files);
                Map<String, List<Execution>> perJob = new HashMap<>();
                execs.forEach(e -> perJob.computeIfAbsent(e.id(), k -> new ArrayList<>()).add(e));
                Set<String> repeated = new TreeSet<>();
                Set<String> repeatedNotStartedBeforeTheKill = new TreeSet<>();
                perJob.forEach((id, runs) -> {
                    if (runs.size() > 1) {
                        repeated.add(id);
                        if (runs.stream().mapToLong(Execution::at).min().orElseThrow() > killedAt) {
                            repeatedNotStartedBeforeTheKill.add(id);
                        }
                    }
                });
                long startedBeforeTheKill = perJob.values().stream()
                        .filter(runs -> runs.stream().anyMatch(e -> e.at() <= killedAt)).count();
                long ranDuringTheOutage = execs.stream().filter(e -> e.at() > killedAt && e.at() <= promotedAt).count();

                Map<String, Object> f = new LinkedHashMap<>();
                f.put("jobs", JOBS);
                f.put("replication", "synchronous (synchronous_standby_names = '*', synchronous_commit = on)");
                f.put("jobs started before the kill", startedBeforeTheKill);
                f.put("handler runs between the kill and the promotion (picked before the kill)", ranDuringTheOutage);
                f.put("kill -> both workers noticed (s)", secs(noticedAt - killedAt));
                f.put("kill -> standby promoted (s)", secs(promotedAt - killedAt));
                f.put("promotion -> first job started (s)", secs(flowingAt - promotedAt));
                f.put("promotion -> all done (s)", allDone ? secs(doneAt - promotedAt) : "not within 120 s");
                f.put("job rows left", left.size() + " " + left);
                f.put("  of which ran before", left.stream().filter(r -> perJob.containsKey(r.split(" ")[0])).count());
                f.put("jobs lost", JOBS - perJob.size());
                f.put("jobs run more than once", repeated.size());
                f.put("  of which first started after the kill", repeatedNotStartedBeforeTheKill.size());
                f.put("dead letters", count(check, "select count(*) from layover.dead_letters"));
                f.put("rows left", count(check, "select count(*) from layover.scheduled_tasks"));
                for (JvmProcess w : workers) {
                    f.put(w.name() + " output", w.outputFile());
                }
                Reliability.report("scenario 3: primary killed mid-run, standby promoted", f);

                assertEquals(List.of(), left, "no job left behind (rows 'running', picked by a live worker, never run:"
                        + " a pick whose reply the failover lost, kept alive by the bulk heartbeat; see"
                        + " aPickWhoseReplyWasLostRunsWhileTheWorkerLives)");
                assertEquals(JOBS, perJob.size(), "no job lost");
                assertEquals(0, count(check, "select count(*) from layover.scheduled_tasks"), "nothing left");
                assertEquals(0, count(check, "select count(*) from layover.dead_letters"), "nothing parked");
                assertEquals(Set.of(), repeatedNotStartedBeforeTheKill,
                        "only jobs whose handler had started before the primary died ran twice");
                assertTrue(flowingAt - promotedAt < 30_000, "jobs flow again within 30 s of the promotion: "
                        + secs(flowingAt - promotedAt) + " s");
            } finally {
                workers.forEach(JvmProcess::close);
            }
        }
    }

    /**
     * What the failover above leaves behind when the kill lands between a pick's commit and its reply:
     * with synchronous replication the pick (db-scheduler's lock-and-fetch {@code UPDATE ..
     * RETURNING}) is committed on the standby, but the worker saw an I/O error and never got the rows.
     * They are picked in its name and its bulk heartbeat keeps them alive, so no one takes them for
     * dead while the worker lives; three of fourteen failover runs here left jobs so (7, 12 and 12)
     * before the lifeline gave back orphan picks. This test makes such a row directly (the pick's
     * exact write) under a live worker with free threads and waits for the job to run, once.
     */
    @Test
    void aPickWhoseReplyWasLostRunsWhileTheWorkerLives(TestDatabase db) {
        Map<String, Integer> runs = new java.util.concurrent.ConcurrentHashMap<>();
        JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> {
            runs.merge(c.jobId(), 1, Integer::sum);
            return Outcome.done();
        });
        Layover worker = Reliability.builder(db).register(rel).migrate(false).workerName("survivor")
                .heartbeat(Duration.ofMillis(500), 4).start();
        try {
            String id = worker.enqueue(rel, new WorkerMain.Item(1),
                    EnqueueOptions.at(Instant.now().plusSeconds(3600))).id();
            // the lock-and-fetch's own write, committed, its reply lost
            assertEquals(1, db.update("UPDATE layover.scheduled_tasks SET picked = true, picked_by = 'survivor',"
                    + " last_heartbeat = now(), version = version + 1, execution_time = now() WHERE task_instance = ?", id));
            Await.equal(Duration.ofSeconds(60), "runs of the job picked in the worker's name", 1,
                    () -> runs.getOrDefault(id, 0));
            Await.equal(Duration.ofSeconds(10), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        } finally {
            worker.stop();
        }
    }

    /**
     * The same row picked in the name of a worker that is gone runs after the dead limit: the
     * control of the test above (the row it writes is one db-scheduler revives).
     */
    @Test
    void aPickInTheNameOfAWorkerThatIsGoneRunsAfterTheDeadLimit(TestDatabase db) {
        Map<String, Integer> runs = new java.util.concurrent.ConcurrentHashMap<>();
        JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> {
            runs.merge(c.jobId(), 1, Integer::sum);
            return Outcome.done();
        });
        Layover worker = Reliability.builder(db).register(rel).migrate(false).workerName("survivor")
                .heartbeat(Duration.ofMillis(500), 4).start();
        try {
            String id = worker.enqueue(rel, new WorkerMain.Item(1), EnqueueOptions.at(Instant.now().plusSeconds(3600))).id();
            assertEquals(1, db.update("UPDATE layover.scheduled_tasks SET picked = true, picked_by = 'gone',"
                    + " last_heartbeat = now(), version = version + 1, execution_time = now() WHERE task_instance = ?", id));
            Await.equal(Duration.ofSeconds(60), "runs of the job picked by a worker that is gone", 1,
                    () -> runs.getOrDefault(id, 0));
        } finally {
            worker.stop();
        }
    }

    /** One handler run, as its worker recorded it. */
    private record Execution(String id, String worker, long at) {}

    private static List<Execution> executions(List<Path> files) {
        List<Execution> out = new ArrayList<>();
        for (Path f : files) {
            try {
                String text = Files.readString(f, StandardCharsets.UTF_8);
                // only whole lines: the last one may be half written
                for (String line : text.substring(0, text.lastIndexOf('\n') + 1).split("\n")) {
                    String[] p = line.split(" ");
                    if (p.length == 3) {
                        out.add(new Execution(p[0], p[1], Long.parseLong(p[2])));
                    }
                }
            } catch (IOException e) {
                // not written yet
            }
        }
        return out;
    }

    private static boolean awaitNoJobRows(PGSimpleDataSource ds, Duration timeout) {
        try {
            Await.equal(timeout, "job rows", 0L, () -> count(ds, "select count(*) from layover.jobs"));
            return true;
        } catch (AssertionError e) {
            return false;
        }
    }

    private static List<String> rows(PGSimpleDataSource ds, String sql) {
        List<String> out = new ArrayList<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        } catch (SQLException e) {
            out.add("(" + e.getMessage() + ")");
        }
        return out;
    }

    private static long count(PGSimpleDataSource ds, String sql) {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return -1;
        }
    }

    private static String secs(long ms) {
        return String.format("%.1f", ms / 1000.0);
    }
}
