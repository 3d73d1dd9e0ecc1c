package dev.layover.core.internal;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.jdbc.PostgreSqlJdbcCustomization;
import com.github.kagkarlsson.scheduler.task.CompletionHandler;
import com.github.kagkarlsson.scheduler.task.Execution;
import com.github.kagkarlsson.scheduler.task.ExecutionContext;
import com.github.kagkarlsson.scheduler.task.OnStartup;
import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.TaskInstance;
import com.github.kagkarlsson.scheduler.task.helper.CustomTask;
import dev.layover.core.JobContext;
import dev.layover.core.JobPolicy;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import dev.layover.core.provider.state.Admission;
import dev.layover.core.provider.state.Limits;
import dev.layover.core.provider.state.ProviderGate;
import dev.layover.core.provider.state.ProviderRun;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker side: one db-scheduler {@link CustomTask} per job type, whose completion handler
 * hands the outcome to the {@link OutcomeWriter}. db-scheduler picks (lock-and-fetch, {@code FOR
 * UPDATE SKIP LOCKED}), heartbeats and detects dead executions; Layover decides every outcome.
 *
 * <p>Before a handler runs, a job with a provider key asks the {@link ProviderGate}: during a
 * cooldown, while a half-open breaker's trial is held elsewhere, or without a bucket permit it is
 * rescheduled without calling (no attempt spent); with the breaker open it is parked
 * {@code breaker_open}. Neither costs a database round trip unless the key is throttled.
 */
public final class Engine {

    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);

    /**
     * After a database outage, how long db-scheduler's threads (polling, heartbeats, dead-execution
     * checks) wait once the database answers: time for every worker of the fleet to notice and
     * renew the heartbeats of the jobs it holds before anyone looks for dead ones.
     */
    private static final Duration RESUME_DELAY = Duration.ofSeconds(1);

    /** db-scheduler's deleteUnresolvedAfter: never (see {@link #start}). */
    private static final Duration UNRESOLVED_NEVER_DELETED = Duration.ofDays(365L * 10_000);

    /** A handler interrupted because the worker stops: written by {@link OutcomeWriter#workerStopped}. */
    private static final Outcome STOPPED = new Outcome.Snooze(Duration.ZERO, "the worker stopped");

    /** Settings of the worker side, defaults documented on {@code Layover.Builder}. */
    public record Settings(
            int threads,
            Duration pollInterval,
            Duration heartbeatInterval,
            int missedHeartbeats,
            Duration shutdownMaxWait,
            String workerName,
            boolean priority,
            double prefetch) {}

    private final Db db;
    private final Clock clock;
    private final BatchCompleter completer;
    private final OutcomeWriter writer;
    private final Registry registry;
    private final Function<Throwable, Optional<Outcome>> classifier;
    private final Settings settings;
    private final ProviderGate gate;
    private final Map<String, ToLongFunction<Object>> tokenCosts;
    /** The job types whose backlog of a bucket's key is reserved together. */
    private final List<ProviderGate.BacklogType> backlogTypes;
    /** How far ahead a bucket permit must be for the key's backlog to be reserved together. */
    private static final Duration BACKLOG_AHEAD = Duration.ofSeconds(1);
    private final DatabaseOutage outage;
    private final java.util.function.Consumer<java.sql.SQLException> outageSignal;
    private final Observability observability;
    private volatile Scheduler scheduler;
    private WorkerLoops loops;

    /**
     * @param db the database
     * @param clock the clock
     * @param registry the job types
     * @param classifier turns provider exceptions into outcomes
     * @param settings worker settings
     * @param gate the provider state
     * @param tokenCosts token estimates by job type name (args to tokens)
     */
    public Engine(Db db, Clock clock, Registry registry, Function<Throwable, Optional<Outcome>> classifier,
            Settings settings, ProviderGate gate, Map<String, ToLongFunction<Object>> tokenCosts) {
        this(db, clock, registry, classifier, settings, gate, tokenCosts, Observability.DEFAULT);
    }

    /**
     * @param db the database
     * @param clock the clock
     * @param registry the job types
     * @param classifier turns provider exceptions into outcomes
     * @param settings worker settings
     * @param gate the provider state
     * @param tokenCosts token estimates by job type name (args to tokens)
     * @param observability metrics and the history of finished jobs
     */
    public Engine(Db db, Clock clock, Registry registry, Function<Throwable, Optional<Outcome>> classifier,
            Settings settings, ProviderGate gate, Map<String, ToLongFunction<Object>> tokenCosts,
            Observability observability) {
        this.observability = observability;
        this.db = db;
        this.clock = clock;
        this.registry = registry;
        this.classifier = classifier;
        this.settings = settings;
        this.gate = gate;
        this.tokenCosts = Map.copyOf(tokenCosts);
        List<ProviderGate.BacklogType> backlog = new ArrayList<>();
        for (Registry.Entry<?> e : registry.entries()) {
            JobPolicy p = e.type().policy();
            backlog.add(new ProviderGate.BacklogType(e.type().name(), p.maxReschedules(), p.maxDeferral(),
                    this.tokenCosts.containsKey(e.type().name())));
        }
        this.backlogTypes = List.copyOf(backlog);
        this.outage = new DatabaseOutage(db.dataSource(), settings.workerName(), RESUME_DELAY, new OutageHooks());
        this.outageSignal = outage::failed;
        this.completer = new BatchCompleter(db, "layover-completer-" + settings.workerName(), outage, observability);
        this.writer = new OutcomeWriter(db, clock, completer, gate, outage, observability);
        this.control = new AdmissionControl(db, clock, settings.workerName(), writer, gate);
    }

    // ---- admission and control (docs/admission-and-control.md) ----------------------------------

    /** Cancel, deadline, pause, timeout and the limits of each run. */
    private final AdmissionControl control;

    /**
     * Sets the concurrency limits and the buckets of limit keys (none by default). Before
     * {@link #start}.
     *
     * @param limits the limits
     */
    public void limits(Limits limits) {
        control.limits(limits);
    }

    /** Builds and starts db-scheduler with one task per job type, plus {@code extraTasks}. */
    public synchronized void start(Collection<Task<?>> extraTasks) {
        List<Task<?>> tasks = new ArrayList<>();
        for (Registry.Entry<?> e : registry.entries()) {
            tasks.add(new JobTask<>(e));
        }
        List<Task<?>> onStartup = new ArrayList<>();
        for (Task<?> t : extraTasks) {
            // db-scheduler schedules a recurring task's first run only when it is a start task
            (t instanceof OnStartup ? onStartup : tasks).add(t);
        }
        // db-scheduler's connections wait while the database is away instead of failing (and logging) at
        // every poll and heartbeat; their failures tell the outage detection
        var builder = Scheduler.create(outage.gate(db.dataSource()), tasks)
                .tableName(CoreSql.TABLE)
                .serializer(new PassThroughSerializer())
                .jdbcCustomization(new PostgreSqlJdbcCustomization(false, false))
                .threads(settings.threads())
                .pollingInterval(settings.pollInterval())
                .heartbeatInterval(settings.heartbeatInterval())
                .missedHeartbeatsLimit(settings.missedHeartbeats())
                .pollUsingLockAndFetch(0.5, settings.prefetch())
                .shutdownMaxWait(settings.shutdownMaxWait())
                .schedulerName(new SchedulerName.Fixed(settings.workerName()))
                // a job of a type this JVM does not know stays in the table, visible in layover.jobs. db-scheduler
                // deletes every job of an unknown type once the oldest run time it saw of that type is older than
                // this: 10,000 years is beyond any timestamp Postgres stores (100 years was not: one job enqueued
                // for 1900 took all the others of its type with it)
                .deleteUnresolvedAfter(UNRESOLVED_NEVER_DELETED)
                .enableImmediateExecution();
        if (!onStartup.isEmpty()) {
            addStartTasks(builder, onStartup);
        }
        if (settings.priority()) {
            builder.enablePriority();
        }
        scheduler = builder.build();
        db.addFailureListener(outageSignal);
        gate.start();
        control.start();
        scheduler.start();
        loops = new WorkerLoops(db, clock, settings.workerName(), settings.heartbeatInterval(), this::wakeUp);
        loops.start();
    }

    /**
     * What the engine does during a database outage: polling paused while it is away; when it is
     * back, first the heartbeat of every job this worker holds is renewed (an outage longer than
     * the dead-execution limit must not make another worker, or this one, take them for dead),
     * then polling resumes.
     */
    private final class OutageHooks implements DatabaseOutage.Listener {
        @Override
        public void onDown() {
            Scheduler s = scheduler;
            if (s != null) {
                s.pause();
            }
        }

        @Override
        public void onBack() {
            db.autocommit("renewing heartbeats after a database outage", c -> {
                try (java.sql.PreparedStatement ps = c.prepareStatement(CoreSql.HEARTBEAT_PICKED)) {
                    ps.setTimestamp(1, java.sql.Timestamp.from(clock.instant()));
                    ps.setString(2, settings.workerName());
                    return ps.executeUpdate();
                }
            });
        }

        @Override
        public void onResumed() {
            Scheduler s = scheduler;
            if (s != null) {
                s.resume();
                s.triggerCheckForDueExecutions();
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void addStartTasks(com.github.kagkarlsson.scheduler.SchedulerBuilder builder, List<Task<?>> tasks) {
        builder.startTasks((List) tasks);
    }

    /** Asks the scheduler to look for due jobs now (after an enqueue in this JVM). */
    public void wakeUp() {
        Scheduler s = scheduler;
        if (s != null) {
            s.triggerCheckForDueExecutions();
        }
    }

    /**
     * Stops picking, lets running jobs finish (up to the shutdown wait), then deletes the finished
     * ones still waiting for the completer.
     */
    public synchronized void stop() {
        if (outage.isDown()) {
            LOG.warn("Layover: stopping while the database is away; jobs whose outcome could not be written stay "
                    + "picked and run again once their heartbeats are {} old", settings.heartbeatInterval()
                    .multipliedBy(settings.missedHeartbeats()));
        }
        // let every thread waiting for the database go: nothing waits for it during a stop
        outage.close();
        db.removeFailureListener(outageSignal);
        if (loops != null) {
            loops.stop();
            loops = null;
        }
        if (scheduler != null) {
            scheduler.stop();
            scheduler = null;
        }
        completer.stop(settings.shutdownMaxWait());
        control.stop();
        gate.stop();
    }

    /** @return whether the scheduler runs */
    public synchronized boolean isRunning() {
        return scheduler != null;
    }

    /** Waits until finished jobs handed to the completer are deleted; for tests and shutdown. */
    public boolean awaitCompleted(Duration timeout) {
        return completer.awaitFlushed(timeout);
    }

    private <A> Outcome runHandler(Registry.Entry<A> entry, A args, JobContext ctx) {
        try {
            Outcome o = entry.type().handler().handle(args, ctx);
            return o == null ? Outcome.done() : o;
        } catch (OutcomeException e) {
            return e.outcome();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (ctx.isStopping()) {
                // Layover.stop() ran out of shutdownMaxWait: not the job's failure
                return STOPPED;
            }
            return new Outcome.Retry("interrupted (the worker is stopping or the job timed out)", e, null);
        } catch (StackOverflowError e) {
            // the handler's own bug; the stack has unwound, the worker thread is fine
            LOG.warn("Job {}/{} failed: {}", entry.type().name(), ctx.jobId(), e.getClass().getName());
            return new Outcome.Retry(null, e, null);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable t) {
            Optional<Outcome> classified;
            try {
                classified = classifier.apply(t);
            } catch (RuntimeException | LinkageError | StackOverflowError e) {
                // an exception the classifier cannot even look at (its getMessage() throws, ...)
                LOG.debug("Job {}/{}: the exception classifier failed on {}", entry.type().name(), ctx.jobId(),
                        t.getClass().getName(), e);
                classified = Optional.empty();
            }
            if (classified.isPresent()) {
                return classified.get();
            }
            LOG.warn("Job {}/{} failed: {}", entry.type().name(), ctx.jobId(), OutcomeWriter.describe(t));
            LOG.debug("Job {}/{} stack trace", entry.type().name(), ctx.jobId(), t);
            return new Outcome.Retry(null, t, null);
        }
    }

    /** The db-scheduler task of one job type. */
    private final class JobTask<A> extends CustomTask<byte[]> {
        private final Registry.Entry<A> entry;

        JobTask(Registry.Entry<A> entry) {
            super(entry.type().name(), byte[].class, null, t -> t,
                    (complete, ops) -> writer.apply(run(entry, complete.getExecution()),
                            new Outcome.Retry("the handler failed outside Layover's guard",
                                    complete.getCause().orElse(null), null)),
                    (complete, ops) -> writer.workerLost(run(entry, complete.getExecution()),
                            complete.getExecution().lastHeartbeat));
            this.entry = entry;
        }

        @Override
        public CompletionHandler<byte[]> execute(TaskInstance<byte[]> instance, ExecutionContext ec) {
            Execution ex = ec.getExecution();
            JobRun run = startRun(entry, ex);
            A args;
            try {
                args = entry.codec().read(instance.getData());
            } catch (Exception | StackOverflowError e) {
                // StackOverflowError: JSON nested deeper than the stack, read by a mapper without a depth limit
                String why = "stored args do not read as " + entry.type().argsType().getName() + ": "
                        + (e instanceof StackOverflowError ? "nested too deeply (StackOverflowError)"
                                : OutcomeWriter.safeMessage(e));
                return (complete, ops) -> writer.park(run, FailureType.BAD_ARGS, e.getClass().getName(), why);
            }
            String key = entry.type().providerKeyOf(args);
            // admission and control: a cancel, a passed deadline or a pause stop the job before it runs
            AdmissionControl.Check check = control.check(run, entry.type(), args, key);
            if (check.stop() != null) {
                return check.stop();
            }
            ProviderRun pr = gate.newRun(key, run.taskName(), run.id(), run.version(), tokens(args), run.attemptsSpent() + 1);
            Admission admission = control.admit(check, pr); // gate.admit(pr) unless the job has limits of its own
            if (admission instanceof Admission.Wait w && AdmissionControl.isHold(w)) {
                return (complete, ops) -> writer.hold(run, w.reason(), w.detail());
            }
            if (admission instanceof Admission.Wait w) {
                return (complete, ops) -> {
                    writer.waitForProvider(run, w);
                    if (hasBacklog(w)) {
                        gate.reserveBacklog(key, backlogTypes).forEach((type, n) -> {
                            for (int i = 0; i < n; i++) {
                                observability.metrics().jobRescheduled(type, "bucket");
                            }
                        });
                    }
                };
            }
            if (admission instanceof Admission.Refuse r) {
                return (complete, ops) -> writer.park(run, FailureType.BREAKER_OPEN, "BreakerOpen", r.detail());
            }
            JobContext ctx = control.context(new Context(run, ex.executionTime, key, ec, pr), check);
            Outcome outcome = control.runTimed(check, ctx::isStopping, () -> runHandler(entry, args, ctx));
            handlerReturned(run, outcome);
            if (outcome == STOPPED) {
                return (complete, ops) -> writer.workerStopped(run, pr);
            }
            CompletionHandler<byte[]> cancelled = control.afterRun(check, outcome, pr);
            if (cancelled != null) {
                return cancelled;
            }
            return (complete, ops) -> writer.apply(run, outcome, pr);
        }

        private long tokens(A args) {
            ToLongFunction<Object> cost = tokenCosts.get(entry.type().name());
            if (cost == null) {
                return 0;
            }
            try {
                return Math.max(0, cost.applyAsLong(args));
            } catch (RuntimeException e) {
                LOG.warn("Token estimate of job type {} failed; counting 0 tokens: {}", entry.type().name(), e.toString());
                return 0;
            }
        }
    }

    /**
     * A bucket permit further ahead than {@link #BACKLOG_AHEAD}: the key has more due jobs than its
     * bucket lets through now, and they are given their permits together
     * ({@link ProviderGate#reserveBacklog}).
     */
    private boolean hasBacklog(Admission.Wait w) {
        return "bucket".equals(w.reason()) && w.permitAt() != null
                && w.permitAt().isAfter(clock.instant().plus(BACKLOG_AHEAD));
    }

    /** A run starting now: its start is kept for its history row, its queue wait is measured. */
    private JobRun startRun(Registry.Entry<?> entry, Execution ex) {
        Instant now = clock.instant();
        JobRun timed = run(entry, ex).withTiming(RunTiming.start(now));
        observability.metrics().jobStarted(timed.taskName(), Duration.between(ex.executionTime, now));
        return timed;
    }

    /** The handler of a run returned: its duration, for the metrics and the history row. */
    private void handlerReturned(JobRun run, Outcome outcome) {
        Duration took = run.timing().handlerReturned();
        SafeMetrics m = observability.metrics();
        if (m.enabled()) {
            m.jobRan(run.taskName(), outcome == STOPPED ? "stopped" : SafeMetrics.outcomeTag(outcome), took);
        }
    }

    private static JobRun run(Registry.Entry<?> entry, Execution ex) {
        return new JobRun(entry.type().name(), ex.taskInstance.getId(), ex.version, ex.consecutiveFailures,
                entry.type().policy());
    }

    private record Context(JobRun run, Instant runAt, String providerKey, ExecutionContext ec, ProviderRun providerRun)
            implements JobContext, ProviderRun.Source {
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
