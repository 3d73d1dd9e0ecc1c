package dev.layover.spring.boot;

import dev.layover.core.Layover;
import org.springframework.context.SmartLifecycle;

/**
 * Starts Layover's workers when the application context has started and stops them with it.
 *
 * <p>Start: at the end of the context's refresh, before the web server (phase
 * {@value #PHASE}), so jobs run once every bean exists. Stop: after the web server has stopped
 * taking requests; {@link Layover#stop()} picks no new job and gives running jobs up to
 * {@code layover.shutdown-max-wait} (default 30 s) to finish, on its own thread, so the other
 * lifecycles stop meanwhile. Keep Spring's {@code spring.lifecycle.timeout-per-shutdown-phase}
 * (default 30 s) at least as long, or Spring moves on before the jobs finish (they then run again
 * later: jobs still queued or running stay in the database).
 *
 * <p>With {@code layover.run-jobs=false} it starts nothing: the application is an enqueue-only
 * client.
 *
 * <p>A stopped Layover instance cannot start again: {@code ApplicationContext.stop()} followed by
 * {@code start()} fails (close the context and start a new one). For the same reason it opts out
 * of Spring Framework 7's pausing of cached test contexts ({@link #isPauseable()}): a paused test
 * context keeps its workers running.
 */
public class LayoverLifecycle implements SmartLifecycle {

    /** Before the web server (which starts at {@code DEFAULT_PHASE - 1024}), after ordinary beans. */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private final Layover layover;
    private final boolean runJobs;

    /**
     * @param layover the application's instance, built (and migrated) but not started
     * @param runJobs whether to start its workers
     */
    public LayoverLifecycle(Layover layover, boolean runJobs) {
        this.layover = layover;
        this.runJobs = runJobs;
    }

    @Override
    public void start() {
        if (runJobs && !layover.isRunning()) {
            layover.start();
        }
    }

    @Override
    public void stop() {
        layover.stop();
    }

    @Override
    public void stop(Runnable callback) {
        Thread t = new Thread(() -> {
            try {
                layover.stop();
            } finally {
                callback.run();
            }
        }, "layover-shutdown");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public boolean isRunning() {
        return layover.isRunning();
    }

    @Override
    public boolean isAutoStartup() {
        return runJobs;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    /**
     * Spring Framework 7's {@code SmartLifecycle#isPauseable()} (on Spring 6 an ordinary method):
     * the test context cache must not stop Layover to start it again later.
     *
     * @return false
     */
    public boolean isPauseable() {
        return false;
    }
}
