/**
 * Metrics of a Layover instance: the {@link dev.layover.core.metrics.LayoverMetrics} interface
 * the engine reports to, and {@link dev.layover.core.metrics.MicrometerMetrics}, its
 * implementation on Micrometer (an optional dependency). See {@code docs/observability.md}.
 */
package dev.layover.core.metrics;
