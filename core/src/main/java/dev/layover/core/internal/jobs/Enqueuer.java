package dev.layover.core.internal.jobs;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.Enqueued;
import dev.layover.core.DependencyException;
import dev.layover.core.EnqueuedGroup;
import dev.layover.core.JobRef;
import dev.layover.core.JobType;
import dev.layover.core.Workflow;
import dev.layover.core.GroupException;
import dev.layover.core.GroupOptions;
import dev.layover.core.InvalidArgsException;
import dev.layover.core.spi.Db;
import dev.layover.core.internal.db.StoredText;
import dev.layover.core.internal.observe.Runs;
import dev.layover.core.internal.observe.TraceContexts;
import dev.layover.core.tracing.LayoverTracing.EnqueueSpan;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import dev.layover.core.tokens.EstimateGuard;
import dev.layover.core.tokens.TokenEstimate;

/** Inserts jobs: one, or many per statement, on Layover's connection or the caller's. */
public final class Enqueuer {

    /** Rows per batch statement. */
    static final int BATCH = 5000;
    private static final int MAX_PROVIDER_KEY = 200;

    private final JobStore store;
    private final Clock clock;
    private final Map<String, ToLongFunction<Object>> tokenCosts;
    private final Runs runs;

    /**
     * @param store the job table
     * @param clock the clock run times are counted from
     * @param tokenCosts token costs by job type name ({@code Layover.Builder#tokenCost}), for the
     *     token estimate a job is stored with
     * @param runs the tracing whose enqueue span's context each job stores
     */
    public Enqueuer(JobStore store, Clock clock, Map<String, ToLongFunction<Object>> tokenCosts, Runs runs) {
        this.store = store;
        this.clock = clock;
        this.tokenCosts = Map.copyOf(tokenCosts);
        this.runs = runs == null ? Runs.OFF : runs;
    }

    /**
     * Inserts one job.
     *
     * @param caller the caller's connection (its transaction decides), or {@code null} for an
     *     autocommitted insert on Layover's pool
     */
    public <A> Enqueued enqueue(Connection caller, Registry.Entry<A> entry, A args, EnqueueOptions options) {
        if (!options.after().isEmpty()) {
            return enqueueAfter(caller, entry, args, options);
        }
        return insertOne(caller, entry, args, options);
    }

    /**
     * Enqueues a workflow's jobs in one transaction (the caller's, or one of its own), each after
     * the jobs before it that it names ({@link #enqueueAfter}, one job at a time, in the workflow's
     * order).
     *
     * @param caller the caller's connection (its transaction decides), or null for a transaction of its own
     * @param workflow the jobs and their edges
     * @param entries each job type's registry entry
     * @return each job by its name, in the workflow's order
     */
    public Map<String, Enqueued> enqueueWorkflow(Connection caller, Workflow workflow,
            Function<JobType<?>, Registry.Entry<?>> entries) {
        return inTransaction(caller, "enqueueing a workflow of " + workflow.jobs().size() + " jobs", c -> {
            Map<String, Enqueued> out = new java.util.LinkedHashMap<>();
            for (Workflow.Job s : workflow.jobs()) {
                List<JobRef> after = new ArrayList<>(s.options().after());
                s.after().forEach(n -> after.add(JobRef.of(out.get(n))));
                out.put(s.name(), enqueueStep(c, entries.apply(s.type()), s.args(),
                        s.options().withAfter(after.toArray(JobRef[]::new))));
            }
            return java.util.Collections.unmodifiableMap(out);
        });
    }

    @SuppressWarnings("unchecked") // the step's args were given with its type (Workflow.Builder#job)
    private <A> Enqueued enqueueStep(Connection c, Registry.Entry<A> entry, Object args, EnqueueOptions options) {
        return enqueue(c, entry, (A) args, options);
    }

    /**
     * A job that runs after others ({@link EnqueueOptions#after}), in one transaction: each job named
     * is found (a live one marked, a parked one locked; one completed within the history's retention
     * is satisfied already); the job is inserted waiting (run time {@link #GROUP_WAIT}, reason
     * {@code dependencies}) with one {@code layover.job_dependencies} row per job not completed, or
     * as asked when every one completed.
     *
     * @throws DependencyException when a job named is unknown, or is this job itself (nothing written)
     */
    private <A> Enqueued enqueueAfter(Connection caller, Registry.Entry<A> entry, A args, EnqueueOptions options) {
        String name = entry.type().name();
        entry.codec().write(args); // bad args: refused before anything is written
        String id = options.key() != null ? options.key() : JobIds.next(clock.instant().toEpochMilli());
        EnqueueOptions keyed = options.withKey(id);
        return inTransaction(caller, "enqueueing a " + name + " job after " + options.after().size() + " jobs", c -> {
            List<JobRef> edges = new ArrayList<>();
            for (JobRef r : new java.util.LinkedHashSet<>(options.after())) {
                if (r.jobType().equals(name) && r.id().equals(id)) {
                    throw new DependencyException("a job cannot run after itself: " + name + " job " + id);
                }
                if (prerequisite(c, r) != JobStore.Prerequisite.COMPLETED) {
                    edges.add(r);
                }
            }
            if (edges.isEmpty()) {
                return insertOne(c, entry, args, keyed);
            }
            Enqueued e = insertOne(c, entry, args, keyed.withRunAt(GROUP_WAIT));
            if (e.created()) {
                writeEdges(c, name, id, edges);
            }
            return e;
        });
    }

    private <A> Enqueued insertOne(Connection caller, Registry.Entry<A> entry, A args, EnqueueOptions options) {
        byte[] data = entry.codec().write(args);
        String name = entry.type().name();
        String providerKey = providerKey(entry, args);
        Instant now = clock.instant();
        String id = options.key() != null ? options.key() : JobIds.next(now.toEpochMilli());
        Instant runAt = options.runTime(now);
        Instant deadline = options.deadlineTime(now);
        String[] limitKeys = limitKeys(entry, args);
        String fairnessKey = fairnessKey(entry, args);
        Double[] estimate = tokenEstimate(entry, args, providerKey);
        EnqueueSpan span = runs.enqueueStarted(name, 1);
        int rows;
        try {
            rows = store.insert(caller, new JobStore.NewJob(name, id, data, runAt, options.priority(), providerKey,
                    deadline, limitKeys, entry.codec().shape(), fairnessKey, estimate,
                    fairnessKey != null && providerKey != null && !runAt.isAfter(now), TraceContexts.json(span)),
                    options.key() != null);
        } catch (RuntimeException e) {
            runs.enqueueEnded(span, id, 0, e);
            throw e;
        }
        runs.enqueueEnded(span, id, rows, null);
        return new Enqueued(name, id, rows == 1);
    }

    /**
     * Inserts many jobs of one type, {@value #BATCH} rows per statement.
     *
     * @return one result per arg, in order
     */
    public <A> List<Enqueued> enqueueBatch(Connection caller, Registry.Entry<A> entry, List<A> args,
            Function<? super A, EnqueueOptions> options) {
        return enqueueBatch(caller, entry, args, options, null);
    }

    /**
     * A batch some of whose jobs run after others ({@link EnqueueOptions#after}), in one transaction:
     * each job named is either an earlier job of this batch (by its type and id: a key given to it)
     * or an existing job, found as {@link #enqueueAfter} finds it; the jobs with an edge still open
     * are inserted waiting (reason {@code dependencies}), the batch in one statement per
     * {@value #BATCH} rows; then the earlier jobs named are marked and the edges written. A job can
     * name only jobs that exist or come before it, so no cycle can be built.
     *
     * @throws DependencyException when a job named is unknown, the job itself, or a job of this
     *     batch at or after it (nothing written)
     */
    private <A> List<Enqueued> enqueueBatchAfter(Connection caller, Registry.Entry<A> entry, List<A> args,
            List<EnqueueOptions> opts, String groupId) {
        String name = entry.type().name();
        int n = args.size();
        List<EnqueueOptions> keyed = new ArrayList<>(n);
        Map<String, Integer> index = new java.util.HashMap<>();
        for (int i = 0; i < n; i++) {
            EnqueueOptions o = opts.get(i);
            String id = o.key() != null ? o.key() : JobIds.next(clock.instant().toEpochMilli());
            keyed.add(o.withKey(id));
            index.putIfAbsent(id, i); // a key repeated in the batch is its first occurrence's job
        }
        return inTransaction(caller, "enqueueing " + n + " " + name + " jobs with dependencies", c -> {
            List<List<JobRef>> open = new ArrayList<>(n);
            Set<JobRef> earlier = new java.util.LinkedHashSet<>();
            for (int i = 0; i < n; i++) {
                EnqueueOptions o = keyed.get(i);
                List<JobRef> edges = new ArrayList<>();
                for (JobRef r : new java.util.LinkedHashSet<>(o.after())) {
                    Integer at = r.jobType().equals(name) ? index.get(r.id()) : null;
                    if (at != null && at >= i) {
                        throw new DependencyException(at == i
                                ? "a job cannot run after itself: " + name + " job " + r.id()
                                : "job " + i + " of the batch names " + name + " job " + r.id() + ", which comes at "
                                        + at + ": a job of a batch can run only after jobs before it in the batch");
                    }
                    if (at != null) {
                        earlier.add(r);
                        edges.add(r);
                    } else if (prerequisite(c, r) != JobStore.Prerequisite.COMPLETED) {
                        edges.add(r);
                    }
                }
                open.add(edges);
                if (!edges.isEmpty()) {
                    keyed.set(i, o.withRunAt(GROUP_WAIT));
                }
            }
            List<Enqueued> out = enqueueBatch(c, entry, args, keyed, groupId);
            for (JobRef r : earlier) { // inserted just now in this transaction: live, or an existing job of that key
                if (store.prerequisite(c, r.jobType(), r.id()) == JobStore.Prerequisite.UNKNOWN) {
                    throw new IllegalStateException("job " + r + " of the batch is neither live nor parked after its insert");
                }
            }
            for (int i = 0; i < n; i++) {
                List<JobRef> edges = open.get(i);
                if (out.get(i).created() && !edges.isEmpty()) {
                    writeEdges(c, name, out.get(i).id(), edges);
                }
            }
            return out;
        });
    }

    /**
     * Finds a job a dependent names ({@link JobStore#prerequisite}).
     *
     * @throws DependencyException when it is unknown
     */
    private JobStore.Prerequisite prerequisite(Connection c, JobRef r) throws java.sql.SQLException {
        JobStore.Prerequisite p = store.prerequisite(c, r.jobType(), r.id());
        if (p == JobStore.Prerequisite.UNKNOWN) {
            throw new DependencyException("no " + r.jobType() + " job with the id '" + r.id() + "' is live, "
                    + "parked or completed within the history's retention: a job can run only after jobs "
                    + "that exist");
        }
        return p;
    }

    /** A dependent just inserted waiting: its reason and its edges ({@code layover.job_dependencies}). */
    private void writeEdges(Connection c, String name, String id, List<JobRef> edges) throws java.sql.SQLException {
        List<String> ids = edges.stream().map(JobRef::id).toList();
        store.waits(c, "dependencies", "runs after " + ids.size() + " jobs: " + String.join(", ",
                ids.subList(0, Math.min(3, ids.size()))) + (ids.size() > 3 ? ", ..." : ""), name, id);
        store.insertDependencies(c, name, id, edges.stream().map(JobRef::jobType).toArray(String[]::new),
                ids.toArray(String[]::new));
    }

    /**
     * {@link #enqueueBatch(Connection, Registry.Entry, List, Function)} into a group (or none: null):
     * a member may run after other jobs as a batch's job may (it waits, {@code pending} in its group).
     */
    private <A> List<Enqueued> enqueueBatch(Connection caller, Registry.Entry<A> entry, List<A> args,
            Function<? super A, EnqueueOptions> options, String groupId) {
        List<EnqueueOptions> opts = new ArrayList<>(args.size());
        boolean after = false;
        for (A a : args) {
            EnqueueOptions o = options.apply(a);
            after |= !o.after().isEmpty();
            opts.add(o);
        }
        return after ? enqueueBatchAfter(caller, entry, args, opts, groupId)
                : enqueueBatch(caller, entry, args, opts, groupId);
    }

    /** Inserts a batch, each job with its options (index for index), into a group (or none: null). */
    private <A> List<Enqueued> enqueueBatch(Connection caller, Registry.Entry<A> entry, List<A> args,
            List<EnqueueOptions> opts, String groupId) {
        String name = entry.type().name();
        Instant now = clock.instant();
        int n = args.size();
        String[] ids = new String[n];
        byte[][] data = new byte[n][];
        String[] runAts = new String[n];
        Integer[] priorities = new Integer[n];
        String[] keys = new String[n];
        String[] deadlines = new String[n];
        String[] limitKeys = new String[n];
        String[] fairnessKeys = new String[n];
        String[] estimates = new String[n];
        for (int i = 0; i < n; i++) {
            A a = args.get(i);
            EnqueueOptions o = opts.get(i);
            data[i] = entry.codec().write(a);
            ids[i] = o.key() != null ? o.key() : JobIds.next(now.toEpochMilli());
            runAts[i] = o.runTime(now).toString();
            priorities[i] = o.priority();
            keys[i] = providerKey(entry, a);
            Instant deadline = o.deadlineTime(now);
            deadlines[i] = deadline == null ? null : deadline.toString();
            limitKeys[i] = arrayLiteral(limitKeys(entry, a));
            fairnessKeys[i] = fairnessKey(entry, a);
            Double[] e = tokenEstimate(entry, a, keys[i]);
            estimates[i] = e == null ? null : "{" + e[0] + "," + e[1] + "," + e[2] + "}";
        }
        Set<String> created = new HashSet<>();
        EnqueueSpan span = runs.enqueueStarted(name, n);
        String trace = TraceContexts.json(span);
        try {
            for (int from = 0; from < n; from += BATCH) {
                int to = Math.min(n, from + BATCH);
                created.addAll(store.insertBatch(caller, name, Arrays.copyOfRange(ids, from, to),
                        Arrays.copyOfRange(data, from, to), Arrays.copyOfRange(runAts, from, to),
                        Arrays.copyOfRange(priorities, from, to), Arrays.copyOfRange(keys, from, to),
                        Arrays.copyOfRange(deadlines, from, to), Arrays.copyOfRange(limitKeys, from, to),
                        entry.codec().shape(), Arrays.copyOfRange(fairnessKeys, from, to),
                        Arrays.copyOfRange(estimates, from, to), now, trace, groupId));
            }
        } catch (RuntimeException e) {
            runs.enqueueEnded(span, null, created.size(), e);
            throw e;
        }
        runs.enqueueEnded(span, null, created.size(), null);
        List<Enqueued> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            // a key repeated within the batch is created once: the first occurrence claims it
            out.add(new Enqueued(name, ids[i], created.remove(ids[i])));
        }
        return out;
    }

    /** The run time of a group's callback until its group settles ({@code layover.group_settle} makes it due). */
    static final Instant GROUP_WAIT = Instant.parse("9999-12-31T00:00:00Z");

    /**
     * Makes a group in one transaction (the caller's, or one of its own): its row, its callback job
     * (waiting, {@link #GROUP_WAIT}), its members (each job's insert writes its member row); a group
     * sealed at creation is settled in the same transaction (a group of no member is released at once).
     *
     * @param caller the caller's connection (its transaction decides), or null for a transaction of its own
     * @return the group; {@code created = false}, nothing written, when its id exists
     */
    public <C, A> EnqueuedGroup enqueueGroup(Connection caller, GroupOptions<C> group, Registry.Entry<C> callback,
            Registry.Entry<A> entry, List<A> args, Function<? super A, EnqueueOptions> options) {
        String id = group.key() != null ? group.key() : JobIds.next(clock.instant().toEpochMilli());
        callback.codec().write(group.callbackArgs()); // bad callback args: refused before anything is written
        return inTransaction(caller, "enqueueing group " + id, c -> {
            if (!GroupStore.create(c, id, callback.type().name(), group.policy(), group.sealed(),
                    callback.type().policy().maxDeferral().dividedBy(2))) {
                return new EnqueuedGroup(id, false, new Enqueued(callback.type().name(), id, false), List.of());
            }
            Enqueued cb;
            if (group.parent() == null) {
                cb = enqueue(c, callback, group.callbackArgs(), EnqueueOptions.at(GROUP_WAIT).withKey(id));
            } else { // groups of groups: the callback is a member of its parent, added as addToGroup adds
                GroupStore.lockOpen(c, group.parent());
                cb = enqueueBatch(c, callback, List.of(group.callbackArgs()), a -> EnqueueOptions.at(GROUP_WAIT).withKey(id),
                        group.parent()).get(0);
            }
            if (!cb.created()) {
                throw new GroupException("a " + callback.type().name() + " job with the id '" + id
                        + "' exists: the group's callback takes the group's id; give the group another key");
            }
            store.waits(c, "group", "waits for the members of group " + id, callback.type().name(), id);
            List<Enqueued> members = enqueueBatch(c, entry, args, options, id);
            if (group.sealed()) {
                GroupStore.settle(c, new String[] {id}, store.testNow());
            }
            return new EnqueuedGroup(id, true, cb, members);
        });
    }

    /**
     * Adds members to an open group, under its lock (a seal running at the same time waits for
     * this transaction, so it sees these members).
     *
     * @throws GroupException when the group does not exist or is sealed (nothing written)
     */
    public <A> List<Enqueued> addToGroup(Connection caller, String groupId, Registry.Entry<A> entry, List<A> args,
            Function<? super A, EnqueueOptions> options) {
        return inTransaction(caller, "adding members to group " + groupId, c -> {
            GroupStore.lockOpen(c, groupId);
            return enqueueBatch(c, entry, args, options, groupId);
        });
    }

    /**
     * Seals a group: no member may be added from now on, and its callback is made due in this
     * transaction when every member has ended already.
     *
     * @return true when this call sealed it, false when it was sealed already
     * @throws GroupException when no group has that id
     */
    public boolean sealGroup(Connection caller, String groupId) {
        return inTransaction(caller, "sealing group " + groupId, c -> GroupStore.seal(c, groupId, store.testNow()));
    }

    /**
     * Runs a group's or a dependency's statements in the caller's transaction, or in one of Layover's.
     * The caller's must be READ COMMITTED (Postgres's default): the group settle and the checks of
     * the jobs named read what other transactions committed after theirs began (decision 0005);
     * a REPEATABLE READ or SERIALIZABLE snapshot would miss it and could lose a release.
     */
    private <T> T inTransaction(Connection caller, String what, Db.Work<T> work) {
        if (caller == null) {
            return store.db().transaction(what, work);
        }
        try {
            if (caller.getTransactionIsolation() != Connection.TRANSACTION_READ_COMMITTED) {
                throw new dev.layover.core.LayoverException(what + " in the caller's transaction needs READ COMMITTED "
                        + "(Postgres's default); this connection's isolation is stricter (JDBC level "
                        + caller.getTransactionIsolation() + "): use a READ COMMITTED transaction, or pass no connection");
            }
            return work.run(caller);
        } catch (java.sql.SQLException e) {
            throw Db.failure(what, e);
        }
    }

    /** The job's limit keys ({@code JobType.Builder#limitKeys}), checked like a provider key; null when none. */
    private static <A> String[] limitKeys(Registry.Entry<A> entry, A args) {
        if (!entry.type().hasLimitKeys()) {
            return null;
        }
        List<String> keys;
        try {
            keys = entry.type().limitKeysOf(args);
        } catch (RuntimeException e) {
            throw new InvalidArgsException("job type '" + entry.type().name() + "': its limit keys could not be derived "
                    + "from the args: " + e, e);
        }
        for (String k : keys) {
            if (k.isEmpty() || k.length() > MAX_PROVIDER_KEY) {
                throw new InvalidArgsException("job type '" + entry.type().name() + "': limit keys must be 1-"
                        + MAX_PROVIDER_KEY + " characters, got " + k.length());
            }
            if (StoredText.unstorable(k)) {
                throw new InvalidArgsException("job type '" + entry.type().name() + "': a limit key must not contain a "
                        + "NUL character or half of a surrogate pair");
            }
        }
        return keys.isEmpty() ? null : keys.toArray(String[]::new);
    }

    /** A text[] literal ({@code {"a","b"}}) for the batch insert, which passes each row's keys as text. */
    private static String arrayLiteral(String[] keys) {
        if (keys == null) {
            return null;
        }
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i < keys.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append('"').append(keys[i].replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        }
        return b.append('}').toString();
    }

    /**

    /**
     * The token estimate a job is stored with ({combined, input, output}: what its pick reserves
     * from its key's token limits, and its cost in a fair queue): its type's {@code tokenEstimate},
     * else the builder's {@code tokenCost}; null without a provider key, without an estimate, or
     * when the estimate fails (the worker logs that when it runs the job; the pick then reserves no
     * tokens and the call's reported usage is charged after it).
     */
    private <A> Double[] tokenEstimate(Registry.Entry<A> entry, A args, String providerKey) {
        if (providerKey == null) {
            return null;
        }
        Function<? super A, TokenEstimate> f = entry.type().tokenEstimate();
        if (f != null) {
            try {
                TokenEstimate e = f.apply(args);
                return e == null ? null : new Double[] {(double) e.totalTokens(), (double) e.inputTokens(),
                        (double) e.outputCeiling()};
            } catch (RuntimeException | StackOverflowError e) {
                return null;
            }
        }
        ToLongFunction<Object> cost = tokenCosts.get(entry.type().name());
        if (cost == null) {
            return null;
        }
        EstimateGuard.Checked c = EstimateGuard.apply(cost, args, 0); // above 10^9: 10^9, which no key admits
        return c.tokens() > 0 ? new Double[] {(double) c.tokens(), (double) c.tokens(), (double) c.tokens()} : null;
    }

    /** The job's fairness key ({@code JobType.Builder#fairnessKey}), checked like a provider key; null when none. */
    private static <A> String fairnessKey(Registry.Entry<A> entry, A args) {
        String key;
        try {
            key = entry.type().fairnessKeyOf(args);
        } catch (RuntimeException e) {
            throw new InvalidArgsException("job type '" + entry.type().name() + "': its fairness key could not be derived "
                    + "from the args: " + e, e);
        }
        if (key != null && (key.isEmpty() || key.length() > MAX_PROVIDER_KEY)) {
            throw new InvalidArgsException("job type '" + entry.type().name() + "': a fairness key must be 1-"
                    + MAX_PROVIDER_KEY + " characters, got " + key.length());
        }
        if (StoredText.unstorable(key)) {
            throw new InvalidArgsException("job type '" + entry.type().name() + "': a fairness key must not contain a "
                    + "NUL character or half of a surrogate pair");
        }
        return key;
    }

    private static <A> String providerKey(Registry.Entry<A> entry, A args) {
        String key = entry.type().providerKeyOf(args);
        if (key != null && (key.isEmpty() || key.length() > MAX_PROVIDER_KEY)) {
            throw new InvalidArgsException("job type '" + entry.type().name() + "': provider key must be 1-"
                    + MAX_PROVIDER_KEY + " characters, got " + key.length());
        }
        if (StoredText.unstorable(key)) {
            throw new InvalidArgsException("job type '" + entry.type().name() + "': a provider key must not contain a "
                    + "NUL character or half of a surrogate pair");
        }
        return key;
    }
}
