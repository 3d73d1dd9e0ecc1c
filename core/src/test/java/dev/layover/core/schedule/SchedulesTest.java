package dev.layover.core.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Enqueued;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestClock;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Recurring jobs end to end, on a real Postgres and a test clock: once across two instances, each
 * missed-run policy with every worker down across three occurrences, each overlap policy, both
 * daylight-saving days, a change while an occurrence runs, run-time schedules per tenant, the
 * reconciliation of code schedules, and bad input refused before anything is written.
 */
@DatabaseTest
class SchedulesTest {

    record Tick(String note) {}

    record Count(int n) {}

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration POLL = Duration.ofMillis(50);
    /** A minute boundary plus 30 s: occurrences of a one-minute interval fall on whole minutes. */
    private static final Instant T0 = Instant.parse("2030-01-01T00:00:30Z");

    /** What the handler saw: each job id once per run, its args; blocks the ids it is told to. */
    static final class Recorder {
        final List<String> started = java.util.Collections.synchronizedList(new ArrayList<>());
        final Map<String, String> notes = new ConcurrentHashMap<>();
        final CountDownLatch release = new CountDownLatch(1);
        volatile String blockSuffix;

        JobType<Tick> type() {
            return JobType.of("tick", Tick.class, (a, ctx) -> {
                started.add(ctx.jobId());
                notes.put(ctx.jobId(), a.note());
                String b = blockSuffix;
                if (b != null && ctx.jobId().endsWith(b)) {
                    assertTrue(release.await(60, TimeUnit.SECONDS), "released");
                }
                return null;
            });
        }
    }

    private static Layover.Builder builder(TestDatabase db, TestClock clock, DataSource ds) {
        return Layover.builder(ds).clock(clock).threads(4).pollInterval(POLL).schedulePollInterval(POLL)
                .shutdownMaxWait(Duration.ofSeconds(5));
    }

    private static Layover.Builder builder(TestDatabase db, TestClock clock) {
        return builder(db, clock, db.dataSource());
    }

    private static String id(String name, String instant) {
        return "sched:/" + name + "@" + Instant.parse(instant);
    }

    private static long completed(TestDatabase db, String jobId) {
        return db.count("select count(*) from layover.job_history where job_id = ? and outcome = 'completed'", jobId);
    }

    private static void awaitCompleted(TestDatabase db, String jobId) {
        Await.until(WAIT, jobId + " completed", () -> completed(db, jobId) == 1);
    }

    private static Map<String, Object> view(TestDatabase db, String tenant, String name) {
        return db.row("select * from layover.schedules_view where tenant = ? and name = ?", tenant, name);
    }

    private static Instant nextAt(TestDatabase db, String name) {
        Object v = view(db, "", name).get("next_at");
        return v == null ? null : ((Timestamp) v).toInstant();
    }

    private static List<String> historyIds(TestDatabase db) {
        List<String> out = new ArrayList<>();
        for (Map<String, Object> r : db.rows("select job_id from layover.job_history where job_type = 'tick' "
                + "order by job_id")) {
            out.add((String) r.get("job_id"));
        }
        return out;
    }

    @Test
    void twoInstancesNeverEnqueueTheSameOccurrence(TestDatabase db) {
        TestClock clock = new TestClock(Instant.parse("2030-01-01T00:00:00.500Z"));
        Recorder rec = new Recorder();
        JobType<Tick> typeA = rec.type();
        JobType<Tick> typeB = rec.type();
        AtomicInteger enqueued = new AtomicInteger(); // by both instances' schedulers
        dev.layover.core.metrics.LayoverMetrics counting = new dev.layover.core.metrics.LayoverMetrics() {
            @Override
            public void scheduleClaimed(String jobType, String outcome, int n) {
                enqueued.addAndGet(n);
            }
        };
        MissedRuns catchUp = MissedRuns.catchUp(Duration.ofMinutes(5));
        try (Layover a = builder(db, clock).register(typeA).workerName("a").metrics(counting)
                        .schedule(Schedule.builder("pulse", typeA, Timing.every(Duration.ofSeconds(1)))
                                .args(new Tick("p")).missedRuns(catchUp).overlap(Overlap.ALLOW).build()).start();
                Layover b = builder(db, clock).register(typeB).workerName("b").metrics(counting)
                        .schedule(Schedule.builder("pulse", typeB, Timing.every(Duration.ofSeconds(1)))
                                .args(new Tick("p")).missedRuns(catchUp).overlap(Overlap.ALLOW).build()).start()) {
            List<String> expected = new ArrayList<>();
            for (int s = 1; s <= 10; s++) { // one occurrence at a time, both loops polling every 50 ms
                clock.advance(Duration.ofSeconds(1));
                String id = id("pulse", "2030-01-01T00:00:" + String.format("%02d", s) + "Z");
                expected.add(id);
                awaitCompleted(db, id);
            }
            clock.advance(Duration.ofSeconds(10)); // ten at once: both loops race for one catch-up claim
            for (int s = 11; s <= 20; s++) {
                expected.add(id("pulse", "2030-01-01T00:00:" + s + "Z"));
            }
            Await.until(WAIT, "20 occurrences completed", () -> db.count(
                    "select count(*) from layover.job_history where job_type = 'tick'") >= 20);
            a.awaitCompletions(WAIT);
            b.awaitCompletions(WAIT);
            assertEquals(expected.stream().sorted().toList(), historyIds(db), "each occurrence once");
            assertEquals(20, rec.started.size(), "each ran once: " + rec.started);
            assertEquals(20, enqueued.get(), "the two schedulers enqueued 20 occurrences between them: no claim was "
                    + "made twice (a second insert of a key would count here too)");
        }
    }

    @ParameterizedTest
    @EnumSource(MissedRuns.Policy.class)
    void everyWorkerDownAcrossThreeOccurrences(MissedRuns.Policy policy, TestDatabase db) {
        MissedRuns missed = switch (policy) {
            case SKIP -> MissedRuns.skip(Duration.ofSeconds(10));
            case RUN_LAST -> MissedRuns.runLast();
            case CATCH_UP -> MissedRuns.catchUp(Duration.ofMinutes(2));
        };
        TestClock clock = new TestClock(T0);
        Recorder rec = new Recorder();
        JobType<Tick> tick = rec.type();
        Schedule<Tick> minutely = Schedule.builder("minutely", tick, Timing.every(Duration.ofMinutes(1)))
                .args(new Tick("m")).missedRuns(missed).build();
        try (Layover first = builder(db, clock).register(tick).schedule(minutely).start()) {
            clock.set(Instant.parse("2030-01-01T00:01:00.010Z"));
            awaitCompleted(db, id("minutely", "2030-01-01T00:01:00Z"));
        }
        // every worker down across 00:02, 00:03 and 00:04; back at 00:04:30
        clock.set(Instant.parse("2030-01-01T00:04:30Z"));
        Recorder rec2 = new Recorder();
        JobType<Tick> tick2 = rec2.type();
        Schedule<Tick> same = Schedule.builder("minutely", tick2, Timing.every(Duration.ofMinutes(1)))
                .args(new Tick("m")).missedRuns(missed).build();
        try (Layover back = builder(db, clock).register(tick2).schedule(same).start()) {
            Await.equal(WAIT, "the next occurrence", Instant.parse("2030-01-01T00:05:00Z"), () -> nextAt(db, "minutely"));
            back.awaitCompletions(WAIT);
            List<String> expected = switch (policy) {
                case SKIP -> List.of(id("minutely", "2030-01-01T00:01:00Z"));
                case RUN_LAST -> List.of(id("minutely", "2030-01-01T00:01:00Z"), id("minutely", "2030-01-01T00:04:00Z"));
                case CATCH_UP -> List.of(id("minutely", "2030-01-01T00:01:00Z"), id("minutely", "2030-01-01T00:03:00Z"),
                        id("minutely", "2030-01-01T00:04:00Z"));
            };
            Await.equal(WAIT, policy + ": what ran", expected, () -> historyIds(db));
            assertEquals(0, db.count("select count(*) from layover.jobs"), "nothing else waits");
            assertEquals(policy == MissedRuns.Policy.SKIP ? "missed"
                    : policy == MissedRuns.Policy.RUN_LAST ? "enqueued_after_missed" : "enqueued_catch_up",
                    view(db, "", "minutely").get("last_outcome"));
            // and the schedule goes on: 00:05 runs under every policy
            clock.set(Instant.parse("2030-01-01T00:05:00.010Z"));
            awaitCompleted(db, id("minutely", "2030-01-01T00:05:00Z"));
        }
    }

    @ParameterizedTest
    @EnumSource(Overlap.class)
    void anOccurrenceStillRunningWhenTheNextIsDue(Overlap overlap, TestDatabase db) throws Exception {
        TestClock clock = new TestClock(T0);
        Recorder rec = new Recorder();
        rec.blockSuffix = "00:01:00Z";
        JobType<Tick> tick = rec.type();
        String first = id("slow", "2030-01-01T00:01:00Z");
        String second = id("slow", "2030-01-01T00:02:00Z");
        try (Layover layover = builder(db, clock).register(tick).schedule(Schedule.builder("slow", tick,
                Timing.every(Duration.ofMinutes(1))).args(new Tick("s")).overlap(overlap).build()).start()) {
            clock.set(Instant.parse("2030-01-01T00:01:00.010Z"));
            Await.until(WAIT, "the first occurrence runs", () -> rec.started.contains(first));
            clock.set(Instant.parse("2030-01-01T00:02:00.010Z"));
            switch (overlap) {
                case SKIP -> {
                    Await.equal(WAIT, "skipped", "skipped_overlap", () -> view(db, "", "slow").get("last_outcome"));
                    assertEquals(Instant.parse("2030-01-01T00:03:00Z"), nextAt(db, "slow"));
                    assertEquals(List.of(first), List.copyOf(rec.started));
                    assertEquals(1, db.count("select count(*) from layover.jobs"), "only the first is in the queue");
                    rec.release.countDown();
                    awaitCompleted(db, first);
                    clock.set(Instant.parse("2030-01-01T00:03:00.010Z"));
                    awaitCompleted(db, id("slow", "2030-01-01T00:03:00Z"));
                    assertEquals(0, completed(db, second), "00:02 never ran");
                }
                case QUEUE -> {
                    Await.equal(WAIT, "held", true, () -> view(db, "", "slow").get("held_by_overlap"));
                    assertEquals(Instant.parse("2030-01-01T00:02:00Z"), nextAt(db, "slow"), "held, not moved");
                    assertEquals(1, db.count("select count(*) from layover.jobs"), "only the first is in the queue");
                    rec.release.countDown();
                    awaitCompleted(db, first);
                    awaitCompleted(db, second); // queued behind the first, however late
                    assertEquals(List.of(first, second), List.copyOf(rec.started));
                    Await.equal(WAIT, "the next after the held one", Instant.parse("2030-01-01T00:03:00Z"),
                            () -> nextAt(db, "slow"));
                }
                case ALLOW -> {
                    Await.until(WAIT, "the second runs beside the first", () -> rec.started.contains(second));
                    assertEquals(1, rec.release.getCount(), "the first is still blocked");
                    awaitCompleted(db, second);
                    rec.release.countDown();
                    awaitCompleted(db, first);
                }
            }
            layover.awaitCompletions(WAIT);
        }
    }

    @Test
    void springForwardDayOfEuropeBerlin(TestDatabase db) {
        TestClock clock = new TestClock(Instant.parse("2026-03-28T12:00:00Z"));
        Recorder rec = new Recorder();
        JobType<Tick> tick = rec.type();
        try (Layover layover = builder(db, clock).register(tick).schedule(Schedule.cron("nightly", tick, "30 2 * * *",
                ZoneId.of("Europe/Berlin"), new Tick("n"))).start()) {
            // 02:30 does not exist on 2026-03-29 (02:00 CET jumps to 03:00 CEST): it runs at 03:00 CEST
            assertEquals(Instant.parse("2026-03-29T01:00:00Z"), nextAt(db, "nightly"));
            clock.set(Instant.parse("2026-03-29T01:00:00.010Z"));
            awaitCompleted(db, id("nightly", "2026-03-29T01:00:00Z"));
            Await.equal(WAIT, "the next day's 02:30 CEST", Instant.parse("2026-03-30T00:30:00Z"),
                    () -> nextAt(db, "nightly"));
            assertEquals(List.of(id("nightly", "2026-03-29T01:00:00Z")), historyIds(db));
        }
    }

    @Test
    void fallBackDayOfEuropeBerlin(TestDatabase db) {
        TestClock clock = new TestClock(Instant.parse("2026-10-24T12:00:00Z"));
        Recorder rec = new Recorder();
        JobType<Tick> tick = rec.type();
        try (Layover layover = builder(db, clock).register(tick).schedule(Schedule.cron("nightly", tick, "30 2 * * *",
                ZoneId.of("Europe/Berlin"), new Tick("n"))).start()) {
            // 02:30 happens twice on 2026-10-25: at 00:30 UTC (CEST) and 01:30 UTC (CET); it runs at the first
            assertEquals(Instant.parse("2026-10-25T00:30:00Z"), nextAt(db, "nightly"));
            clock.set(Instant.parse("2026-10-25T00:30:00.010Z"));
            awaitCompleted(db, id("nightly", "2026-10-25T00:30:00Z"));
            Await.equal(WAIT, "the next is the next day's, not the second 02:30", Instant.parse("2026-10-26T01:30:00Z"),
                    () -> nextAt(db, "nightly"));
            clock.set(Instant.parse("2026-10-25T01:30:00.010Z")); // the second 02:30: nothing is due
            clock.set(Instant.parse("2026-10-26T01:30:00.010Z"));
            awaitCompleted(db, id("nightly", "2026-10-26T01:30:00Z"));
            assertEquals(List.of(id("nightly", "2026-10-25T00:30:00Z"), id("nightly", "2026-10-26T01:30:00Z")),
                    historyIds(db));
        }
    }

    @Test
    void aScheduleChangedWhileAnOccurrenceRuns(TestDatabase db) {
        TestClock clock = new TestClock(T0);
        Recorder rec = new Recorder();
        rec.blockSuffix = "00:01:00Z";
        JobType<Tick> tick = rec.type();
        try (Layover layover = builder(db, clock).register(tick).start()) {
            layover.schedules().create("acme", Schedule.every("digest", tick, Duration.ofMinutes(1), new Tick("v1")));
            clock.set(Instant.parse("2030-01-01T00:01:00.010Z"));
            String first = "sched:acme/digest@2030-01-01T00:01:00Z";
            Await.until(WAIT, "the first occurrence runs", () -> rec.started.contains(first));

            ScheduleInfo changed = layover.schedules().update("acme",
                    Schedule.every("digest", tick, Duration.ofMinutes(2), new Tick("v2")));
            assertEquals(Duration.ofMinutes(2), changed.every());
            assertEquals(Instant.parse("2030-01-01T00:02:00Z"), changed.nextAt(), "the new timing's first after now");
            assertEquals("running", changed.lastJobState());
            rec.release.countDown();
            Await.until(WAIT, "the first completes", () -> completed(db, first) == 1);
            assertEquals("v1", rec.notes.get(first), "the running occurrence keeps the args it was enqueued with");

            clock.set(Instant.parse("2030-01-01T00:02:00.010Z"));
            String second = "sched:acme/digest@2030-01-01T00:02:00Z";
            Await.until(WAIT, "the second completes", () -> completed(db, second) == 1);
            assertEquals("v2", rec.notes.get(second));
            Await.equal(WAIT, "every two minutes now", Instant.parse("2030-01-01T00:04:00Z"),
                    () -> layover.schedules().get("acme", "digest").orElseThrow().nextAt());
            Await.equal(WAIT, "the view tells the last occurrence's outcome", "completed",
                    () -> layover.schedules().get("acme", "digest").orElseThrow().lastJobState());
        }
    }

    @Test
    void runTimeSchedulesPerTenantPauseResumeTriggerDelete(TestDatabase db) {
        TestClock clock = new TestClock(T0);
        Recorder rec = new Recorder();
        JobType<Tick> tick = rec.type();
        try (Layover layover = builder(db, clock).register(tick).start()) {
            Schedules schedules = layover.schedules();
            ScheduleInfo acme = schedules.create("acme", Schedule.cron("weekly", tick, "0 9 * * MON",
                    ZoneId.of("America/New_York"), new Tick("acme")));
            ScheduleInfo globex = schedules.create("globex", Schedule.cron("weekly", tick, "0 9 * * MON",
                    ZoneId.of("Asia/Tokyo"), new Tick("globex")));
            assertEquals(Instant.parse("2030-01-07T14:00:00Z"), acme.nextAt(), "Monday 09:00 EST");
            assertEquals(Instant.parse("2030-01-07T00:00:00Z"), globex.nextAt(), "Monday 09:00 JST");
            assertEquals("{\"note\":\"acme\"}", acme.argsJson().replace(" ", ""));
            assertEquals("api", acme.source());
            InvalidScheduleException taken = assertThrows(InvalidScheduleException.class, () -> schedules.create("acme",
                    Schedule.every("weekly", tick, Duration.ofMinutes(1), new Tick("x"))));
            assertTrue(taken.getMessage().contains("already"), taken.getMessage());

            assertTrue(schedules.pause("acme", "weekly"));
            assertFalse(schedules.pause("acme", "weekly"), "paused already");
            ScheduleInfo paused = schedules.get("acme", "weekly").orElseThrow();
            assertTrue(paused.paused());
            assertNull(paused.nextAt());
            assertFalse(schedules.get("globex", "weekly").orElseThrow().paused(), "another tenant's is its own");

            Enqueued now = schedules.triggerNow("acme", "weekly").orElseThrow();
            assertTrue(now.created());
            assertEquals("sched:acme/weekly@manual-" + T0, now.id());
            Await.until(WAIT, "the triggered occurrence completed", () -> completed(db, now.id()) == 1);
            assertEquals("acme", rec.notes.get(now.id()));
            assertEquals("triggered", schedules.get("acme", "weekly").orElseThrow().lastOutcome());

            clock.set(Instant.parse("2030-01-09T00:00:00Z")); // Wednesday: Monday's occurrence passed while paused
            assertTrue(schedules.resume("acme", "weekly"));
            assertEquals(Instant.parse("2030-01-14T14:00:00Z"), schedules.get("acme", "weekly").orElseThrow().nextAt(),
                    "resumed at its first occurrence after now");

            assertTrue(schedules.delete("acme", "weekly"));
            assertFalse(schedules.delete("acme", "weekly"));
            assertTrue(schedules.get("acme", "weekly").isEmpty());
            assertEquals(List.of("globex"), schedules.list(null).stream().map(ScheduleInfo::tenant).toList());
            assertTrue(schedules.triggerNow("acme", "weekly").isEmpty());
        }
    }

    @Test
    void codeSchedulesAreReconciledAtStartAndAGenerationKeepsARollingDeployFromFighting(TestDatabase db) {
        TestClock clock = new TestClock(T0);
        Recorder rec = new Recorder();
        JobType<Tick> tick = rec.type();
        Schedule<Tick> x1 = Schedule.every("x", tick, Duration.ofMinutes(1), new Tick("x"));
        Schedule<Tick> y = Schedule.every("y", tick, Duration.ofMinutes(5), new Tick("y"));
        try (Layover v1 = builder(db, clock).register(tick).schedule(x1).schedule(y).start()) {
            assertEquals(2, db.count("select count(*) from layover.schedules_view where source = 'code' and not removed"));
            InvalidScheduleException e = assertThrows(InvalidScheduleException.class, () -> v1.schedules().delete("", "x"));
            assertTrue(e.getMessage().contains("defined in code"), e.getMessage());
            assertThrows(InvalidScheduleException.class, () -> v1.schedules().update("", x1));
        }
        String hashBefore = (String) db.value("select definition_hash from layover.schedules where name = 'x'");

        // the same code again writes nothing
        try (Layover again = builder(db, clock).register(tick).schedule(x1).schedule(y).start()) {
            assertEquals(hashBefore, db.value("select definition_hash from layover.schedules where name = 'x'"));
        }

        // version 2 (generation 2): x every 2 minutes, y gone, z new
        Schedule<Tick> x2 = Schedule.every("x", tick, Duration.ofMinutes(2), new Tick("x"));
        Schedule<Tick> z = Schedule.cron("z", tick, "0 3 * * *", ZoneId.of("UTC"), new Tick("z"));
        try (Layover v2 = builder(db, clock).register(tick).scheduleGeneration(2).schedule(x2).schedule(z).start()) {
            assertEquals(Duration.ofMinutes(2), v2.schedules().get("", "x").orElseThrow().every());
            assertEquals(Instant.parse("2030-01-01T00:02:00Z"), nextAt(db, "x"));
            ScheduleInfo removed = v2.schedules().get("", "y").orElseThrow();
            assertTrue(removed.removed(), "a schedule no longer in the code stops");
            assertNull(removed.nextAt());
            assertTrue(v2.schedules().get("", "z").isPresent());
        }

        // an instance of version 1 (generation 1) restarting during the deploy changes nothing
        try (Layover old = builder(db, clock).register(tick).scheduleGeneration(1).schedule(x1).schedule(y).start()) {
            assertEquals(Duration.ofMinutes(2), old.schedules().get("", "x").orElseThrow().every());
            assertTrue(old.schedules().get("", "y").orElseThrow().removed());
            // and its loop does not fire the removed one: nothing is due for it even past its old next_at
            clock.set(Instant.parse("2030-01-01T00:05:00.010Z"));
            Await.equal(WAIT, "x's missed 00:02 and 00:04 skipped (1 minute of grace), next at 00:06",
                    Instant.parse("2030-01-01T00:06:00Z"), () -> nextAt(db, "x"));
            clock.set(Instant.parse("2030-01-01T00:06:00.010Z"));
            Await.until(WAIT, "x fired at 00:06", () -> completed(db, id("x", "2030-01-01T00:06:00Z")) == 1);
            assertEquals(0, completed(db, id("y", "2030-01-01T00:05:00Z")), "the removed y did not fire");
        }
    }

    @Test
    void badInputIsRefusedClearlyAndNothingIsWritten(TestDatabase db) {
        TestClock clock = new TestClock(T0);
        Recorder rec = new Recorder();
        JobType<Tick> tick = rec.type();
        JobType<Count> count = JobType.of("count", Count.class, (a, ctx) -> null);

        InvalidScheduleException cron = assertThrows(InvalidScheduleException.class,
                () -> Schedule.cron("bad", tick, "0 25 * * *", ZoneId.of("UTC"), new Tick("b")));
        assertTrue(cron.getMessage().contains("hour field has 25"), cron.getMessage());
        InvalidScheduleException zone = assertThrows(InvalidScheduleException.class,
                () -> Timing.cron("0 3 * * *", "Europe/Atlantis"));
        assertTrue(zone.getMessage().contains("unknown time zone"), zone.getMessage());

        InvalidScheduleException interval = assertThrows(InvalidScheduleException.class, () -> builder(db, clock)
                .schedulePollInterval(Duration.ofSeconds(5)).register(tick)
                .schedule(Schedule.every("fast", tick, Duration.ofSeconds(2), new Tick("f"))).build());
        assertTrue(interval.getMessage().contains("under the scheduler's poll interval"), interval.getMessage());

        Schedule<Count> unreadable = Schedule.builder("count-up", count, Timing.every(Duration.ofMinutes(1)))
                .argsJson("{\"n\": \"many\"}").build();
        InvalidScheduleException args = assertThrows(InvalidScheduleException.class,
                () -> builder(db, clock).register(count).schedule(unreadable).build());
        assertTrue(args.getMessage().contains("cannot read its args"), args.getMessage());

        InvalidScheduleException unregistered = assertThrows(InvalidScheduleException.class,
                () -> builder(db, clock).register(tick).schedule(unreadable).build());
        assertTrue(unregistered.getMessage().contains("not registered"), unregistered.getMessage());

        try (Layover layover = builder(db, clock).register(tick, count).build()) {
            Schedules s = layover.schedules();
            assertThrows(InvalidScheduleException.class, () -> s.create("acme", unreadable));
            InvalidScheduleException fn = assertThrows(InvalidScheduleException.class, () -> s.create("acme",
                    Schedule.builder("fn", tick, Timing.every(Duration.ofMinutes(1)))
                            .argsFor(at -> new Tick(at.toString())).build()));
            assertTrue(fn.getMessage().contains("needs fixed args"), fn.getMessage());
            assertThrows(InvalidScheduleException.class, () -> s.create("a/b",
                    Schedule.every("t", tick, Duration.ofMinutes(1), new Tick("t"))));
            assertThrows(InvalidScheduleException.class, () -> s.update("acme",
                    Schedule.every("missing", tick, Duration.ofMinutes(1), new Tick("t"))));
        }
        assertEquals(0, db.count("select count(*) from layover.schedules"), "nothing written");
    }

    @Test
    void argsComputedFromTheOccurrenceInstant(TestDatabase db) {
        TestClock clock = new TestClock(T0);
        Recorder rec = new Recorder();
        JobType<Tick> tick = rec.type();
        List<String> claims = java.util.Collections.synchronizedList(new ArrayList<>());
        dev.layover.core.metrics.LayoverMetrics metrics = new dev.layover.core.metrics.LayoverMetrics() {
            @Override
            public void scheduleClaimed(String jobType, String outcome, int enqueued) {
                claims.add(jobType + " " + outcome + " " + enqueued);
            }
        };
        try (Layover layover = builder(db, clock).register(tick).metrics(metrics).schedule(Schedule.builder("report",
                tick, Timing.every(Duration.ofMinutes(1))).argsFor(at -> new Tick("for " + at))
                .jitter(Duration.ofSeconds(5)).build()).start()) {
            assertEquals(Boolean.TRUE, view(db, "", "report").get("args") == null);
            clock.set(Instant.parse("2030-01-01T00:01:05.010Z")); // past the jitter
            String id = id("report", "2030-01-01T00:01:00Z");
            awaitCompleted(db, id);
            assertEquals("for 2030-01-01T00:01:00Z", rec.notes.get(id));
            assertEquals(List.of("tick enqueued 1"), List.copyOf(claims), "the metrics heard the claim");
        }
    }
}
