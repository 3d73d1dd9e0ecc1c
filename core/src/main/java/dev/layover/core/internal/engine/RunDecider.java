package dev.layover.core.internal.engine;

import dev.layover.core.JobPolicy;
import dev.layover.core.internal.engine.RunDecision.AttemptError;
import dev.layover.core.internal.engine.RunDecision.Complete;
import dev.layover.core.internal.engine.RunDecision.Park;
import dev.layover.core.internal.engine.RunDecision.Reschedule;
import dev.layover.core.internal.engine.RunDecision.Retry;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.time.Backoff;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.function.IntSupplier;

/**
 * Decides what becomes of a run: done, reschedule to T, retry at T, or park as X. A pure function
 * of the run (attempts spent, the job type's {@link JobPolicy}), the outcome, the time and the
 * provider key's cooldown; the only switch over outcome kinds in the engine (what each kind does is
 * {@link Outcome.Kind}'s table). Randomness is the jitter of {@link Backoff}.
 */
final class RunDecider {

    /** The kind of a job whose worker stopped heartbeating (its error log and metrics). */
    static final String WORKER_LOST = "worker_lost";

    private RunDecider() {}

    /**
     * @param run the job as picked
     * @param outcome what its handler gave
     * @param now now
     * @param cooldown the provider key's cooldown end after this call, or null
     * @param reschedules the job's reschedules so far (read only when a rate limit named no wait)
     * @return the decision
     */
    static RunDecision decide(JobRun run, Outcome outcome, Instant now, Instant cooldown, IntSupplier reschedules) {
        JobPolicy policy = run.policy();
        Outcome.Kind kind = outcome.kind();
        return switch (kind) {
            case DONE -> new Complete(((Outcome.Done) outcome).result());
            case SNOOZE -> {
                Outcome.Snooze s = (Outcome.Snooze) outcome;
                yield new Reschedule(now.plus(s.delay()), kind.tag(), s.reason(), kind.parksAs());
            }
            case RATE_LIMITED -> {
                Outcome.RateLimited r = (Outcome.RateLimited) outcome;
                Duration wait = r.retryAfter();
                if (wait == null && cooldown == null) {
                    wait = Backoff.rateLimitDefault(reschedules.getAsInt());
                }
                wait = atLeast(wait, now, cooldown);
                if (wait.compareTo(policy.maxDeferral()) > 0) {
                    yield park(run, now, kind.parksAs(), kind.tag(), "RateLimited", "asked to wait " + wait
                            + ", longer than maxDeferral " + policy.maxDeferral() + ": " + r.reason());
                }
                yield new Reschedule(now.plus(wait).plus(Backoff.rescheduleJitter(wait)), kind.tag(), r.reason(),
                        kind.parksAs());
            }
            case QUOTA_EXHAUSTED -> quota(run, (Outcome.QuotaExhausted) outcome, now, cooldown);
            case OVERLOADED -> retry(run, now, kind.parksAs(), kind.tag(), "ProviderOverloaded", outcome.reason(),
                    atLeast(((Outcome.Overloaded) outcome).retryAfter(), now, cooldown));
            case TRANSIENT -> retry(run, now, kind.parksAs(), kind.tag(),
                    Errors.className(outcome.cause(), "ProviderTransientFailure"),
                    Errors.message(outcome.reason(), outcome.cause()), null);
            case RETRY -> retry(run, now, kind.parksAs(), kind.tag(), Errors.className(outcome.cause(), "JobError"),
                    Errors.message(outcome.reason(), outcome.cause()), ((Outcome.Retry) outcome).minDelay());
            case AUTH_REFUSED -> park(run, now, kind.parksAs(), kind.tag(), "ProviderAuthRefused", outcome.reason());
            case REJECTED -> park(run, now, kind.parksAs(), kind.tag(), "ProviderRejected", outcome.reason());
            case PARK -> park(run, now, kind.parksAs(), kind.tag(), "HandlerParked", outcome.reason());
        };
    }

    private static RunDecision quota(JobRun run, Outcome.QuotaExhausted q, Instant now, Instant cooldown) {
        Duration max = run.policy().maxDeferral();
        Outcome.Kind kind = q.kind();
        if (q.resetAt() == null || q.resetAt().isAfter(now.plus(max))) {
            String when = q.resetAt() == null ? "no known reset" : "reset at " + q.resetAt() + ", beyond maxDeferral " + max;
            return park(run, now, kind.parksAs(), kind.tag(), "QuotaExhausted", q.reason() + " (" + when + ")");
        }
        Instant reset = q.resetAt().isBefore(now) ? now : q.resetAt();
        if (cooldown != null && cooldown.isAfter(reset) && !cooldown.isAfter(now.plus(max))) {
            reset = cooldown;
        }
        Instant runAt = reset.plus(Backoff.rescheduleJitter(Duration.between(now, reset)));
        return new Reschedule(runAt, kind.tag(), q.reason() + " (resets at " + q.resetAt() + ")", kind.parksAs());
    }

    /**
     * The handler was interrupted because its worker stops: not the job's failure, it runs again at
     * once without spending an attempt.
     */
    static RunDecision workerStopped(Instant now) {
        return new Reschedule(now, "worker_stopped", "the worker stopped while the job ran (shutdownMaxWait "
                + "reached); it runs again without spending an attempt", FailureType.SNOOZE_EXHAUSTED);
    }

    /**
     * The worker holding the job stopped heartbeating. It runs again at once. The first loss spends
     * no attempt (a reschedule, reason {@code worker_lost}): the job may never have started (a
     * worker holds jobs picked ahead of its threads) and a killed host is not the job's failure. A
     * second loss in a row spends one, so a job that kills its worker parks after its attempts.
     *
     * @param lostBefore whether the run before this one also ended with its worker lost
     */
    static RunDecision workerLost(JobRun run, Instant now, Instant lastHeartbeat, boolean lostBefore) {
        String why = "the worker holding this job stopped sending heartbeats (last at " + lastHeartbeat
                + "): killed, hung, or cut off from the database";
        if (!lostBefore) {
            return new Reschedule(now, WORKER_LOST, why + "; it runs again without spending an attempt, as the first"
                    + " loss in a row", FailureType.JOB_ERROR);
        }
        return retry(run, now, FailureType.JOB_ERROR, WORKER_LOST, "WorkerLost",
                why + "; the second loss in a row spends an attempt", null);
    }

    /** The reschedule reason of a job waiting for a worker that can read its args. */
    static final String ARGS_NEWER_VERSION = "args_newer_version";

    private static final Duration NEWER_ARGS_FIRST_WAIT = Duration.ofSeconds(5);
    private static final Duration NEWER_ARGS_MAX_WAIT = Duration.ofMinutes(5);

    /**
     * A job whose stored args this worker cannot read. Written by another version of the job type
     * (its args shape differs from this worker's) and within the type's {@code newerArgsWait} of
     * its enqueue: it waits for a worker that can read it (a reschedule, reason
     * {@code args_newer_version}, 5 s doubling to 5 min, no attempt); otherwise it is parked
     * {@code bad_args}.
     *
     * @param myShape this worker's args shape
     * @param rowShape the shape the job was written with, or null when unknown (SQL, an old row)
     * @param enqueuedAt when the job was first enqueued, or null
     * @param reschedules the job's reschedules so far
     */
    static RunDecision unreadableArgs(JobRun run, String myShape, String rowShape, Instant enqueuedAt, int reschedules,
            String errorClass, String why, Instant now) {
        Duration wait = run.policy().newerArgsWait();
        boolean otherVersion = rowShape != null && !rowShape.equals(myShape);
        if (otherVersion && enqueuedAt != null && now.isBefore(enqueuedAt.plus(wait))) {
            Duration next = Backoff.exponential(NEWER_ARGS_FIRST_WAIT, NEWER_ARGS_MAX_WAIT, reschedules);
            return new Reschedule(now.plus(next), ARGS_NEWER_VERSION, "written by another version of the job type "
                    + "(args shape " + rowShape + ", this worker's " + myShape + "); waiting up to " + wait
                    + " for a worker that reads it: " + why, FailureType.BAD_ARGS);
        }
        String message = otherVersion
                ? why + " (written by another version of the job type, args shape " + rowShape + "; no worker read it within "
                        + wait + " of its enqueue)"
                : why;
        return park(run, now, FailureType.BAD_ARGS, FailureType.BAD_ARGS.code(), errorClass, message);
    }

    /** A park the engine decides before the handler runs (bad args, an open breaker, a passed deadline). */
    static RunDecision enginePark(JobRun run, FailureType type, String errorClass, String message, Instant now) {
        return park(run, now, type, type.code(), errorClass, message);
    }

    /** A reschedule that found the job at {@code maxReschedules}: it parks as the reschedule said. */
    static RunDecision capped(JobRun run, Reschedule r, Instant now) {
        return park(run, now, r.whenCapped(), r.reason(), capClass(r.whenCapped()),
                "rescheduled " + run.policy().maxReschedules() + " times (maxReschedules); last: " + r.detail());
    }

    private static RunDecision retry(JobRun run, Instant now, FailureType whenExhausted, String kind, String errorClass,
            String message, Duration floor) {
        JobPolicy policy = run.policy();
        int attempts = run.attemptsSpent() + 1;
        AttemptError error = new AttemptError(attempts, now, kind, errorClass, message);
        if (attempts >= policy.maxAttempts()) {
            return new Park(whenExhausted, message + " (attempt " + attempts + " of " + policy.maxAttempts() + ")",
                    attempts, error);
        }
        // a lost worker's job runs again at once: the wait for its missed heartbeats was its backoff
        Duration delay = kind.equals(WORKER_LOST) ? Duration.ZERO
                : Backoff.fullJitter(policy.backoffBase(), policy.backoffCap(), attempts);
        if (floor != null && delay.compareTo(floor) < 0) {
            delay = floor;
        }
        return new Retry(now.plus(delay), attempts, error);
    }

    /** A park that spends no attempt. */
    private static Park park(JobRun run, Instant now, FailureType type, String kind, String errorClass, String message) {
        return new Park(type, message, run.attemptsSpent(),
                new AttemptError(run.attemptsSpent() + 1, now, kind, errorClass, message));
    }

    /** {@code wait}, raised to what is left of a cooldown ending at {@code until}; null counts as zero. */
    private static Duration atLeast(Duration wait, Instant now, Instant until) {
        Duration w = wait == null ? Duration.ZERO : wait;
        if (until != null && until.isAfter(now.plus(w))) {
            w = Duration.between(now, until);
        }
        return wait == null && until == null ? null : w;
    }

    private static String capClass(FailureType t) {
        return switch (t) {
            case SNOOZE_EXHAUSTED -> "SnoozeLimit";
            case QUOTA_EXHAUSTED -> "QuotaExhausted";
            default -> "RateLimited";
        };
    }
}
