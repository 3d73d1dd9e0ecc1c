package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.RestartablePostgres;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.Faults;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The fleet under the faults of an ordinary bad day, at once (issue 50): three worker JVMs (one
 * with its clock a minute ahead, when libfaketime is installed) against a fake provider limited to
 * R calls/s that fails 3 % of the calls it admits (503, 500, slow answers, dropped connections,
 * seeded), while one worker is killed with kill -9 and replaced, another is stopped with SIGSTOP
 * for longer than the heartbeat timeout, Postgres restarts, and two operators replay the same
 * parked jobs at once.
 * Asserted at the end: no job lost, none completed twice, no overlapping runs of one job but those
 * a killed or stopped worker explains, no attempt spent on a rate limit (attempts spent are
 * bounded by the calls that failed and the jobs lost twice in a row, to the kill and the stop),
 * the calls the provider saw in any two seconds never more than the bucket admits in two seconds
 * (its burst and two seconds' rate) and a second's rate for the jitter between a pick and its
 * call (a one-second count at the provider mixes two seconds' admissions), no run started
 * after its job was done (a resumed worker runs none of the jobs taken back from it), and jobs
 * completed by the others throughout the stop and after the restart.
 * The seed is printed, and {@code -Dlayover.chaos.seed} repeats a run.
 *
 * <p>The test runs on a Postgres of its own ({@link RestartablePostgres}), which it restarts once
 * mid-run (a fast shutdown, 5 s away). Not in it: goodput bounds (a timed figure: the etiquette
 * bench's fault arms measure it).
 */
@Tag("slow")
@ProcessTest
class ChaosReliabilityTest {

    private static final int R = 20;
    private static final int JOBS = 1_200;
    private static final int POISONED = 6;
    private static final Duration WAIT = Duration.ofMinutes(3);

    @Test
    void aFleetUnderKillsStopsRestartsFaultsAndRacingReplaysLosesNothingAndRunsNothingTwice() throws Exception {
        try (RestartablePostgres pg = RestartablePostgres.start(); TestDatabase db = pg.newDatabase()) {
            run(pg, db);
        }
    }

    private void run(RestartablePostgres pg, TestDatabase db) throws Exception {
        long seed = Long.getLong("layover.chaos.seed", System.nanoTime());
        System.out.println("ChaosReliabilityTest seed " + seed + " (-Dlayover.chaos.seed=" + seed + " repeats it)");
        String failing = "seed " + seed + ": ";
        db.execute("create table public.chaos_runs (id bigserial primary key, job_id text not null, worker text not null,"
                + " started_at timestamptz not null default clock_timestamp(), ended_at timestamptz)");
        Path poison = Files.createTempFile("layover-chaos", ".poison");
        List<JvmProcess> workers = new ArrayList<>();
        java.time.Instant resumedAt = null;
        java.time.Instant restartFrom = null;
        java.time.Instant restartedAt = null;
        long heldByKilled = 0;
        long heldByFrozen = 0;
        try (FakeProvider fake = FakeProvider.start()) {
            fake.primary().limitPerSecond(R).faults(Faults.mix(seed, 0.03));
            String url = fake.primary().base().toString().replaceAll("/$", "");
            JobType<ChaosWorkerMain.Ask> ask = JobType.of("ask", ChaosWorkerMain.Ask.class, (a, c) -> Outcome.done());
            try (Layover client = Layover.builder(db.dataSource()).register(ask).migrate(false).build()) {
                workers.add(start("chaos-a", db, url, poison, Optional.empty()));
                workers.add(start("chaos-b", db, url, poison, Optional.empty()));
                workers.add(start("chaos-c", db, url, poison, JvmProcess.faketime(Duration.ofMinutes(1))));
                List<ChaosWorkerMain.Ask> jobs = new ArrayList<>();
                for (int i = 0; i < JOBS; i++) {
                    jobs.add(new ChaosWorkerMain.Ask(i, i < POISONED));
                }
                client.enqueueBatch(ask, jobs); // about a minute of work at R

                // kill -9 one worker mid-run, and start another in its place
                Await.until(WAIT, failing + "a fifth done", () -> completed(db) >= JOBS / 5);
                workers.get(0).kill();
                heldByKilled = db.count("select count(*) from layover.scheduled_tasks where picked and picked_by = 'chaos-a'");
                workers.add(start("chaos-d", db, url, poison, Optional.empty()));

                // SIGSTOP another for longer than the heartbeat timeout: the others go on meanwhile
                Await.until(WAIT, failing + "two fifths done", () -> completed(db) >= 2 * JOBS / 5);
                JvmProcess frozen = workers.get(1);
                signal("STOP", frozen.pid());
                heldByFrozen = db.count("select count(*) from layover.scheduled_tasks where picked and picked_by = 'chaos-b'");
                long atStop = completed(db);
                try {
                    Await.until(WAIT, failing + "the frozen worker's jobs taken back by the others and 30 more jobs done",
                            () -> completed(db) >= atStop + 30 && db.count("select count(*) from layover.scheduled_tasks"
                                    + " where picked_by = 'chaos-b' and picked") == 0);
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + "; done " + completed(db) + " (" + atStop + " at the stop); picked: "
                            + db.rows("select picked_by, count(*) n, min(last_heartbeat) hb from layover.scheduled_tasks"
                                    + " where picked group by picked_by") + "; waiting for locks: "
                            + db.rows("select pid, pg_blocking_pids(pid)::text blockers, left(query, 120) q from pg_stat_activity"
                                    + " where cardinality(pg_blocking_pids(pid)) > 0") + "; now " + db.value("select now()::text"), e);
                }
                signal("CONT", frozen.pid());
                resumedAt = java.time.Instant.now();

                // Postgres restarts (a fast shutdown, 5 s away): the workers wait it out and go on
                Await.until(WAIT, failing + "three fifths done", () -> completed(db) >= 3 * JOBS / 5);
                restartFrom = java.time.Instant.now();
                pg.restart(Duration.ofSeconds(5));
                restartedAt = java.time.Instant.now();
                long atRestart = completed(db);
                try {
                    Await.until(WAIT, failing + "30 more jobs done after the restart", () -> completed(db) >= atRestart + 30);
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + "; " + state(db), e);
                }

                // the poisoned jobs parked: heal them, and two operators replay each at once
                Await.equal(WAIT, failing + "poisoned jobs parked", (long) POISONED,
                        () -> db.count("select count(*) from layover.dead_letters where state = 'parked'"));
                Files.delete(poison);
                DeadLetters store = DeadLetters.create(client);
                List<Long> ids = new ArrayList<>();
                db.rows("select id from layover.dead_letters order by id").forEach(r -> ids.add((Long) r.get("id")));
                int replayed = 0;
                ExecutorService two = Executors.newFixedThreadPool(2);
                try {
                    for (long id : ids) {
                        List<Future<Boolean>> both = new ArrayList<>();
                        for (String who : List.of("alice", "bob")) {
                            both.add(two.submit(() -> {
                                try {
                                    store.replay(id, ReplayOptions.by(who));
                                    return true;
                                } catch (ReplayConflictException e) {
                                    return false;
                                }
                            }));
                        }
                        for (Future<Boolean> f : both) {
                            replayed += f.get(30, TimeUnit.SECONDS) ? 1 : 0;
                        }
                    }
                } finally {
                    two.shutdown();
                }
                assertEquals(POISONED, replayed, failing + "each parked job replayed once, the second operator refused");

                Await.until(WAIT, failing + "every job done", () -> db.count("select count(*) from layover.scheduled_tasks"
                        + " where task_name = 'ask'") == 0);
            }

            Map<String, Object> f = db.row("select count(distinct job_id) jobs, count(*) rows from layover.job_history"
                    + " where job_type = 'ask' and outcome = 'completed'");
            assertEquals((long) JOBS, f.get("jobs"), failing + "no job lost: " + f);
            assertEquals((long) JOBS, f.get("rows"), failing + "none completed twice: " + f);

            // runs of one job that overlap in time: only where one of them was on the killed or the stopped worker
            List<Map<String, Object>> overlaps = db.rows("select a.job_id, a.worker wa, b.worker wb from public.chaos_runs a"
                    + " join public.chaos_runs b on a.job_id = b.job_id and a.id < b.id"
                    + " and b.started_at < coalesce(a.ended_at, 'infinity') and a.started_at < coalesce(b.ended_at, 'infinity')");
            for (Map<String, Object> o : overlaps) {
                assertTrue(List.of("chaos-a", "chaos-b").contains(o.get("wa")) || List.of("chaos-a", "chaos-b").contains(o.get("wb")),
                        failing + "overlapping runs not explained by the kill or the stop: " + o);
            }

            // attempts spent: only by calls that failed (503, 500, dropped) and by jobs whose worker was lost
            // twice in a row (the first loss spends none: a lost worker's held jobs may never have started),
            // which only a job held by both the killed and the stopped worker can be; none by the 429s
            long spent = db.count("select coalesce(sum(attempts), 0) from layover.job_history where job_type = 'ask'");
            long failed = fake.primary().faultCounts().failed();
            long lostTwice = Math.min(heldByKilled, heldByFrozen);
            assertTrue(spent <= failed + lostTwice, failing + "attempts spent " + spent + " beyond failed calls " + failed
                    + " and the jobs that can have been lost twice " + lostTwice + " (429s, which spend none: "
                    + fake.primary().rateLimited() + ")");

            // the bucket: what it admits in any two seconds is its burst (one second's worth) and two
            // seconds' rate, 3R. Counted at the provider, where calls arrive with the jitter between a
            // pick and its call (allowed: a second's rate; a second's count alone mixes two
            // seconds' admissions on a busy machine), and but for the
            // few seconds after the stopped worker resumed, when the jobs it held in memory make calls
            // admitted before it stopped (their runs overlap the others', as allowed above), and but for
            // the restart and the few seconds after it, when runs admitted before it, which waited to
            // record their start (ChaosWorkerMain writes it to the database), make their calls
            java.time.Instant resumed = resumedAt;
            java.time.Instant quietFrom = resumed.plusSeconds(5);
            java.time.Instant down = restartFrom;
            java.time.Instant upQuiet = restartedAt.plusSeconds(5);
            // no run of a job started after the job was done: a paused worker that resumes runs none of
            // the jobs the others took back from it (each would be a second, paid call). A run's start
            // is its handler's entry (ChaosWorkerMain: the database's time on the worker's monotonic
            // clock), so a run the stop froze after it began is not taken for one begun after the resume
            List<Map<String, Object>> late = db.rows("select r.job_id, r.worker, r.started_at::text s, h.finished_at::text f"
                    + " from public.chaos_runs r join layover.job_history h on h.job_id = r.job_id and h.outcome = 'completed'"
                    + " where r.started_at > h.finished_at");
            assertEquals(List.of(), late, failing + "runs started after their job was done elsewhere");
            List<java.time.Instant> calls = fake.primary().arrivals().stream()
                    .filter(t -> t.isBefore(resumed.minusMillis(500)) || t.isAfter(quietFrom))
                    .filter(t -> t.isBefore(down) || t.isAfter(upQuiet))
                    .sorted().toList();
            int most = 0;
            for (int i = 0, j = 0; i < calls.size(); i++) {
                while (Duration.between(calls.get(j), calls.get(i)).compareTo(Duration.ofSeconds(2)) >= 0) {
                    j++;
                }
                most = Math.max(most, i - j + 1);
            }
            // the burst, two seconds' rate, and a second's worth of late arrivals: a call admitted while the
            // threads are in slow answers (2-8 s) waits for one, up to giveBackAfter (2 s); measured 56-75 in 13 runs
            int bound = 4 * R;
            assertTrue(most <= bound, failing + "at most the burst and three seconds' rate in any two seconds, was "
                    + most + " (most in one second: " + fake.primary().maxInWindow(Duration.ofSeconds(1)) + ")");
            System.out.println("ChaosReliabilityTest: most calls in any 2 s " + most + " (bound " + bound
                    + "), in any 1 s " + fake.primary().maxInWindow(Duration.ofSeconds(1)) + "; attempts spent "
                    + spent + ", failed calls " + failed + ", held by the killed worker " + heldByKilled
                    + " and the stopped one " + heldByFrozen + ", 429s " + fake.primary().rateLimited()
                    + ", overlapping runs " + overlaps.size());
        } finally {
            for (JvmProcess w : workers) {
                if (w.isAlive()) {
                    signal("CONT", w.pid());
                    w.kill();
                }
            }
            Files.deleteIfExists(poison);
        }
    }

    /** What the fleet is doing, for a failure message. */
    private static String state(TestDatabase db) {
        return "jobs: " + db.rows("select state, waiting_for, picked_by, count(*) n, min(run_at)::text first_run_at"
                + " from layover.jobs group by 1, 2, 3") + "; breakers: " + db.rows("select * from layover.breakers")
                + "; cooldowns: " + db.rows("select * from layover.cooldowns") + "; buckets: "
                + db.rows("select provider_key, request_tat::text, requests_per_minute from layover.buckets")
                + "; workers: " + db.rows("select * from layover.workers") + "; now " + db.value("select now()::text");
    }

    private static long completed(TestDatabase db) {
        return db.count("select count(*) from layover.job_history where job_type = 'ask' and outcome = 'completed'");
    }

    private static JvmProcess start(String name, TestDatabase db, String url, Path poison, Optional<Map<String, String>> env) {
        JvmProcess p = JvmProcess.start(ChaosWorkerMain.class, name, List.of("-Xmx256m"),
                List.of(db.jdbcUrl(), url, name, poison.toString(), String.valueOf(R)), env.orElse(Map.of()));
        p.awaitOutput("started " + name, Duration.ofSeconds(60));
        return p;
    }

    private static void signal(String sig, long pid) throws Exception {
        Process p = new ProcessBuilder("kill", "-" + sig, String.valueOf(pid)).inheritIO().start();
        assertEquals(0, p.waitFor(), "kill -" + sig + " " + pid);
    }
}
