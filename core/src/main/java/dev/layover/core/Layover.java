package dev.layover.core;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.kagkarlsson.scheduler.task.Task;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.control.JobControl;
import dev.layover.core.history.JobHistoryRetention;
import dev.layover.core.internal.engine.Engine;
import dev.layover.core.internal.engine.EngineConfig;
import dev.layover.core.internal.gate.Limits;
import dev.layover.core.internal.jobs.JobLookup;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.internal.observe.TimeSeriesSettings;
import dev.layover.core.internal.observe.ObserveSettings;
import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.tokens.Prices;
import dev.layover.core.tracing.LayoverTracing;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.core.provider.state.BreakerListener;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.FairnessSettings;
import dev.layover.core.provider.state.InteractiveSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.ProviderStates;
import dev.layover.migrations.LayoverMigrations;
import java.net.InetAddress;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import javax.sql.DataSource;

/**
 * A Layover instance: enqueues jobs and, once started, runs them.
 *
 * <pre>{@code
 * Layover layover = Layover.builder(dataSource)
 *         .register(translate)
 *         .threads(8)
 *         .start();
 * layover.enqueue(translate, new Translate("doc-1", "fr"));
 * ...
 * layover.stop();
 * }</pre>
 *
 * <p>Many JVMs started on one database form one cluster: each job runs on one worker at a time
 * (db-scheduler's lock-and-fetch, {@code SELECT ... FOR UPDATE SKIP LOCKED}).
 *
 * <p>Delivery is at least once. A job runs again when its worker dies before its outcome is
 * written (a worker that stops heartbeating for {@code heartbeatInterval * missedHeartbeats},
 * default 40 s, is declared dead and its jobs are retried; such a revival spends an attempt), and in
 * the other cases the README's "Delivery guarantee" section lists. Handlers must be idempotent.
 *
 * <p>Thread-safe. {@link Builder#build()} without {@link #start()} gives an enqueue-only client.
 */
public final class Layover implements AutoCloseable {

    private final Engine engine;
    private final DataSource dataSource;
    private final List<Task<?>> extraTasks;
    private final List<LayoverPlugin> plugins;
    /** The history retention this instance runs while started (null: history off or kept forever). */
    private final JobHistoryRetention historyRetention;
    private final String workerName;
    /** The JVM shutdown hook that stops this instance, when the builder asked for one (else null). */
    private final Thread shutdownHook;
    private volatile boolean started;
    private volatile boolean stopped;

    private Layover(Builder b) {
        this.dataSource = b.dataSource;
        this.workerName = b.workerName != null ? b.workerName : defaultWorkerName();
        this.engine = new Engine(new EngineConfig(b.dataSource, b.clock, workerName, b.types, b.objectMapper,
                b.maxArgsBytes, b.classifier, b.threads, b.pollInterval, b.heartbeatInterval, b.missedHeartbeats,
                b.shutdownMaxWait, b.priority, b.prefetch, b.breakers, b.perKeyBreakers, b.cooldowns, b.buckets,
                b.patternBuckets, b.concurrencyLimits, b.breakerListeners, b.tokenCosts, b.metrics, b.history,
                b.historyArgs, b.stackTraceChars, b.timeSeries, b.notifications, b.giveBackAfter, b.virtualThreads,
                b.fairness, b.batching, new ObserveSettings(b.tracing, b.mdc, b.prices), b.interactive,
                b.schedules, b.schedulePollInterval, b.scheduleGeneration));
        this.extraTasks = List.copyOf(b.extraTasks);
        this.plugins = List.copyOf(b.plugins);
        this.historyRetention = b.history && !b.historyKeep.isZero()
                ? JobHistoryRetention.builder(b.dataSource).keep(b.historyKeep).build() : null;
        if (b.migrate) {
            LayoverMigrations.migrate(b.dataSource);
        }
        this.shutdownHook = b.shutdownHook ? new Thread(this::stop, "layover-shutdown-" + workerName) : null;
    }

    /**
     * Starts configuring a Layover instance on a database.
     *
     * @param dataSource a pool (HikariCP or any other); give it at least {@code threads + 6}
     *     connections, since each running job's outcome write and db-scheduler's polling and
     *     heartbeats need one, and a running instance keeps two to LISTEN (for new jobs and for
     *     provider state changes)
     * @return a builder
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /**
     * Starts the workers: db-scheduler begins polling for due jobs of the registered types.
     *
     * @return this instance
     * @throws IllegalStateException when already started or stopped
     */
    public synchronized Layover start() {
        if (started || stopped) {
            throw new IllegalStateException(stopped ? "this Layover instance was stopped; build a new one"
                    : "already started");
        }
        List<Task<?>> tasks = new ArrayList<>(extraTasks);
        for (LayoverPlugin p : plugins) {
            tasks.addAll(p.tasks(this));
        }
        engine.start(tasks);
        if (shutdownHook != null) {
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        }
        if (historyRetention != null) {
            historyRetention.start(workerName);
        }
        started = true;
        return this;
    }

    /**
     * Stops gracefully: no new job is picked, running jobs get up to {@code shutdownMaxWait}
     * (default 30 s) to finish, finished jobs are deleted. Jobs still queued stay in the database
     * and run later, here or on another worker. Calling it twice is harmless.
     */
    public synchronized void stop() {
        if (!started && !stopped) {
            engine.close();
        }
        if (started && !stopped) {
            if (historyRetention != null) {
                historyRetention.stop();
            }
            engine.stop();
            for (LayoverPlugin p : plugins) {
                try {
                    p.stop(this);
                } catch (RuntimeException e) {
                    org.slf4j.LoggerFactory.getLogger(Layover.class).warn("plugin {} failed to stop: {}", p, e.toString());
                }
            }
        }
        stopped = true;
        if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException | IllegalArgumentException e) {
                // the JVM is shutting down already, or the hook was never added
            }
        }
    }

    /** Same as {@link #stop()}. */
    @Override
    public void close() {
        stop();
    }

    /** @return whether workers are running */
    public boolean isRunning() {
        return started && !stopped;
    }

    /**
     * Schedules at run time: create, change, pause, resume, trigger now and delete recurring jobs,
     * per tenant, stored in {@code layover.schedules} (see {@code docs/recurring.md}). Works on an
     * instance that was built but not started (an enqueue-only client); occurrences are enqueued by
     * the started instances of the fleet whose job types include the schedule's.
     *
     * @return the handle
     */
    public dev.layover.core.schedule.Schedules schedules() {
        return engine.schedules();
    }

    /**
     * Enqueues a job to run now, with a new id (a time-ordered UUID, see {@link EnqueueOptions}).
     *
     * @param type a registered job type
     * @param args its arguments
     * @param <A> the args type
     * @return the job
     * @throws InvalidArgsException when args are null, not writable as JSON or over the size cap
     * @throws UnknownJobTypeException when the type is not registered here
     * @throws LayoverException when the database fails
     */
    public <A> Enqueued enqueue(JobType<A> type, A args) {
        return enqueue(type, args, EnqueueOptions.now());
    }

    /**
     * Enqueues a job, autocommitted on Layover's data source.
     *
     * <p>Database: one {@code INSERT} into the job table. With an idempotency key that names a live
     * job, a dead letter still {@code parked} or in {@code review}, or a job that completed within
     * the history's retention, nothing is written and the result says {@code created = false}
     * ({@link #lookup} tells where that job is). Nothing else is written at enqueue: the job
     * waits, untouched, until a pick admits it under its key's limits ({@code docs/architecture.md}).
     *
     * @param type a registered job type
     * @param args its arguments
     * @param options run time, idempotency key, priority
     * @param <A> the args type
     * @return the job
     * @throws InvalidArgsException when args are null, not writable as JSON or over the size cap
     * @throws UnknownJobTypeException when the type is not registered here
     * @throws LayoverException when the database fails
     */
    public <A> Enqueued enqueue(JobType<A> type, A args, EnqueueOptions options) {
        Enqueued e = engine.enqueuer().enqueue(null, engine.registry().require(type), args, Objects.requireNonNull(options, "options"));
        wakeIfDue(options);
        return e;
    }

    /**
     * Enqueues a job inside the caller's transaction: the insert uses {@code connection} and
     * neither commits nor closes it. If the caller rolls back, the job never existed.
     *
     * @param connection the caller's connection, in its transaction
     * @param type a registered job type
     * @param args its arguments
     * @param options run time, idempotency key, priority
     * @param <A> the args type
     * @return the job
     * @throws InvalidArgsException when args are null, not writable as JSON or over the size cap
     * @throws UnknownJobTypeException when the type is not registered here
     * @throws LayoverException when the database fails
     */
    public <A> Enqueued enqueue(Connection connection, JobType<A> type, A args, EnqueueOptions options) {
        Objects.requireNonNull(connection, "connection");
        return engine.enqueuer().enqueue(connection, engine.registry().require(type), args, Objects.requireNonNull(options, "options"));
    }

    /**
     * Enqueues many jobs to run now, with new ids (time-ordered UUIDs), 5,000 rows per
     * {@code INSERT}; the pick admits them under their keys' limits in enqueue order (fairness
     * keys aside).
     *
     * @param type a registered job type
     * @param args the arguments, one job each
     * @param <A> the args type
     * @return one result per argument, in order
     */
    public <A> List<Enqueued> enqueueBatch(JobType<A> type, List<A> args) {
        return enqueueBatch(type, args, a -> EnqueueOptions.now());
    }

    /**
     * Enqueues many jobs, 5,000 rows per {@code INSERT}, each with its own options. Arguments are
     * all checked before anything is written; an invalid one fails the whole call.
     *
     * <p>A job's options may name jobs it runs after ({@link EnqueueOptions#withAfter}): existing
     * jobs, and jobs before it in this batch (by type and id, so give those a key). The batch is
     * then one transaction: the jobs named outside it found (a live one marked), the batch
     * inserted (a job with an edge still open waiting, reason {@code dependencies}), the earlier
     * jobs named marked, and one {@code layover.job_dependencies} row per open edge. A job named
     * that does not exist, the job itself, or a job at or after it in the batch: a
     * {@link DependencyException}, nothing written.
     *
     * @param type a registered job type
     * @param args the arguments, one job each
     * @param options the options of each job (for example a key derived from its args)
     * @param <A> the args type
     * @return one result per argument, in order; {@code created = false} where a key existed
     */
    public <A> List<Enqueued> enqueueBatch(JobType<A> type, List<A> args, Function<? super A, EnqueueOptions> options) {
        List<Enqueued> out = engine.enqueuer().enqueueBatch(null, engine.registry().require(type), args, options);
        engine.wakeUp();
        return out;
    }

    /**
     * Like {@link #enqueueBatch(JobType, List, Function)}, inside the caller's transaction.
     *
     * @param connection the caller's connection, in its transaction
     * @param type a registered job type
     * @param args the arguments, one job each
     * @param options the options of each job
     * @param <A> the args type
     * @return one result per argument, in order
     */
    public <A> List<Enqueued> enqueueBatch(Connection connection, JobType<A> type, List<A> args,
            Function<? super A, EnqueueOptions> options) {
        Objects.requireNonNull(connection, "connection");
        return engine.enqueuer().enqueueBatch(connection, engine.registry().require(type), args, options);
    }

    /**
     * Enqueues a {@link Workflow}'s jobs, each after the workflow's jobs it names (its edges) and the
     * jobs its options name, in one transaction: the caller's when {@code connection} is not null
     * (neither committed nor closed; READ COMMITTED), else one of Layover's own. Per job, in the
     * workflow's order, what {@link #enqueue(Connection, JobType, Object, EnqueueOptions)} with
     * {@link EnqueueOptions#withAfter} writes: each job it runs after found (a live one marked
     * {@code has_dependents}), its insert (waiting, run time 9999-12-31, reason
     * {@code dependencies}, when it has an edge open), its {@code layover.job_dependencies} rows.
     * A job with no edge is due as its options say. No attempt is spent.
     *
     * @param connection the caller's connection in its transaction, or null for a transaction of Layover's own
     * @param workflow the jobs and their edges (checked when built: no cycle, no unknown or duplicate name)
     * @return each job by its name, in the workflow's order; {@code created = false} where its key existed
     * @throws UnknownJobTypeException when a job's type is not registered here (nothing written)
     * @throws InvalidArgsException when a job's args are null, not writable as JSON or over the size cap
     * @throws DependencyException when a job outside the workflow that a job's options name is unknown
     * @throws LayoverException when the database fails (nothing written)
     */
    public Map<String, Enqueued> enqueueWorkflow(Connection connection, Workflow workflow) {
        Objects.requireNonNull(workflow, "workflow");
        for (Workflow.Job s : workflow.jobs()) {
            engine.registry().require(s.type()); // before anything is written
        }
        Map<String, Enqueued> out = engine.enqueuer().enqueueWorkflow(connection, workflow,
                t -> engine.registry().require(t));
        if (connection == null) {
            wakeUp();
        }
        return out;
    }

    /**
     * Enqueues a group of jobs (fan-out) whose callback job runs once every member has finished
     * (fan-in), autocommitted in one transaction of its own. See {@link GroupOptions} and
     * {@code docs/composition.md}.
     *
     * <p>Database, in one transaction: one row of {@code layover.groups}; the callback job, an
     * ordinary job of {@code group.callbackType()} whose id is the group's id, waiting (run time
     * 9999-12-31, reason {@code group}); the members as {@link #enqueueBatch} inserts them (5,000
     * rows per statement), each with its {@code layover.group_members} row in the same statement.
     * Members keep every Layover behaviour (keys, limits, fair share, steps, retries, parking). When
     * the last member ends (done, or its dead letter discarded), the transaction that writes that end
     * makes the callback due ({@code layover.group_settle}), once; a parked member holds the group
     * open until it is replayed and done, or discarded. A group sealed at creation with no member
     * is released at once.
     *
     * @param group the callback, policy, seal and id
     * @param type the members' job type (registered here)
     * @param args the members' arguments, one job each
     * @param <C> the callback's args type
     * @param <A> the members' args type
     * @return the group, its callback and its members
     * @throws UnknownJobTypeException when the callback's or the members' job type is not registered here
     * @throws InvalidArgsException when an argument is null, not writable as JSON or over the size cap
     * @throws GroupException when a job of the callback's type has the group's id already
     * @throws LayoverException when the database fails (nothing written)
     */
    public <C, A> EnqueuedGroup enqueueGroup(GroupOptions<C> group, JobType<A> type, List<A> args) {
        return enqueueGroup(null, group, type, args, a -> EnqueueOptions.now());
    }

    /**
     * Like {@link #enqueueGroup(GroupOptions, JobType, List)}, each member with its own options, in the
     * caller's transaction when {@code connection} is not null (neither committed nor closed: if the
     * caller rolls back, the group never existed).
     *
     * @param connection the caller's connection in its transaction, or null for a transaction of Layover's own
     * @param group the callback, policy, seal and id
     * @param type the members' job type
     * @param args the members' arguments
     * @param options each member's options
     * @param <C> the callback's args type
     * @param <A> the members' args type
     * @return the group
     */
    public <C, A> EnqueuedGroup enqueueGroup(Connection connection, GroupOptions<C> group, JobType<A> type,
            List<A> args, Function<? super A, EnqueueOptions> options) {
        Objects.requireNonNull(group, "group");
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(options, "options");
        EnqueuedGroup g = engine.enqueuer().enqueueGroup(connection, group, engine.registry().require(group.callbackType()),
                engine.registry().require(type), args, options);
        if (connection == null) {
            wakeUp();
        }
        return g;
    }

    /**
     * Adds members to a group made {@link GroupOptions#open()} and not sealed yet, in one
     * transaction under the group's advisory lock (a seal at the same time waits for it).
     *
     * @param connection the caller's connection in its transaction, or null for a transaction of Layover's own
     * @param groupId the group's id
     * @param type the members' job type
     * @param args the members' arguments
     * @param options each member's options
     * @param <A> the members' args type
     * @return one per argument, in order
     * @throws GroupException when no group has that id, or it is sealed (nothing written)
     */
    public <A> List<Enqueued> addToGroup(Connection connection, String groupId, JobType<A> type, List<A> args,
            Function<? super A, EnqueueOptions> options) {
        Objects.requireNonNull(groupId, "groupId");
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(options, "options");
        List<Enqueued> out = engine.enqueuer().addToGroup(connection, groupId, engine.registry().require(type), args,
                options);
        if (connection == null) {
            wakeUp();
        }
        return out;
    }

    /**
     * Seals a group: no member can be added any more; when every member has ended already, its
     * callback is made due in this call's transaction. Sealing a sealed group does nothing.
     *
     * @param connection the caller's connection in its transaction, or null for a transaction of Layover's own
     * @param groupId the group's id
     * @return true when this call sealed it
     * @throws GroupException when no group has that id
     */
    public boolean sealGroup(Connection connection, String groupId) {
        boolean sealed = engine.enqueuer().sealGroup(connection, Objects.requireNonNull(groupId, "groupId"));
        if (connection == null) {
            wakeUp();
        }
        return sealed;
    }

    /** The largest signal payload {@link #signal} sends, in characters of JSON: 262,144 (256 Ki). */
    public static final int MAX_SIGNAL_PAYLOAD_CHARS = 256 * 1024;

    /**
     * Sends a signal to a job waiting for it ({@link JobContext#awaitSignal}): the payload is
     * stored with the job's wait and the job is made due; its next run gets it. Same as
     * {@code SELECT layover.signal(job_type, job_id, name, payload::jsonb)}.
     *
     * <p>Database: one call of {@code layover.signal} (one {@code UPDATE} of the job's step in
     * {@code layover.job_steps}, one of its job row), autocommitted.
     *
     * @param jobType the job's type
     * @param jobId the job's id
     * @param name the signal's name
     * @param payload anything Jackson writes as JSON, or null
     * @throws SignalException when no such job waits for a signal of that name (it never asked,
     *     timed out, or was signalled already): nothing written
     * @throws InvalidArgsException when the payload cannot be written as JSON, or is over
     *     {@link #MAX_SIGNAL_PAYLOAD_CHARS} characters of it
     */
    public void signal(String jobType, String jobId, String name, Object payload) {
        Objects.requireNonNull(jobType, "jobType");
        Objects.requireNonNull(jobId, "jobId");
        Objects.requireNonNull(name, "name");
        String json;
        try {
            json = payload == null ? null : dev.layover.core.internal.jobs.ArgsCodec.defaultMapper()
                    .writeValueAsString(payload);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new InvalidArgsException("the payload of signal '" + name + "' cannot be written as JSON: "
                    + e.getOriginalMessage(), e);
        }
        if (json != null && json.length() > MAX_SIGNAL_PAYLOAD_CHARS) {
            throw new InvalidArgsException("the payload of signal '" + name + "' is " + json.length()
                    + " characters of JSON, over the " + MAX_SIGNAL_PAYLOAD_CHARS + " a signal carries: store it "
                    + "elsewhere and send a reference");
        }
        if (!engine.store().signal(jobType, jobId, name, json)) {
            throw new SignalException("no " + jobType + " job with the id '" + jobId + "' waits for signal '" + name
                    + "' (it never asked, its wait timed out, or it was signalled already)");
        }
        wakeUp();
    }

    /**
     * Asks this JVM's workers to look for due jobs now instead of at the next poll. Enqueue calls
     * it by itself; code that inserts jobs another way (a replay) may call it. Does nothing when
     * the workers are not running.
     */
    public void wakeUp() {
        if (isRunning()) {
            engine.wakeUp();
        }
    }

    /**
     * @param name a job type name
     * @return the registered job type of that name
     */
    public Optional<JobType<?>> jobType(String name) {
        Registry.Entry<?> e = engine.registry().get(name);
        return e == null ? Optional.empty() : Optional.of(e.type());
    }

    /** @return the registered job types, in registration order */
    public List<JobType<?>> jobTypes() {
        List<JobType<?>> out = new ArrayList<>();
        engine.registry().entries().forEach(e -> out.add(e.type()));
        return out;
    }

    /**
     * Checks arguments given as JSON (for example edited in the replay console) against a job
     * type: they must read as its args type and fit the size cap.
     *
     * @param jobType a job type name
     * @param json the arguments as JSON text
     * @return the arguments as Jackson writes them back
     * @throws UnknownJobTypeException when no job type has that name here
     * @throws InvalidArgsException with Jackson's explanation when they do not read
     */
    public byte[] validateArgs(String jobType, String json) {
        Registry.Entry<?> e = engine.registry().get(jobType);
        if (e == null) {
            throw new UnknownJobTypeException(jobType, "job type '" + jobType + "' is not registered here");
        }
        return e.codec().validate(json);
    }

    /**
     * Where a job is, by its job type and id (its idempotency key when enqueued with one): queued,
     * running, rescheduled or retrying; parked, in review, replayed, discarded or cancelled; or
     * completed, with what its handler returned ({@code Outcome.done(result)}). One read of the
     * documented views; a finished job is known for the history's retention (7 days by default;
     * with history off, only while it is live or a dead letter).
     *
     * @param jobType the job type name
     * @param id the job id
     * @return where it is, or empty when no view knows it
     * @throws LayoverException when the database fails
     */
    public Optional<JobStatus> lookup(String jobType, String id) {
        return new JobLookup(engine.db()).find(Objects.requireNonNull(jobType, "jobType"), Objects.requireNonNull(id, "id"));
    }

    /** @return the data source Layover uses */
    public DataSource dataSource() {
        return dataSource;
    }

    /**
     * The metrics this instance reports to ({@link Builder#metrics}; none by default). Plugins
     * report through it too (the dead-letter store counts its replays here). Exceptions thrown by
     * the application's implementation are caught and logged.
     *
     * @return the metrics, never null
     */
    public LayoverMetrics metrics() {
        return engine.metrics();
    }

    /**
     * The fleet-wide provider state (breakers, cooldowns, buckets) for operators: force a breaker
     * open or closed, read it, listen to its changes.
     *
     * @return the provider state handle of this instance
     */
    public ProviderStates providerStates() {
        return engine.providerStates();
    }

    /**
     * Provider calls made outside jobs (a web request's chat answer), admitted by the same
     * fleet-wide state as the jobs of their key, first: while they arrive, background jobs leave a
     * share of each key's bucket free for them ({@link Builder#interactive(InteractiveSettings)}).
     * Works in an instance that was never started too (the state rows the workers wrote decide);
     * its calls are counted in the time series only while it is started. See
     * {@code docs/interactive.md}.
     *
     * @return the interactive calls' handle of this instance
     */
    public InteractiveCalls interactive() {
        return engine.interactive();
    }

    /**
     * Operators' control: cancel a job, pause and resume a job type or a key (see
     * {@code docs/admission-and-control.md}). Works in an instance that was never started too.
     *
     * @return the control handle of this instance
     */
    public JobControl control() {
        return engine.control();
    }

    /**
     * Waits until jobs that finished are deleted from the table (they are deleted in batches in
     * the background); useful in tests before asserting with SQL.
     *
     * @param timeout the longest wait
     * @return true when nothing is pending
     */
    public boolean awaitCompletions(Duration timeout) {
        return engine.awaitCompleted(timeout);
    }

    private void wakeIfDue(EnqueueOptions options) {
        if (started && options.runAt() == null && options.delay() == null) {
            engine.wakeUp();
        }
    }

    private static String defaultWorkerName() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = "unknown-host";
        }
        String pid = String.valueOf(ProcessHandle.current().pid());
        String name = host + "#" + pid;
        if (name.length() > 50) {
            name = host.substring(0, Math.max(1, 49 - pid.length())) + "#" + pid;
        }
        return name;
    }

    /**
     * Configures a {@link Layover} instance. Every setting has a default.
     *
     * <table>
     *   <caption>Settings and defaults</caption>
     *   <tr><th>setting</th><th>default</th></tr>
     *   <tr><td>{@link #threads(int)}</td><td>10 worker threads</td></tr>
     *   <tr><td>{@link #virtualThreads(boolean)}</td><td>off: platform threads (on: virtual
     *       threads, Java 21+)</td></tr>
     *   <tr><td>{@link #fairness(FairnessSettings)}</td><td>{@link FairnessSettings#defaults()}:
     *       0.1 of each key's admissions reserved for lower priorities, every fairness key weighs 1</td></tr>
     *   <tr><td>{@link #pollInterval(Duration)}</td><td>1 s (a job enqueued in this JVM wakes the
     *       workers at once)</td></tr>
     *   <tr><td>{@link #heartbeat(Duration, int)}</td><td>every 5 s; dead after 8 missed (40 s)</td></tr>
     *   <tr><td>{@link #schedule(dev.layover.core.schedule.Schedule)}</td><td>none: recurring jobs defined in
     *       code, reconciled with {@code layover.schedules} at start</td></tr>
     *   <tr><td>{@link #schedulePollInterval(Duration)}</td><td>1 s: the scheduler loop's poll</td></tr>
     *   <tr><td>{@link #scheduleGeneration(long)}</td><td>0: the last instance to start writes the code
     *       schedules</td></tr>
     *   <tr><td>{@link #shutdownMaxWait(Duration)}</td><td>30 s</td></tr>
     *   <tr><td>{@link #workerName(String)}</td><td>host#pid (shown as {@code picked_by})</td></tr>
     *   <tr><td>{@link #maxArgsBytes(int)}</td><td>256 KiB</td></tr>
     *   <tr><td>{@link #migrate(boolean)}</td><td>true: run {@link LayoverMigrations} at build</td></tr>
     *   <tr><td>{@link #enablePriority()}</td><td>off: due jobs run oldest first</td></tr>
     *   <tr><td>{@link #objectMapper(ObjectMapper)}</td><td>Layover's: Java time, Optional; a
     *       property added by a newer version is ignored, a rename refused (see
     *       {@code JobType.Builder#objectMapper})</td></tr>
     *   <tr><td>{@link #breakers(BreakerSettings)}</td><td>{@link BreakerSettings#defaults()}: opens
     *       on 5 failures making half of at least 10 calls within 60 s; open 30 s doubling to
     *       10 min</td></tr>
     *   <tr><td>{@link #cooldowns(CooldownSettings)}</td><td>{@link CooldownSettings#defaults()}</td></tr>
     *   <tr><td>{@link #bucket(String, BucketSettings)}</td><td>none: no admission limit</td></tr>
     *   <tr><td>{@link #concurrencyLimit(String, int)}</td><td>none: no limit on calls in flight</td></tr>
     *   <tr><td>{@link #interactive(InteractiveSettings)}</td><td>{@link InteractiveSettings#defaults()}:
     *       0.25 of each key's bucket left free for interactive calls, while one came within 1 s</td></tr>
     *   <tr><td>{@link #metrics(LayoverMetrics)}</td><td>none: nothing
     *       measured, no sampling query</td></tr>
     *   <tr><td>{@link #tracing(LayoverTracing)}</td><td>none: no span, no trace context stored</td></tr>
     *   <tr><td>{@link #mdc(boolean)}</td><td>on: a run's job type, id, attempt, provider key (and
     *       trace id) in the SLF4J MDC</td></tr>
     *   <tr><td>{@link #prices(Prices)}</td><td>none: token costs unknown</td></tr>
     *   <tr><td>{@link #history(boolean)}</td><td>on: every finished job gets a row in
     *       {@code layover.job_history}</td></tr>
     *   <tr><td>{@link #historyArgs(boolean)}</td><td>off: history rows keep no args</td></tr>
     *   <tr><td>{@link #historyRetention(Duration)}</td><td>7 days</td></tr>
     *   <tr><td>{@link #stackTraceChars(int)}</td><td>4,000: each failed attempt keeps its stack
     *       trace, masked, in its {@code errors} entry</td></tr>
     *   <tr><td>{@link #timeSeries(boolean)}</td><td>on: counters flushed every 10 s to
     *       {@code layover.time_series}; 10-second rows kept 1 hour, minute and hour rows 7 days</td></tr>
     * </table>
     *
     * <p>Provider state (see {@code docs/provider-state.md}): every job whose type has a provider
     * key is checked before its handler runs against the key's fleet-wide cooldown
     * ({@code layover.cooldowns}), circuit breaker ({@code layover.breakers}) and, when configured,
     * rate bucket ({@code layover.buckets}); the outcome of the call updates them.
     */
    public static final class Builder {
        private final DataSource dataSource;
        private final List<JobType<?>> types = new ArrayList<>();
        private final List<Task<?>> extraTasks = new ArrayList<>();
        private final List<LayoverPlugin> plugins = new ArrayList<>();
        private int threads = 10;
        private Duration pollInterval = Duration.ofSeconds(1);
        private Duration heartbeatInterval = Duration.ofSeconds(5);
        private int missedHeartbeats = 8;
        private Duration shutdownMaxWait = Duration.ofSeconds(30);
        private String workerName;
        private int maxArgsBytes = 256 * 1024;
        private boolean migrate = true;
        private boolean priority;
        private double prefetch; // 0: adaptive
        private ObjectMapper objectMapper;
        private Function<Throwable, Optional<Outcome>> classifier;
        private BreakerSettings breakers = BreakerSettings.defaults();
        private InteractiveSettings interactive = InteractiveSettings.defaults();
        private final Map<String, BreakerSettings> perKeyBreakers = new LinkedHashMap<>();
        private CooldownSettings cooldowns = CooldownSettings.defaults();
        private final Map<String, BucketSettings> buckets = new LinkedHashMap<>();
        private final Map<String, BucketSettings> patternBuckets = new LinkedHashMap<>();
        private final Map<String, Integer> concurrencyLimits = new LinkedHashMap<>();
        private final List<BreakerListener> breakerListeners = new ArrayList<>();
        private final Map<String, ToLongFunction<Object>> tokenCosts = new LinkedHashMap<>();
        private LayoverMetrics metrics = LayoverMetrics.none();
        private LayoverTracing tracing = LayoverTracing.none();
        private boolean mdc = true;
        private Prices prices = Prices.none();
        private boolean history = true;
        private boolean historyArgs;
        private Duration historyKeep = JobHistoryRetention.DEFAULT_KEEP;
        private int stackTraceChars = DEFAULT_STACK_TRACE_CHARS;
        private TimeSeriesSettings timeSeries = TimeSeriesSettings.DEFAULTS;
        private Clock clock;
        private boolean notifications = true;
        private boolean shutdownHook;
        private Duration giveBackAfter = Duration.ofSeconds(2);
        private boolean virtualThreads;
        private FairnessSettings fairness = FairnessSettings.defaults();
        private final Map<String, BatchSettings> batching = new LinkedHashMap<>();
        private final List<dev.layover.core.schedule.Schedule<?>> schedules = new ArrayList<>();
        private Duration schedulePollInterval = Duration.ofSeconds(1);
        private long scheduleGeneration;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /**
         * Registers job types this instance enqueues and runs.
         *
         * @param jobTypes the job types; names must be unique
         * @return this builder
         */
        public Builder register(JobType<?>... jobTypes) {
            for (JobType<?> t : jobTypes) {
                types.add(Objects.requireNonNull(t, "job type"));
            }
            return this;
        }

        /**
         * Registers job types this instance enqueues and runs.
         *
         * @param jobTypes the job types; names must be unique
         * @return this builder
         */
        public Builder register(Collection<? extends JobType<?>> jobTypes) {
            jobTypes.forEach(this::register);
            return this;
        }

        /**
         * How many jobs this instance runs at once: its worker threads, platform threads by default,
         * virtual threads with {@link #virtualThreads(boolean)} (then still at most {@code n} jobs at
         * once: {@code n} is the bound on running jobs, not a number of OS threads). db-scheduler
         * picks by it: up to {@link #prefetch} × {@code n} jobs at a time, those beyond {@code n}
         * waiting for a thread.
         *
         * @param n worker threads, 1 or more; default 10
         * @return this builder
         */
        public Builder threads(int n) {
            if (n < 1) {
                throw new ConfigurationException("threads must be at least 1, was " + n);
            }
            this.threads = n;
            return this;
        }

        /**
         * Whether handlers run on virtual threads (Java 21 and newer): db-scheduler's execution pool
         * becomes a fixed pool of {@link #threads} virtual threads instead of platform threads. Still
         * at most {@code threads} jobs run at once and jobs picked ahead wait for one of them, as
         * before; what changes is the cost of a job blocked on I/O (a slow provider call): a parked
         * virtual thread holds a small stack on the heap instead of an OS thread and its native stack,
         * so {@code threads(1000)} for 1,000 calls in flight is cheap (docs/benchmarks.md, section
         * "Slow calls in flight"). Layover's own threads (polling, heartbeats, the completer) stay
         * platform threads. On Java 21 to 23 a handler that blocks inside {@code synchronized} pins
         * its carrier thread (Java 24 lifted that, JEP 491). No database effect; it only configures
         * this JVM. Java 17 stays the baseline: there, {@link #build()} (and {@link #start()}) with
         * {@code virtualThreads(true)} throw a {@link ConfigurationException} saying so, before
         * anything is migrated or started.
         *
         * @param on default false (platform threads)
         * @return this builder
         */
        public Builder virtualThreads(boolean on) {
            this.virtualThreads = on;
            return this;
        }

        /**
         * @param d how often workers look for due jobs when nothing wakes them; default 1 s
         * @return this builder
         */
        public Builder pollInterval(Duration d) {
            this.pollInterval = positive(d, "pollInterval");
            return this;
        }

        /**
         * How often a running job's heartbeat is written, and how many may be missed before the
         * job is declared dead and retried elsewhere (an attempt spent). Default 5 s and 8: a
         * killed worker's jobs run again within about a minute. Hazard: a worker that cannot
         * write heartbeats for that long (a long GC pause, a lost database) has its jobs run
         * twice.
         *
         * @param interval the heartbeat interval
         * @param missed heartbeats missed before dead, at least 4 (db-scheduler's minimum)
         * @return this builder
         */
        public Builder heartbeat(Duration interval, int missed) {
            this.heartbeatInterval = positive(interval, "heartbeat interval");
            if (missed < 4) {
                throw new ConfigurationException("missed heartbeats must be at least 4, was " + missed);
            }
            this.missedHeartbeats = missed;
            return this;
        }

        /**
         * How many jobs a worker holds at a time (running, or picked and waiting for a thread), as
         * a multiple of its threads, fixed. Default: not fixed but adaptive, following the handler
         * durations this worker observes (a moving average): below 10 ms, 60 ms of jobs per
         * thread, up to 64 × {@code threads} and 1,024 jobs (unless 6 × {@code threads} is more)
         * and no more than the jobs run in a row without waiting for their provider;
         * 6 × {@code threads} for jobs of 10 ms, falling with the logarithm of the duration to 1 ×
         * {@code threads} for jobs of 1 s and more; 1 before the first job has ended. Picking ahead
         * is what makes short jobs fast (fewer, larger picks, the next one taken while half of the
         * last is still to run: docs/benchmarks.md); for multi-second calls a job
         * waiting in memory behind a busy thread waits that call's duration while another worker
         * may be idle, so the adaptive factor holds none beyond the threads (and a burst picked
         * while the last jobs were short is given back as soon as every thread has run a call for
         * a second: {@link #giveBackAfter}). Jobs held beyond the threads are kept alive by the
         * worker's bulk heartbeat (never taken for dead), and those still waiting after {@link
         * #giveBackAfter} are given back. Database effect: the size of each pick (one {@code
         * UPDATE .. RETURNING} of up to {@code factor × threads − held} rows), and, while the
         * adaptive picks come back full, a pick as threads free (or as half of a full pick has
         * run) instead of when half of the threads are idle.
         * Fixed 1: an idle JVM never waits for jobs another holds; fixed 4 to 6: short jobs only.
         *
         * @param factor 1 to 10; default adaptive (1 to 64)
         * @return this builder
         */
        public Builder prefetch(double factor) {
            if (factor < 1 || factor > 10) {
                throw new ConfigurationException("prefetch must be between 1 and 10, was " + factor);
            }
            this.prefetch = factor;
            return this;
        }

        /**
         * @param d how long {@link Layover#stop()} lets running jobs finish; default 30 s
         * @return this builder
         */
        public Builder shutdownMaxWait(Duration d) {
            this.shutdownMaxWait = positive(d, "shutdownMaxWait");
            return this;
        }

        /**
         * @param name this worker's name in {@code picked_by}, at most 50 characters; default host#pid
         * @return this builder
         */
        public Builder workerName(String name) {
            if (name == null || name.isBlank() || name.length() > 50) {
                throw new ConfigurationException("workerName must be 1-50 characters");
            }
            this.workerName = name;
            return this;
        }

        /**
         * @param bytes the largest args accepted, as JSON bytes; default 262144 (256 KiB)
         * @return this builder
         */
        public Builder maxArgsBytes(int bytes) {
            if (bytes < 16) {
                throw new ConfigurationException("maxArgsBytes must be at least 16, was " + bytes);
            }
            this.maxArgsBytes = bytes;
            return this;
        }

        /**
         * @param migrate whether {@link #build()} applies Layover's migrations; default true. Turn
         *     it off when migrations run from your own Flyway or a deploy step.
         * @return this builder
         */
        public Builder migrate(boolean migrate) {
            this.migrate = migrate;
            return this;
        }

        /**
         * Due jobs run highest {@code priority} first, instead of oldest first.
         *
         * @return this builder
         */
        public Builder enablePriority() {
            this.priority = true;
            return this;
        }

        /**
         * @param mapper the Jackson mapper for job types without their own
         * @return this builder
         */
        public Builder objectMapper(ObjectMapper mapper) {
            this.objectMapper = Objects.requireNonNull(mapper, "mapper");
            return this;
        }

        /**
         * How exceptions escaping handlers become outcomes. Default: a {@link ProviderClassifier}
         * on this instance's clock ({@link #clock}), which classifies provider SDK exceptions
         * (openai-java, anthropic-java, google-genai, AWS SDK v2 Bedrock) and JDK network errors;
         * an empty answer means the job's own error (retried, {@code job_error} when exhausted).
         *
         * @param classifier returns the outcome of an exception, or empty for "the job's own error"
         * @return this builder
         */
        public Builder exceptionClassifier(Function<Throwable, Optional<Outcome>> classifier) {
            this.classifier = Objects.requireNonNull(classifier, "classifier");
            return this;
        }

        /**
         * How background jobs share provider keys with interactive calls ({@link Layover#interactive()}):
         * while a key's interactive calls arrive, the pick leaves {@link InteractiveSettings#share()}
         * of its bucket free for them, and takes it back {@link InteractiveSettings#window()} after
         * they stop. Database: each interactive call stamps its key's {@code layover.buckets.interactive_at}.
         * Give every instance of the fleet the same settings.
         *
         * @param settings the settings; default {@link InteractiveSettings#defaults()}
         * @return this builder
         */
        public Builder interactive(InteractiveSettings settings) {
            this.interactive = Objects.requireNonNull(settings, "interactive");
            return this;
        }

        /**
         * The circuit breaker settings of every provider key without its own. Database: breakers
         * live in {@code layover.breakers}, one row per key, shared by the fleet.
         *
         * @param settings the settings; default {@link BreakerSettings#defaults()}
         * @return this builder
         */
        public Builder breakers(BreakerSettings settings) {
            this.breakers = Objects.requireNonNull(settings, "settings");
            return this;
        }

        /**
         * The circuit breaker settings of one provider key.
         *
         * @param providerKey the key
         * @param settings its settings
         * @return this builder
         */
        public Builder breaker(String providerKey, BreakerSettings settings) {
            perKeyBreakers.put(Objects.requireNonNull(providerKey, "providerKey"), Objects.requireNonNull(settings, "settings"));
            return this;
        }

        /**
         * How long provider keys cool down when the provider named no wait. Database:
         * {@code layover.cooldowns}, one row per key.
         *
         * @param settings the settings; default {@link CooldownSettings#defaults()}
         * @return this builder
         */
        public Builder cooldowns(CooldownSettings settings) {
            this.cooldowns = Objects.requireNonNull(settings, "settings");
            return this;
        }

        /**
         * Lets the batchable jobs ({@code JobType.Builder#batchable}) of a provider key, or of every
         * key matching a {@code prefix*} pattern (the longest matching pattern wins), go to the
         * provider's batch tier: deferrable ones are gathered into batches that this instance's
         * batch loop (a thread of its own, started with the scheduler) seals, submits through
         * {@link BatchSettings#transport()}, polls and collects, sharing the work with every other
         * instance through {@code layover.batches}. Jobs of keys without batching are called
         * directly. See {@code docs/batches.md}. Default: none.
         *
         * @param keyOrPattern a provider key, or a {@code prefix*} pattern
         * @param settings the transport and timing
         * @return this builder
         * @throws ConfigurationException for a blank key
         */
        public Builder batching(String keyOrPattern, BatchSettings settings) {
            Objects.requireNonNull(keyOrPattern, "keyOrPattern");
            if (keyOrPattern.isBlank()) {
                throw new ConfigurationException("batching needs a provider key or a prefix* pattern");
            }
            batching.put(keyOrPattern, Objects.requireNonNull(settings, "settings"));
            return this;
        }

        /**
         * How a provider key's admissions are shared among the fairness keys of its jobs
         * ({@code JobType.Builder#fairnessKey}, {@code docs/fairness.md}): the share reserved for
         * lower priorities, the weights. Database: the weights are written to
         * {@code layover.fairness_weights} at {@link #start()} (an operator's weight set at run
         * time is kept); the fair queue is the jobs' {@code fair_tag} (given at enqueue) and each
         * key's clocks in {@code layover.fair_lines} (moved by the pick).
         *
         * @param settings the settings; default {@link FairnessSettings#defaults()} (0.1, every weight 1)
         * @return this builder
         */
        public Builder fairness(FairnessSettings settings) {
            this.fairness = Objects.requireNonNull(settings, "settings");
            return this;
        }

        /**
         * The weight of a fairness key, or of every key matching a pattern with {@code *}
         * ({@code "tenant:premium-*"}; the longest matching pattern wins): while several
         * fairness keys of one provider key have waiting jobs, each gets the key's permits in
         * proportion to its weight. Default 1. Same as {@code fairness(settings.withWeight(..))}.
         *
         * @param pattern a fairness key or a pattern
         * @param weight its weight, in (0, 1,000,000]
         * @return this builder
         */
        public Builder fairnessWeight(String pattern, double weight) {
            this.fairness = fairness.withWeight(pattern, weight);
            return this;
        }

        /**
         * An admission limit shared by the fleet for one provider key (also a fallback endpoint's
         * key). Database: {@link #start()} writes the limits to {@code layover.buckets}; permits
         * are taken from that row. Every instance calling the key should configure the same limit.
         * The key may also be a limit key ({@code JobType.Builder#limitKeys}, e.g. a tenant), an API
         * key pool's key ({@code openai#team-a}), or a {@code prefix*} pattern: every key starting
         * with the prefix gets a bucket of its own, written when a worker first meets it (see
         * {@code docs/admission-and-control.md}).
         *
         * @param providerKey the key
         * @param settings the limit
         * @return this builder
         */
        public Builder bucket(String providerKey, BucketSettings settings) {
            Objects.requireNonNull(providerKey, "providerKey");
            Objects.requireNonNull(settings, "settings");
            if (Limits.isPattern(providerKey)) {
                // a bucket for every key matching the pattern (limit keys: docs/admission-and-control.md)
                patternBuckets.put(pattern(providerKey), settings);
            } else {
                buckets.put(providerKey, settings);
            }
            return this;
        }

        /**
         * A fleet-wide concurrency limit: at most {@code maxInFlight} jobs of the key run at once
         * across every JVM. The key is a provider key or a limit key ({@code JobType.Builder#limitKeys});
         * a key ending in {@code *} is a pattern: every key starting with what precedes the
         * {@code *} gets a limit of its own ({@code concurrencyLimit("tenant:*", 2)}: two per
         * tenant). An exact key wins over a pattern, a longer pattern over a shorter one. A job
         * that finds no free slot is held a little (100 ms doubling to 2 s, jittered), without an
         * attempt and without counting as a reschedule, reason {@code concurrency}. Database:
         * {@code layover.concurrency_limits} and {@code _slots}, written when a worker first meets
         * the key; every instance should configure the same limit. See
         * {@code docs/admission-and-control.md}.
         *
         * @param key the key or {@code prefix*} pattern
         * @param maxInFlight at least 1
         * @return this builder
         */
        public Builder concurrencyLimit(String key, int maxInFlight) {
            Objects.requireNonNull(key, "key");
            if (maxInFlight < 1) {
                throw new ConfigurationException("a concurrency limit must be at least 1, was " + maxInFlight);
            }
            concurrencyLimits.put(Limits.isPattern(key) ? pattern(key) : key, maxInFlight);
            return this;
        }

        private static String pattern(String key) {
            if (key.length() < 2 || key.indexOf('*') != key.length() - 1) {
                throw new ConfigurationException("a key pattern is a prefix followed by one '*' (for example "
                        + "'tenant:*'), was '" + key + "'");
            }
            return key;
        }

        /**
         * A token estimate for each job of a type, one number counted in full against every token
         * dimension of its key's bucket (see {@code docs/tokens.md}). The one-line form that
         * separates input from the output ceiling is {@code JobType.Builder#tokenEstimate}, which
         * wins when a type has both. A negative result reserves nothing (a warning names the type),
         * one above 10^9 parks the job as too large. Jobs of types without either reserve no tokens.
         *
         * @param type a job type registered with this builder
         * @param tokens the estimate, from the job's args
         * @param <A> the args type
         * @return this builder
         */
        @SuppressWarnings("unchecked")
        public <A> Builder tokenCost(JobType<A> type, ToLongFunction<? super A> tokens) {
            Objects.requireNonNull(tokens, "tokens");
            tokenCosts.put(Objects.requireNonNull(type, "type").name(), a -> tokens.applyAsLong((A) a));
            return this;
        }

        /**
         * Adds a listener for breaker state changes (also possible later, with
         * {@code providerStates().addListener}).
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder breakerListener(BreakerListener listener) {
            breakerListeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * Adds a plugin: its tasks run in this instance's scheduler once it starts (see {@link
         * LayoverPlugin}).
         *
         * @param plugin the plugin
         * @return this builder
         */
        public Builder plugin(LayoverPlugin plugin) {
            plugins.add(Objects.requireNonNull(plugin, "plugin"));
            return this;
        }

        /**
         * Where this instance reports its metrics (see {@code docs/observability.md}): counters
         * of jobs and provider calls, timers of job runs, and gauges of the queue and the
         * provider state. With Micrometer: {@code metrics(MicrometerMetrics.of(registry))}.
         * Micrometer is an optional dependency; without this call none of it is loaded.
         *
         * @param metrics the metrics; default {@link LayoverMetrics#none()}
         * @return this builder
         */
        public Builder metrics(LayoverMetrics metrics) {
            this.metrics = Objects.requireNonNull(metrics, "metrics");
            return this;
        }

        /**
         * Where this instance reports its traces (see {@code docs/observability.md#traces}): an
         * enqueue inside a span stores that span's W3C trace context with the job, and each run of a
         * job is a span linked to it. With OpenTelemetry:
         * {@code tracing(OpenTelemetryTracing.of(openTelemetry))}, or
         * {@code OpenTelemetryTracing.global()} (the Java agent's). The OpenTelemetry API is an
         * optional dependency; without this call none of it is loaded.
         *
         * <p>Database: an enqueue inside a span writes {@code trace_context} with the job (same
         * {@code INSERT}); each pick reads its jobs' {@code trace_context} and {@code reschedules}
         * (one more statement per pick).
         *
         * @param tracing the tracing; default {@link LayoverTracing#none()}
         * @return this builder
         */
        public Builder tracing(LayoverTracing tracing) {
            this.tracing = Objects.requireNonNull(tracing, "tracing");
            return this;
        }

        /**
         * Whether a run puts its job into the SLF4J MDC while it runs, so the handler's log lines
         * and Layover's can be found together: {@code layover.job_type}, {@code layover.job_id},
         * {@code layover.attempt}, {@code layover.provider_key}, and with tracing {@code trace_id}
         * and {@code span_id}; restored when the run's outcome is written. No database effect.
         *
         * @param on default true
         * @return this builder
         */
        public Builder mdc(boolean on) {
            this.mdc = on;
            return this;
        }

        /**
         * The price table of the models this application's jobs call ({@link Prices}), written to
         * {@code layover.model_prices} when this instance starts; it prices the token counts of the
         * time series in {@code layover.token_costs} and on the console. Layover ships no prices.
         *
         * @param prices the prices; default {@link Prices#none()} (nothing written, costs unknown)
         * @return this builder
         */
        public Builder prices(Prices prices) {
            this.prices = Objects.requireNonNull(prices, "prices");
            return this;
        }

        /**
         * Whether every job that finishes (completed or parked; cancelled too) gets a row in
         * {@code layover.job_history}: its outcome, attempts, reschedules, run start and duration,
         * worker, provider key and fallback trail. The row is written by the statement that
         * removes the job (no extra round trip), and deleted after {@link #historyRetention}.
         * Off: no row is written and no retention runs (rows written before stay until you
         * delete them).
         *
         * @param on default true
         * @return this builder
         */
        public Builder history(boolean on) {
            this.history = on;
            return this;
        }

        /**
         * Whether history rows keep the job's args (jsonb), answering "with what did job X run?".
         * Costs the size of the args per finished job.
         *
         * @param on default false
         * @return this builder
         */
        public Builder historyArgs(boolean on) {
            this.historyArgs = on;
            return this;
        }

        /**
         * How long rows of {@code layover.job_history} are kept: while this instance runs, a
         * background thread (see {@link JobHistoryRetention}) deletes
         * older ones when it starts and every 10 minutes; the instances of a cluster share the
         * work, and it adds no row to the job table. {@link Duration#ZERO}: no retention (rows
         * stay until you delete them). Give every instance of the cluster the same period.
         *
         * @param keep positive, or zero for no retention; default 7 days
         * @return this builder
         */
        public Builder historyRetention(Duration keep) {
            Objects.requireNonNull(keep, "keep");
            if (keep.isNegative()) {
                throw new ConfigurationException("historyRetention must not be negative, was " + keep);
            }
            this.historyKeep = keep;
            return this;
        }

        /** The default of {@link #stackTraceChars(int)}. */
        public static final int DEFAULT_STACK_TRACE_CHARS = 4000;
        /** The default of {@link #timeSeriesFlushInterval(Duration)}: 10 s. */
        public static final Duration DEFAULT_TIME_SERIES_FLUSH = TimeSeriesSettings.DEFAULTS.flushEvery();
        /** The default retention of 10-second time series rows ({@link #timeSeriesRetention}): 1 hour. */
        public static final Duration DEFAULT_TIME_SERIES_KEEP_TEN_SECOND = TimeSeriesSettings.DEFAULTS.keepTenSecond();
        /** The default retention of one-minute time series rows ({@link #timeSeriesRetention}): 7 days. */
        public static final Duration DEFAULT_TIME_SERIES_KEEP_MINUTE = TimeSeriesSettings.DEFAULTS.keepMinute();

        /**
         * How many characters of a failed attempt's stack trace are stored: the exception that
         * failed it (a handler's, or an SDK's the classifier turned into an outcome) is rendered
         * like {@code printStackTrace} with its {@code Caused by:} chain, frames trimmed (fewer
         * frames per cause when the cap is near, so the causes stay), secrets masked (API keys
         * such as {@code sk-...}, {@code Bearer} tokens, {@code key=...} query parameters,
         * sensitive {@code name=value} pairs), and kept as {@code stack_trace} in the attempt's
         * entry of {@code errors} (the job row, and its dead letter when it parks). Database
         * effect: up to this many characters per failed attempt, so at most {@code maxAttempts}
         * times it per job; nothing for a run that succeeds or is rescheduled.
         *
         * @param maxChars 0 (store none) or at least 200; default 4,000
         * @return this builder
         */
        public Builder stackTraceChars(int maxChars) {
            if (maxChars != 0 && maxChars < 200) {
                throw new ConfigurationException("stackTraceChars must be 0 (off) or at least 200, was " + maxChars);
            }
            this.stackTraceChars = maxChars;
            return this;
        }

        /**
         * Whether this instance keeps the time series of {@code layover.time_series}: per job type
         * and provider key, jobs completed, 429s (rate-limited outcomes), reschedules by reason,
         * retries by kind, parks by failure type, replays, and the queue's depth (due and waiting),
         * in 10-second, one-minute and one-hour buckets of the database's clock. Counted in memory and
         * written every {@link #timeSeriesFlushInterval} by one {@code INSERT ... ON CONFLICT DO
         * UPDATE} (no write per job), which also samples the queue depth (one grouped count of the
         * job table, once per 10 s across the cluster up to 100,000 jobs, 10 s more per 100,000, at
         * most 60 s; each sample marked {@code sampled}) and deletes rows past
         * {@link #timeSeriesRetention}. Off: no counter, no statement.
         *
         * @param on default true
         * @return this builder
         */
        public Builder timeSeries(boolean on) {
            this.timeSeries = new TimeSeriesSettings(on, timeSeries.flushEvery(), timeSeries.keepTenSecond(),
                    timeSeries.keepMinute());
            return this;
        }

        /**
         * How often the time series counters are written (see {@link #timeSeries}); a stop writes
         * what is left.
         *
         * @param every at least 100 ms; default 10 s
         * @return this builder
         */
        public Builder timeSeriesFlushInterval(Duration every) {
            Objects.requireNonNull(every, "every");
            if (every.compareTo(Duration.ofMillis(100)) < 0) {
                throw new ConfigurationException("timeSeriesFlushInterval must be at least 100 ms, was " + every);
            }
            this.timeSeries = new TimeSeriesSettings(timeSeries.on(), every, timeSeries.keepTenSecond(),
                    timeSeries.keepMinute());
            return this;
        }

        /**
         * How long rows of the time series are kept (see {@link #timeSeries}): each flush deletes
         * older 10-second rows, and older minute and hour rows (by their bucket, on the database's
         * clock). Bounds the table at about (keep / bucket) rows per job type, provider key and
         * counter.
         *
         * @param tenSecondRows positive; default 1 hour
         * @param minuteRows positive, for minute and hour rows; default 7 days
         * @return this builder
         */
        public Builder timeSeriesRetention(Duration tenSecondRows, Duration minuteRows) {
            Objects.requireNonNull(tenSecondRows, "tenSecondRows");
            Objects.requireNonNull(minuteRows, "minuteRows");
            if (tenSecondRows.isNegative() || tenSecondRows.isZero() || minuteRows.isNegative() || minuteRows.isZero()) {
                throw new ConfigurationException("timeSeriesRetention must be positive, was " + tenSecondRows + " and "
                        + minuteRows);
            }
            this.timeSeries = new TimeSeriesSettings(timeSeries.on(), timeSeries.flushEvery(), tenSecondRows, minuteRows);
            return this;
        }

        /**
         * Stops this instance gracefully when the JVM shuts down (SIGTERM, {@code System.exit}, the
         * end of {@code main}): no new job is picked and running jobs get {@link #shutdownMaxWait}
         * to finish, as {@link Layover#stop()} does. For plain Java programs; a Spring Boot
         * application's starter stops Layover with the context instead.
         *
         * @return this builder
         */
        public Builder registerShutdownHook() {
            this.shutdownHook = true;
            return this;
        }

        /**
         * How long a job this worker picked ahead may wait unstarted while every worker thread is
         * busy (slow calls, a hung handler) before it is given back to the fleet: unpicked, the
         * other workers woken, no attempt spent, nothing counted. The same look gives back orphan
         * picks: rows picked in this worker's name that it never received (a failover between a
         * pick's commit and its reply), not started within this long while a thread is free.
         * Costs one indexed read of this worker's picked rows per second. While the adaptive
         * {@link #prefetch} is at 1 × threads (calls of a second or more) a job waiting behind busy
         * threads is given back at once, the read then every 250 ms while one waits. {@link
         * Duration#ZERO}: a job picked ahead waits for a thread of this worker; orphan picks are
         * given back after 10 s.
         *
         * @param d zero or more; default 2 s
         * @return this builder
         */
        public Builder giveBackAfter(Duration d) {
            Objects.requireNonNull(d, "giveBackAfter");
            if (d.isNegative()) {
                throw new ConfigurationException("giveBackAfter must not be negative, was " + d);
            }
            this.giveBackAfter = d;
            return this;
        }

        /**
         * Whether this instance holds two connections in {@code LISTEN}: one to start jobs enqueued
         * in other JVMs at once, one to hear other JVMs' provider state changes (breakers,
         * cooldowns, pauses, cancels) at once. Turn it off where {@code LISTEN} does not work, behind
         * a transaction-pooling PgBouncer ({@code docs/operations.md}): jobs enqueued elsewhere then
         * start at the next poll ({@link #pollInterval}), and other JVMs' changes are seen within
         * the one-second refresh; every guarantee stays, only those latencies grow.
         *
         * @param on default true
         * @return this builder
         */
        public Builder notifications(boolean on) {
            this.notifications = on;
            return this;
        }

        /**
         * The clock every decision of this instance reads: run times of enqueued jobs, backoffs,
         * heartbeats and dead-worker detection, cooldowns and bucket permits. By default the
         * database's time: this JVM's clock corrected by its measured offset from the database's
         * {@code clock_timestamp()} (re-measured every 30 s; an offset over 1 s is logged as a
         * warning), so that every JVM of the fleet agrees whatever its own clock says. For tests
         * that move time themselves; production code leaves the default.
         *
         * @param clock the clock; default the database's time
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Registers a recurring job defined in code (tenant {@code ""}): each occurrence of the
         * schedule is an ordinary job of its job type, enqueued once across the fleet. Checked by
         * {@link #build()} (job type registered here, interval not under
         * {@link #schedulePollInterval}, args readable by the job type); written to
         * {@code layover.schedules} at {@link Layover#start()}, which reconciles every code schedule:
         * a new one is inserted, a changed one updated, one no longer registered stops (see
         * {@link #scheduleGeneration} for rolling deploys, {@code docs/recurring.md}).
         *
         * @param schedule the schedule
         * @return this builder
         */
        public Builder schedule(dev.layover.core.schedule.Schedule<?> schedule) {
            schedules.add(Objects.requireNonNull(schedule, "schedule"));
            return this;
        }

        /**
         * How often this instance's scheduler loop asks the database whether a schedule is due (one
         * indexed statement when none is). An occurrence is enqueued within about this time of its
         * instant; an interval schedule may not be shorter.
         *
         * @param d the poll interval; default 1 s
         * @return this builder
         */
        public Builder schedulePollInterval(Duration d) {
            this.schedulePollInterval = positive(d, "schedulePollInterval");
            return this;
        }

        /**
         * The generation of this code's schedules, for rolling deploys: a start writes a code
         * schedule (adds, changes or removes it) only when its generation is at least the one that
         * last wrote the row, so an instance of the previous version that restarts during a deploy
         * changes nothing the new version wrote. Use a number that grows with each release (a build
         * number). With the default, every start writes: the last instance to start wins.
         *
         * @param generation the generation, 0 or more; default 0
         * @return this builder
         */
        public Builder scheduleGeneration(long generation) {
            if (generation < 0) {
                throw new ConfigurationException("scheduleGeneration must be 0 or more, was " + generation);
            }
            this.scheduleGeneration = generation;
            return this;
        }

        /**
         * Adds a db-scheduler task run by the same scheduler.
         *
         * @param task the task
         * @return this builder
         */
        public Builder addTask(Task<?> task) {
            extraTasks.add(Objects.requireNonNull(task, "task"));
            return this;
        }

        /**
         * Builds an instance that can enqueue but runs nothing until {@link Layover#start()}.
         * Migrates the database unless {@link #migrate(boolean)} turned it off.
         *
         * @return the instance
         * @throws ConfigurationException on a duplicate job type, an args type Jackson cannot
         *     round-trip, or {@link #virtualThreads(boolean) virtualThreads(true)} before Java 21
         */
        public Layover build() {
            return new Layover(this);
        }

        /**
         * Builds and starts.
         *
         * @return the running instance
         */
        public Layover start() {
            return build().start();
        }

        private static Duration positive(Duration d, String name) {
            Objects.requireNonNull(d, name);
            if (d.isNegative() || d.isZero()) {
                throw new ConfigurationException(name + " must be positive, was " + d);
            }
            return d;
        }
    }
}
