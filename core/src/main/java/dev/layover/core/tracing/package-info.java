/**
 * Traces of a Layover instance: the {@link dev.layover.core.tracing.LayoverTracing} interface the
 * engine reports enqueues and runs to, and {@link dev.layover.core.tracing.OpenTelemetryTracing},
 * its implementation on the OpenTelemetry API (an optional dependency). See
 * {@code docs/observability.md#traces}.
 */
package dev.layover.core.tracing;
