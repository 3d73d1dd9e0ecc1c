package dev.layover.core.internal.engine;

import com.github.kagkarlsson.scheduler.task.CompletionHandler;
import com.github.kagkarlsson.scheduler.task.Execution;
import com.github.kagkarlsson.scheduler.task.ExecutionContext;
import com.github.kagkarlsson.scheduler.task.TaskInstance;
import com.github.kagkarlsson.scheduler.task.helper.CustomTask;
import dev.layover.core.JobContext;
import dev.layover.core.internal.gate.Admission;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.internal.gate.ProviderRun;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.internal.jobs.RunTiming;
import dev.layover.core.internal.observe.Observability;
import dev.layover.core.internal.observe.SafeMetrics;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.ProviderCalls;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.tokens.EstimateGuard;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The db-scheduler task of one job type: one run of a picked job, step by step. Its completion
 * handler hands the outcome to the {@link OutcomeWriter}, so Layover decides every outcome.
 *
 * <ol>
 *   <li>the args are read (unreadable: parked {@code bad_args});
 *   <li>admission and control: a cancel, a passed deadline or a pause stop the job before it runs;
 *   <li>the batch step ({@link BatchStep}), for a batchable job type whose key has batching: its
 *       stored line becomes its outcome, or it waits for its batch, or it is gathered;
 *   <li>the provider state: during a cooldown, while a half-open breaker's trial is held elsewhere,
 *       or without a bucket permit the job is rescheduled without calling (no attempt spent); with
 *       the breaker open it is parked {@code breaker_open};
 *   <li>the handler runs, under the job type's timeout;
 *   <li>its outcome is written.
 * </ol>
 */
final class JobTask<A> extends CustomTask<byte[]> {

    private static final Logger LOG = LoggerFactory.getLogger(JobTask.class);

    /** How far ahead a bucket permit must be for the key's backlog to be reserved together. */
    private static final Duration BACKLOG_AHEAD = Duration.ofSeconds(1);

    /**
     * What every job task shares.
     *
     * @param writer writes outcomes
     * @param control admission and control around each run
     * @param gate the provider state
     * @param backlogTypes the job types whose backlog of a bucket's key is reserved together
     * @param observability metrics and history
     * @param clock the clock
     * @param handlers calls handlers
     * @param lifeline gives back picked jobs that wait behind busy threads
     * @param pickLimit rows per pick, told when each run starts and ends
     * @param batches the batch step of batchable job types
     */
    record Parts(OutcomeWriter writer, AdmissionControl control, ProviderGate gate,
            List<ProviderGate.BacklogType> backlogTypes, Observability observability, Clock clock,
            HandlerRunner handlers, Lifeline lifeline, PickLimit pickLimit, BatchStep batches, PickAhead pickAhead) {}

    /**
     * What a run leaves to write, and whether it ended done (a done job's row is deleted by the
     * batch completer, which tells the lifeline; any other write moves the row on at once).
     */
    /**
     * @param waited whether the run only learnt it must wait for its provider (no handler ran): such
     *     runs tell the adaptive prefetch to hold fewer jobs ({@link PickLimit#ended}), so that a
     *     limited key's backlog is placed by one statement instead of being picked job by job
     */
    private record Next(CompletionHandler<byte[]> write, boolean done, boolean waited) {
        Next(CompletionHandler<byte[]> write, boolean done) {
            this(write, done, false);
        }

        static Next of(CompletionHandler<byte[]> write) {
            return new Next(write, false);
        }

        static Next waiting(CompletionHandler<byte[]> write) {
            return new Next(write, false, true);
        }
    }

    private final Registry.Entry<A> entry;
    private final ToLongFunction<Object> tokenCost;
    private final Parts p;

    JobTask(Registry.Entry<A> entry, ToLongFunction<Object> tokenCost, Parts parts) {
        super(entry.type().name(), byte[].class, null, t -> t,
                (complete, ops) -> parts.writer().apply(run(entry, complete.getExecution()),
                        new Outcome.Retry("the handler failed outside Layover's guard",
                                complete.getCause().orElse(null), null)),
                (complete, ops) -> parts.writer().workerLost(run(entry, complete.getExecution()),
                        complete.getExecution().lastHeartbeat));
        this.entry = entry;
        this.tokenCost = tokenCost;
        this.p = parts;
    }

    @Override
    public CompletionHandler<byte[]> execute(TaskInstance<byte[]> instance, ExecutionContext ec) {
        Execution ex = ec.getExecution();
        JobRun picked = run(entry, ex);
        if (!p.lifeline().begin(picked)) {
            return (complete, ops) -> { }; // given back while it waited for a thread: another worker has it
        }
        Next[] ran = {null};
        Object running = p.pickLimit().started();
        try {
            ran[0] = runPicked(instance, ec, ex);
        } finally {
            p.lifeline().end();
            p.pickLimit().ended(running, ran[0] != null && ran[0].waited());
        }
        Next next = ran[0];
        if (next.done()) {
            return next.write();
        }
        return (complete, ops) -> {
            try {
                next.write().complete(complete, ops);
            } finally {
                p.lifeline().forget(picked.taskName(), picked.id(), picked.version());
            }
        };
    }

    private Next runPicked(TaskInstance<byte[]> instance, ExecutionContext ec, Execution ex) {
        JobRun run = startRun(ex);
        OutcomeWriter writer = p.writer();
        A args;
        try {
            args = entry.codec().read(instance.getData());
        } catch (Exception | StackOverflowError e) {
            // StackOverflowError: JSON nested deeper than the stack, read by a mapper without a depth limit
            String why = "stored args do not read as " + entry.type().argsType().getName() + ": "
                    + (e instanceof StackOverflowError ? "nested too deeply (StackOverflowError)" : Errors.safeMessage(e));
            return Next.of((complete, ops) -> writer.unreadableArgs(run, entry.codec().shape(), e.getClass().getName(), why));
        }
        String key = entry.type().providerKeyOf(args);
        AdmissionControl.Check check = p.control().check(run, entry.type(), args, key);
        if (check.stop() != null) {
            return Next.of(check.stop());
        }
        BatchStep.Step batched = p.batches().route(run, entry, args, key);
        if (batched != null) {
            return new Next(batched.write(), batched.done());
        }
        ProviderRun pr = p.gate().newRun(key, run.taskName(), run.id(), run.version(), estimate(args),
                run.attemptsSpent() + 1).fairnessKey(fairnessKey(args)).joinsLineWithin(run.policy().maxDeferral())
                .pickedPermit(p.pickAhead().heldPermit(run));
        Admission admission = p.control().admit(check, pr); // gate.admit(pr) unless the job has limits of its own
        if (admission instanceof Admission.Wait w && AdmissionControl.isHold(w)) {
            CompletionHandler<byte[]> hold = (complete, ops) -> writer.hold(run, key, w.reason(), w.detail(), w.runAt());
            return w.runAt().isAfter(p.clock().instant()) ? Next.waiting(hold) : Next.of(hold); // a turn ahead: a waiting run
        }
        if (admission instanceof Admission.Wait w) {
            return Next.waiting((complete, ops) -> {
                writer.waitForProvider(run, key, w);
                Map<String, Integer> moved = new HashMap<>();
                if (hasBacklog(w)) {
                    moved.putAll(p.gate().reserveBacklog(key, p.backlogTypes())); // at most once a second per key
                }
                if (w.aheadOfLine()) { // the permit a place in the key's line stood for: the line is realigned
                    p.gate().realignLine(key, p.backlogTypes()).forEach((type, n) -> moved.merge(type, n, Integer::sum));
                }
                moved.forEach((type, n) -> {
                    for (int i = 0; i < n; i++) {
                        p.observability().metrics().jobRescheduled(type, w.reason()); // bucket, or pace
                        p.observability().timeSeries().rescheduled(type, key, w.reason());
                    }
                });
            });
        }
        if (admission instanceof Admission.Refuse r) {
            return Next.of((complete, ops) -> writer.park(run, FailureType.BREAKER_OPEN, "BreakerOpen", r.detail()));
        }
        if (admission instanceof Admission.TooLarge t) {
            return Next.of((complete, ops) -> writer.park(run, FailureType.REJECTED, "TokenEstimateTooLarge", t.detail()));
        }
        JobContext ctx = p.control().context(new RunContext(run, ex.executionTime, key, ec, pr), check);
        Outcome outcome = p.control().runTimed(check, ctx::isStopping, () -> p.handlers().run(entry, args, ctx));
        handlerReturned(run, outcome);
        if (outcome == HandlerRunner.STOPPED) {
            return Next.of((complete, ops) -> writer.workerStopped(run, pr));
        }
        CompletionHandler<byte[]> cancelled = p.control().afterRun(check, outcome, pr);
        if (cancelled != null) {
            return Next.of(cancelled);
        }
        return new Next((complete, ops) -> writer.apply(run, outcome, pr), outcome.kind() == Outcome.Kind.DONE);
    }

    /**
     * The job's token estimate: its type's {@code tokenEstimate}, else the builder's
     * {@code tokenCost} (one number, counted in every token dimension), else none (null). An
     * estimate that fails (throws, null, negative) reserves nothing: the job runs, and its reported
     * usage is charged after the call.
     */
    private TokenEstimate estimate(A args) {
        Function<? super A, TokenEstimate> f = entry.type().tokenEstimate();
        if (f != null) {
            try {
                TokenEstimate e = f.apply(args);
                if (e != null) {
                    return e;
                }
                badEstimate("returned null");
            } catch (RuntimeException | StackOverflowError e) {
                badEstimate("failed: " + Errors.safeMessage(e));
            }
            return TokenEstimate.NONE;
        }
        if (tokenCost == null) {
            return null;
        }
        EstimateGuard.Checked c = EstimateGuard.apply(tokenCost, args, 0);
        if (!c.ok()) {
            badEstimate(c.problem());
        }
        return TokenEstimate.total(c.tokens());
    }

    private void badEstimate(String problem) {
        LOG.warn("Token estimate of job type {}: {}; the job reserves no tokens, its reported usage is charged after "
                + "the call", entry.type().name(), problem);
    }

    /**
     * A bucket permit further ahead than {@link #BACKLOG_AHEAD}, or a place in a discovered pace's
     * waiting line: the key has more due jobs than its bucket lets through now, and they are given
     * their permits (or places) together ({@link ProviderGate#reserveBacklog}).
     */
    /** The job's fairness key from its args; null when none, or when the function throws (as at enqueue, where it was checked). */
    private String fairnessKey(A args) {
        try {
            return entry.type().fairnessKeyOf(args);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private boolean hasBacklog(Admission.Wait w) {
        return ("bucket".equals(w.reason()) && w.permitAt() != null
                && w.permitAt().isAfter(p.clock().instant().plus(BACKLOG_AHEAD)))
                || "pace".equals(w.reason()); // a discovered pace's line: the backlog is placed in it together
    }

    /** A run starting now: its start is kept for its history row, its queue wait is measured. */
    private JobRun startRun(Execution ex) {
        Instant now = p.clock().instant();
        JobRun timed = run(entry, ex).withTiming(RunTiming.start(now));
        p.observability().metrics().jobStarted(timed.taskName(), Duration.between(ex.executionTime, now));
        return timed;
    }

    /** The handler of a run returned: its duration, for the metrics and the history row. */
    private void handlerReturned(JobRun run, Outcome outcome) {
        Duration took = run.timing().handlerReturned();
        SafeMetrics m = p.observability().metrics();
        if (m.enabled()) {
            m.jobRan(run.taskName(), outcome == HandlerRunner.STOPPED ? "stopped" : SafeMetrics.outcomeTag(outcome), took);
        }
    }

    private static JobRun run(Registry.Entry<?> entry, Execution ex) {
        return new JobRun(entry.type().name(), ex.taskInstance.getId(), ex.version, ex.consecutiveFailures,
                entry.type().policy());
    }

    /** The context Layover hands to a handler (wrapped by admission control's). */
    private record RunContext(JobRun run, Instant runAt, String providerKey, ExecutionContext ec, ProviderRun providerRun)
            implements JobContext {
        @Override
        public ProviderCalls providerCalls() {
            return providerRun;
        }

        @Override
        public Optional<TokenUsage> reportUsage(Object response) {
            Optional<TokenUsage> u = response instanceof TokenUsage t ? Optional.of(t) : TokenUsage.of(response);
            u.ifPresent(providerRun::reportUsage);
            return u;
        }

        @Override
        public void refineEstimate(TokenEstimate estimate) {
            providerRun.refine(estimate);
        }

        @Override
        public void reportLimits(RateLimitHeaders headers) {
            providerRun.reportLimits(headers);
        }

        @Override
        public String jobId() {
            return run.id();
        }

        @Override
        public String jobType() {
            return run.taskName();
        }

        @Override
        public int attempt() {
            return run.attemptsSpent() + 1;
        }

        @Override
        public boolean isStopping() {
            return ec.getSchedulerState().isShuttingDown();
        }
    }
}
