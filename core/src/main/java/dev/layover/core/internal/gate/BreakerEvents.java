package dev.layover.core.internal.gate;

import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.provider.state.BreakerEvent;
import dev.layover.core.provider.state.BreakerListener;
import dev.layover.core.provider.state.BreakerState;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Breaker changes told to whoever listens: a log line and a metric for the changes this instance
 * made, and every {@link BreakerListener} (on one thread of its own, so a slow listener never
 * holds a worker) for these and those of other JVMs heard by NOTIFY.
 */
final class BreakerEvents {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);

    private final CopyOnWriteArrayList<BreakerListener> listeners = new CopyOnWriteArrayList<>();
    private final LayoverMetrics metrics;
    private final String workerName;
    private volatile ExecutorService events;

    BreakerEvents(List<BreakerListener> listeners, LayoverMetrics metrics, String workerName) {
        this.listeners.addAll(listeners);
        this.metrics = metrics;
        this.workerName = workerName;
    }

    void add(BreakerListener l) {
        listeners.add(Objects.requireNonNull(l, "listener"));
    }

    void remove(BreakerListener l) {
        listeners.remove(l);
    }

    void emit(String key, BreakerState from, BreakerState to, String reason, Instant at, String by, boolean local) {
        if (local) {
            LOG.info("Breaker of {}: {} -> {} ({})", key, from.code(), to.code(), reason);
            metrics.breakerChanged(key, from.code(), to.code());
        }
        if (listeners.isEmpty()) {
            return;
        }
        BreakerEvent event = new BreakerEvent(key, from, to, at, reason, by, local);
        executor().execute(() -> {
            for (BreakerListener l : listeners) {
                try {
                    l.onChange(event);
                } catch (RuntimeException e) {
                    LOG.warn("Layover: breaker listener {} failed on {}", l, event, e);
                }
            }
        });
    }

    void close() {
        ExecutorService ev = events;
        if (ev != null) {
            ev.shutdown();
        }
    }

    private ExecutorService executor() {
        ExecutorService ev = events;
        if (ev == null) {
            synchronized (this) {
                ev = events;
                if (ev == null) {
                    ev = Executors.newSingleThreadExecutor(r -> {
                        Thread t = new Thread(r, "layover-breaker-events-" + workerName);
                        t.setDaemon(true);
                        return t;
                    });
                    events = ev;
                }
            }
        }
        return ev;
    }
}
