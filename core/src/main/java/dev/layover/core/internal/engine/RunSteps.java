package dev.layover.core.internal.engine;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.StepCall;
import dev.layover.core.StepException;
import dev.layover.core.StepOptions;
import dev.layover.core.internal.gate.ProviderRun;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.RunTokens;
import dev.layover.core.internal.jobs.StepStore;
import dev.layover.core.internal.observe.SafeMetrics;
import dev.layover.core.internal.observe.TimeSeries;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import dev.layover.core.provider.ProviderCalls;
import dev.layover.core.tokens.TokenUsage;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The steps of one run of one job ({@code JobContext#step}, {@code #sleep}; docs/steps.md): the
 * job's stored steps, read once at the run's first step ({@link StepStore#load}); a stored result
 * returned without calling; a step that finishes stored ({@link StepStore#insert}, one row); a
 * step with a provider key admitted by it when it starts ({@link ProviderRun#ask}) and its outcome
 * recorded on that key. Steps of one run run one at a time (a step started on another thread waits).
 */
final class RunSteps {

    private static final Logger LOG = LoggerFactory.getLogger(RunSteps.class);

    static final String CALL = "call";
    static final String SLEEP = "sleep";
    static final String SIGNAL = "signal";

    /**
     * What every run's steps share.
     *
     * @param store the step table
     * @param retry waits out a lost database for a step's write
     * @param classify the engine's classifier of provider exceptions
     * @param mapper the mapper of job types without their own
     * @param worker this worker's name
     * @param timeSeries counts steps completed and reused
     * @param metrics counts them too ({@code layover.steps})
     * @param clock the instance's clock
     */
    record Shared(StepStore store, WriteRetry retry, Function<Throwable, Optional<Outcome>> classify,
            ObjectMapper mapper, String worker, TimeSeries timeSeries, SafeMetrics metrics, Clock clock) {}

    /** A durable sleep the run asked for: the job is written to wait until {@code wakeAt}. */
    record Sleep(String name, Instant wakeAt, Outcome outcome, boolean signal) {}

    private final Shared shared;
    private final JobRun run;
    private final ProviderRun providerRun;
    private final ObjectMapper mapper;
    private final int maxResultBytes;
    private final ReentrantLock lock = new ReentrantLock();
    private final ThreadLocal<String> current = new ThreadLocal<>();
    private final Set<String> seen = new HashSet<>();
    private Map<String, StepStore.Stored> stored;
    private volatile Sleep sleep;
    private volatile String stoppedAt;

    RunSteps(Shared shared, JobRun run, ProviderRun providerRun, ObjectMapper typeMapper, int maxResultBytes) {
        this.shared = shared;
        this.run = run;
        this.providerRun = providerRun;
        // tolerant reading, as args are read: a field added or removed since the step was stored does not fail it
        this.mapper = (typeMapper != null ? typeMapper : shared.mapper()).copy()
                .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
        this.maxResultBytes = maxResultBytes;
    }

    <T> T step(StepOptions o, Class<T> type, StepCall<T> call) throws Exception {
        Objects.requireNonNull(o, "step");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(call, "call");
        String name = o.name();
        if (lock.isHeldByCurrentThread()) {
            throw park(name, "step '" + name + "' was started inside step '" + current.get()
                    + "': steps do not nest; make them one after the other");
        }
        lock.lock();
        try {
            if (sleep != null) {
                throw park(name, "step '" + name + "' was started after sleep '" + sleep.name() + "' ended the run; "
                        + "let the exception of JobContext#sleep through");
            }
            if (!seen.add(name)) {
                throw park(name, "two steps named '" + name + "' in one run of job " + run.label()
                        + ": a step's name is unique within its job (number repeated steps, e.g. segment-7)");
            }
            StepStore.Stored s = stored().get(name);
            if (s != null && !s.expired()) {
                if (!CALL.equals(s.kind())) {
                    throw mismatch(name, "step '" + name + "' of job " + run.label() + " is stored as a sleep, asked "
                            + "as a step; a name keeps its kind: rename the step");
                }
                if (!type.getName().equals(s.resultType())) {
                    throw mismatch(name, "step '" + name + "' of job " + run.label() + " was stored as "
                            + s.resultType() + ", asked as " + type.getName() + "; a step keeps its type: rename the "
                            + "step when its type changes, or replay the job from scratch");
                }
                try {
                    T value = mapper.readValue(s.result() == null ? "null" : s.result(), type);
                    shared.timeSeries().steps(run.taskName(), key(o), "reused");
                    shared.metrics().step(run.taskName(), "reused");
                    return value;
                } catch (java.io.IOException e) {
                    LOG.warn("Step '{}' of job {}: its stored result no longer reads as {} ({}); the step runs again",
                            name, run.label(), type.getName(), Errors.safeMessage(e));
                }
            }
            return run(o, type, call);
        } finally {
            lock.unlock();
        }
    }

    private String key(StepOptions o) {
        return o.providerKey() != null ? o.providerKey() : providerRun.providerKey();
    }

    private <T> T run(StepOptions o, Class<T> type, StepCall<T> call) throws Exception {
        String name = o.name();
        String key = o.providerKey();
        ProviderCalls.Permission.Granted granted = null;
        providerRun.beginStep(key != null); // the admission's reservation is the step's own
        if (key != null) {
            ProviderCalls.Permission p = providerRun.ask(key, o.tokens());
            if (p instanceof ProviderCalls.Permission.Wait w) {
                providerRun.endStep();
                throw notAdmitted(name, w.until(), "step '" + name + "' waits for " + key + ": " + w.detail());
            }
            if (p instanceof ProviderCalls.Permission.Refused r) {
                providerRun.endStep();
                throw notAdmitted(name, r.openUntil().equals(Instant.MAX) ? null : r.openUntil(),
                        "step '" + name + "' waits for " + key + " (breaker open): " + r.detail());
            }
            granted = (ProviderCalls.Permission.Granted) p;
        }
        current.set(name);
        long started = System.nanoTime();
        T value;
        try {
            value = call.call();
        } catch (Exception e) {
            providerRun.endStep();
            current.remove();
            stoppedAt = name;
            if (key == null) {
                throw e;
            }
            throw taught(key, granted, e);
        } catch (Error e) {
            providerRun.endStep();
            current.remove();
            stoppedAt = name;
            if (key != null) {
                providerRun.record(key, granted, new Outcome.Retry(null, e, null));
            }
            throw e;
        }
        double ms = (System.nanoTime() - started) / 1e6;
        TokenUsage usage = providerRun.endStep();
        current.remove();
        if (key != null) {
            providerRun.record(key, granted, Outcome.done());
        }
        String json;
        try {
            json = mapper.writeValueAsString(value);
        } catch (java.io.IOException e) {
            throw park(name, "the result of step '" + name + "' (" + (value == null ? "null" : value.getClass().getName())
                    + ") does not write as JSON: " + Errors.safeMessage(e));
        }
        int bytes = json.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > maxResultBytes) {
            throw park(name, "the result of step '" + name + "' of job " + run.label() + " is " + bytes
                    + " bytes of JSON, more than the job type's maxStepResultBytes (" + maxResultBytes
                    + "); it was not stored: raise JobType.Builder#maxStepResultBytes and replay the job");
        }
        RunTokens tokens = usage == null ? null
                : new RunTokens(usage.totalInputTokens(), usage.outputTokens(), usage.cachedInputTokens(), null);
        Double validFor = o.validFor() == null ? null : o.validFor().toNanos() / 1e9;
        shared.retry().write(() -> shared.store().insert(new StepStore.Finished(run.taskName(), run.id(), name, CALL,
                type.getName(), json, bytes, key, run.attemptsSpent() + 1, ms, validFor, null, tokens,
                shared.worker())));
        shared.timeSeries().steps(run.taskName(), key(o), "completed");
        shared.metrics().step(run.taskName(), "completed");
        return value;
    }

    /**
     * A keyed step's call failed: its key learns the outcome; a provider failure ends the run as its
     * outcome, which the job's own key does not learn again ({@link ProviderRun#stepTaught}).
     */
    private Exception taught(String key, ProviderCalls.Permission.Granted granted, Exception t) {
        Outcome o;
        if (t instanceof OutcomeException oe) {
            o = oe.outcome();
        } else {
            Optional<Outcome> c;
            try {
                c = shared.classify().apply(t);
            } catch (RuntimeException e) {
                c = Optional.empty();
            }
            if (c.isEmpty()) { // the job's own error: no lesson for the key
                providerRun.record(key, granted, new Outcome.Retry(null, t, null));
                return t;
            }
            o = c.get();
        }
        Instant cooldown = providerRun.record(key, granted, o);
        providerRun.stepTaught(o, cooldown);
        return t instanceof OutcomeException oe && oe.outcome() == o ? oe : new OutcomeException(o);
    }

    /** A keyed step its key does not admit now: the job waits for it, no attempt spent. */
    private OutcomeException notAdmitted(String name, Instant until, String detail) {
        stoppedAt = name;
        Clock clock = shared.clock();
        Duration wait = until == null ? null : Duration.between(clock.instant(), until);
        Outcome o = new Outcome.RateLimited(wait == null || wait.isNegative() ? (until == null ? null : Duration.ZERO) : wait,
                detail, null);
        providerRun.stepTaught(o, until);
        return new OutcomeException(o);
    }

    void sleep(String name, Duration duration) {
        Objects.requireNonNull(duration, "duration");
        if (duration.isNegative()) {
            throw new IllegalArgumentException("a sleep is zero or more, was " + duration);
        }
        lockWait(name, "sleep");
        try {
            StepStore.Stored s = storedWait(name, SLEEP);
            Instant wake;
            if (s != null) {
                if (s.woken()) {
                    return;
                }
                wake = s.wakeAt();
            } else {
                wake = shared.retry().write(() -> shared.store().insert(new StepStore.Finished(run.taskName(), run.id(),
                        name, SLEEP, null, null, null, null, run.attemptsSpent() + 1, null, null,
                        duration.toNanos() / 1e9, null, shared.worker())));
                if (duration.isZero()) {
                    return;
                }
            }
            Duration left = Duration.between(shared.clock().instant(), wake);
            Outcome o = new Outcome.Snooze(left.isNegative() ? Duration.ZERO : left, "sleep '" + name + "' until " + wake);
            sleep = new Sleep(name, wake, o, false);
            throw new OutcomeException(o);
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@code JobContext#awaitSignal}: the stored signal step's end (received, or timed out), or the
     * run ends waiting (a step of kind {@code signal}, {@code wake_at} the timeout, written the first
     * time; then the job's row waits: {@link OutcomeWriter#sleep} with the step's name).
     */
    dev.layover.core.Signal awaitSignal(String name, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("a signal's timeout is positive, was " + timeout);
        }
        lockWait(name, "awaitSignal");
        try {
            StepStore.Stored s = storedWait(name, SIGNAL);
            Instant wake;
            if (s != null) {
                if (s.result() != null) {
                    return new dev.layover.core.Signal(name, true, s.result());
                }
                if (s.woken()) {
                    return new dev.layover.core.Signal(name, false, null);
                }
                wake = s.wakeAt();
            } else {
                wake = shared.retry().write(() -> shared.store().insert(new StepStore.Finished(run.taskName(), run.id(),
                        name, SIGNAL, null, null, null, null, run.attemptsSpent() + 1, null, null,
                        timeout.toNanos() / 1e9, null, shared.worker())));
            }
            Duration left = Duration.between(shared.clock().instant(), wake);
            Outcome o = new Outcome.Snooze(left.isNegative() ? Duration.ZERO : left,
                    "awaits signal '" + name + "' until " + wake);
            sleep = new Sleep(name, wake, o, true);
            throw new OutcomeException(o);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes the run's step lock for a wait ({@code sleep}, {@code awaitSignal}: {@code what}) named
     * {@code name}: parks the job when it is asked inside a step; the caller unlocks.
     */
    private void lockWait(String name, String what) {
        StepOptions.named(name); // the name's rules
        if (lock.isHeldByCurrentThread()) {
            throw park(name, what + " '" + name + "' inside step '" + current.get() + "': wait between steps");
        }
        lock.lock();
    }

    /**
     * The stored step of a wait of {@code kind} (the lock held), or null: parks the job when a wait
     * already ended this run or the name was used in it, and refuses a name stored as another kind.
     */
    private StepStore.Stored storedWait(String name, String kind) {
        if (sleep != null) {
            throw park(name, kind + " '" + name + "' after '" + sleep.name() + "' ended the run");
        }
        if (!seen.add(name)) {
            throw park(name, "two steps named '" + name + "' in one run of job " + run.label());
        }
        StepStore.Stored s = stored().get(name);
        if (s != null && !kind.equals(s.kind())) {
            throw mismatch(name, "step '" + name + "' of job " + run.label() + " is stored as a " + s.kind()
                    + ", asked as a " + kind + "; a name keeps its kind: rename the " + kind);
        }
        return s;
    }

    /** @return the sleep this run asked for when {@code outcome} is its outcome, else null */
    Sleep sleepFor(Outcome outcome) {
        Sleep s = sleep;
        return s != null && s.outcome() == outcome ? s : null;
    }

    String stepKey() {
        String name = current.get();
        if (name == null) {
            throw new IllegalStateException("stepKey() is known inside a step (JobContext#step's call) only");
        }
        return key(run.taskName(), run.id(), name);
    }

    /** The idempotency key of a job's step: {@code layover-} and the SHA-1 of its type, id and name. */
    static String key(String jobType, String jobId, String step) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-1");
            byte[] h = sha.digest((jobType + "\n" + jobId + "\n" + step).getBytes(StandardCharsets.UTF_8));
            return "layover-" + HexFormat.of().formatHex(h);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** @return the step whose call failed, was not admitted or was refused last in this run, or null */
    String stoppedAt() {
        return stoppedAt;
    }

    private Map<String, StepStore.Stored> stored() {
        if (stored == null) {
            stored = shared.retry().write(() -> shared.store().load(run.taskName(), run.id()));
        }
        return stored;
    }

    private StepException park(String step, String reason) {
        stoppedAt = step;
        return new StepException(step, new Outcome.Park(reason));
    }

    private StepException mismatch(String step, String reason) {
        stoppedAt = step;
        return new StepException(step, new Outcome.Retry(reason, null, null));
    }
}
