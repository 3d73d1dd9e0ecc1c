package dev.layover.core.internal.observe;

import dev.layover.core.provider.FallbackStep;
import dev.layover.core.tracing.LayoverTracing;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.MDC;

/**
 * One run of a job as the observers see it, current on the thread that runs it from the start of
 * the run until its outcome is written ({@link #current()}): its span ({@link LayoverTracing.RunSpan},
 * current too), its job in the SLF4J MDC ({@link #MDC_KEYS}, restored when the scope closes, so a
 * pooled or virtual thread carries nothing of it afterwards), and its fairness key, for the token
 * counts of the time series. What the engine decides about the run is told here (the outcome writer
 * and the mover, on the same thread); none of it throws.
 */
public final class RunScope implements AutoCloseable {

    /** MDC key: the job type. */
    public static final String MDC_JOB_TYPE = "layover.job_type";
    /** MDC key: the job id. */
    public static final String MDC_JOB_ID = "layover.job_id";
    /** MDC key: the attempt the handler sees. */
    public static final String MDC_ATTEMPT = "layover.attempt";
    /** MDC key: the job's provider key (once its args are read; absent for a job without one). */
    public static final String MDC_PROVIDER_KEY = "layover.provider_key";
    /** MDC key: the run span's trace id (OpenTelemetry's name for it; absent without tracing). */
    public static final String MDC_TRACE_ID = "trace_id";
    /** MDC key: the run span's span id. */
    public static final String MDC_SPAN_ID = "span_id";
    /** Every MDC key a run sets. */
    public static final List<String> MDC_KEYS = List.of(MDC_JOB_TYPE, MDC_JOB_ID, MDC_ATTEMPT, MDC_PROVIDER_KEY,
            MDC_TRACE_ID, MDC_SPAN_ID);

    private static final ThreadLocal<RunScope> CURRENT = new ThreadLocal<>();

    private final Runs runs;
    private final LayoverTracing.RunSpan span;
    private final boolean mdc;
    private final String[] before;
    private final RunScope outer;
    private final AutoCloseable madeCurrent;
    private volatile String fairnessKey;
    private boolean closed;

    private RunScope(Runs runs, LayoverTracing.RunSpan span, boolean mdc, LayoverTracing.RunStart start) {
        this.runs = runs;
        this.span = span;
        this.mdc = mdc;
        this.outer = CURRENT.get();
        if (mdc) {
            before = new String[MDC_KEYS.size()];
            for (int i = 0; i < before.length; i++) {
                before[i] = MDC.get(MDC_KEYS.get(i));
            }
            MDC.put(MDC_JOB_TYPE, start.jobType());
            MDC.put(MDC_JOB_ID, start.jobId());
            MDC.put(MDC_ATTEMPT, Integer.toString(start.attempt()));
            MDC.remove(MDC_PROVIDER_KEY);
            put(MDC_TRACE_ID, call(span::traceId));
            put(MDC_SPAN_ID, call(span::spanId));
        } else {
            before = null;
        }
        this.madeCurrent = span == LayoverTracing.RunSpan.NONE ? null : call(span::makeCurrent);
        CURRENT.set(this);
    }

    static RunScope open(Runs runs, LayoverTracing.RunSpan span, boolean mdc, LayoverTracing.RunStart start) {
        return new RunScope(runs, span, mdc, start);
    }

    /** @return the run this thread is running, or null */
    public static RunScope current() {
        return CURRENT.get();
    }

    /** @return the run's fairness key, once known, or null */
    public String fairnessKey() {
        return fairnessKey;
    }

    /** The job's keys, known once its args are read. */
    public void keys(String providerKey, String fairnessKey) {
        this.fairnessKey = fairnessKey;
        if (mdc && providerKey != null) {
            MDC.put(MDC_PROVIDER_KEY, providerKey);
        }
        attribute("layover.provider_key", providerKey);
        attribute("layover.fairness_key", fairnessKey);
    }

    /** The handler returned {@code outcomeKind} (the tag of its {@code Outcome.Kind}). */
    public void handlerReturned(String outcomeKind) {
        attribute("layover.outcome", outcomeKind);
    }

    /** What the run's call reported (each null when not reported). */
    public void tokens(Long input, Long output, Long cached) {
        attribute("gen_ai.usage.input_tokens", input);
        attribute("gen_ai.usage.output_tokens", output);
        attribute("layover.tokens.cached_input", cached);
    }

    /**
     * The run's fallback trail: a {@code layover.fallback} event per endpoint the chain moved on
     * from, and a {@code layover.rate_limited} event per endpoint that answered with a rate limit.
     */
    public void trail(List<FallbackStep> steps) {
        if (span == LayoverTracing.RunSpan.NONE) {
            return;
        }
        for (FallbackStep s : steps) {
            if (s.result().equals("rate_limited")) {
                Map<String, Object> a = new LinkedHashMap<>();
                a.put("layover.provider_key", s.providerKey());
                if (s.retryAfter() != null) {
                    a.put("layover.wait_ms", s.retryAfter().toMillis());
                }
                event("layover.rate_limited", s.at(), a);
            }
            if (!s.result().equals("answered")) {
                Map<String, Object> a = new LinkedHashMap<>();
                a.put("layover.provider_key", s.providerKey());
                a.put("layover.fallback.result", s.result());
                if (s.detail() != null) {
                    a.put("layover.fallback.detail", s.detail());
                }
                event("layover.fallback", s.at(), a);
            }
        }
    }

    /** The run's own call was rate limited: it waits until {@code runAt}. */
    public void rateLimited(String providerKey, Instant now, Instant runAt) {
        Map<String, Object> a = new LinkedHashMap<>();
        if (providerKey != null) {
            a.put("layover.provider_key", providerKey);
        }
        a.put("layover.wait_ms", waitMs(now, runAt));
        event("layover.rate_limited", now, a);
    }

    /** The job was moved later without an attempt, for {@code reason}. */
    public void rescheduled(String reason, Instant now, Instant runAt) {
        attribute("layover.decision", "rescheduled");
        attribute("layover.reschedule_reason", reason);
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("layover.reschedule_reason", reason);
        a.put("layover.wait_ms", waitMs(now, runAt));
        a.put("layover.run_at", runAt.toString());
        event("layover.rescheduled", now, a);
    }

    /** The run spent an attempt and runs again at {@code runAt}. */
    public void retried(String kind, int attempts, Instant now, Instant runAt, String message) {
        attribute("layover.decision", "retried");
        attribute("layover.retry_kind", kind);
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("layover.retry_kind", kind);
        a.put("layover.attempts", (long) attempts);
        a.put("layover.wait_ms", waitMs(now, runAt));
        event("layover.retried", now, a);
        error(kind + ": " + message);
    }

    /** The job was parked as {@code failureType} in dead letter {@code deadLetter}. */
    public void parked(String failureType, long deadLetter, Instant now, String message) {
        attribute("layover.decision", "parked");
        attribute("layover.failure_type", failureType);
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("layover.failure_type", failureType);
        a.put("layover.dead_letter_id", deadLetter);
        event("layover.parked", now, a);
        error(failureType + ": " + message);
    }

    /** What became of the run, when it is not one of the above: done, given_back, held, paused, batched, cancelled, worker_stopped. */
    public void decided(String decision) {
        attribute("layover.decision", decision);
    }

    /** The exception the run's attempt ended with, recorded on the span (not an error by itself: a 429 is not). */
    public void failedWith(Throwable cause) {
        if (cause != null && span != LayoverTracing.RunSpan.NONE) {
            guard(() -> span.exception(cause));
        }
    }

    private void error(String description) {
        if (span != LayoverTracing.RunSpan.NONE) {
            guard(() -> span.error(description, null));
        }
    }

    private static long waitMs(Instant now, Instant runAt) {
        return Math.max(0, Duration.between(now, runAt).toMillis());
    }

    private void attribute(String key, Object value) {
        if (value != null && span != LayoverTracing.RunSpan.NONE) {
            guard(() -> span.attribute(key, value));
        }
    }

    private void event(String name, Instant at, Map<String, Object> attributes) {
        if (span != LayoverTracing.RunSpan.NONE) {
            guard(() -> span.event(name, at, attributes));
        }
    }

    /** Ends the span, restores the MDC and what was current before; once. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (madeCurrent != null) {
            guard(() -> {
                try {
                    madeCurrent.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }
        if (span != LayoverTracing.RunSpan.NONE) {
            guard(span::end);
        }
        if (mdc) {
            for (int i = 0; i < before.length; i++) {
                put(MDC_KEYS.get(i), before[i]);
            }
        }
        if (outer == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(outer);
        }
    }

    private static void put(String key, String value) {
        if (value == null) {
            MDC.remove(key);
        } else {
            MDC.put(key, value);
        }
    }

    private <T> T call(java.util.function.Supplier<T> s) {
        try {
            return s.get();
        } catch (RuntimeException | LinkageError e) {
            runs.failed(e);
            return null;
        }
    }

    private void guard(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException | LinkageError e) {
            runs.failed(e);
        }
    }
}
