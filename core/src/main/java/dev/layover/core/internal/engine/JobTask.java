package dev.layover.core.internal.engine;

import com.github.kagkarlsson.scheduler.task.CompletionHandler;
import com.github.kagkarlsson.scheduler.task.Execution;
import com.github.kagkarlsson.scheduler.task.ExecutionContext;
import com.github.kagkarlsson.scheduler.task.TaskInstance;
import com.github.kagkarlsson.scheduler.task.helper.CustomTask;
import dev.layover.core.GroupResult;
import dev.layover.core.JobContext;
import dev.layover.core.StepCall;
import dev.layover.core.StepOptions;
import dev.layover.core.internal.gate.Admission;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.internal.gate.ProviderRun;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.GroupStore;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.internal.jobs.RunTiming;
import dev.layover.core.internal.observe.Observability;
import dev.layover.core.internal.observe.RunScope;
import dev.layover.core.internal.observe.TraceContexts;
import dev.layover.core.tracing.LayoverTracing;
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

    /**
     * What every job task shares.
     *
     * @param writer writes outcomes
     * @param control admission and control around each run
     * @param gate the provider state
     * @param observability metrics and history
     * @param clock the clock
     * @param handlers calls handlers
     * @param lifeline gives back picked jobs that wait behind busy threads
     * @param pickLimit rows per pick, told when each run starts and ends
     * @param batches the batch step of batchable job types
     * @param picker the pick, which keeps each picked job's verdict
     * @param steps what the steps of every run share
     * @param groups the group reads of a callback's context
     */
    record Parts(OutcomeWriter writer, AdmissionControl control, ProviderGate gate, Observability observability,
            Clock clock, HandlerRunner handlers, Lifeline lifeline, PickLimit pickLimit, BatchStep batches,
            Picker picker, RunSteps.Shared steps, GroupStore groups) {}

    /**
     * What a run leaves to write, and whether it ended done (a done job's row is deleted by the
     * batch completer, which tells the lifeline; any other write moves the row on at once).
     */
    private record Next(CompletionHandler<byte[]> write, boolean done) {
        static Next of(CompletionHandler<byte[]> write) {
            return new Next(write, false);
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
        if (!p.lifeline().begin(picked, ex.lastHeartbeat)) {
            // given or taken back while it waited: another worker has it, and a breaker trial its pick claimed goes back
            unclaimed(p.picker().verdict(picked.taskName(), picked.id(), picked.version()), null);
            return (complete, ops) -> { };
        }
        Next[] ran = {null};
        Object running = p.pickLimit().started();
        // the run's span and MDC, current on this thread until its outcome is written (db-scheduler calls the
        // completion handler on the thread that ran execute)
        RunScope scope = openScope(picked);
        try {
            ran[0] = runPicked(instance, ec, ex);
        } catch (RuntimeException | Error e) {
            scope.close();
            throw e;
        } finally {
            p.lifeline().end();
            p.pickLimit().ended(running);
        }
        Next next = ran[0];
        if (next.done()) {
            return (complete, ops) -> {
                try {
                    next.write().complete(complete, ops);
                } finally {
                    scope.close();
                }
            };
        }
        return (complete, ops) -> {
            try {
                next.write().complete(complete, ops);
                p.pickLimit().rowsFreed(); // the row moved on: its key's slot is free
            } finally {
                scope.close();
                p.lifeline().forget(picked.taskName(), picked.id(), picked.version());
            }
        };
    }

    private RunScope openScope(JobRun picked) {
        Picker.Traced t = p.picker().traced(picked.taskName(), picked.id(), picked.version());
        TraceContexts.Stored stored = TraceContexts.read(t.traceContext());
        return p.observability().runs().open(new LayoverTracing.RunStart(picked.taskName(), picked.id(),
                picked.attemptsSpent() + 1, t.reschedules(), stored.traceparent(), stored.tracestate()));
    }

    private Next runPicked(TaskInstance<byte[]> instance, ExecutionContext ec, Execution ex) {
        JobRun run = startRun(ex);
        OutcomeWriter writer = p.writer();
        Picker.Verdict verdict = p.picker().verdict(run.taskName(), run.id(), run.version());
        A args;
        try {
            args = entry.codec().read(instance.getData());
        } catch (Exception | StackOverflowError e) {
            // StackOverflowError: JSON nested deeper than the stack, read by a mapper without a depth limit
            String why = "stored args do not read as " + entry.type().argsType().getName() + ": "
                    + (e instanceof StackOverflowError ? "nested too deeply (StackOverflowError)" : Errors.safeMessage(e));
            return unclaimed(verdict, Next.of((complete, ops) ->
                    writer.unreadableArgs(run, entry.codec().shape(), e.getClass().getName(), why)));
        }
        // the key the pick admitted the job under (its stored provider_key) when it took anything
        // from it: a worker whose key function changed since the enqueue settles where it took
        String key = verdict.key() != null ? verdict.key() : entry.type().providerKeyOf(args);
        RunScope scope = RunScope.current();
        if (scope != null) {
            scope.keys(key, fairnessKey(args));
        }
        AdmissionControl.Check check = p.control().check(run, entry.type(), args, key);
        if (check.stop() != null) {
            return unclaimed(verdict, Next.of(check.stop()));
        }
        switch (verdict.kind()) {
            case "breaker_open" -> {
                return Next.of((complete, ops) -> writer.park(run, FailureType.BREAKER_OPEN, "BreakerOpen", verdict.detail()));
            }
            case "deferral" -> {
                String why = verdict.detail() + ", longer than its maxDeferral " + run.policy().maxDeferral();
                return Next.of((complete, ops) -> writer.park(run, FailureType.RATE_LIMIT_EXHAUSTED, "NotAdmitted", why));
            }
            case "too_large" -> {
                String big = p.gate().tooLarge(key, estimate(args)); // the numbers, as this worker configured the key
                return Next.of((complete, ops) -> writer.park(run, FailureType.REJECTED, "TokenEstimateTooLarge",
                        big != null ? big : verdict.detail()));
            }
            default -> { }
        }
        BatchStep.Step batched = p.batches().route(run, entry, args, key);
        if (batched != null) {
            return unclaimed(verdict, new Next(batched.write(), batched.done()));
        }
        ProviderRun pr = p.gate().newRun(key, run.taskName(), run.id(), run.version(), estimate(args),
                run.attemptsSpent() + 1).admitted(verdict.trialToken(), verdict.reserved(), verdict.rates());
        Admission admission = p.gate().stillAdmits(pr); // what this worker learnt after the pick: a cooldown, a breaker
        if (admission instanceof Admission.Wait w) {
            return Next.of((complete, ops) -> writer.giveBack(run, key, w));
        }
        if (admission instanceof Admission.Refuse r) {
            return Next.of((complete, ops) -> writer.park(run, FailureType.BREAKER_OPEN, "BreakerOpen", r.detail()));
        }
        RunSteps steps = new RunSteps(p.steps(), run, pr, entry.type().objectMapper(), entry.type().maxStepResultBytes());
        JobContext ctx = p.control().context(new RunContext(run, ex.executionTime, key, ec, pr, steps, p.groups()), check);
        Outcome outcome = p.control().runTimed(check, ctx::isStopping, () -> p.handlers().run(entry, args, ctx));
        handlerReturned(run, outcome);
        if (scope != null && outcome != HandlerRunner.STOPPED) {
            scope.handlerReturned(outcome.kind().tag());
            scope.failedWith(outcome.kind() == Outcome.Kind.DONE ? null : outcome.cause());
        }
        writer.runEnding(); // Layover#awaitCompletions waits for this run's outcome from here on
        boolean ended = false;
        try {
            Next next;
            if (outcome == HandlerRunner.STOPPED) {
                next = Next.of((complete, ops) -> writer.workerStopped(run, pr));
            } else {
                CompletionHandler<byte[]> cancelled = p.control().afterRun(check, outcome, pr);
                RunSteps.Sleep sleep = steps.sleepFor(outcome);
                if (cancelled != null) {
                    next = Next.of(cancelled);
                } else if (sleep != null) {
                    next = Next.of((complete, ops) -> writer.sleep(run, pr, sleep.wakeAt(), sleep.outcome().reason(),
                            sleep.signal() ? sleep.name() : null));
                } else {
                    String stoppedAt = outcome.kind() == Outcome.Kind.DONE ? null : steps.stoppedAt();
                    next = new Next((complete, ops) -> writer.apply(run, outcome, pr, stoppedAt),
                            outcome.kind() == Outcome.Kind.DONE);
                }
            }
            ended = true;
            return new Next((complete, ops) -> {
                try {
                    next.write().complete(complete, ops);
                } finally {
                    writer.runEnded();
                }
            }, next.done());
        } finally {
            if (!ended) {
                writer.runEnded();
            }
        }
    }

    /** A run that ends without its call: the breaker trial its pick claimed, if any, goes back at once. */
    private Next unclaimed(Picker.Verdict verdict, Next next) {
        if (verdict.trialToken() != null) {
            p.gate().giveBackTrial(verdict.key(), verdict.trialToken());
        }
        return next;
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

    /** The job's fairness key, for its run's span and token counts; null when it has none or it cannot be derived. */
    private String fairnessKey(A args) {
        try {
            return entry.type().fairnessKeyOf(args);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private void badEstimate(String problem) {
        LOG.warn("Token estimate of job type {}: {}; the job reserves no tokens, its reported usage is charged after "
                + "the call", entry.type().name(), problem);
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
    private record RunContext(JobRun run, Instant runAt, String providerKey, ExecutionContext ec, ProviderRun providerRun,
            RunSteps steps, GroupStore groups) implements JobContext {
        @Override
        public Optional<GroupResult> group() {
            return groups.result(run.taskName(), run.id());
        }

        @Override
        public <T> T step(StepOptions step, Class<T> type, StepCall<T> call) throws Exception {
            return steps.step(step, type, call);
        }

        @Override
        public String stepKey() {
            return steps.stepKey();
        }

        @Override
        public void sleep(String name, Duration duration) {
            steps.sleep(name, duration);
        }

        @Override
        public dev.layover.core.Signal awaitSignal(String name, Duration timeout) {
            return steps.awaitSignal(name, timeout);
        }

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
