package dev.layover.core.internal.observe;

import dev.layover.core.metrics.LayoverMetrics;

/**
 * What a Layover instance records beside doing its work: metrics, the history of finished jobs
 * ({@code layover.job_history}), the time series ({@code layover.time_series}), and the traces and
 * log context of runs.
 *
 * @param metrics the guarded metrics
 * @param history whether finished jobs get a row in {@code layover.job_history}
 * @param historyArgs whether that row keeps the job's args
 * @param timeSeries the counters of {@code layover.time_series}
 * @param runs the traces and MDC of runs
 */
public record Observability(SafeMetrics metrics, boolean history, boolean historyArgs, TimeSeries timeSeries,
        Runs runs) {

    /** Nothing measured, no time series; history on, without args. */
    public static final Observability DEFAULT =
            new Observability(SafeMetrics.of(LayoverMetrics.none()), true, false, TimeSeries.OFF);

    /** Null metrics mean none; a null time series counts nothing; null runs are neither traced nor in the MDC. */
    public Observability {
        metrics = metrics == null ? SafeMetrics.of(null) : metrics;
        timeSeries = timeSeries == null ? TimeSeries.OFF : timeSeries;
        runs = runs == null ? Runs.OFF : runs;
    }

    /**
     * Without traces or MDC.
     *
     * @param metrics the guarded metrics
     * @param history whether finished jobs get a row in {@code layover.job_history}
     * @param historyArgs whether that row keeps the job's args
     * @param timeSeries the counters of {@code layover.time_series}
     */
    public Observability(SafeMetrics metrics, boolean history, boolean historyArgs, TimeSeries timeSeries) {
        this(metrics, history, historyArgs, timeSeries, Runs.OFF);
    }
}
