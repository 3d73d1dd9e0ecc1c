package dev.layover.core.internal.engine;

import com.github.kagkarlsson.scheduler.jdbc.JdbcTaskRepositoryContext;
import com.github.kagkarlsson.scheduler.jdbc.PostgreSqlJdbcCustomization;
import com.github.kagkarlsson.scheduler.task.Execution;
import dev.layover.core.internal.db.DatabaseOutage;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many jobs a worker holds at a time (picked: running or waiting for a thread), as a multiple
 * of its threads, and the JDBC customization through which db-scheduler's lock-and-fetch runs
 * Layover's pick ({@link Picker}). Fixed when the application set {@code prefetch}; else adaptive,
 * from a moving average of handler durations (or the youngest running handler's age, when every
 * thread is busy and it is longer): 1 from {@link #LONG_NANOS}, rising with the logarithm to
 * {@link #SHORT_FACTOR} at {@link #SHORT_NANOS}, below that the same work per thread up to {@link
 * #MAX_FACTOR} and {@link #MAX_ROWS}; 1 before a handler ended. Short jobs gain by many rows per
 * pick (a pick is a round trip); a job held behind a long call waits it out while another worker
 * may be idle. db-scheduler fixes its limit when built, so each pick takes {@code limit − held}
 * rows, and runs leaving the {@link #pool} wake the next pick while picks come back full. At 1
 * nothing is held ahead and {@link Lifeline} gives back what waits ({@link #holdsNoneAhead}).
 */
final class PickLimit extends PostgreSqlJdbcCustomization {

    /** The adaptive factor for handlers of {@link #SHORT_NANOS}: rows held per thread. */
    static final double SHORT_FACTOR = 6.0;
    /** Handler durations at which the adaptive factor is {@link #SHORT_FACTOR}: 10 ms. */
    static final long SHORT_NANOS = 10_000_000L;
    /**
     * The adaptive factor's ceiling, for handlers far shorter than {@link #SHORT_NANOS}: rows held
     * per thread. Higher than {@link #SHORT_FACTOR} because no-op jobs gain throughput from larger
     * picks (docs/benchmarks.md, "Adaptive prefetch, larger picks").
     */
    static final double MAX_FACTOR = 64.0;
    /**
     * The rows the ceiling holds at most, whatever the threads (unless {@link #SHORT_FACTOR} ×
     * threads is more): many threads (virtual ones) do not make a pick of tens of thousands of rows.
     */
    static final int MAX_ROWS = 1024;
    /** Handler durations at or above which the adaptive factor is 1: 1 s. */
    static final long LONG_NANOS = 1_000_000_000L;
    /** Weight of the newest duration in the moving average. */
    static final double WEIGHT = 0.2;

    private final int threads;
    private final boolean adaptive;
    private final double fixedFactor;
    /** The adaptive factor's ceiling for these threads. */
    private final double ceiling;
    /** db-scheduler's upper limit, {@code (int) (upperFactor() × threads)}, as it computes it. */
    private final int upper;
    /** Moving average of handler durations in nanoseconds; negative: nothing observed. */
    private volatile double averageNanos = -1;
    /** The running handlers' start ({@link System#nanoTime}), by run. */
    private final ConcurrentHashMap<Object, Long> running = new ConcurrentHashMap<>();
    /** Whether the last adaptive pick came back full (more may be due). */
    private volatile boolean wakeOnEnd;
    /** Rows the last adaptive pick took. */
    private volatile int lastPicked;
    private final AtomicInteger endedSincePick = new AtomicInteger();
    /** Rows the last pick asked for (0 when it asked for none). */
    private volatile int lastAsked;
    /** Whether the last pick failed: freed rows then wait for the next poll. */
    private volatile boolean lastPickFailed;
    private volatile Runnable wakeUp = () -> { };
    private volatile ThreadPoolExecutor pool;
    private volatile Picker picker;

    /**
     * @param threads the worker threads
     * @param prefetch the fixed factor (1 to 10); 0: adaptive
     */
    PickLimit(int threads, double prefetch) {
        super(false, false);
        this.threads = threads;
        this.adaptive = prefetch == 0;
        this.fixedFactor = prefetch;
        this.ceiling = Math.max(SHORT_FACTOR, Math.min(MAX_FACTOR, (double) MAX_ROWS / threads));
        this.upper = (int) (upperFactor() * threads);
    }

    /** @return the factor db-scheduler is built with: the fixed one, or the adaptive ceiling */
    double upperFactor() {
        return adaptive ? ceiling : fixedFactor;
    }

    /** @param picker runs the pick (set before the scheduler starts) */
    void pickWith(Picker picker) {
        this.picker = picker;
    }

    /** @param wakeUp asks the scheduler to look for due jobs (set once the scheduler exists) */
    void wakeUpWith(Runnable wakeUp) {
        this.wakeUp = wakeUp;
    }

    /**
     * db-scheduler's execution pool: a fixed pool of {@code threads} over an unbounded queue, as
     * db-scheduler builds it itself, that tells this class when a run has left it.
     *
     * @param factory the pool's threads (platform or virtual)
     * @return the pool
     */
    ExecutorService pool(ThreadFactory factory) {
        ThreadPoolExecutor p = new ThreadPoolExecutor(threads, threads, 0L, TimeUnit.MILLISECONDS,
                new LinkedBlockingQueue<>(), factory) {
            @Override
            protected void afterExecute(Runnable r, Throwable t) {
                left();
            }
        };
        this.pool = p;
        return p;
    }

    /** @return jobs handed to the pool that wait for a thread (given back ones included) */
    int waitingForThread() {
        ThreadPoolExecutor p = pool;
        return p == null ? 0 : p.getQueue().size();
    }

    /** @return the current factor: jobs held per thread */
    double factor() {
        if (!adaptive) {
            return fixedFactor;
        }
        double avg = averageNanos;
        if (avg < 0) {
            return 1.0;
        }
        double f = factorFor(Math.max(avg, youngestAgeWhenBusy()));
        if (f <= SHORT_FACTOR) {
            return f;
        }
        return Math.max(SHORT_FACTOR, Math.min(ceiling, f));
    }

    /** @return the youngest running handler's age when every thread runs one, else -1 */
    private double youngestAgeWhenBusy() {
        if (running.size() < threads) {
            return -1;
        }
        long now = System.nanoTime();
        long youngest = Long.MAX_VALUE;
        for (Long since : running.values()) {
            youngest = Math.min(youngest, now - since);
        }
        return youngest == Long.MAX_VALUE ? -1 : youngest;
    }

    /** @return the adaptive factor for handlers taking {@code nanos} on average */
    static double factorFor(double nanos) {
        if (nanos <= SHORT_NANOS) {
            return Math.min(MAX_FACTOR, SHORT_FACTOR * SHORT_NANOS / Math.max(nanos, 1.0));
        }
        if (nanos >= LONG_NANOS) {
            return 1.0;
        }
        double f = Math.log((double) LONG_NANOS / nanos) / Math.log((double) LONG_NANOS / SHORT_NANOS);
        return 1.0 + (SHORT_FACTOR - 1.0) * f;
    }

    /** @return jobs this worker holds at most now */
    int limit() {
        return Math.max(threads, (int) (factor() * threads));
    }

    /** @return whether the prefetch is adaptive and now holds no job beyond the threads */
    boolean holdsNoneAhead() {
        return adaptive && limit() <= threads;
    }

    /**
     * A handler's run starts on a worker thread.
     *
     * @return the run, for {@link #ended}
     */
    Object started() {
        Object run = new Object();
        running.put(run, System.nanoTime());
        return run;
    }

    /**
     * The run's handler is over (its outcome about to be written).
     *
     * @param run what {@link #started} returned
     */
    void ended(Object run) {
        Long since = running.remove(run);
        if (since != null) {
            observe(System.nanoTime() - since);
        }
    }

    /** @param nanos how long a handler held its thread, into the moving average */
    void observe(long nanos) {
        if (adaptive) {
            double avg = averageNanos;
            averageNanos = avg < 0 ? nanos : avg + WEIGHT * (nanos - avg);
        }
    }

    /** A run (or a skipped one, given back meanwhile) has left db-scheduler's pool and its count. */
    void left() {
        if (wakeOnEnd) {
            int every = Math.max(1, Math.min((int) ((factor() - 1.0) * threads / 2), lastPicked / 2));
            if (endedSincePick.incrementAndGet() >= every) {
                endedSincePick.set(0);
                wakeUp.run();
            }
        }
    }

    /**
     * Finished runs' rows are gone or moved on (a done job's deleted by the completer, any other
     * outcome written): the concurrency slots they held are free. When the last pick took fewer
     * jobs than it asked for (and no full pick has the scheduler look again as runs end), it looks
     * once more now: a pick that its keys' limits cut short leaves due jobs that only a freed slot
     * admits, and they would otherwise wait for the next poll. Wake-ups that come while a pick
     * runs make one more pick, not one each; after a pick that failed (the database going away),
     * none until a poll's pick succeeds again.
     */
    void rowsFreed() {
        if (!wakeOnEnd && !lastPickFailed && lastPicked < lastAsked) {
            wakeUp.run();
        }
    }

    @Override
    public List<Execution> lockAndFetchSingleStatement(JdbcTaskRepositoryContext ctx, Instant now, int limit,
            boolean orderByPriority) {
        endedSincePick.set(0);
        int held = upper - limit; // db-scheduler asks for upper − (queued + running)
        int lowered = adaptive ? Math.min(limit, limit() - held) : limit;
        if (lowered <= 0) {
            lastPicked = 0;
            lastAsked = 0;
            wakeOnEnd = true; // nothing taken: whatever is due waits for threads here to end
            return List.of();
        }
        lastAsked = lowered;
        List<Execution> picked;
        try {
            picked = picker.pick(lowered, orderByPriority);
        } catch (RuntimeException e) {
            lastPickFailed = true;
            if (DatabaseOutage.isConnectionFailure(e)) {
                // the database went away: the outage detection heard of it (and logs it once), the
                // next poll tries again; db-scheduler would log each failed poll
                return List.of();
            }
            throw e;
        }
        lastPickFailed = false;
        lastPicked = picked.size();
        wakeOnEnd = adaptive && picked.size() == lowered;
        return picked;
    }
}
