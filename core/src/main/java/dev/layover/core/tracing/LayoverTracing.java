package dev.layover.core.tracing;

import java.time.Instant;
import java.util.Map;

/**
 * Where a Layover instance reports its traces: a span for each enqueue made inside a traced
 * request, whose W3C trace context is stored with the job ({@code scheduled_tasks.trace_context}),
 * and a span for each run of a job, linked to it. Layover ships {@link OpenTelemetryTracing}
 * (the OpenTelemetry API is an optional dependency: without it on the classpath Layover never loads
 * that class and uses {@link #none()}); no method of this interface names a type outside the JDK
 * and Layover, so another tracer can be plugged in.
 *
 * <pre>{@code
 * Layover layover = Layover.builder(dataSource)
 *         .register(translate)
 *         .tracing(OpenTelemetryTracing.of(openTelemetry))   // or OpenTelemetryTracing.global()
 *         .start();
 * }</pre>
 *
 * <p>Database effect: an enqueue with a span writes its context into the job row's
 * {@code trace_context} (about 70 bytes, in the same {@code INSERT}); with tracing on, each pick
 * reads the picked jobs' {@code trace_context} and {@code reschedules} by primary key (one more
 * statement per pick, not per job). Without tracing nothing is written or read.
 *
 * <p>Calls come from the threads that enqueue and from worker threads, concurrently: an
 * implementation must be thread-safe. An exception thrown by it is caught and logged once; it
 * never fails an enqueue or a job. The attribute and event names the engine uses are listed in
 * {@code docs/observability.md}.
 */
public interface LayoverTracing {

    /** @return tracing that records nothing and stores no context (the default) */
    static LayoverTracing none() {
        return NoTracing.INSTANCE;
    }

    /**
     * An enqueue is about to insert, on the caller's thread.
     *
     * @param jobType the job type
     * @param jobs how many jobs the call inserts (1, or a batch's size)
     * @return the enqueue's span, whose context each job stores; {@link EnqueueSpan#NONE} for none
     */
    default EnqueueSpan enqueueStarted(String jobType, int jobs) {
        return EnqueueSpan.NONE;
    }

    /**
     * A run of a job starts, on the worker thread that runs it (its outcome is written on the same
     * thread before {@link RunSpan#end()}).
     *
     * @param start the job and the trace context it was enqueued with
     * @return the run's span; {@link RunSpan#NONE} for none
     */
    default RunSpan runStarted(RunStart start) {
        return RunSpan.NONE;
    }

    /**
     * A run starting.
     *
     * @param jobType the job type
     * @param jobId the job id
     * @param attempt the attempt number the handler sees (attempts spent + 1)
     * @param reschedules times the job was moved later without spending an attempt, or -1 when
     *     unknown (a run whose row was not read)
     * @param traceparent the W3C {@code traceparent} stored at enqueue, or null (possibly malformed:
     *     written by an old or foreign producer)
     * @param tracestate the W3C {@code tracestate} stored at enqueue, or null
     */
    record RunStart(String jobType, String jobId, int attempt, int reschedules, String traceparent,
            String tracestate) {}

    /** The span of one enqueue call. */
    interface EnqueueSpan {

        /** No span: nothing is stored with the jobs. */
        EnqueueSpan NONE = new EnqueueSpan() {
            @Override
            public String traceparent() {
                return null;
            }

            @Override
            public void end(String jobId, int created, Throwable error) {}
        };

        /** @return the W3C {@code traceparent} to store with each job, or null to store none */
        String traceparent();

        /** @return the W3C {@code tracestate} to store with it, or null */
        default String tracestate() {
            return null;
        }

        /**
         * The insert ended.
         *
         * @param jobId the job's id for a single enqueue, null for a batch
         * @param created how many jobs were created (an idempotency key that existed creates none)
         * @param error what failed the enqueue, or null
         */
        void end(String jobId, int created, Throwable error);
    }

    /** The span of one run of a job. */
    interface RunSpan {

        /** No span. */
        RunSpan NONE = new RunSpan() {};

        /** @return the trace id of the run's span (32 hex digits), for the log lines' MDC; null when none */
        default String traceId() {
            return null;
        }

        /** @return the span id of the run's span (16 hex digits); null when none */
        default String spanId() {
            return null;
        }

        /**
         * Makes the span current on this thread, so that what the handler does (its HTTP calls,
         * with their own instrumentation) is traced as its children.
         *
         * @return closes what was made current; called on the same thread
         */
        default AutoCloseable makeCurrent() {
            return () -> { };
        }

        /**
         * Sets an attribute.
         *
         * @param key the name ({@code docs/observability.md})
         * @param value a {@code String}, {@code Long}, {@code Integer} or {@code Boolean}
         */
        default void attribute(String key, Object value) {}

        /**
         * Adds an event.
         *
         * @param name the event's name ({@code layover.rate_limited}, {@code layover.fallback},
         *     {@code layover.rescheduled}, {@code layover.retried}, {@code layover.parked})
         * @param at when it happened
         * @param attributes its attributes, values as for {@link #attribute}
         */
        default void event(String name, Instant at, Map<String, Object> attributes) {}

        /**
         * The exception the handler's attempt ended with (a 429 too), recorded on the span without
         * making it an error.
         *
         * @param cause the exception
         */
        default void exception(Throwable cause) {}

        /**
         * The run failed (a retry or a park): the span's status is an error.
         *
         * @param description what failed
         * @param cause the exception, or null
         */
        default void error(String description, Throwable cause) {}

        /** The run's outcome is written: the span ends. */
        default void end() {}
    }
}
