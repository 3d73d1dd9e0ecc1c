package dev.layover.core.internal.engine;

import dev.layover.core.internal.db.StoredText;
import dev.layover.core.internal.engine.RunDecision.AttemptError;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.JobStore;
import dev.layover.core.internal.observe.Observability;
import dev.layover.core.internal.observe.RunScope;
import dev.layover.core.outcome.FailureType;
import java.time.Clock;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves jobs to their dead letters ({@link JobStore#park}): a park decided by the engine, and an
 * operator's cancel, which is a park of failure type {@code cancelled}.
 */
final class JobMover {

    private static final Logger LOG = LoggerFactory.getLogger(JobMover.class);

    private final JobStore store;
    private final Clock clock;
    private final Observability observability;
    private final WriteRetry retry;

    JobMover(JobStore store, Clock clock, Observability observability, WriteRetry retry) {
        this.store = store;
        this.clock = clock;
        this.observability = observability;
        this.retry = retry;
    }

    /**
     * Parks the job the engine runs.
     *
     * @param trail the run's fallback trail (jsonb), moved with the job
     * @param trace the stack trace the last error keeps ({@link StackTraces}), or null
     */
    void park(JobRun run, RunDecision.Park p, String trail, String trace) {
        String msg = StoredText.cut(p.message());
        JobStore.Park row = new JobStore.Park(true, "parked", p.type().code(), p.error().errorClass(), msg,
                ErrorLog.entry(p.error(), trace), p.attempts(), trail, p.type() != FailureType.BREAKER_OPEN,
                observability.history(), observability.historyArgs());
        JobStore.Parked parked = retry.write(() -> store.park(run, run.timing(), row, why -> notParked(run, why)));
        if (parked == null) {
            LOG.debug("Job {} changed while it ran; it was not parked", run.label());
        } else {
            LOG.info("Parked job {} as {} (dead letter {}, provider key {}): {}", run.label(), p.type().code(),
                    parked.deadLetter(), parked.providerKey(), msg);
            observability.metrics().jobParked(run.taskName(), p.type().code());
            observability.timeSeries().parked(run.taskName(), parked.providerKey(), p.type().code());
            RunScope scope = RunScope.current();
            if (scope != null) {
                scope.parked(p.type().code(), parked.deadLetter(), clock.instant(), msg);
            }
        }
    }

    /**
     * Cancels a job: its row deleted, a dead letter {@code cancelled} recording who and why, and its
     * history row (outcome {@code cancelled}), in one statement.
     *
     * @param running whether the caller runs it (a picked row may then be cancelled)
     * @return the dead letter's id, or null when the row changed meanwhile (nothing written)
     */
    Long cancel(JobRun run, boolean running, String by, String reason) {
        Instant now = clock.instant();
        String msg = StoredText.cut("cancelled by " + by + (reason == null || reason.isBlank() ? "" : ": " + reason));
        String error = ErrorLog.entry(new AttemptError(run.attemptsSpent() + 1, now, "cancelled", "Cancelled", msg),
                "by", by);
        JobStore.Park row = new JobStore.Park(running, "cancelled", FailureType.CANCELLED.code(), "Cancelled", msg,
                error, null, null, false, observability.history(), observability.historyArgs());
        JobStore.Parked parked = retry.write(() -> store.park(run, run.timing(), row, why -> notParked(run, why)));
        if (parked == null) {
            return null;
        }
        LOG.info("Cancelled job {} (dead letter {}): {}", run.label(), parked.deadLetter(), msg);
        observability.metrics().jobCancelled(run.taskName());
        return parked.deadLetter();
    }

    private static void notParked(JobRun run, JobStore.NotParked why) {
        if (why == JobStore.NotParked.NO_DEAD_LETTER) {
            LOG.error("Job {} was not moved to a dead letter: none could be written; left in place", run.label());
        }
    }
}
