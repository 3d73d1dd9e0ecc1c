package dev.layover.core.tracing;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * {@link LayoverTracing} on the OpenTelemetry API. The API is an optional dependency of Layover:
 * this is the only class that refers to it, loaded only when the application calls
 * {@link #of(OpenTelemetry)} or {@link #global()}. No agent is needed; with the OpenTelemetry Java
 * agent, {@link #global()} is the agent's.
 *
 * <ul>
 *   <li><b>Enqueue</b>: inside a span (an HTTP request's, the application's own), an enqueue call is
 *       a span of kind {@code PRODUCER}, {@code send <job type>}, child of the current span; its W3C
 *       context ({@code traceparent}, {@code tracestate}) is stored with every job the call inserts.
 *       Outside any span nothing is stored.
 *   <li><b>Run</b>: each run of a job is a span of kind {@code CONSUMER}, {@code process <job
 *       type>}, the root of a trace of its own with a <em>link</em> to the enqueue's span (not a
 *       child: a run hours later does not stretch the producer's trace). A retry or a reschedule
 *       runs again as a new span with the same link; attributes {@code layover.attempt} and
 *       {@code layover.reschedules} tell them apart. The span is current while the job runs, so the
 *       handler's own instrumented calls are its children.
 *   <li>A stored {@code traceparent} that does not parse (an old or foreign producer) is ignored:
 *       the run's span has no link and the attribute {@code layover.trace_context.invalid}.
 * </ul>
 *
 * <p>Spans come from the tracer {@value #INSTRUMENTATION_NAME}; the propagation format is always
 * W3C Trace Context, whatever propagators the application configured (the stored context is read
 * by other languages too, {@code docs/enqueue-from-sql.md}).
 */
public final class OpenTelemetryTracing implements LayoverTracing {

    /** The instrumentation scope name of Layover's spans. */
    public static final String INSTRUMENTATION_NAME = "dev.layover";

    private static final TextMapGetter<Map<String, String>> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private final Tracer tracer;

    private OpenTelemetryTracing(OpenTelemetry openTelemetry) {
        this.tracer = openTelemetry.getTracer(INSTRUMENTATION_NAME);
    }

    /**
     * @param openTelemetry the application's OpenTelemetry (its SDK, or the agent's)
     * @return tracing through it
     */
    public static OpenTelemetryTracing of(OpenTelemetry openTelemetry) {
        return new OpenTelemetryTracing(Objects.requireNonNull(openTelemetry, "openTelemetry"));
    }

    /**
     * @return tracing through {@link GlobalOpenTelemetry}: the Java agent's, or the one the
     *     application registered (a no-op until one is)
     */
    public static OpenTelemetryTracing global() {
        return of(GlobalOpenTelemetry.get());
    }

    @Override
    public EnqueueSpan enqueueStarted(String jobType, int jobs) {
        Context parent = Context.current();
        if (!Span.fromContext(parent).getSpanContext().isValid()) {
            return EnqueueSpan.NONE;
        }
        SpanBuilder b = tracer.spanBuilder("send " + jobType).setParent(parent).setSpanKind(SpanKind.PRODUCER)
                .setAttribute("messaging.system", "layover")
                .setAttribute("messaging.operation.type", "send")
                .setAttribute("messaging.destination.name", jobType)
                .setAttribute("layover.job.type", jobType);
        if (jobs != 1) {
            b.setAttribute("messaging.batch.message_count", jobs);
        }
        Span span = b.startSpan();
        Map<String, String> carrier = new HashMap<>(4);
        W3CTraceContextPropagator.getInstance().inject(parent.with(span), carrier, Map::put);
        return new Enqueue(span, carrier.get("traceparent"), carrier.get("tracestate"));
    }

    @Override
    public RunSpan runStarted(RunStart start) {
        SpanBuilder b = tracer.spanBuilder("process " + start.jobType()).setNoParent().setSpanKind(SpanKind.CONSUMER)
                .setAttribute("messaging.system", "layover")
                .setAttribute("messaging.operation.type", "process")
                .setAttribute("messaging.destination.name", start.jobType())
                .setAttribute("messaging.message.id", start.jobId())
                .setAttribute("layover.job.type", start.jobType())
                .setAttribute("layover.job.id", start.jobId())
                .setAttribute("layover.attempt", start.attempt());
        if (start.reschedules() >= 0) {
            b.setAttribute("layover.reschedules", start.reschedules());
        }
        if (start.traceparent() != null) {
            SpanContext enqueue = enqueueContext(start.traceparent(), start.tracestate());
            if (enqueue.isValid()) {
                b.addLink(enqueue, Attributes.builder().put("layover.link", "enqueue").build());
            } else {
                b.setAttribute("layover.trace_context.invalid", true);
            }
        }
        return new Run(b.startSpan());
    }

    /** The enqueue's span context from its stored W3C headers; invalid when they do not parse. */
    static SpanContext enqueueContext(String traceparent, String tracestate) {
        Map<String, String> carrier = new HashMap<>(4);
        carrier.put("traceparent", traceparent);
        if (tracestate != null) {
            carrier.put("tracestate", tracestate);
        }
        Context c = W3CTraceContextPropagator.getInstance().extract(Context.root(), carrier, GETTER);
        return Span.fromContext(c).getSpanContext();
    }

    @Override
    public String toString() {
        return "OpenTelemetryTracing[" + tracer + "]";
    }

    private record Enqueue(Span span, String traceparent, String tracestate) implements EnqueueSpan {
        @Override
        public void end(String jobId, int created, Throwable error) {
            if (jobId != null) {
                span.setAttribute("messaging.message.id", jobId);
                span.setAttribute("layover.job.id", jobId);
            }
            span.setAttribute("layover.created", (long) created);
            if (error != null) {
                span.recordException(error);
                span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
            }
            span.end();
        }
    }

    private record Run(Span span) implements RunSpan {
        @Override
        public String traceId() {
            return span.getSpanContext().isValid() ? span.getSpanContext().getTraceId() : null;
        }

        @Override
        public String spanId() {
            return span.getSpanContext().isValid() ? span.getSpanContext().getSpanId() : null;
        }

        @Override
        public AutoCloseable makeCurrent() {
            Scope s = span.makeCurrent();
            return s::close;
        }

        @Override
        public void attribute(String key, Object value) {
            span.setAllAttributes(attributes(Map.of(key, value)));
        }

        @Override
        public void event(String name, Instant at, Map<String, Object> attributes) {
            span.addEvent(name, attributes(attributes), at);
        }

        /** Strings, booleans and whole numbers (every number the engine passes is one). */
        private static Attributes attributes(Map<String, Object> values) {
            AttributesBuilder a = Attributes.builder();
            values.forEach((k, v) -> {
                if (v instanceof String s) {
                    a.put(k, s);
                } else if (v instanceof Boolean x) {
                    a.put(k, x);
                } else if (v instanceof Number n) {
                    a.put(k, n.longValue());
                }
            });
            return a.build();
        }

        @Override
        public void exception(Throwable cause) {
            span.recordException(cause);
        }

        @Override
        public void error(String description, Throwable cause) {
            span.setStatus(StatusCode.ERROR, description == null ? "" : description);
            if (cause != null) {
                span.recordException(cause);
            }
        }

        @Override
        public void end() {
            span.end();
        }
    }
}
