package dev.layover.core.internal.observe;

import dev.layover.core.tracing.LayoverTracing;
import dev.layover.core.tracing.LayoverTracing.EnqueueSpan;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The traces and log context of a Layover instance: the application's {@link LayoverTracing},
 * guarded (an exception it throws is logged once and never fails an enqueue or a job), and whether
 * runs carry their job in the SLF4J MDC ({@link RunScope}).
 */
public final class Runs {

    private static final Logger LOG = LoggerFactory.getLogger(Runs.class);

    /** No tracing, no MDC. */
    public static final Runs OFF = new Runs(LayoverTracing.none(), false);

    private final LayoverTracing tracing;
    private final boolean traced;
    private final boolean mdc;
    private final AtomicBoolean warned = new AtomicBoolean();

    /**
     * @param tracing the application's tracing ({@link LayoverTracing#none()} for none)
     * @param mdc whether runs put their job into the MDC
     */
    public Runs(LayoverTracing tracing, boolean mdc) {
        this.tracing = tracing == null ? LayoverTracing.none() : tracing;
        this.traced = this.tracing != LayoverTracing.none();
        this.mdc = mdc;
    }

    /** @return whether runs are traced (the pick then reads the picked jobs' trace context) */
    public boolean traced() {
        return traced;
    }

    /**
     * An enqueue call starts.
     *
     * @return its span ({@link EnqueueSpan#NONE} without tracing or when the tracer failed)
     */
    public EnqueueSpan enqueueStarted(String jobType, int jobs) {
        if (!traced) {
            return EnqueueSpan.NONE;
        }
        try {
            EnqueueSpan s = tracing.enqueueStarted(jobType, jobs);
            return s == null ? EnqueueSpan.NONE : s;
        } catch (RuntimeException | LinkageError e) {
            failed(e);
            return EnqueueSpan.NONE;
        }
    }

    /** Ends an enqueue's span; never throws. */
    public void enqueueEnded(EnqueueSpan span, String jobId, int created, Throwable error) {
        if (span == EnqueueSpan.NONE) {
            return;
        }
        try {
            span.end(jobId, created, error);
        } catch (RuntimeException | LinkageError e) {
            failed(e);
        }
    }

    /**
     * A run starts on this thread: its span and MDC, current until {@link RunScope#close()}.
     *
     * @param start the job
     * @return the run's scope
     */
    public RunScope open(LayoverTracing.RunStart start) {
        LayoverTracing.RunSpan span = LayoverTracing.RunSpan.NONE;
        if (traced) {
            try {
                LayoverTracing.RunSpan s = tracing.runStarted(start);
                span = s == null ? LayoverTracing.RunSpan.NONE : s;
            } catch (RuntimeException | LinkageError e) {
                failed(e);
            }
        }
        return RunScope.open(this, span, mdc, start);
    }

    /** The tracer threw: logged once per instance, at WARN; later ones at DEBUG. */
    void failed(Throwable e) {
        if (warned.compareAndSet(false, true)) {
            LOG.warn("Layover: the tracing implementation failed (traces may be incomplete; jobs are not affected): {}",
                    e.toString());
        } else {
            LOG.debug("Layover: the tracing implementation failed: {}", e.toString());
        }
    }
}
