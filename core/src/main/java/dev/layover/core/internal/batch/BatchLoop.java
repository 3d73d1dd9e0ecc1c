package dev.layover.core.internal.batch;

import static dev.layover.core.internal.time.Durations.seconds;

import dev.layover.core.batch.BatchLine;
import dev.layover.core.batch.BatchProgress;
import dev.layover.core.batch.BatchResultLine;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.batch.BatchTransport;
import dev.layover.core.internal.observe.SafeMetrics;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The batch loop: one thread per Layover instance with batching, never a worker thread. Each
 * tick it seals open batches that are old enough, submits sealed ones, polls submitted ones that
 * are due, collects the lines of finished ones and ends them. Instances share the work: a batch is
 * taken with a lease in database time ({@link BatchSettings#lease()}), and one taken over after a
 * lost lease is first looked for at the provider ({@link BatchTransport#find}) so that it is never
 * submitted twice.
 *
 * <p>The rescue: a submitted batch still running {@link BatchSettings#rescueMargin()} before its
 * earliest job's latest useful finish is cancelled at the provider (its answered lines are kept, the
 * rest return to the queue and, their deadline now too close, are called directly); a batch not
 * submitted by then is given up the same way.
 */
public final class BatchLoop {

    private static final Logger LOG = LoggerFactory.getLogger(BatchLoop.class);

    /** Result lines stored per statement. */
    static final int CHUNK = 500;

    /** Ticks between two wakes of jobs that still wait on a finished batch. */
    private static final int WAKE_EVERY = 30;

    private final BatchStore store;
    private final BatchKeys keys;
    private final SafeMetrics metrics;
    private final String owner;
    private final long tickMillis;
    private Thread thread;
    private volatile boolean running;
    private int ticks;

    /**
     * @param store the batches' owner
     * @param keys the settings of each key
     * @param owner this instance's name (the leases' owner)
     * @param tick how often it looks for work
     * @param metrics counts the lines it moves
     */
    public BatchLoop(BatchStore store, BatchKeys keys, String owner, Duration tick, SafeMetrics metrics) {
        this.store = store;
        this.keys = keys;
        this.metrics = metrics;
        // unique per loop: two instances in one JVM may share a worker name
        this.owner = owner + "/" + java.util.UUID.randomUUID().toString().substring(0, 8);
        this.tickMillis = Math.max(20, tick.toMillis());
    }

    /** Starts the thread. */
    public synchronized void start() {
        if (thread != null) {
            return;
        }
        running = true;
        thread = new Thread(this::run, "layover-batches-" + owner.substring(0, owner.lastIndexOf('/')));
        thread.setDaemon(true);
        thread.start();
    }

    /** Stops the thread, waiting for the tick in progress (a transport call may be cut short). */
    public synchronized void stop() {
        running = false;
        if (thread != null) {
            thread.interrupt();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            thread = null;
        }
    }

    private void run() {
        while (running) {
            try {
                tick();
            } catch (RuntimeException e) {
                if (running) {
                    LOG.warn("Layover batch loop: {}", e.toString());
                }
            }
            try {
                Thread.sleep(tickMillis);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** One pass over the batches. */
    void tick() {
        for (BatchStore.Open o : store.open()) {
            BatchSettings s = keys.of(o.key());
            if (s != null && o.ageSeconds() >= seconds(s.maxGatherAge())) {
                store.seal(o.id());
            }
        }
        for (BatchStore.Live b : store.live()) {
            if (!running) {
                return;
            }
            BatchSettings s = keys.of(b.key());
            if (s == null) {
                continue; // a key this instance has no transport for
            }
            if ("submitted".equals(b.state())) {
                poll(b, s);
            } else {
                submit(b, s);
            }
        }
        if (++ticks % WAKE_EVERY == 0) {
            store.wake();
        }
    }

    private void submit(BatchStore.Live b, BatchSettings s) {
        BatchStore.Claim claim = store.claimSubmit(b.id(), owner, seconds(s.lease()));
        if (claim == null) {
            return; // another instance took it
        }
        BatchTransport t = s.transport();
        String ref = "lo-batch-" + b.id();
        boolean tooLate = rescueDue(b, s);
        try {
            if (claim.attempt() > 1) {
                // an earlier attempt may have reached the provider before it could record the id
                Optional<String> found = t.find(ref, b.lines(), claim.firstStartedAt().minus(Duration.ofMinutes(1)));
                if (found.isPresent()) {
                    store.submitted(b.id(), owner, found.get(), seconds(s.pollInterval()));
                    metrics.batchLines(b.key(), "submitted", b.lines());
                    LOG.info("Layover batch {}: rejoined provider batch {} after an interrupted submit", b.id(), found.get());
                    return;
                }
            }
            if (tooLate) {
                metrics.batchLines(b.key(), "returned",
                        store.finish(b.id(), "cancelled", "given up before submitting: its earliest deadline is within the rescue margin"));
                return;
            }
            List<BatchLine> lines = store.lines(b.id());
            if (lines.isEmpty()) {
                store.finish(b.id(), "ended", null);
                return;
            }
            String id = t.submit(ref, lines);
            metrics.batchLines(b.key(), "submitted", lines.size());
            if (!store.submitted(b.id(), owner, id, seconds(s.pollInterval()))) {
                LOG.warn("Layover batch {}: submitted as {} after its lease ran out; the instance that took it over rejoins it",
                        b.id(), id);
            }
        } catch (Exception e) {
            LOG.warn("Layover batch {}: submit to {} failed, tried again later: {}", b.id(), t.name(), e.toString());
            store.submitFailed(b.id(), owner, e.toString(), Math.min(30, seconds(s.pollInterval())));
        }
    }

    private void poll(BatchStore.Live b, BatchSettings s) {
        if (!store.claimPoll(b.id(), owner, seconds(s.lease()))) {
            return;
        }
        BatchTransport t = s.transport();
        double next = seconds(s.pollInterval());
        try {
            BatchProgress p = t.poll(b.providerId());
            if (!p.state().finished()) {
                boolean cancel = b.cancelAskedAt() == null && rescueDue(b, s);
                if (cancel) {
                    LOG.info("Layover batch {}: still running within the rescue margin of its earliest deadline; cancelling "
                            + "provider batch {}", b.id(), b.providerId());
                    t.cancel(b.providerId());
                }
                store.polled(b.id(), owner, next, null, cancel);
                return;
            }
            if (p.state() != BatchProgress.State.FAILED) {
                List<BatchResultLine> buffer = new ArrayList<>(CHUNK);
                t.results(b.providerId(), line -> {
                    buffer.add(line);
                    if (buffer.size() >= CHUNK) {
                        metrics.batchLines(b.key(), "collected", store.collect(b.id(), buffer));
                        buffer.clear();
                    }
                });
                metrics.batchLines(b.key(), "collected", store.collect(b.id(), buffer));
            }
            int back = store.finish(b.id(), p.state().name().toLowerCase(Locale.ROOT),
                    p.state() == BatchProgress.State.FAILED ? "the provider refused the batch" : null);
            metrics.batchLines(b.key(), "returned", back);
            LOG.debug("Layover batch {}: {} at the provider, {} items returned to the queue", b.id(), p.state(), back);
        } catch (Exception e) {
            LOG.warn("Layover batch {}: poll of {} failed, tried again later: {}", b.id(), t.name(), e.toString());
            store.polled(b.id(), owner, next, e.toString(), false);
        }
    }

    private static boolean rescueDue(BatchStore.Live b, BatchSettings s) {
        Instant earliest = b.earliestDeadline();
        return earliest != null && !b.now().isBefore(earliest.minus(s.rescueMargin()));
    }
}
