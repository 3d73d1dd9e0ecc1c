package dev.layover.core.internal.jobs;

import java.time.Duration;
import java.time.Instant;

/**
 * When a run of a job started, and how long its handler took: written to its history row and
 * reported to the metrics. {@link #NONE} for outcomes written without a run in this JVM (a job
 * revived after its worker died).
 */
public final class RunTiming {

    /** No run in this JVM. */
    public static final RunTiming NONE = new RunTiming(null, 0);

    private final Instant startedAt;
    private final long startNanos;
    private volatile long handlerNanos = -1;

    private RunTiming(Instant startedAt, long startNanos) {
        this.startedAt = startedAt;
        this.startNanos = startNanos;
    }

    /**
     * @param now the start
     * @return a run starting now
     */
    public static RunTiming start(Instant now) {
        return new RunTiming(now, System.nanoTime());
    }

    /** The handler returned: its duration is measured from the start of the run. */
    public Duration handlerReturned() {
        if (startedAt == null) {
            return Duration.ZERO;
        }
        long n = System.nanoTime() - startNanos;
        handlerNanos = n;
        return Duration.ofNanos(n);
    }

    /** @return when the run started, or null */
    public Instant startedAt() {
        return startedAt;
    }

    /** @return the start as ISO-8601 text for a {@code timestamptz} parameter, or null */
    public String startedAtText() {
        return startedAt == null ? null : startedAt.toString();
    }

    /** @return the handler's duration in milliseconds, or null when no handler ran */
    public Double durationMs() {
        long n = handlerNanos;
        return n < 0 ? null : n / 1e6;
    }
}
