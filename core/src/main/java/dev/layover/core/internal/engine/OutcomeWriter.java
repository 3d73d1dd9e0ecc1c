package dev.layover.core.internal.engine;

import dev.layover.core.batch.BatchSettings;
import dev.layover.core.internal.batch.BatchStore;
import dev.layover.core.internal.db.StoredText;
import dev.layover.core.internal.gate.Admission;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.internal.gate.ProviderRun;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.JobStore;
import dev.layover.core.internal.jobs.RunTiming;
import dev.layover.core.internal.jobs.RunTokens;
import dev.layover.core.internal.observe.Observability;
import dev.layover.core.internal.observe.RunScope;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where an outcome becomes a database write: it asks {@link RunDecider} what becomes
 * of the run and writes that through the {@link JobStore}. Every write is version-checked: if the
 * row changed since it was picked (revived as dead, cancelled, parked by someone else), nothing is
 * written and the other writer's view stands.
 *
 * <ul>
 *   <li>done: the row is deleted by the batch completer;
 *   <li>reschedule (snooze, rate limit, quota wait, provider state "not now"): run time moved,
 *       {@code reschedules + 1}, {@code consecutive_failures} untouched; parks once the cap is reached;
 *   <li>retry (overloaded, transient, the job's own error, a lost worker): {@code
 *       consecutive_failures + 1}, the error appended, full-jitter backoff; parks once attempts run out;
 *   <li>park: the dead letter written and the row deleted in one transaction ({@link JobMover}).
 * </ul>
 *
 * <p>For a job with a provider key it first tells the {@link ProviderGate} what the call taught
 * (cooldown, breaker success or failure); the decision waits at least as long as the key's
 * cooldown. The run's fallback trail ({@code provider_trail}) is appended by the same write.
 */
final class OutcomeWriter {

    private static final Logger LOG = LoggerFactory.getLogger(OutcomeWriter.class);

    /** The delay of a hold for a concurrency slot: full jitter over base * 2^holds, up to the cap. */
    static final Duration HOLD_BASE = Duration.ofMillis(100);
    static final Duration HOLD_CAP = Duration.ofSeconds(2);

    private final JobStore store;
    private final Clock clock;
    private final BatchCompleter completer;
    private final ProviderGate gate;
    private final WriteRetry retry;
    private final JobMover mover;
    private final Observability observability;
    private final StackTraces traces;
    private final BatchStore batches;
    private final String worker;

    /** A run's handler returned; its outcome's write is to come ({@link BatchCompleter#runEnding}). */
    void runEnding() {
        completer.runEnding();
    }

    /** The outcome of a run whose handler returned is written or handed in. */
    void runEnded() {
        completer.runEnded();
    }

    OutcomeWriter(JobStore store, Clock clock, BatchCompleter completer, ProviderGate gate, WriteRetry retry,
            JobMover mover, Observability observability, StackTraces traces, BatchStore batches, String worker) {
        this.worker = worker;
        this.store = store;
        this.clock = clock;
        this.completer = completer;
        this.gate = gate;
        this.retry = retry;
        this.mover = mover;
        this.observability = observability;
        this.traces = traces;
        this.batches = batches;
    }

    /** Applies an outcome that did not come from a handler run (no provider call was recorded). */
    void apply(JobRun run, Outcome outcome) {
        apply(run, outcome, null);
    }

    /**
     * Applies a handler's outcome to its job row, after telling the provider state what the call
     * taught when the job has a provider key.
     */
    void apply(JobRun picked, Outcome outcome, ProviderRun pr) {
        apply(picked, outcome, pr, null);
    }

    /**
     * {@link #apply(JobRun, Outcome, ProviderRun)} for a run that stopped at step {@code step}
     * ({@code JobContext#step}, or null): a retry's or park's error and a reschedule's detail name it.
     */
    void apply(JobRun picked, Outcome outcome, ProviderRun pr, String step) {
        JobRun run = pr == null ? picked : settled(picked, pr); // reported usage replaces the reservation
        guard(run, () -> {
            String key = pr == null ? null : pr.providerKey();
            Instant cooldown;
            if (pr != null && pr.taughtByStep(outcome)) {
                // a step's own key learnt it (JobContext#step with a provider key): not the job's key's lesson
                cooldown = pr.stepCooldown();
                if (key != null && pr.trialToken() != null) {
                    gate.giveBackTrial(key, pr.trialToken());
                }
            } else {
                cooldown = key == null ? null : gate.afterCall(key, pr.trialToken(), outcome);
            }
            String trail = pr == null ? ErrorLog.NO_TRAIL : ErrorLog.cleanTrail(pr.trailJson());
            Instant now = clock.instant();
            RunDecision d = atStep(RunDecider.decide(run, outcome, now, cooldown,
                    () -> retry.write(() -> store.reschedules(run))), step);
            // rendered only for a decision that records an error: a done or a reschedule costs nothing
            String trace = d instanceof RunDecision.Retry || d instanceof RunDecision.Park ? traces.of(outcome.cause()) : null;
            RunScope scope = RunScope.current();
            if (scope != null && pr != null) {
                scope.trail(pr.trail());
            }
            if (outcome.kind() == Outcome.Kind.RATE_LIMITED) {
                observability.timeSeries().rateLimited(run.taskName(), key);
                if (scope != null) {
                    scope.rateLimited(key, now, d instanceof RunDecision.Reschedule r ? r.runAt() : now);
                }
            }
            if (pr != null) { // the calls of a fallback chain, per endpoint
                pr.trail().stream().filter(s -> !s.skipped()).forEach(s ->
                        observability.timeSeries().endpointCall(run.taskName(), key, s.providerKey(), s.result()));
            }
            write(run, key, d, trail, now, trace);
        });
    }

    /** A decision whose texts name the step the run stopped at (unless they name it already). */
    static RunDecision atStep(RunDecision d, String step) {
        if (step == null) {
            return d;
        }
        String at = "step '" + step + "'";
        if (d instanceof RunDecision.Reschedule r && (r.detail() == null || !r.detail().contains(at))) {
            return new RunDecision.Reschedule(r.runAt(), r.reason(), at + ": " + r.detail(), r.whenCapped());
        }
        if (d instanceof RunDecision.Retry r && r.error() != null && !String.valueOf(r.error().message()).contains(at)) {
            return new RunDecision.Retry(r.runAt(), r.attempts(), atStep(r.error(), at));
        }
        if (d instanceof RunDecision.Park p && (p.message() == null || !p.message().contains(at))) {
            return new RunDecision.Park(p.type(), at + ": " + p.message(), p.attempts(),
                    p.error() == null ? null : atStep(p.error(), at));
        }
        return d;
    }

    private static RunDecision.AttemptError atStep(RunDecision.AttemptError e, String at) {
        return new RunDecision.AttemptError(e.attempt(), e.at(), e.kind(), e.errorClass(), at + ": " + e.message());
    }

    /**
     * Settles a run's token reservations by its reported usage ({@link ProviderRun#settle}) and
     * counts the usage in the time series (per job type, key and the run's fairness key) and on its span.
     */
    private JobRun settled(JobRun picked, ProviderRun pr) {
        RunTokens t = pr.settle();
        if (t.input() != null || t.output() != null) {
            RunScope scope = RunScope.current();
            String fairness = scope == null ? null : scope.fairnessKey();
            observability.timeSeries().tokens(picked.taskName(), pr.providerKey(), fairness, t.input(), t.output(),
                    t.cached());
            if (scope != null) {
                scope.tokens(t.input(), t.output(), t.cached());
            }
        }
        return picked.withTokens(t);
    }

    /**
     * A stored batch line's outcome ({@link BatchStep}): decided and written exactly as a handler's
     * outcome would be, except that the key's provider state learns nothing from it (a batch's
     * limits are not the key's). A reschedule or retry clears the job's batch item
     * ({@code run.batchItem()}), so its next run routes anew; done and park remove the row.
     */
    void applyBatchLine(JobRun run, String key, Outcome outcome) {
        guard(run, () -> {
            Instant now = clock.instant();
            RunDecision d = RunDecider.decide(run, outcome, now, null, () -> retry.write(() -> store.reschedules(run)));
            String trace = d instanceof RunDecision.Retry || d instanceof RunDecision.Park ? traces.of(outcome.cause()) : null;
            write(run, key, d, ErrorLog.NO_TRAIL, now, trace);
        });
    }

    /**
     * A job asked for a durable sleep ({@code JobContext#sleep}, its step stored), or waits for a
     * signal ({@code JobContext#awaitSignal}: {@code signal} names its step, else null): its row waits
     * until {@code wakeAt} ({@link JobStore#sleep}; for a signal, sooner when the signal's step says
     * so), no attempt spent, not counted as a reschedule. Its
     * run's reported usage is settled and a breaker trial it held is given back (it did not call).
     */
    void sleep(JobRun picked, ProviderRun pr, Instant wakeAt, String detail, String signal) {
        JobRun run = pr == null ? picked : settled(picked, pr);
        guard(run, () -> {
            if (pr != null && pr.providerKey() != null && pr.trialToken() != null) {
                gate.giveBackTrial(pr.providerKey(), pr.trialToken());
            }
            Instant now = clock.instant();
            String trail = pr == null ? ErrorLog.NO_TRAIL : ErrorLog.cleanTrail(pr.trailJson());
            if (retry.write(() -> store.sleep(run, wakeAt, now, StoredText.cut(detail), trail, signal)) == 0) {
                LOG.debug("Job {} changed while it ran; its sleep was not written", run.label());
            } else {
                String reason = signal == null ? "sleep" : "signal";
                observability.metrics().jobRescheduled(run.taskName(), reason);
                observability.timeSeries().rescheduled(run.taskName(), pr == null ? null : pr.providerKey(), reason);
                RunScope scope = RunScope.current();
                if (scope != null) {
                    scope.rescheduled(reason, now, wakeAt);
                }
                decided(signal == null ? "sleeping" : "awaiting_signal");
            }
        });
    }

    /**
     * A job in a live batch waits for its line ({@link JobStore#waitForBatch}): no attempt spent,
     * no reschedule counted; the batch loop makes it due when its line is stored.
     */
    void waitForBatch(JobRun run, Instant until, String detail) {
        guard(run, () -> {
            if (retry.write(() -> store.waitForBatch(run, until, detail)) == 0) {
                LOG.debug("Job {} changed while it was picked; its batch wait was not written", run.label());
            } else {
                decided("batched");
            }
        });
    }

    /**
     * Gathers a picked job, and the due backlog of its key it takes along, into the key's open
     * batch ({@link BatchStore#gather}, {@code layover.batch_gather}): each job's row waits
     * for its line, no attempt spent, no reschedule counted.
     */
    void gather(JobRun run, String key, BatchSettings s, BatchStore.Line first, BatchStore.Backlog backlog) {
        guard(run, () -> {
            List<String> ids = retry.write(() -> batches.gather(run.taskName(), key, s, first, backlog));
            if (ids.isEmpty() || !ids.get(0).equals(run.id())) {
                LOG.debug("Job {} changed while it was picked; it was not gathered", run.label());
            }
            for (int i = 0; i < ids.size(); i++) {
                observability.timeSeries().rescheduled(run.taskName(), key, "batched");
            }
            decided("batched");
            observability.metrics().batchLines(key, "gathered", ids.size());
        });
    }

    /** Parks a job for a reason the engine found (bad args, an open breaker, a passed deadline), no attempt spent. */
    void park(JobRun run, FailureType type, String errorClass, String message) {
        guard(run, () -> {
            Instant now = clock.instant();
            write(run, null, RunDecider.enginePark(run, type, errorClass, message, now), ErrorLog.NO_TRAIL, now, null);
        });
    }

    /**
     * The job's stored args do not read as its args type: it waits for a worker of the version
     * that wrote them, or is parked {@code bad_args} ({@link RunDecider#unreadableArgs}).
     */
    void unreadableArgs(JobRun run, String myShape, String errorClass, String why) {
        guard(run, () -> {
            JobStore.ArgsOrigin o = retry.write(() -> store.argsOrigin(run));
            Instant now = o == null ? clock.instant() : o.now();
            RunDecision d = o == null
                    ? RunDecider.enginePark(run, FailureType.BAD_ARGS, errorClass, why, now)
                    : RunDecider.unreadableArgs(run, myShape, o.argsShape(), o.enqueuedAt(), o.reschedules(), errorClass,
                            why, now);
            write(run, null, d, ErrorLog.NO_TRAIL, now, null);
        });
    }

    /**
     * A job its pick admitted whose key began to cool down after the pick, as this worker learnt
     * before calling: given back to its key's queue as it was ({@link JobStore#giveBack}: no
     * attempt, no reschedule, its place kept), to be admitted again when the key admits.
     *
     * @param key the job's provider key
     */
    void giveBack(JobRun run, String key, Admission.Wait w) {
        guard(run, () -> {
            int n = retry.write(() -> store.giveBack(run.taskName(), run.id(), run.version(), worker));
            if (n > 0) {
                LOG.debug("Job {} given back to the queue of {}: {}", run.label(), key, w.detail());
                decided("given_back");
            }
        });
    }

    /**
     * A handler interrupted because its worker is stopping ({@code Layover.stop()} ran out of
     * {@code shutdownMaxWait}): the job did not fail, so it runs again at once, elsewhere or after
     * a restart, without spending an attempt (a reschedule, reason {@code worker_stopped}). A
     * breaker trial it held is given back.
     */
    void workerStopped(JobRun run, ProviderRun pr) {
        guard(run, () -> {
            String trail = ErrorLog.NO_TRAIL;
            if (pr != null) {
                settled(run, pr);
            }
            if (pr != null && pr.providerKey() != null) {
                gate.afterCall(pr.providerKey(), pr.trialToken(), Outcome.snooze(Duration.ZERO));
                trail = ErrorLog.cleanTrail(pr.trailJson());
            }
            Instant now = clock.instant();
            write(run, pr == null ? null : pr.providerKey(), RunDecider.workerStopped(now), trail, now, null);
        });
    }

    /** A job whose worker stopped heartbeating: run again at once, an attempt spent on the second loss in a row. */
    void workerLost(JobRun run, Instant lastHeartbeat) {
        guard(run, () -> {
            Boolean lostBefore = retry.write(() -> store.lostBefore(run.taskName(), run.id(), run.version()));
            if (lostBefore == null) {
                LOG.debug("Job {} moved on before its lost worker's run was written", run.label());
                return;
            }
            Instant now = clock.instant();
            write(run, null, RunDecider.workerLost(run, now, lastHeartbeat, lostBefore), ErrorLog.NO_TRAIL, now, null);
        });
    }

    /**
     * The job cannot go on now for a reason of its own run (its batch state unreadable): held a
     * little ({@link JobStore#hold}), without an attempt and without counting as a reschedule.
     *
     * @param key the job's provider key, or null
     * @param from when the hold's delay starts, or null: now
     */
    void hold(JobRun run, String key, String reason, String detail, Instant from) {
        guard(run, () -> {
            Instant now = clock.instant();
            Instant base = from != null && from.isAfter(now) ? from : now;
            int updated = retry.write(() -> store.hold(run, base, HOLD_CAP, HOLD_BASE, reason, StoredText.cut(detail)));
            if (updated > 0) {
                observability.metrics().jobRescheduled(run.taskName(), reason);
                observability.timeSeries().rescheduled(run.taskName(), key, reason);
                decided("held");
            } else {
                LOG.debug("Job {} changed while it was picked; its hold was not written", run.label());
            }
        });
    }

    /**
     * A job picked while a pause covers it: held without running until the pause ends
     * ({@link JobStore#holdPaused}); when the pause ended meanwhile it runs again at once.
     *
     * @param keys the job's provider key and limit keys (what a key pause may name)
     * @param limitKeys its limit keys, stored when the row has none yet (a replayed job)
     */
    void holdPaused(JobRun run, List<String> keys, List<String> limitKeys, String detail) {
        guard(run, () -> {
            Instant now = clock.instant();
            Boolean held = retry.write(() -> store.holdPaused(run, keys, limitKeys, now, StoredText.cut(detail)));
            if (held == null) {
                LOG.debug("Job {} changed while it was picked; its pause hold was not written", run.label());
            } else if (held) {
                observability.metrics().jobRescheduled(run.taskName(), "paused");
                observability.timeSeries().rescheduled(run.taskName(), null, "paused");
                decided("paused");
            }
        });
    }

    /**
     * A run whose job was asked to stop while it ran and did not finish (any outcome but done):
     * the provider state learns what the call taught, then the job is cancelled instead of being
     * rescheduled or retried.
     */
    void cancelledWhileRunning(JobRun picked, Outcome outcome, ProviderRun pr, String by, String reason) {
        JobRun run = pr == null ? picked : settled(picked, pr);
        guard(run, () -> {
            if (pr != null && pr.providerKey() != null) {
                gate.afterCall(pr.providerKey(), pr.trialToken(), outcome);
            }
            if (mover.cancel(run, true, by, reason) == null) {
                LOG.debug("Job {} changed while it ran; it was not cancelled", run.label());
            } else {
                decided("cancelled");
            }
        });
    }

    /** Cancels a waiting job an operator asked to stop ({@link JobMover#cancel}). */
    Long cancel(JobRun run, boolean running, String by, String reason) {
        return mover.cancel(run, running, by, reason);
    }

    /**
     * Writes a decision; {@code key}: the job's provider key when known (for the time series; a
     * park reads it from the row), {@code trace}: the stack trace its error entry keeps, or null.
     */
    private void write(JobRun run, String key, RunDecision d, String trail, Instant now, String trace) {
        RunScope scope = RunScope.current();
        if (d instanceof RunDecision.Complete c) {
            observability.timeSeries().completed(run.taskName(), key);
            completed(run, trail, c.result());
            decided("done");
        } else if (d instanceof RunDecision.Reschedule r) {
            int updated = retry.write(() -> store.reschedule(run, now, r.runAt(), r.reason(), StoredText.cut(r.detail()),
                    trail));
            if (updated > 0) {
                observability.metrics().jobRescheduled(run.taskName(), r.reason());
                observability.timeSeries().rescheduled(run.taskName(), key, r.reason());
                if (scope != null) {
                    scope.rescheduled(r.reason(), now, r.runAt());
                }
            } else {
                // either the cap is reached or the row moved on; the version-checked park tells which
                mover.park(run, (RunDecision.Park) RunDecider.capped(run, r, now), trail, null);
            }
        } else if (d instanceof RunDecision.Retry r) {
            int updated = retry.write(() -> store.retry(run, now, r.runAt(), r.attempts(), ErrorLog.entry(r.error(), trace),
                    trail));
            if (updated == 0) {
                LOG.debug("Job {} changed while it ran; its retry was not written", run.label());
            } else {
                observability.metrics().jobRetried(run.taskName(), r.error().kind());
                observability.timeSeries().retried(run.taskName(), key, r.error().kind());
                if (scope != null) {
                    scope.retried(r.error().kind(), r.attempts(), now, r.runAt(), r.error().message());
                }
            }
        } else if (d instanceof RunDecision.Park p) {
            mover.park(run, p, trail, trace);
        }
    }

    /** What became of the run, on its span (when this thread runs one). */
    private static void decided(String decision) {
        RunScope scope = RunScope.current();
        if (scope != null) {
            scope.decided(decision);
        }
    }

    /**
     * A job whose handler returned done: counted, and handed to the batch completer, which
     * deletes it and writes its history row (with this run's start, duration and fallback trail).
     */
    private void completed(JobRun run, String trail, Object result) {
        observability.metrics().jobCompleted(run.taskName());
        RunTiming t = run.timing() == null ? RunTiming.NONE : run.timing();
        completer.complete(new JobStore.Done(run.taskName(), run.id(), run.version(), t.startedAtText(),
                t.durationMs(), trail == null || trail.equals(ErrorLog.NO_TRAIL) ? null : trail,
                Results.json(run, result), run.tokens())); // a group member's result is kept with history off too
    }

    /**
     * Runs an outcome's writes; a write abandoned because the worker stops during a database
     * outage leaves the row picked (another worker revives it once its heartbeat is old) and is
     * not logged per job (the engine says it once).
     */
    private static void guard(JobRun run, Runnable writes) {
        try {
            writes.run();
        } catch (WriteRetry.Stopping s) {
            LOG.debug("Job {}: outcome not written, the worker stopped while the database was away", run.label());
        }
    }
}
