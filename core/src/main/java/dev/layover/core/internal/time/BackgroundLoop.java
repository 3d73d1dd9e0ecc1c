package dev.layover.core.internal.time;

import java.time.Duration;
import org.slf4j.Logger;

/**
 * A daemon thread that runs one round of work, then waits {@code every}, until stopped. A round that
 * throws is logged at WARN once, and its recovery at INFO once, on the owner's logger, so a database
 * outage says itself once per component however long it lasts.
 */
public final class BackgroundLoop {

    private final Logger log;
    private final String what;
    private final Duration every;
    private final Runnable round;
    private Thread thread;
    private volatile boolean running;

    /**
     * @param log the owner's logger
     * @param what what the loop does, for the log ("the scheduler loop")
     * @param every the wait after each round
     * @param round one round
     */
    public BackgroundLoop(Logger log, String what, Duration every, Runnable round) {
        this.log = log;
        this.what = what;
        this.every = every;
        this.round = round;
    }

    /**
     * Starts the loop (its first round at once); does nothing when it runs already.
     *
     * @param threadName the thread's name
     */
    public synchronized void start(String threadName) {
        if (running) {
            return;
        }
        running = true;
        thread = new Thread(this::loop, threadName);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Stops the loop and waits for a round under way.
     *
     * @param waitFor how long to wait for it at most
     */
    public void stop(Duration waitFor) {
        Thread t;
        synchronized (this) {
            running = false;
            t = thread;
            thread = null;
        }
        if (t != null) {
            t.interrupt();
            try {
                t.join(waitFor.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void loop() {
        boolean failing = false;
        while (running) {
            try {
                round.run();
                if (failing) {
                    log.info("Layover: {} works again", what);
                    failing = false;
                }
            } catch (RuntimeException e) {
                if (!running) {
                    return;
                }
                if (!failing) {
                    log.warn("Layover: {} failed, trying again every {} ms: {}", what, every.toMillis(), e.toString());
                    failing = true;
                }
            }
            try {
                Thread.sleep(every.toMillis());
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
