package dev.layover.core.internal.engine;

import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.JobStore;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives back jobs this worker picked but has not started, so an idle worker can run them: a job
 * waiting behind busy threads for {@code giveBackAfter} (never when that is zero; at once while
 * the prefetch holds none ahead, {@link PickLimit#holdsNoneAhead}), and, while a thread is free,
 * an orphan pick: a row picked in this worker's name that db-scheduler never handed it (the
 * pick's reply lost in a failover). A give-back is one version-checked unpick ({@link
 * JobStore#giveBack}, which wakes the other workers) that takes the row's breaker trial with it;
 * {@link #begin} then skips the stale pick. It spends no attempt and counts nothing. It reads only
 * rows of the registered job types, once per look: every half {@code giveBackAfter}, at most every
 * second, and every {@link #URGENT_EVERY_MILLIS} while a job waits behind calls of a second or more.
 */
final class Lifeline {

    private static final Logger LOG = LoggerFactory.getLogger(Lifeline.class);

    private enum Mark { STARTED, GIVEN_BACK }

    /** How often it looks while the prefetch holds none ahead and a job waits for a thread. */
    static final long URGENT_EVERY_MILLIS = 250;

    /** How long an orphan pick waits before it is given back when {@code giveBackAfter} is zero. */
    static final Duration ORPHAN_AFTER_WHEN_OFF = Duration.ofSeconds(10);

    private final JobStore store;
    private final String worker;
    private final String[] jobTypes;
    private final Consumer<JobStore.Picked> givenBack;
    private final int threads;
    private final Duration giveBackAfter;
    private final Duration orphanAfter;
    private final BooleanSupplier holdsNoneAhead;
    private final IntSupplier waitingForThread;
    private final java.time.Clock clock;
    private final Duration staleAfter;
    private final ConcurrentHashMap<String, Mark> marks = new ConcurrentHashMap<>();
    private final AtomicInteger executing = new AtomicInteger();
    private final Map<String, Long> waitingSince = new java.util.HashMap<>();
    private volatile boolean running;
    private Thread thread;

    /**
     * @param giveBackAfter how long a picked job may wait unstarted behind busy threads; zero: never
     *     given back (orphan picks still are, after {@link #ORPHAN_AFTER_WHEN_OFF})
     * @param holdsNoneAhead whether the prefetch now holds no job beyond the threads: a job waiting
     *     behind busy threads then goes back at once
     * @param waitingForThread how many jobs handed to the worker threads wait for one (given back
     *     ones included)
     * @param jobTypes the registered job types: only their runs pass {@link #begin}, so only their
     *     rows can be given back (a plugin's task, such as the recovery sweep, runs unmarked)
     * @param givenBack told of each row given back, at once: what its pick claimed for it (a breaker
     *     trial) goes back with it, not when the stale pick reaches a thread
     */
    Lifeline(JobStore store, String worker, int threads, Duration giveBackAfter, BooleanSupplier holdsNoneAhead,
            IntSupplier waitingForThread, java.time.Clock clock, Duration deadAfter, Collection<String> jobTypes,
            Consumer<JobStore.Picked> givenBack) {
        this.jobTypes = jobTypes.toArray(new String[0]);
        this.givenBack = givenBack;
        this.clock = clock;
        this.staleAfter = deadAfter.dividedBy(2);
        this.store = store;
        this.worker = worker;
        this.threads = threads;
        this.giveBackAfter = giveBackAfter;
        this.orphanAfter = giveBackAfter.isZero() ? ORPHAN_AFTER_WHEN_OFF : giveBackAfter;
        this.holdsNoneAhead = holdsNoneAhead;
        this.waitingForThread = waitingForThread;
    }

    private static String key(String name, String id, long version) {
        return name + '\u0000' + id + '\u0000' + version;
    }

    /**
     * A run starts on a worker thread. A pick older than half the dead-worker timeout (database
     * time: this JVM was paused, or the job waited long for a thread) is confirmed first with one
     * read of its row: if another worker took it back meanwhile (this JVM's heartbeats stopped
     * while it was paused, so the fleet took its jobs for dead), the run must not happen, or the
     * provider would be called twice for one job, outside its bucket.
     *
     * @param pickedAt when it was picked (its row's heartbeat at the pick), or null
     * @return false when the job was given back, or taken back by another worker, meanwhile: the
     *     run must not happen
     */
    boolean begin(JobRun run, java.time.Instant pickedAt) {
        Mark m = marks.compute(key(run.taskName(), run.id(), run.version()),
                (k, v) -> v == Mark.GIVEN_BACK ? Mark.GIVEN_BACK : Mark.STARTED);
        if (m == Mark.GIVEN_BACK) {
            marks.remove(key(run.taskName(), run.id(), run.version()));
            return false;
        }
        if (pickedAt != null && Duration.between(pickedAt, clock.instant()).compareTo(staleAfter) > 0) {
            Boolean mine = stillPicked(run);
            if (!Boolean.TRUE.equals(mine)) {
                marks.remove(key(run.taskName(), run.id(), run.version()));
                LOG.info(mine == null
                        ? "Layover: job {}/{} waited long since its pick and the database cannot confirm it is still this"
                                + " worker's; not running it here (if it is, it is given back once the database answers)"
                        : "Layover: job {}/{} was taken back by another worker while this one waited (paused for longer"
                                + " than the heartbeat timeout?); not running it here", run.taskName(), run.id());
                return false;
            }
        }
        executing.incrementAndGet();
        return true;
    }

    /**
     * @return whether the row is still this worker's at the picked version; null when the database
     *     cannot say (it is away): the caller must not run a job the fleet may have run meanwhile
     */
    private Boolean stillPicked(JobRun run) {
        try {
            return store.stillPicked(run.taskName(), run.id(), run.version(), worker);
        } catch (RuntimeException e) {
            LOG.debug("Layover: could not read job {}/{}: {}", run.taskName(), run.id(), e.toString());
            return null;
        }
    }

    /** The run's handler is over (its outcome is about to be written). */
    void end() {
        executing.decrementAndGet();
    }

    /** The run's row moved on (its outcome written, or deleted by the completer): forget it. */
    void forget(String name, String id, long version) {
        marks.remove(key(name, id, version));
    }

    synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        thread = new Thread(this::loop, "layover-lifeline-" + worker);
        thread.setDaemon(true);
        thread.start();
    }

    synchronized void stop() {
        running = false;
        if (thread != null) {
            thread.interrupt();
        }
    }

    private void loop() {
        long every = Math.max(100, Math.min(1000, orphanAfter.toMillis() / 2));
        long tick = Math.min(every, URGENT_EVERY_MILLIS);
        long last = System.nanoTime();
        while (running) {
            try {
                Thread.sleep(tick);
            } catch (InterruptedException e) {
                return;
            }
            if (System.nanoTime() - last < every * 1_000_000L && !urgent()) {
                continue;
            }
            last = System.nanoTime();
            try {
                check();
            } catch (RuntimeException e) {
                LOG.debug("Layover lifeline: could not look at the picked jobs: {}", e.toString());
            }
        }
    }

    /**
     * @return whether a job waits behind busy threads, not given back yet, while the prefetch holds
     *     none ahead: worth a look before the regular one
     */
    private boolean urgent() {
        if (giveBackAfter.isZero() || executing.get() < threads || !holdsNoneAhead.getAsBoolean()) {
            return false;
        }
        int waiting = waitingForThread.getAsInt();
        if (waiting == 0) {
            return false;
        }
        long givenBack = marks.values().stream().filter(m -> m == Mark.GIVEN_BACK).count();
        return waiting > givenBack;
    }

    /**
     * One look: gives back what waited unstarted too long, behind busy threads ({@code
     * giveBackAfter}, or no wait while the prefetch holds none ahead) or, with a thread free, as an
     * orphan pick ({@code orphanAfter}).
     */
    void check() {
        boolean busy = executing.get() >= threads;
        if (busy && giveBackAfter.isZero()) {
            waitingSince.clear();
            return;
        }
        if (!busy && waitingForThread.getAsInt() > 0) {
            return; // runs queued with a thread free start now: a row is judged an orphan only when none is queued
        }
        long now = System.nanoTime();
        long limit = !busy ? orphanAfter.toNanos() : holdsNoneAhead.getAsBoolean() ? 0 : giveBackAfter.toNanos();
        List<JobStore.Picked> picked = store.pickedBy(worker, jobTypes);
        Set<String> seen = new HashSet<>();
        for (JobStore.Picked p : picked) {
            String k = key(p.taskName(), p.id(), p.version());
            if (marks.get(k) != null) {
                continue;
            }
            seen.add(k);
            long since = waitingSince.computeIfAbsent(k, x -> now);
            if (now - since < limit) {
                continue;
            }
            if (marks.putIfAbsent(k, Mark.GIVEN_BACK) != null) {
                continue; // it started meanwhile
            }
            if (store.giveBack(p.taskName(), p.id(), p.version(), worker) == 1) {
                givenBack.accept(p);
                if (busy) {
                    LOG.debug("Layover lifeline: gave back job {}/{}, picked but not started within {} (every thread busy)",
                            p.taskName(), p.id(), giveBackAfter);
                } else {
                    LOG.info("Layover lifeline: gave back job {}/{}, picked in this worker's name but not handed to it "
                            + "within {} with a thread free (a pick whose reply was lost?)", p.taskName(), p.id(), orphanAfter);
                }
            }
            waitingSince.remove(k);
        }
        waitingSince.keySet().retainAll(seen);
    }
}
