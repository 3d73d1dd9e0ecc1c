package dev.layover.core.internal.engine;

import com.github.kagkarlsson.scheduler.task.CompletionHandler;
import dev.layover.core.JobContext;
import dev.layover.core.JobType;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.ProviderCalls;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.internal.gate.ProviderRun;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.spi.Db;
import dev.layover.core.internal.jobs.JobRun;

/**
 * The engine's side of admission and control, around each run (see
 * {@code docs/admission-and-control.md}):
 *
 * <ol>
 *   <li>before anything: a cancel request or a passed deadline this worker knows of ends the job
 *       (cancelled, or parked {@code deadline_exceeded}); a pause of its job type or one of its
 *       keys holds it without running;
 *   <li>the handler runs under the job type's execution timeout (interrupted past it: TRANSIENT);
 *   <li>after it: a cancel requested meanwhile turns anything but done into a cancel.
 * </ol>
 *
 * Everything here reads memory ({@link ControlState}, refreshed once a second and on NOTIFY); the
 * only statements are the writes of a decision. Admission itself is the pick's ({@link Picker}).
 */
final class AdmissionControl {

    private static final Logger LOG = LoggerFactory.getLogger(AdmissionControl.class);

    /** The decision before admission, and what the run needs to know afterwards. */
    static final class Check {
        final JobRun run;
        final String providerKey;
        final List<String> limitKeys;
        final CompletionHandler<byte[]> stop;

        Check(JobRun run, String providerKey, List<String> limitKeys, CompletionHandler<byte[]> stop) {
            this.run = run;
            this.providerKey = providerKey;
            this.limitKeys = limitKeys;
            this.stop = stop;
        }

        /** @return the write to do instead of running the job, or null to go on */
        CompletionHandler<byte[]> stop() {
            return stop;
        }
    }

    private final Clock clock;
    private final OutcomeWriter writer;
    private final ProviderGate gate;
    private final ControlState state;
    private volatile ScheduledThreadPoolExecutor watchdog;
    private final String workerName;

    AdmissionControl(Db db, Clock clock, String workerName, OutcomeWriter writer, ProviderGate gate) {
        this.clock = clock;
        this.writer = writer;
        this.gate = gate;
        this.workerName = workerName;
        this.state = new ControlState(db, clock, workerName, writer);
    }

    void start() {
        gate.addNotificationHook(state::wakeUp);
        state.start();
    }

    void stop() {
        state.stop();
        ScheduledThreadPoolExecutor w = watchdog;
        if (w != null) {
            w.shutdownNow();
        }
    }

    /**
     * Before admission: cancel, deadline, pause.
     *
     * @param run the picked job
     * @param type its job type
     * @param args its args
     * @param providerKey its provider key, or null
     * @param <A> the args type
     * @return the check; {@link Check#stop()} non-null when the job must not run now
     */
    <A> Check check(JobRun run, JobType<A> type, A args, String providerKey) {
        List<String> limitKeys;
        try {
            limitKeys = type.limitKeysOf(args);
        } catch (RuntimeException e) {
            Outcome o = new Outcome.Retry("the job type's limit keys could not be derived from the args", e, null);
            return new Check(run, providerKey, List.of(), (complete, ops) -> writer.apply(run, o));
        }
        ControlState.Mine m = state.mine(run.taskName(), run.id(), run.version());
        if (m != null && m.cancelAt() != null) {
            return new Check(run, providerKey, limitKeys,
                    (complete, ops) -> writer.cancelledWhileRunning(run, null, null, m.cancelBy(), m.cancelReason()));
        }
        if (m != null && m.deadline() != null && m.deadline().isBefore(clock.instant())) {
            String why = "its deadline " + m.deadline() + " passed before it started";
            return new Check(run, providerKey, limitKeys,
                    (complete, ops) -> writer.park(run, FailureType.DEADLINE_EXCEEDED, "DeadlineExceeded", why));
        }
        if (state.anyPause()) {
            List<String> keys = keys(providerKey, limitKeys);
            ControlState.PauseInfo p = state.pauseOf(run.taskName(), keys);
            if (p != null) {
                return new Check(run, providerKey, limitKeys,
                        (complete, ops) -> writer.holdPaused(run, keys, limitKeys, p.describe()));
            }
        }
        return new Check(run, providerKey, limitKeys, null);
    }

    /** @return the handler's context, which also answers {@link JobContext#isCancelled()} */
    JobContext context(JobContext ctx, Check c) {
        return new ControlledContext(ctx, c);
    }

    /**
     * Runs the handler under the job type's timeout: past it the handler's thread is interrupted
     * and, unless it still returns done, the run is TRANSIENT.
     */
    Outcome runTimed(Check c, BooleanSupplier stopping, Supplier<Outcome> handler) {
        Duration timeout = c.run.policy().timeout();
        if (timeout == null) {
            return handler.get();
        }
        Watch w = new Watch(Thread.currentThread());
        ScheduledFuture<?> f = watchdog().schedule(w::fire, timeout.toNanos(), TimeUnit.NANOSECONDS);
        Outcome o;
        try {
            o = handler.get();
        } finally {
            f.cancel(false);
            w.finish();
        }
        if (!w.fired() || stopping.getAsBoolean()) {
            return o;
        }
        Thread.interrupted(); // the watchdog's interrupt is spent: the outcome write must not see it
        if (o instanceof Outcome.Done) {
            return o; // it overran but finished: the work is done
        }
        LOG.warn("Job {} timed out after {} (its handler was interrupted)", c.run.label(), timeout);
        return new Outcome.Transient("timed out after " + timeout + " (the handler was interrupted; the call may have "
                + "been done anyway, which is why handlers must be idempotent)",
                new TimeoutException("job " + c.run.label() + " ran longer than its timeout " + timeout));
    }

    /** @return the write of a run whose job was asked to stop while it ran, or null */
    CompletionHandler<byte[]> afterRun(Check c, Outcome outcome, ProviderRun pr) {
        if (outcome instanceof Outcome.Done) {
            return null;
        }
        ControlState.Mine m = state.mine(c.run.taskName(), c.run.id(), c.run.version());
        if (m == null || m.cancelAt() == null) {
            return null;
        }
        return (complete, ops) -> writer.cancelledWhileRunning(c.run, outcome, pr, m.cancelBy(), m.cancelReason());
    }

    /** The job's provider key and limit keys. */
    static List<String> keys(String providerKey, List<String> limitKeys) {
        if (providerKey == null) {
            return limitKeys;
        }
        if (limitKeys.isEmpty()) {
            return List.of(providerKey);
        }
        List<String> all = new ArrayList<>(limitKeys.size() + 1);
        all.add(providerKey);
        all.addAll(limitKeys);
        return all;
    }

    private ScheduledThreadPoolExecutor watchdog() {
        ScheduledThreadPoolExecutor w = watchdog;
        if (w == null) {
            synchronized (this) {
                w = watchdog;
                if (w == null) {
                    w = new ScheduledThreadPoolExecutor(1, r -> {
                        Thread t = new Thread(r, "layover-timeouts-" + workerName);
                        t.setDaemon(true);
                        return t;
                    });
                    w.setRemoveOnCancelPolicy(true);
                    watchdog = w;
                }
            }
        }
        return w;
    }

    /** Interrupts a handler's thread once, unless the handler returned first. */
    private static final class Watch {
        private final Thread thread;
        private boolean done;
        private boolean fired;

        Watch(Thread thread) {
            this.thread = thread;
        }

        synchronized void fire() {
            if (!done) {
                fired = true;
                thread.interrupt();
            }
        }

        synchronized void finish() {
            done = true;
        }

        synchronized boolean fired() {
            return fired;
        }
    }

    /** The handler's context: Layover's, plus what control knows of the run. */
    private final class ControlledContext implements JobContext {
        private final JobContext ctx;
        private final Check check;

        ControlledContext(JobContext ctx, Check check) {
            this.ctx = ctx;
            this.check = check;
        }

        @Override
        public java.util.Optional<dev.layover.core.GroupResult> group() {
            return ctx.group();
        }

        @Override
        public dev.layover.core.Signal awaitSignal(String name, java.time.Duration timeout) {
            return ctx.awaitSignal(name, timeout);
        }

        @Override
        public String jobId() {
            return ctx.jobId();
        }

        @Override
        public String jobType() {
            return ctx.jobType();
        }

        @Override
        public int attempt() {
            return ctx.attempt();
        }

        @Override
        public Instant runAt() {
            return ctx.runAt();
        }

        @Override
        public String providerKey() {
            return ctx.providerKey();
        }

        @Override
        public boolean isStopping() {
            return ctx.isStopping();
        }

        @Override
        public boolean isCancelled() {
            ControlState.Mine m = state.mine(check.run.taskName(), check.run.id(), check.run.version());
            return m != null && m.cancelAt() != null;
        }

        @Override
        public Instant deadline() {
            ControlState.Mine m = state.mine(check.run.taskName(), check.run.id(), check.run.version());
            return m == null ? null : m.deadline();
        }

        @Override
        public List<String> limitKeys() {
            return check.limitKeys;
        }

        @Override
        public ProviderCalls providerCalls() {
            return ctx.providerCalls();
        }

        @Override
        public Optional<TokenUsage> reportUsage(Object response) {
            return ctx.reportUsage(response);
        }

        @Override
        public void refineEstimate(TokenEstimate estimate) {
            ctx.refineEstimate(estimate);
        }

        @Override
        public void reportLimits(RateLimitHeaders headers) {
            ctx.reportLimits(headers);
        }

        @Override
        public <T> T step(dev.layover.core.StepOptions step, Class<T> type, dev.layover.core.StepCall<T> call)
                throws Exception {
            return ctx.step(step, type, call);
        }

        @Override
        public String stepKey() {
            return ctx.stepKey();
        }

        @Override
        public void sleep(String name, java.time.Duration duration) {
            ctx.sleep(name, duration);
        }

        @Override
        public String toString() {
            return ctx.toString();
        }
    }
}
