package dev.layover.core.internal.engine;

import com.github.kagkarlsson.scheduler.ExecutorUtils;
import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerBuilder;
import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.task.OnStartup;
import com.github.kagkarlsson.scheduler.task.Task;
import dev.layover.core.control.JobControl;
import dev.layover.core.internal.batch.BatchKeys;
import dev.layover.core.internal.batch.BatchLoop;
import dev.layover.core.internal.batch.BatchStore;
import dev.layover.core.internal.db.DatabaseClock;
import dev.layover.core.internal.db.DatabaseOutage;
import dev.layover.core.spi.Db;
import dev.layover.core.internal.gate.InteractiveHandle;
import dev.layover.core.internal.gate.Limits;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.internal.gate.ProviderStateHandle;
import dev.layover.core.internal.jobs.ArgsCodec;
import dev.layover.core.internal.jobs.Enqueuer;
import dev.layover.core.internal.jobs.JobStore;
import dev.layover.core.internal.jobs.GroupStore;
import dev.layover.core.internal.jobs.StepStore;
import dev.layover.core.internal.jobs.PassThroughSerializer;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.internal.observe.Observability;
import dev.layover.core.internal.observe.PriceSql;
import dev.layover.core.internal.observe.Runs;
import dev.layover.core.internal.observe.SafeMetrics;
import dev.layover.core.internal.observe.StateSampler;
import dev.layover.core.internal.observe.TimeSeries;
import dev.layover.core.internal.observe.WorkerRegistry;
import dev.layover.core.internal.schedule.ScheduleHandle;
import dev.layover.core.internal.schedule.ScheduleLoop;
import dev.layover.core.schedule.Schedules;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.InteractiveCalls;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.ProviderStates;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Layover instance's machinery, assembled in one place from its {@link EngineConfig}: the job
 * store, the registry and enqueuer, the provider gate and the limits, operator control, metrics
 * and sampling, and the worker side, which runs one db-scheduler {@link JobTask} per job type.
 * db-scheduler picks (lock-and-fetch, {@code FOR UPDATE SKIP LOCKED}), heartbeats and detects dead
 * executions; Layover decides every outcome. Every part is built by the constructor; nothing is set
 * afterwards.
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

    private final EngineConfig config;
    /** The database's time, when no clock was given (else null). */
    private final DatabaseClock databaseClock;
    private final Clock clock;
    private final Db db;
    private final JobStore store;
    private final Registry registry;
    private final Enqueuer enqueuer;
    private final SafeMetrics metrics;
    private final Observability observability;
    private final ProviderGate gate;
    private final ProviderStates providerStates;
    private final InteractiveCalls interactive;
    private final JobControl control;
    private final StateSampler sampler;
    private final DatabaseOutage outage;
    private final Consumer<SQLException> outageSignal;
    private final BatchCompleter completer;
    private final Lifeline lifeline;
    private final PickLimit pickLimit;
    private final Limits limits;
    private final OutcomeWriter writer;
    private final AdmissionControl admission;
    private final JobTask.Parts taskParts;
    private final BatchLoop batchLoop;
    private final WorkerRegistry workerRow;
    private final ScheduleLoop recurring;
    private final Schedules schedules;
    private volatile Scheduler scheduler;
    private volatile List<String> pickTypes = List.of();
    private WorkerLoops loops;

    /**
     * Builds every part; starts nothing.
     *
     * @param config the settings
     * @throws dev.layover.core.ConfigurationException on a duplicate job type, an args type Jackson
     *     cannot round-trip, a token cost for a type that is not registered, or virtual threads
     *     asked of a JVM older than Java 21
     */
    public Engine(EngineConfig config) {
        if (config.virtualThreads()) {
            VirtualThreads.require(); // before anything is started or written
        }
        this.config = config;
        this.databaseClock = config.clock() == null
                ? new DatabaseClock(config.dataSource(), Clock.systemUTC(), config.workerName()) : null;
        this.clock = config.clock() != null ? config.clock() : databaseClock;
        this.db = new Db(config.dataSource());
        this.store = new JobStore(db, config.clock());
        this.registry = new Registry(config.types(),
                config.objectMapper() != null ? config.objectMapper() : ArgsCodec.defaultMapper(), config.maxArgsBytes());
        for (String typeName : config.tokenCosts().keySet()) {
            if (registry.get(typeName) == null) {
                throw new dev.layover.core.ConfigurationException("tokenCost given for job type '" + typeName
                        + "', which is not registered");
            }
        }
        Runs runs = new Runs(config.observe().tracing(), config.observe().mdc());
        this.enqueuer = new Enqueuer(store, clock, config.tokenCosts(), runs);
        this.metrics = SafeMetrics.of(config.metrics());
        this.observability = new Observability(metrics, config.history(), config.historyArgs(),
                new TimeSeries(db, config.timeSeries()), runs);
        String worker = config.workerName();
        Map<String, BucketSettings> allBuckets = new LinkedHashMap<>(config.buckets());
        allBuckets.putAll(config.patternBuckets()); // a provider key matching a pattern has its own bucket, as an exact one
        this.gate = new ProviderGate(db, clock, worker, new ProviderGate.Config(config.breakers(),
                config.perKeyBreakers(), config.cooldowns(), allBuckets, config.breakerListeners(),
                config.notifications()), metrics);
        gate.configureInteractive(config.interactive());
        this.providerStates = new ProviderStateHandle(gate);
        this.workerRow = new WorkerRegistry(db, worker, config.threads(), gate::limitOverrides);
        this.sampler = new StateSampler(db, metrics, worker);
        this.outage = new DatabaseOutage(db.dataSource(), worker, RESUME_DELAY, new OutageHooks());
        this.outageSignal = outage::failed;
        this.pickLimit = new PickLimit(config.threads(), config.prefetch());
        this.lifeline = new Lifeline(store, worker, config.threads(), config.giveBackAfter(),
                pickLimit::holdsNoneAhead, pickLimit::waitingForThread, clock, config.deadAfter(),
                registry.entries().stream().map(e -> e.type().name()).toList(), this::givenBack);
        this.completer = new BatchCompleter(store, "layover-completer-" + worker, outage, observability,
                d -> lifeline.forget(d.name(), d.id(), d.version()), pickLimit::rowsFreed);
        WriteRetry retry = new WriteRetry(outage);
        JobMover mover = new JobMover(store, clock, observability, retry);
        BatchStore batchStore = new BatchStore(db);
        this.writer = new OutcomeWriter(store, clock, completer, gate, retry, mover, observability,
                new StackTraces(config.stackTraceChars()), batchStore, worker);
        BatchKeys batchKeys = new BatchKeys(config.batching());
        this.batchLoop = batchKeys.any() ? new BatchLoop(batchStore, batchKeys, worker, batchTick(config), metrics) : null;
        // operators' cancels write without waiting for a lost database: the caller sees the error
        this.control = new Controls(store, clock, new JobMover(store, clock, observability, WriteRetry.ONCE));
        this.limits = new Limits(db, worker, config.concurrencyLimits());
        this.admission = new AdmissionControl(db, clock, worker, writer, gate);
        ProviderClassifier classifier = ProviderClassifier.builder().clock(clock).build();
        Function<Throwable, Optional<Outcome>> classify = config.classifier() != null ? config.classifier()
                : classifier::outcomeOf;
        // interactive calls are classified and counted exactly as handlers' calls
        this.interactive = new InteractiveHandle(gate, classify, observability.timeSeries());
        RunSteps.Shared steps = new RunSteps.Shared(new StepStore(db), retry, classify,
                config.objectMapper() != null ? config.objectMapper() : ArgsCodec.defaultMapper(), worker,
                observability.timeSeries(), metrics, clock);
        // recurring jobs: the code schedules are checked now (a bad one fails the build), reconciled at start
        this.recurring = new ScheduleLoop(db, registry, enqueuer, clock, config.clock() != null,
                config.schedulePollInterval(), config.scheduleGeneration(), config.schedules(), this::wakeUp, worker,
                metrics);
        this.schedules = new ScheduleHandle(recurring);
        this.taskParts = new JobTask.Parts(writer, admission, gate, observability, clock,
                new HandlerRunner(classify), lifeline,
                pickLimit, new BatchStep(batchStore, batchKeys, writer, classifier), picker(config, worker), steps,
                new GroupStore(db));
    }

    /** A job the lifeline gave back before it started: the breaker trial its pick claimed goes back too. */
    private void givenBack(JobStore.Picked p) {
        Picker.Verdict v = taskParts.picker().verdict(p.taskName(), p.id(), p.version());
        if (v.trialToken() != null) {
            gate.giveBackTrial(v.key(), v.trialToken());
        }
    }

    /** The pick, over this instance's job types (the recurring tasks of plugins are added at start). */
    private Picker picker(EngineConfig config, String worker) {
        Map<String, Double> deferral = new LinkedHashMap<>();
        boolean limitKeys = false;
        for (Registry.Entry<?> e : registry.entries()) {
            deferral.put(e.type().name(), e.type().policy().maxDeferral().toMillis() / 1000.0);
            limitKeys |= e.type().hasLimitKeys();
        }
        BreakerSettings b = config.breakers();
        return new Picker(db, worker, config.clock(), () -> pickTypes,
                Picker.options(config.deadAfter().toMillis() / 1000.0, b.trialTimeout().toMillis() / 1000.0,
                        config.fairness().lowPriorityShare(), limitKeys, config.priority(), deferral,
                        config.interactive()),
                observability.runs().traced());
    }

    /** The batch loop's tick: half the shortest poll interval or gather age of any key, 50 ms to 1 s. */
    private static Duration batchTick(EngineConfig config) {
        long ms = 1000;
        for (dev.layover.core.batch.BatchSettings s : config.batching().values()) {
            ms = Math.min(ms, Math.min(s.pollInterval().toMillis(), s.maxGatherAge().toMillis()) / 2);
        }
        return Duration.ofMillis(Math.max(50, ms));
    }

    /** @return the job types */
    public Registry registry() {
        return registry;
    }

    /** @return inserts jobs */
    public Enqueuer enqueuer() {
        return enqueuer;
    }

    /** @return the guarded metrics */
    public SafeMetrics metrics() {
        return metrics;
    }

    /** @return the admission of calls made outside jobs */
    public InteractiveCalls interactive() {
        return interactive;
    }

    /** @return operators' handle on the provider state */
    public ProviderStates providerStates() {
        return providerStates;
    }

    /** @return operators' control */
    public JobControl control() {
        return control;
    }

    /** @return run-time schedules */
    public Schedules schedules() {
        return schedules;
    }

    /** @return the scheduler of recurring jobs */
    public ScheduleLoop recurring() {
        return recurring;
    }

    /** @return the database */
    public Db db() {
        return db;
    }

    /** @return the job table's owner */
    public JobStore store() {
        return store;
    }

    /** Builds and starts db-scheduler with one task per job type, plus {@code extraTasks}. */
    public synchronized void start(Collection<Task<?>> extraTasks) {
        recurring.reconcile(); // before anything runs: a code schedule whose name is taken fails the start
        List<Task<?>> tasks = new ArrayList<>();
        for (Registry.Entry<?> e : registry.entries()) {
            tasks.add(new JobTask<>(e, config.tokenCosts().get(e.type().name()), taskParts));
        }
        List<Task<?>> onStartup = new ArrayList<>();
        for (Task<?> t : extraTasks) {
            // db-scheduler schedules a recurring task's first run only when it is a start task
            (t instanceof OnStartup ? onStartup : tasks).add(t);
        }
        List<String> taskNames = new ArrayList<>();
        tasks.forEach(t -> taskNames.add(t.getName()));
        onStartup.forEach(t -> taskNames.add(t.getName()));
        pickTypes = List.copyOf(taskNames); // the pick takes only the types this worker runs
        pickLimit.pickWith(taskParts.picker());
        // db-scheduler's connections wait while the database is away instead of failing (and logging) at
        // every poll and heartbeat; their failures tell the outage detection
        SchedulerBuilder builder = Scheduler.create(outage.gate(db.dataSource()), tasks)
                .tableName(JobStore.TABLE)
                .serializer(new PassThroughSerializer())
                // db-scheduler's lock-and-fetch runs Layover's pick (the admission), each pick's row count the current prefetch
                .jdbcCustomization(pickLimit)
                .threads(config.threads())
                .pollingInterval(config.pollInterval())
                .heartbeatInterval(config.heartbeatInterval())
                .missedHeartbeatsLimit(config.missedHeartbeats())
                .pollUsingLockAndFetch(0.5, pickLimit.upperFactor())
                .shutdownMaxWait(config.shutdownMaxWait())
                .schedulerName(new SchedulerName.Fixed(config.workerName()))
                // heartbeats, dead executions and due-ness on the same time as every other worker's
                .clock(clock::instant)
                // a job of a type this JVM does not know stays in the table, visible in layover.jobs. db-scheduler
                // deletes every job of an unknown type once the oldest run time it saw of that type is older than
                // this: 10,000 years is beyond any timestamp Postgres stores (100 years was not: one job enqueued
                // for 1900 took all the others of its type with it)
                .deleteUnresolvedAfter(UNRESOLVED_NEVER_DELETED)
                .enableImmediateExecution();
        if (!onStartup.isEmpty()) {
            addStartTasks(builder, onStartup);
        }
        if (config.priority()) {
            builder.enablePriority();
        }
        // db-scheduler's execution pool, as it builds it itself (fixed, config.threads()), on platform or virtual
        // threads, telling the pick limit when a run has left it; db-scheduler shuts the pool down when it stops
        builder.executorService(pickLimit.pool(config.virtualThreads() ? VirtualThreads.factory("layover-virtual-")
                : ExecutorUtils.defaultThreadFactoryWithPrefix(Scheduler.THREAD_PREFIX + "-")));
        scheduler = builder.build();
        pickLimit.wakeUpWith(this::wakeUp);
        db.addFailureListener(outageSignal);
        gate.configureFairness(config.fairness());
        // what SQL enqueues need to know of the types this worker runs, and what tokens cost
        store.registerTypes(registry.typeRows(), config.workerName());
        PriceSql.write(db, config.observe().prices(), config.workerName());
        gate.start();
        limits.start();
        admission.start();
        scheduler.start();
        loops = new WorkerLoops(store, clock, config.workerName(), config.heartbeatInterval(), this::wakeUp,
                config.notifications());
        loops.start();
        lifeline.start();
        recurring.start();
        sampler.start();
        if (batchLoop != null) {
            batchLoop.start();
        }
        observability.timeSeries().start(config.workerName());
        workerRow.start();
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
            try {
                store.heartbeatPicked(clock.instant(), config.workerName());
            } finally {
                store.databaseReturned();
            }
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
    private static void addStartTasks(SchedulerBuilder builder, List<Task<?>> tasks) {
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
        sampler.stop();
        recurring.stop();
        if (batchLoop != null) {
            batchLoop.stop();
        }
        boolean databaseAway = outage.isDown();
        if (databaseAway) {
            LOG.warn("Layover: stopping while the database is away; jobs whose outcome could not be written stay "
                    + "picked and run again once their heartbeats are {} old", config.deadAfter());
        }
        // let every thread waiting for the database go: nothing waits for it during a stop
        outage.close();
        db.removeFailureListener(outageSignal);
        lifeline.stop();
        if (loops != null) {
            loops.stop();
            loops = null;
        }
        if (scheduler != null) {
            scheduler.stop();
            scheduler = null;
        }
        completer.stop(config.shutdownMaxWait());
        observability.timeSeries().stop(!databaseAway);
        workerRow.stop(!databaseAway);
        admission.stop();
        gate.stop();
        close();
    }

    /** Lets go of what even an instance that never started holds (the database clock's thread). */
    public void close() {
        if (databaseClock != null) {
            databaseClock.close();
        }
    }

    /** @return the clock every decision of this instance reads */
    public Clock clock() {
        return clock;
    }

    /** @return whether the scheduler runs */
    public synchronized boolean isRunning() {
        return scheduler != null;
    }

    /** Waits until finished jobs handed to the completer are deleted; for tests and shutdown. */
    public boolean awaitCompleted(Duration timeout) {
        return completer.awaitFlushed(timeout);
    }
}
