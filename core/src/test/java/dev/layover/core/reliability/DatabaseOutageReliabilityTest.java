package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.migrations.LayoverMigrations;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Scenario 2: the database goes away in the middle of a run (this test's own embedded Postgres,
 * stopped with a fast shutdown and started again on the same port and data 15 s later), under two
 * worker JVMs. No job is lost, no row is left picked, the workers resume within 10 s of the
 * database's return, and each JVM logs the outage about once per component instead of once per
 * poll, heartbeat and job.
 *
 * <p>The workers record their executions in a file (the database is away). Their log lines
 * (slf4j-simple at INFO, as a production default would be) between the stop and 10 s after the
 * restart are counted per level and logger.
 */
@ProcessTest
class DatabaseOutageReliabilityTest {

    private static final int JOBS = 5000;
    private static final Pattern LOG_LINE = Pattern.compile("^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} \\[[^\\]]*\\] (\\w+) (\\S+) - ");

    private EmbeddedPostgres pg;

    @AfterEach
    void stopPostgres() throws IOException {
        if (pg != null) {
            pg.close();
        }
    }

    private static EmbeddedPostgres startPostgres(int port, Path data) throws IOException {
        return EmbeddedPostgres.builder().setPort(port).setDataDirectory(data).setCleanDataDirectory(false)
                .setRegisterShutdownHook(true).start();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static long count(PGSimpleDataSource ds, String sql) {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return -1;
        }
    }

    /** Execution lines of the worker files: job id, worker, epoch millis. */
    private static List<String[]> executions(List<Path> files) {
        List<String[]> out = new ArrayList<>();
        for (Path f : files) {
            try {
                for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
                    String[] p = line.split(" ");
                    if (p.length == 3) {
                        out.add(p);
                    }
                }
            } catch (IOException e) {
                // not written yet
            }
        }
        return out;
    }

    /** Log events (not stack trace lines) of a worker's output from byte {@code from} to {@code to}. */
    private static Map<String, Integer> logEvents(Path output, long from, long to) throws IOException {
        byte[] all = Files.readAllBytes(output);
        String window = new String(all, (int) Math.min(from, all.length), (int) (Math.min(to, all.length) - Math.min(from, all.length)),
                StandardCharsets.UTF_8);
        Map<String, Integer> events = new TreeMap<>();
        for (String line : window.split("\n")) {
            Matcher m = LOG_LINE.matcher(line);
            if (m.find()) {
                events.merge(m.group(1) + " " + m.group(2), 1, Integer::sum);
            }
        }
        return events;
    }

    private static int sum(Map<String, Integer> events, String levelPrefix, String loggerPrefix) {
        return events.entrySet().stream()
                .filter(e -> e.getKey().startsWith(levelPrefix) && e.getKey().contains(" " + loggerPrefix))
                .mapToInt(Map.Entry::getValue).sum();
    }

    @Test
    void aDatabaseRestartLosesNothingAndTheWorkersResumeWithinTenSecondsLoggingItOnce() throws Exception {
        outage("scenario 2: database restart mid-run (15 s, heartbeats 5 s x 8)", List.of(), 0);
    }

    /**
     * The same with an outage longer than the dead-execution limit (heartbeat 1 s x 4 missed), and
     * four jobs of 25 s running across it: when the database comes back, their heartbeats are
     * older than the limit. Each worker renews the heartbeats of the jobs it holds before
     * db-scheduler's threads (and with them the dead-execution check) are let through, so none is
     * taken for dead and run a second time.
     */
    @Test
    void anOutageLongerThanTheDeadLimitMakesNoWorkerTakeARunningJobForDead() throws Exception {
        outage("scenario 2b: database restart longer than the dead limit (15 s, heartbeats 1 s x 4, 4 jobs of 25 s)",
                List.of("-Drel.heartbeatMs=1000", "-Drel.missed=4"), 4);
    }

    /**
     * {@code stop()} while the database is away does not hang on threads waiting for it: outcome
     * writes give up (their rows stay picked), the stop returns, and once the database is back a
     * new worker revives those rows after the dead limit; nothing is lost or left picked.
     */
    @Test
    void stopDuringAnOutageReturnsAndItsHeldJobsAreRevivedLater() throws Exception {
        int port = freePort();
        Path data = Files.createTempDirectory("layover-outage-pg");
        pg = startPostgres(port, data);
        LayoverMigrations.migrate(pg.getPostgresDatabase());
        com.zaxxer.hikari.HikariConfig cfg = new com.zaxxer.hikari.HikariConfig();
        cfg.setJdbcUrl("jdbc:postgresql://localhost:" + port + "/postgres?user=postgres");
        cfg.setMaximumPoolSize(10);
        cfg.setConnectionTimeout(2000);
        Map<String, Integer> runs = new java.util.concurrent.ConcurrentHashMap<>();
        JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> {
            runs.merge(c.jobId(), 1, Integer::sum);
            Thread.sleep(300);
            return Outcome.done();
        });
        List<WorkerMain.Item> items = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            items.add(new WorkerMain.Item(i));
        }
        long stopMs;
        long held;
        try (com.zaxxer.hikari.HikariDataSource ds = new com.zaxxer.hikari.HikariDataSource(cfg)) {
            Layover first = Layover.builder(ds).register(rel).migrate(false).threads(2).workerName("first")
                    .pollInterval(Duration.ofMillis(50)).heartbeat(Duration.ofMillis(500), 4)
                    .shutdownMaxWait(Duration.ofSeconds(1)).start();
            first.enqueueBatch(rel, items);
            Await.until(Duration.ofSeconds(30), "some jobs ran", () -> runs.size() >= 10);
            pg.close();
            pg = null;
            Thread.sleep(4000); // the handlers running at the stop finish; their outcomes wait
            long t0 = System.nanoTime();
            first.stop();
            stopMs = (System.nanoTime() - t0) / 1_000_000;
        }
        pg = startPostgres(port, data);
        PGSimpleDataSource check = new PGSimpleDataSource();
        check.setServerNames(new String[] {"localhost"});
        check.setPortNumbers(new int[] {port});
        check.setDatabaseName("postgres");
        check.setUser("postgres");
        held = count(check, "select count(*) from layover.scheduled_tasks where picked and picked_by = 'first'");
        try (com.zaxxer.hikari.HikariDataSource ds = new com.zaxxer.hikari.HikariDataSource(cfg)) {
            Layover second = Layover.builder(ds).register(rel).migrate(false).threads(4).workerName("second")
                    .pollInterval(Duration.ofMillis(50)).heartbeat(Duration.ofMillis(500), 4).start();
            try {
                Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> count(check, "select count(*) from layover.jobs"));
            } finally {
                second.stop();
            }
        }
        long repeats = runs.values().stream().mapToInt(n -> n - 1).sum();
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("stop() during the outage took (ms)", stopMs);
        f.put("rows left picked by the stopped worker", held);
        f.put("jobs run", runs.size());
        f.put("repeated executions", repeats);
        f.put("dead letters", count(check, "select count(*) from layover.dead_letters"));
        Reliability.report("scenario 2c: stop() during an outage", f);
        assertTrue(stopMs < 30_000, "stop() returned without waiting for the database: " + stopMs + " ms");
        assertEquals(100, runs.size(), "no job lost");
        assertTrue(repeats <= held, "repeats (" + repeats + ") at most what the stopped worker held (" + held + ")");
        assertEquals(0, count(check, "select count(*) from layover.scheduled_tasks"));
    }

    private void outage(String scenario, List<String> extraJvmArgs, int longJobs) throws Exception {
        int port = freePort();
        Path data = Files.createTempDirectory("layover-outage-pg");
        pg = startPostgres(port, data);
        LayoverMigrations.migrate(pg.getPostgresDatabase());
        String url = "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setServerNames(new String[] {"localhost"});
        ds.setPortNumbers(new int[] {port});
        ds.setDatabaseName("postgres");
        ds.setUser("postgres");

        JobType<WorkerMain.Item> rel = JobType.of("rel", WorkerMain.Item.class, (a, c) -> Outcome.done());
        Layover client = Layover.builder(ds).register(rel).migrate(false).build();
        List<WorkerMain.Item> items = new ArrayList<>();
        for (int i = 1; i <= longJobs; i++) {
            items.add(new WorkerMain.Item(-i));
        }
        for (int i = 0; i < JOBS - longJobs; i++) {
            items.add(new WorkerMain.Item(i));
        }
        // the long jobs first, so that they are running when the database goes
        java.time.Instant base = java.time.Instant.now().minusSeconds(60);
        List<String> longIds = new ArrayList<>();
        List<dev.layover.core.Enqueued> enqueued = client.enqueueBatch(rel, items,
                a -> dev.layover.core.EnqueueOptions.at(base.plusMillis(a.n() < 0 ? 0 : 1 + a.n())));
        for (int i = 0; i < longJobs; i++) {
            longIds.add(enqueued.get(i).id());
        }

        Path dir = Paths.get("target", "jvm-processes");
        Files.createDirectories(dir);
        List<Path> files = new ArrayList<>();
        List<JvmProcess> workers = new ArrayList<>();
        List<String> jvm = new ArrayList<>(List.of("-Xmx256m", "-Drel.connectionTimeoutMs=" + Long.getLong("rel.test.connectionTimeoutMs", 5000),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=info"));
        jvm.addAll(extraJvmArgs);
        try {
            for (String name : new String[] {"outage-a", "outage-b"}) {
                Path f = dir.resolve(name + "-" + System.nanoTime() + ".exec");
                files.add(f);
                workers.add(JvmProcess.start(WorkerMain.class, name, jvm, List.of(url, name, "4", "10", f.toString())));
            }
            for (JvmProcess w : workers) {
                w.awaitOutput("started " + w.name(), Duration.ofSeconds(60));
            }
            Await.until(Duration.ofSeconds(60), "a fifth of the jobs ran", () -> executions(files).size() >= JOBS / 5);
            Await.until(Duration.ofSeconds(10), "the long jobs running", () -> executions(files).stream()
                    .map(e -> e[0]).filter(longIds::contains).count() == longJobs);

            long[] outputAtStop = new long[workers.size()];
            for (int i = 0; i < workers.size(); i++) {
                outputAtStop[i] = Files.size(workers.get(i).outputFile());
            }
            long heldBefore = count(ds, "select count(*) from layover.scheduled_tasks where picked");
            long downAt = System.currentTimeMillis();
            pg.close();
            pg = null;
            int executedBefore = executions(files).size();
            Thread.sleep(15_000);
            int executedDuring = executions(files).size() - executedBefore;
            pg = startPostgres(port, data);
            long upAt = System.currentTimeMillis();

            Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> count(ds, "select count(*) from layover.jobs"));
            long doneAt = System.currentTimeMillis();
            Thread.sleep(Math.max(0, upAt + 10_000 - System.currentTimeMillis()));
            long[] outputAfter = new long[workers.size()];
            for (int i = 0; i < workers.size(); i++) {
                outputAfter[i] = Files.size(workers.get(i).outputFile());
            }

            List<String[]> execs = executions(files);
            Map<String, Integer> perJob = new HashMap<>();
            long firstAfterUp = Long.MAX_VALUE;
            for (String[] e : execs) {
                perJob.merge(e[0], 1, Integer::sum);
                long at = Long.parseLong(e[2]);
                if (at >= upAt) {
                    firstAfterUp = Math.min(firstAfterUp, at);
                }
            }
            long repeats = perJob.values().stream().mapToInt(n -> n - 1).sum();
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("jobs", JOBS);
            f.put("executed before the stop", executedBefore);
            f.put("rows picked just before the stop (in flight)", heldBefore);
            f.put("executions during the outage (handlers already running)", executedDuring);
            f.put("outage (s)", String.format("%.1f", (upAt - downAt) / 1000.0));
            f.put("first execution after the restart (s)", firstAfterUp == Long.MAX_VALUE ? "none"
                    : String.format("%.1f", (firstAfterUp - upAt) / 1000.0));
            f.put("all done after the restart (s)", String.format("%.1f", (doneAt - upAt) / 1000.0));
            f.put("jobs lost", JOBS - perJob.size());
            if (longJobs > 0) {
                f.put("runs of the " + longJobs + " long jobs", longIds.stream().map(perJob::get).toList());
            }
            f.put("repeated executions", repeats);
            f.put("rows left picked", count(ds, "select count(*) from layover.scheduled_tasks where picked"));
            f.put("dead letters", count(ds, "select count(*) from layover.dead_letters"));
            List<Map<String, Integer>> logs = new ArrayList<>();
            for (int i = 0; i < workers.size(); i++) {
                Map<String, Integer> events = logEvents(workers.get(i).outputFile(), outputAtStop[i], outputAfter[i]);
                logs.add(events);
                f.put(workers.get(i).name() + " log events, outage to restart + 10 s", events);
                f.put(workers.get(i).name() + " output", workers.get(i).outputFile());
            }
            Reliability.report(scenario, f);

            assertEquals(JOBS, perJob.size(), "no job lost");
            assertEquals(0, count(ds, "select count(*) from layover.scheduled_tasks"), "nothing left");
            assertEquals(0, count(ds, "select count(*) from layover.dead_letters"), "nothing parked");
            assertTrue(firstAfterUp - upAt <= 10_000, "resumed within 10 s of the restart");
            assertEquals(0, repeats, "no job ran twice: the outage did not make anyone take a held job for dead");
            for (String id : longIds) {
                assertEquals(1, perJob.get(id), "the long job " + id + " ran once");
            }
            for (Map<String, Integer> events : logs) {
                assertEquals(1, events.getOrDefault("WARN dev.layover.core.internal.db.DatabaseOutage", 0),
                        "one line when it goes: " + events);
                assertEquals(1, events.getOrDefault("INFO dev.layover.core.internal.db.DatabaseOutage", 0),
                        "one line when it is back: " + events);
                for (var e : events.entrySet()) {
                    if ((e.getKey().startsWith("WARN") || e.getKey().startsWith("ERROR")) && e.getKey().contains("dev.layover")) {
                        // WorkerLoops has two loops (heartbeat, wake-up listener), each says it once
                        assertTrue(e.getValue() <= 2, "about once per outage per component: " + e);
                    }
                }
                int layoverWarnings = sum(events, "WARN", "dev.layover") + sum(events, "ERROR", "dev.layover");
                int schedulerWarnings = sum(events, "WARN", "com.github.kagkarlsson") + sum(events, "ERROR", "com.github.kagkarlsson");
                // DatabaseOutage, WorkerLoops (2), BatchCompleter, ControlState, Notifier, ProviderGate, TimeSeries,
                // ScheduleLoop
                assertTrue(layoverWarnings <= 9, "Layover warns about once per component: " + events);
                assertTrue(schedulerWarnings <= 2, "db-scheduler does not flood: " + events);
            }
        } finally {
            workers.forEach(JvmProcess::close);
        }
    }
}
