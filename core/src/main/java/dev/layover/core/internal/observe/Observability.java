package dev.layover.core.internal.observe;

import dev.layover.core.metrics.LayoverMetrics;

/**
 * What a Layover instance records beside doing its work: metrics, and the history of finished
 * jobs ({@code layover.job_history}).
 *
 * @param metrics the guarded metrics
 * @param history whether finished jobs get a row in {@code layover.job_history}
 * @param historyArgs whether that row keeps the job's args
 */
public record Observability(SafeMetrics metrics, boolean history, boolean historyArgs) {

    /** Nothing measured; history on, without args (Layover's defaults). */
    public static final Observability DEFAULT = new Observability(SafeMetrics.of(LayoverMetrics.none()), true, false);

    /** Null metrics mean none. */
    public Observability {
        metrics = metrics == null ? SafeMetrics.of(null) : metrics;
    }
}
