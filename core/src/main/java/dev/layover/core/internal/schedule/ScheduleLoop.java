package dev.layover.core.internal.schedule;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.Enqueued;
import dev.layover.core.InvalidArgsException;
import dev.layover.core.JobType;
import dev.layover.core.internal.jobs.Enqueuer;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.schedule.InvalidScheduleException;
import dev.layover.core.schedule.Schedule;
import dev.layover.core.spi.Db;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Recurring jobs in one instance: the code schedules (checked when the instance is built,
 * reconciled with {@code layover.schedules} at start) and the scheduler loop, one daemon thread
 * that every poll interval asks the database whether a schedule this worker can fire is due (one
 * indexed statement, {@code schedule_peek.sql}) and, when one is, claims the due ones
 * ({@code FOR UPDATE SKIP LOCKED}, up to {@value #BATCH} a transaction), enqueues their occurrences
 * through the job store on the same connection and advances them, in one transaction. Due-ness is
 * the database's {@code now()} (the test clock's time when the instance has one).
 */
public final class ScheduleLoop {

    private static final Logger LOG = LoggerFactory.getLogger(ScheduleLoop.class);

    /** Schedules claimed per transaction. */
    static final int BATCH = 100;

    /** Claims per poll at most (a backlog of due schedules is worked through over several polls). */
    static final int MAX_ROUNDS = 50;

    private final ScheduleStore store;
    private final Registry registry;
    private final Enqueuer enqueuer;
    private final Clock clock;
    private final boolean testClock;
    private final Duration pollInterval;
    private final long generation;
    private final Map<String, Schedule<?>> code;
    private final Map<String, Definition> codeDefinitions;
    private final Runnable wakeUp;
    private final String worker;
    private final dev.layover.core.internal.observe.SafeMetrics metrics;
    private final AtomicLong polls = new AtomicLong();
    private final AtomicLong enqueued = new AtomicLong();
    private final dev.layover.core.internal.time.BackgroundLoop background;

    /**
     * Checks the code schedules; starts nothing.
     *
     * @param db the database
     * @param registry the job types
     * @param enqueuer inserts the occurrences' jobs
     * @param clock the instance's clock (computes occurrence instants after now)
     * @param testClock whether {@code clock} is a test's (then due-ness is decided on it, not on {@code now()})
     * @param pollInterval how often the loop looks for due schedules
     * @param generation the code schedules' generation ({@code Layover.Builder#scheduleGeneration})
     * @param codeSchedules the schedules defined in code
     * @param wakeUp tells the workers that jobs were enqueued
     * @param worker this instance's name
     * @param metrics told of each claim, after its commit
     * @throws InvalidScheduleException when a code schedule is invalid
     */
    public ScheduleLoop(Db db, Registry registry, Enqueuer enqueuer, Clock clock, boolean testClock, Duration pollInterval,
            long generation, List<Schedule<?>> codeSchedules, Runnable wakeUp, String worker,
            dev.layover.core.internal.observe.SafeMetrics metrics) {
        this.metrics = metrics;
        this.store = new ScheduleStore(db);
        this.registry = registry;
        this.enqueuer = enqueuer;
        this.clock = clock;
        this.testClock = testClock;
        this.pollInterval = pollInterval;
        this.background = new dev.layover.core.internal.time.BackgroundLoop(LOG, "the scheduler loop", pollInterval,
                this::pollOnce);
        this.generation = generation;
        this.wakeUp = wakeUp;
        this.worker = worker;
        Map<String, Schedule<?>> byName = new LinkedHashMap<>();
        Map<String, Definition> defs = new LinkedHashMap<>();
        for (Schedule<?> s : codeSchedules) {
            if (byName.put(s.name(), s) != null) {
                throw new InvalidScheduleException("schedule '" + s.name() + "' is registered twice; names must be unique");
            }
            defs.put(s.name(), define(s, true, Instant.now()));
        }
        this.code = Map.copyOf(byName);
        this.codeDefinitions = Map.copyOf(defs);
    }

    /** @return the store of {@code layover.schedules} */
    ScheduleStore store() {
        return store;
    }

    /** @return the instance's clock */
    Clock clock() {
        return clock;
    }

    /** @return the test clock's time, or null when due-ness is the database's {@code now()} */
    Instant testNow() {
        return testClock ? clock.instant() : null;
    }

    /**
     * A schedule's definition as stored, checked: its job type registered here, its interval not
     * under the poll interval, its args written and read back by the job type's codec (a function's
     * args: for the first occurrence after {@code sample}).
     *
     * @param code whether it is a code schedule (an args function is allowed)
     * @throws InvalidScheduleException when any of it is wrong
     */
    Definition define(Schedule<?> s, boolean code, Instant sample) {
        Registry.Entry<?> entry = registry.get(s.jobType().name());
        if (entry == null) {
            throw new InvalidScheduleException("schedule '" + s.name() + "': job type '" + s.jobType().name()
                    + "' is not registered with this Layover instance (register it with Layover.builder(..).register(..))");
        }
        if (entry.type() != s.jobType()) {
            throw new InvalidScheduleException("schedule '" + s.name() + "': another JobType object is registered under "
                    + "the name '" + s.jobType().name() + "'; build the schedule with the registered instance");
        }
        if (s.timing().interval() != null && s.timing().interval().compareTo(pollInterval) < 0) {
            throw new InvalidScheduleException("schedule '" + s.name() + "': its interval " + s.timing().interval()
                    + " is under the scheduler's poll interval " + pollInterval
                    + " (Layover.Builder#schedulePollInterval); occurrences would be late or skipped");
        }
        String json;
        if (s.argsFor() != null) {
            if (!code) {
                throw new InvalidScheduleException("schedule '" + s.name() + "': a run-time schedule needs fixed args "
                        + "(args(..) or argsJson(..)); a function of the occurrence cannot be stored");
            }
            Instant first = s.timing().next(sample);
            Object a;
            try {
                a = s.argsFor().apply(first);
            } catch (RuntimeException e) {
                throw new InvalidScheduleException("schedule '" + s.name() + "': its args function failed for the "
                        + "occurrence " + first + ": " + e, e);
            }
            checkArgs(s, entry, write(s, entry, a));
            json = null;
        } else if (s.argsJson() != null) {
            byte[] normalized;
            try {
                normalized = entry.codec().validate(s.argsJson());
            } catch (InvalidArgsException e) {
                throw new InvalidScheduleException("schedule '" + s.name() + "': the job type cannot read its args: "
                        + e.getMessage(), e);
            }
            json = checkArgs(s, entry, normalized);
        } else {
            json = checkArgs(s, entry, write(s, entry, s.args()));
        }
        return new Definition(s.jobType().name(), s.timing(), json, s.missedRuns(), s.overlap(),
                s.jitter().toMillis(), s.priority());
    }

    private static byte[] write(Schedule<?> s, Registry.Entry<?> entry, Object args) {
        try {
            return entry.codec().write(args);
        } catch (InvalidArgsException e) {
            throw new InvalidScheduleException("schedule '" + s.name() + "': its args cannot be written: "
                    + e.getMessage(), e);
        }
    }

    /** Reads the JSON back as the job type will at each occurrence; returns it as text. */
    private static String checkArgs(Schedule<?> s, Registry.Entry<?> entry, byte[] json) {
        try {
            entry.codec().read(json);
        } catch (IOException | RuntimeException e) {
            throw new InvalidScheduleException("schedule '" + s.name() + "': the job type '" + entry.type().name()
                    + "' cannot read its args " + new String(json, StandardCharsets.UTF_8) + ": " + e.getMessage(), e);
        }
        return new String(json, StandardCharsets.UTF_8);
    }

    /**
     * Reconciles the code schedules with {@code layover.schedules}, in one transaction serialized
     * with other starts' by an advisory lock: a new one is inserted (its first occurrence the first
     * after now); a stored one whose definition hash or generation differs is updated when this
     * instance's generation is at least the row's (the next occurrence kept when the timing did not
     * change); one the code no longer has becomes a tombstone ({@code removed_at}) when this
     * generation is at least its own. A stored row of the same name from the API is an error.
     *
     * @throws InvalidScheduleException when a code schedule's name is taken by a run-time schedule of tenant ""
     */
    public void reconcile() {
        Instant now = clock.instant();
        int[] counts = new int[4];
        store.db().transaction("reconciling the schedules defined in code", c -> {
            store.lockCodeSchedules(c);
            Map<String, ScheduleStore.CodeRow> rows = new HashMap<>();
            for (ScheduleStore.CodeRow r : store.codeRows(c)) {
                rows.put(r.name(), r);
            }
            for (Map.Entry<String, Definition> e : codeDefinitions.entrySet()) {
                String name = e.getKey();
                Definition d = e.getValue();
                String hash = d.hash();
                ScheduleStore.CodeRow row = rows.get(name);
                Instant first = d.timing().next(now);
                if (row == null) {
                    store.insert(c, "", name, d, first, "code", hash, generation);
                    counts[0]++;
                } else if (!row.source().equals("code")) {
                    throw new InvalidScheduleException("schedule '" + name + "' is defined in code, but a run-time "
                            + "schedule of tenant \"\" has that name; rename one of them (or delete the run-time one)");
                } else if (row.generation() > generation) {
                    LOG.info("Layover: schedule '{}' kept as generation {} wrote it (this instance is generation {})",
                            name, row.generation(), generation);
                } else if (row.removed() || !hash.equals(row.hash()) || row.generation() != generation) {
                    store.update(c, "", name, d, first, "code", hash, generation);
                    counts[1]++;
                }
            }
            for (ScheduleStore.CodeRow r : rows.values()) {
                if (r.source().equals("code") && !r.removed() && !codeDefinitions.containsKey(r.name())
                        && store.removeCode(c, r.name(), generation)) {
                    counts[2]++;
                }
            }
            return null;
        });
        if (counts[0] + counts[1] + counts[2] > 0) {
            LOG.info("Layover: schedules from code: {} added, {} changed, {} removed (generation {})", counts[0],
                    counts[1], counts[2], generation);
        }
    }

    /** Starts the scheduler loop. */
    public void start() {
        background.start("layover-scheduler-" + worker);
    }

    /** Stops the scheduler loop and waits for a claim in flight. */
    public void stop() {
        background.stop(Duration.ofSeconds(5));
    }

    /**
     * One poll: whether anything is due (one statement), then claims until nothing due is left.
     *
     * @return the occurrences enqueued
     */
    public int pollOnce() {
        polls.incrementAndGet();
        String[] types = registry.entries().stream().map(e -> e.type().name()).toArray(String[]::new);
        String[] codeNames = code.keySet().toArray(String[]::new);
        Boolean due = store.db().autocommit("looking for due schedules",
                c -> store.anyDue(c, testNow(), types, codeNames));
        if (!Boolean.TRUE.equals(due)) {
            return 0;
        }
        int total = 0;
        for (int round = 0; ; round++) {
            int[] claimed = new int[2];
            List<String[]> claims = new ArrayList<>();
            store.db().transaction("enqueueing due schedules' occurrences", c -> {
                claims.clear();
                List<ScheduleStore.Row> rows = store.claim(c, testNow(), types, codeNames, BATCH);
                claimed[0] = rows.size();
                claimed[1] = fire(c, rows, claims);
                return null;
            });
            for (String[] claim : claims) {
                metrics.scheduleClaimed(claim[0], claim[1], Integer.parseInt(claim[2]));
            }
            total += claimed[1];
            if (claimed[1] > 0) {
                enqueued.addAndGet(claimed[1]);
                wakeUp.run();
            }
            // a full batch: more may be due; but held rows are due again at once, so stop at a round that enqueued nothing
            if (claimed[0] < BATCH || claimed[1] == 0 || round >= MAX_ROUNDS) {
                return total;
            }
        }
    }

    /** One claimed schedule being fired: its decision, and what was enqueued of it. */
    private static final class Firing {
        final ScheduleStore.Row row;
        Occurrences.Decision decision;
        String outcome;
        String lastId;
        Instant lastAt;
        int enqueued;

        Firing(ScheduleStore.Row row, Occurrences.Decision decision) {
            this.row = row;
            this.decision = decision;
            this.outcome = decision.outcome();
        }
    }

    /** The occurrences of one job type to insert together, each with its schedule's firing. */
    private static final class TypeBatch {
        final Registry.Entry<?> entry;
        final List<Object> args = new ArrayList<>();
        final List<EnqueueOptions> options = new ArrayList<>();
        final List<Firing> firings = new ArrayList<>();
        final List<Instant> occurrences = new ArrayList<>();

        TypeBatch(Registry.Entry<?> entry) {
            this.entry = entry;
        }
    }

    /**
     * Decides every claimed schedule, inserts their occurrences' jobs (one batch statement per job
     * type, {@code job_insert_batch.sql}), and advances each schedule; returns the jobs enqueued.
     */
    private int fire(Connection c, List<ScheduleStore.Row> rows, List<String[]> claims) throws SQLException {
        List<Firing> firings = new ArrayList<>(rows.size());
        Map<String, TypeBatch> batches = new LinkedHashMap<>();
        for (ScheduleStore.Row r : rows) {
            Occurrences.Decision d;
            try {
                // a held occurrence is looked at again at the next poll (due at once: the loop's sleep spaces the looks)
                d = Occurrences.decide(r.timing(), r.missed(), r.overlap(), r.nextAt(), r.held(), r.lastLive(),
                        r.dbNow(), Duration.ZERO);
            } catch (RuntimeException e) {
                LOG.warn("Layover: schedule '{}/{}' has a definition this worker cannot read, looked at again in a "
                        + "minute: {}", r.tenant(), r.name(), e.toString());
                Instant later = r.dbNow().plus(Duration.ofMinutes(1));
                d = new Occurrences.Decision(List.of(), r.nextAt(), later, r.held(), "invalid_definition");
            }
            Firing f = new Firing(r, d);
            firings.add(f);
            for (Instant o : d.enqueue()) {
                Object args;
                try {
                    args = args(registry.get(r.jobType()), r, o);
                } catch (ArgsFailed e) {
                    f.outcome = "args_failed";
                    LOG.warn("Layover: schedule '{}/{}': occurrence {} not enqueued, its args failed: {}", r.tenant(),
                            r.name(), o, e.getMessage());
                    continue;
                }
                TypeBatch b = batches.computeIfAbsent(r.jobType(), t -> new TypeBatch(registry.get(t)));
                b.args.add(args);
                b.options.add(EnqueueOptions.at(runAt(o, r.jitterMs())).withKey(occurrenceId(r.tenant(), r.name(), o))
                        .withPriority(r.priority()));
                b.firings.add(f);
                b.occurrences.add(o);
            }
        }
        int n = 0;
        for (TypeBatch b : batches.values()) {
            boolean[] ok = insert(c, b.entry, b.args, b.options);
            for (int i = 0; i < ok.length; i++) {
                Firing f = b.firings.get(i);
                if (ok[i]) {
                    f.lastId = b.options.get(i).key(); // a schedule's occurrences are in order: the last one stays
                    f.lastAt = b.occurrences.get(i);
                    f.enqueued++;
                    n++;
                } else {
                    f.outcome = "args_failed";
                }
            }
        }
        List<ScheduleStore.Advance> advances = new ArrayList<>(firings.size());
        for (Firing f : firings) {
            Occurrences.Decision d = f.decision;
            if (!java.util.Objects.equals(f.outcome, d.outcome())) {
                d = new Occurrences.Decision(d.enqueue(), d.nextAt(), d.dueAt(), d.held(), f.outcome);
            }
            advances.add(new ScheduleStore.Advance(f.row, d, f.lastAt, f.lastId));
            claims.add(new String[] {f.row.jobType(), f.outcome == null ? "none" : f.outcome,
                    Integer.toString(f.enqueued)});
        }
        store.advance(c, advances);
        return n;
    }

    /**
     * Inserts the jobs of one type: one batch statement; when the batch refuses an args value (its
     * provider or fairness key cannot be derived), one insert each, so that only that one fails.
     *
     * @return for each job, whether it was written or already there (false: its args were refused)
     */
    @SuppressWarnings("unchecked")
    private <A> boolean[] insert(Connection c, Registry.Entry<A> entry, List<Object> args, List<EnqueueOptions> options) {
        boolean[] ok = new boolean[args.size()];
        List<A> typed = new ArrayList<>(args.size());
        for (Object a : args) {
            typed.add((A) a);
        }
        try {
            // enqueueBatch asks for the options of each args value once, in order
            java.util.Iterator<EnqueueOptions> each = options.iterator();
            enqueuer.enqueueBatch(c, entry, typed, a -> each.next());
            java.util.Arrays.fill(ok, true);
            return ok;
        } catch (InvalidArgsException refused) {
            for (int i = 0; i < typed.size(); i++) {
                try {
                    enqueuer.enqueue(c, entry, typed.get(i), options.get(i));
                    ok[i] = true;
                } catch (InvalidArgsException e) {
                    LOG.warn("Layover: occurrence {} not enqueued, its args were refused: {}", options.get(i).key(),
                            e.getMessage());
                }
            }
            return ok;
        }
    }

    private static Instant runAt(Instant occurrence, long jitterMs) {
        return jitterMs <= 0 ? occurrence : occurrence.plusMillis(ThreadLocalRandom.current().nextLong(jitterMs + 1));
    }

    /** The args of an occurrence could not be had (read, computed or written). */
    static final class ArgsFailed extends Exception {
        private static final long serialVersionUID = 1L;

        ArgsFailed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Inserts one occurrence's job on {@code c}; its args from the stored JSON or the code's function. */
    <A> Enqueued enqueue(Connection c, Registry.Entry<A> entry, ScheduleStore.Row r, Instant occurrence, String id,
            Instant runAt) throws ArgsFailed {
        A args = args(entry, r, occurrence);
        try {
            return enqueuer.enqueue(c, entry, args,
                    EnqueueOptions.at(runAt).withKey(id).withPriority(r.priority()));
        } catch (InvalidArgsException e) {
            throw new ArgsFailed(e.getMessage(), e);
        }
    }

    /** An occurrence's args: read from the stored JSON, or computed by the code's function. */
    private <A> A args(Registry.Entry<A> entry, ScheduleStore.Row r, Instant occurrence) throws ArgsFailed {
        A args;
        try {
            if (r.argsFromCode()) {
                Schedule<?> s = code.get(r.name());
                if (s == null) {
                    throw new ArgsFailed("its args are computed by code this instance does not have", null);
                }
                args = entry.type().argsType().cast(s.argsAt(occurrence));
            } else {
                args = entry.codec().read(r.argsJson().getBytes(StandardCharsets.UTF_8));
            }
        } catch (IOException | RuntimeException e) {
            throw new ArgsFailed(e.toString(), e);
        }
        return args;
    }

    /**
     * @return an occurrence's job id: {@code sched:<tenant>/<name>@<instant>}
     */
    public static String occurrenceId(String tenant, String name, Instant occurrence) {
        return "sched:" + tenant + "/" + name + "@" + occurrence;
    }

    /** @return the registry */
    Registry registry() {
        return registry;
    }

    /** @return the poll interval */
    Duration pollInterval() {
        return pollInterval;
    }

    /** @return polls made since start (for tests and metrics) */
    public long polls() {
        return polls.get();
    }

    /** @return occurrences enqueued by this instance's loop since start */
    public long enqueued() {
        return enqueued.get();
    }

    /** @return the names of the code schedules */
    public Set<String> codeNames() {
        return new HashSet<>(code.keySet());
    }

    /** @return the job types of this instance, as a list */
    List<String> types() {
        List<String> out = new ArrayList<>();
        registry.entries().forEach(e -> out.add(e.type().name()));
        return out;
    }

    /** @return the job type registered under {@code name}, or null */
    JobType<?> type(String name) {
        Registry.Entry<?> e = registry.get(name);
        return e == null ? null : e.type();
    }
}
