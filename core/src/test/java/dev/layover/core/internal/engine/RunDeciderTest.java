package dev.layover.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobPolicy;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.PureTest;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The decision of what becomes of a run, without a database: every outcome kind, at a fixed time.
 * The jitter is random, so times are asserted as ranges.
 */
@PureTest
class RunDeciderTest {

    private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");
    private static final JobPolicy POLICY = JobPolicy.defaults().withMaxAttempts(3).withMaxReschedules(5)
            .withMaxDeferral(Duration.ofMinutes(10)).withBackoff(Duration.ofSeconds(2), Duration.ofMinutes(1));

    private static JobRun run(int attemptsSpent) {
        return new JobRun("t", "id", 7, attemptsSpent, POLICY);
    }

    private static RunDecision decide(Outcome o, Instant cooldown) {
        return RunDecider.decide(run(0), o, NOW, cooldown, () -> 0);
    }

    @Test
    void doneCompletes() {
        assertInstanceOf(RunDecision.Complete.class, decide(Outcome.done(), null));
    }

    @Test
    void snoozeReschedulesExactlyWithoutAnAttempt() {
        RunDecision.Reschedule r = (RunDecision.Reschedule) decide(Outcome.snooze(Duration.ofSeconds(30)), null);
        assertEquals(NOW.plusSeconds(30), r.runAt());
        assertEquals("snooze", r.reason());
        assertEquals(FailureType.SNOOZE_EXHAUSTED, r.whenCapped());
    }

    @Test
    void rateLimitWaitsTheRetryAfterPlusAtMostAQuarterOfJitter() {
        RunDecision.Reschedule r = (RunDecision.Reschedule) decide(Outcome.rateLimited(Duration.ofSeconds(40)), null);
        assertTrue(!r.runAt().isBefore(NOW.plusSeconds(40)) && !r.runAt().isAfter(NOW.plusSeconds(50)), r.runAt().toString());
        assertEquals("rate_limited", r.reason());
        assertEquals(FailureType.RATE_LIMIT_EXHAUSTED, r.whenCapped());
    }

    @Test
    void rateLimitWaitsAtLeastTheKeysCooldown() {
        RunDecision.Reschedule r = (RunDecision.Reschedule) decide(Outcome.rateLimited(Duration.ofSeconds(1)),
                NOW.plusSeconds(120));
        assertTrue(!r.runAt().isBefore(NOW.plusSeconds(120)), r.runAt().toString());
    }

    @Test
    void rateLimitWithoutAWaitEscalatesWithTheJobsReschedules() {
        AtomicInteger read = new AtomicInteger();
        RunDecision.Reschedule r = (RunDecision.Reschedule) RunDecider.decide(run(0), Outcome.rateLimited(null), NOW,
                null, () -> {
                    read.incrementAndGet();
                    return 3;
                });
        assertEquals(1, read.get(), "the reschedule count is read once, only when no wait was named");
        assertTrue(!r.runAt().isBefore(NOW.plusSeconds(8)) && !r.runAt().isAfter(NOW.plusSeconds(10)), r.runAt().toString());
        RunDecider.decide(run(0), Outcome.rateLimited(Duration.ofSeconds(1)), NOW, null, () -> {
            throw new AssertionError("not read when the provider named a wait");
        });
    }

    @Test
    void rateLimitLongerThanMaxDeferralParksWithoutAnAttempt() {
        RunDecision.Park p = (RunDecision.Park) decide(Outcome.rateLimited(Duration.ofHours(2)), null);
        assertEquals(FailureType.RATE_LIMIT_EXHAUSTED, p.type());
        assertEquals(0, p.attempts());
        assertTrue(p.message().startsWith("asked to wait PT2H, longer than maxDeferral PT10M"), p.message());
    }

    @Test
    void quotaWithAResetWithinMaxDeferralWaitsForTheReset() {
        Instant reset = NOW.plus(Duration.ofMinutes(5));
        RunDecision.Reschedule r = (RunDecision.Reschedule) decide(Outcome.quotaExhausted(reset, "daily"), null);
        assertTrue(!r.runAt().isBefore(reset) && !r.runAt().isAfter(reset.plusSeconds(30)), r.runAt().toString());
        assertEquals("quota_exhausted", r.reason());
    }

    @Test
    void quotaWithoutAResetOrBeyondMaxDeferralParks() {
        RunDecision.Park none = (RunDecision.Park) decide(Outcome.quotaExhausted(null, "out of credit"), null);
        assertEquals(FailureType.QUOTA_EXHAUSTED, none.type());
        assertTrue(none.message().contains("no known reset"), none.message());
        RunDecision.Park far = (RunDecision.Park) decide(Outcome.quotaExhausted(NOW.plus(Duration.ofDays(30)), "monthly"),
                null);
        assertTrue(far.message().contains("beyond maxDeferral"), far.message());
    }

    @Test
    void overloadedSpendsAnAttemptWithTheRetryAfterAsAFloor() {
        RunDecision.Retry r = (RunDecision.Retry) decide(Outcome.overloaded(Duration.ofSeconds(30), "busy"), null);
        assertEquals(1, r.attempts());
        assertTrue(!r.runAt().isBefore(NOW.plusSeconds(30)), r.runAt().toString());
        assertEquals("overloaded", r.error().kind());
        assertEquals("ProviderOverloaded", r.error().errorClass());
    }

    @Test
    void transientAndTheJobsOwnErrorBackOffWithFullJitter() {
        IOException io = new IOException("reset");
        RunDecision.Retry t = (RunDecision.Retry) RunDecider.decide(run(1), Outcome.transientFailure("timeout", io), NOW,
                null, () -> 0);
        assertEquals(2, t.attempts());
        assertTrue(!t.runAt().isBefore(NOW) && !t.runAt().isAfter(NOW.plusSeconds(8)), t.runAt().toString());
        assertEquals(IOException.class.getName(), t.error().errorClass());
        assertEquals("timeout: reset", t.error().message());
        RunDecision.Retry bug = (RunDecision.Retry) decide(Outcome.retry("boom"), null);
        assertEquals("error", bug.error().kind());
        assertEquals("JobError", bug.error().errorClass());
    }

    @Test
    void attemptsRunningOutParkAsTheKindsFailureType() {
        RunDecision.Park p = (RunDecision.Park) RunDecider.decide(run(2), Outcome.transientFailure("timeout", null), NOW,
                null, () -> 0);
        assertEquals(FailureType.PROVIDER_UNAVAILABLE, p.type());
        assertEquals(3, p.attempts());
        assertEquals("timeout (attempt 3 of 3)", p.message());
        RunDecision.Park bug = (RunDecision.Park) RunDecider.decide(run(2), Outcome.retry("boom"), NOW, null, () -> 0);
        assertEquals(FailureType.JOB_ERROR, bug.type());
    }

    @Test
    void refusalsParkAtOnceWithoutAnAttempt() {
        assertEquals(FailureType.AUTH_REFUSED, ((RunDecision.Park) decide(Outcome.authRefused("bad key"), null)).type());
        assertEquals(FailureType.REJECTED, ((RunDecision.Park) decide(Outcome.rejected("too long"), null)).type());
        RunDecision.Park p = (RunDecision.Park) RunDecider.decide(run(1), Outcome.park("no such user"), NOW, null, () -> 0);
        assertEquals(FailureType.HANDLER_PARKED, p.type());
        assertEquals(1, p.attempts(), "no attempt spent");
        assertEquals("no such user", p.message());
    }

    @Test
    void everyKindParksAsItsTableSays() {
        for (Outcome.Kind k : Outcome.Kind.values()) {
            if (k.parksAtOnce()) {
                assertFalse(k.spendsAttempt(), k + ": a park at once spends no attempt");
            }
            if (k.countsReschedule()) {
                assertFalse(k.spendsAttempt(), k + ": a reschedule never spends an attempt");
            }
        }
        assertNull(Outcome.Kind.DONE.parksAs());
    }

    @Test
    void aLostWorkersJobRunsAgainAtOnceWithoutAnAttemptTheFirstTime() {
        RunDecision.Reschedule r = (RunDecision.Reschedule) RunDecider.workerLost(run(0), NOW, NOW.minusSeconds(60), false);
        assertEquals(NOW, r.runAt());
        assertEquals(RunDecider.WORKER_LOST, r.reason());
        assertEquals(FailureType.JOB_ERROR, r.whenCapped());
    }

    @Test
    void aJobLostTwiceInARowSpendsAnAttemptAndParksWhenItWasTheLast() {
        RunDecision.Retry r = (RunDecision.Retry) RunDecider.workerLost(run(0), NOW, NOW.minusSeconds(60), true);
        assertEquals(NOW, r.runAt());
        assertEquals(1, r.attempts());
        assertEquals(RunDecider.WORKER_LOST, r.error().kind());
        RunDecision.Park p = (RunDecision.Park) RunDecider.workerLost(run(4), NOW, NOW.minusSeconds(60), true);
        assertEquals(FailureType.JOB_ERROR, p.type());
    }

    @Test
    void aCappedRescheduleParksAsItsReasonSays() {
        RunDecision.Reschedule r = new RunDecision.Reschedule(NOW, "snooze", "later", FailureType.SNOOZE_EXHAUSTED);
        RunDecision.Park p = (RunDecision.Park) RunDecider.capped(run(0), r, NOW);
        assertEquals(FailureType.SNOOZE_EXHAUSTED, p.type());
        assertEquals("SnoozeLimit", p.error().errorClass());
        assertEquals("rescheduled 5 times (maxReschedules); last: later", p.message());
    }
}
