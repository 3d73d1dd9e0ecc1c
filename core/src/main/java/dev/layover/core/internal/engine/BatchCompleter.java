package dev.layover.core.internal.engine;

import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.internal.db.DatabaseOutage;
import dev.layover.core.internal.jobs.JobStore;
import dev.layover.core.internal.observe.Observability;

/**
 * Deletes finished jobs in batches on one background thread, as River's completer does: a finished
 * job waits here for at most one round trip of the thread, and under load thousands share one
 * {@code DELETE}. If the process dies before a flush, the job runs again, which at-least-once
 * delivery allows. If the database is away, the batch is kept and retried; the outage is logged
 * once, and once more when it ends.
 */
final class BatchCompleter implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(BatchCompleter.class);
    private static final int MAX_BATCH = 5000;

    private final JobStore store;
    private final DatabaseOutage outage;
    private final Observability observability;
    private final LinkedBlockingQueue<JobStore.Done> queue = new LinkedBlockingQueue<>();
    private final AtomicLong pending = new AtomicLong();
    /** Runs whose handler returned and whose outcome is not written or handed in yet. */
    private final AtomicLong finishing = new AtomicLong();
    private final Object idle = new Object();
    private final Thread thread;
    private volatile boolean stopping;
    private volatile boolean started;

    /** Told of the finished jobs whose rows are gone (the lifeline forgets them). */
    private final java.util.function.Consumer<JobStore.Done> deleted;

    /** Told once per deleted batch: the rows' concurrency slots are free. */
    private final Runnable freed;

    BatchCompleter(JobStore store, String name, DatabaseOutage outage, Observability observability,
            java.util.function.Consumer<JobStore.Done> deleted, Runnable freed) {
        this.deleted = deleted;
        this.freed = freed;
        this.store = store;
        this.outage = outage;
        this.observability = observability;
        this.thread = new Thread(this::loop, name);
        this.thread.setDaemon(true);
    }

    /** Hands in a finished job, with what its history row records of its last run. */
    void complete(JobStore.Done done) {
        if (!started) {
            startThread();
        }
        pending.incrementAndGet();
        queue.add(done);
    }

    /** A run's handler returned: {@link #awaitFlushed} waits for its outcome too. */
    void runEnding() {
        finishing.incrementAndGet();
    }

    /** The run's outcome is written, or handed in ({@link #complete}). */
    void runEnded() {
        if (finishing.decrementAndGet() == 0 && pending.get() == 0) {
            synchronized (idle) {
                idle.notifyAll();
            }
        }
    }

    /** The thread starts with the first finished job, so an instance that never runs jobs owns none. */
    private synchronized void startThread() {
        if (!started) {
            thread.start();
            started = true;
        }
    }

    /**
     * Waits until every job handed in so far is deleted, and every run whose handler returned has its
     * outcome written or handed in, or the timeout passes.
     *
     * @return true when nothing is pending
     */
    boolean awaitFlushed(Duration timeout) {
        return await(timeout, true);
    }

    private boolean await(Duration timeout, boolean finishingToo) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (idle) {
            while (pending.get() > 0 || (finishingToo && finishing.get() > 0)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    idle.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }
    }

    private void loop() {
        List<JobStore.Done> batch = new ArrayList<>();
        boolean failing = false;
        long backoffMs = 100;
        while (true) {
            try {
                if (batch.isEmpty()) {
                    JobStore.Done first = queue.poll(200, TimeUnit.MILLISECONDS);
                    if (first == null) {
                        if (stopping && queue.isEmpty()) {
                            return;
                        }
                        continue;
                    }
                    batch.add(first);
                    queue.drainTo(batch, MAX_BATCH - 1);
                }
                delete(batch);
                if (failing) {
                    LOG.info("Layover completer: database reachable again, deleted {} finished jobs", batch.size());
                    failing = false;
                    backoffMs = 100;
                }
                int n = batch.size();
                batch.clear();
                if (pending.addAndGet(-n) == 0 && finishing.get() == 0) {
                    synchronized (idle) {
                        idle.notifyAll();
                    }
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (!failing) {
                    LOG.warn("Layover completer: cannot delete {} finished jobs, will retry until the database answers: {}",
                            batch.size(), e.getMessage());
                    failing = true;
                }
                try {
                    if (outage != null && outage.isDown()) {
                        // the database is away: try again as soon as it answers
                        outage.awaitWritable(Duration.ofSeconds(5));
                    } else {
                        Thread.sleep(backoffMs);
                    }
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMs = Math.min(5000, backoffMs * 2);
            }
        }
    }

    private void delete(List<JobStore.Done> batch) {
        store.deleteDone(batch, observability.history(), observability.historyArgs());
        batch.forEach(deleted);
        freed.run();
    }

    /** Stops after deleting what is queued (waits up to {@code timeout}). */
    synchronized void stop(Duration timeout) {
        if (!started) {
            return;
        }
        await(timeout, false); // what was handed in; a run the stop interrupted may never hand its outcome in
        stopping = true;
        thread.interrupt();
        try {
            thread.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        stop(Duration.ofSeconds(10));
    }
}
