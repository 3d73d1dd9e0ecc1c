package dev.layover.core.internal.gate;

import dev.layover.core.CallFailedException;
import dev.layover.core.InteractiveCalls;
import dev.layover.core.NotAdmittedException.Reason;
import dev.layover.core.NotAdmittedException;
import dev.layover.core.internal.observe.TimeSeries;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * {@link InteractiveCalls} on a {@link ProviderGate}: each try is {@link ProviderGate#admitInteractive}
 * (one statement, {@code layover.take}); a wait the gate names that ends within the caller's wait is
 * slept out and tried again; the outcome goes to {@link ProviderGate#afterCall} and the usage to
 * the run's settle, as a job's do. Counted in the time series under job type {@link #JOB_TYPE}.
 */
public final class InteractiveHandle implements InteractiveCalls {

    /** The job type interactive calls are counted under in {@code layover.time_series}. */
    public static final String JOB_TYPE = TimeSeries.INTERACTIVE;

    private final ProviderGate gate;
    private final Function<Throwable, Optional<Outcome>> classifier;
    private final TimeSeries series;

    /**
     * @param gate the provider state
     * @param classifier the instance's exception classifier (as its handlers' exceptions are classified)
     * @param series where calls, waits, refusals and tokens are counted
     */
    public InteractiveHandle(ProviderGate gate, Function<Throwable, Optional<Outcome>> classifier, TimeSeries series) {
        this.gate = Objects.requireNonNull(gate, "gate");
        this.classifier = Objects.requireNonNull(classifier, "classifier");
        this.series = series == null ? TimeSeries.OFF : series;
    }

    @Override
    public Permit admit(String providerKey, long tokenEstimate, Duration maxWait) {
        Objects.requireNonNull(providerKey, "providerKey");
        Objects.requireNonNull(maxWait, "maxWait");
        if (tokenEstimate < 0) {
            throw new IllegalArgumentException("tokenEstimate must be 0 or more, was " + tokenEstimate);
        }
        if (maxWait.isNegative()) {
            throw new IllegalArgumentException("maxWait must be zero or more, was " + maxWait);
        }
        long start = System.nanoTime();
        long budget = saturatedNanos(maxWait);
        TokenEstimate estimate = tokenEstimate > 0 ? TokenEstimate.total(Math.min(tokenEstimate, TokenUsage.MAX_COUNT))
                : null;
        ProviderRun run = gate.newRun(providerKey, JOB_TYPE, null, 0, estimate, 0);
        while (true) {
            Admission a = gate.admitInteractive(providerKey, estimate, run);
            if (a instanceof Admission.Go go) {
                Duration waited = Duration.ofNanos(System.nanoTime() - start);
                series.interactiveAdmitted(providerKey, waited.toMillis());
                return new GatePermit(providerKey, run, go.trialToken(), waited);
            }
            if (a instanceof Admission.Refuse r) {
                throw refused(providerKey, Reason.BREAKER_OPEN, r.openUntil(), r.detail());
            }
            if (a instanceof Admission.TooLarge t) {
                throw refused(providerKey, Reason.TOO_LARGE, null, t.detail());
            }
            Admission.Wait w = (Admission.Wait) a;
            Reason reason = switch (w.reason()) {
                case "cooldown" -> Reason.COOLING;
                case "bucket" -> Reason.NO_PERMIT;
                case "provider_state_unavailable" -> Reason.STATE_UNAVAILABLE;
                default -> Reason.BREAKER_TRIAL;
            };
            long delay = Math.max(0, Duration.between(gate.now(), w.runAt()).toNanos());
            long left = budget - (System.nanoTime() - start);
            if (reason == Reason.STATE_UNAVAILABLE || delay > left) {
                throw refused(providerKey, reason, w.runAt(), w.detail() + "; waited at most " + maxWait);
            }
            try {
                // at least a millisecond: the database's time may be a little behind this JVM's sleep
                TimeUnit.NANOSECONDS.sleep(Math.max(delay, TimeUnit.MILLISECONDS.toNanos(1)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw refused(providerKey, reason, w.runAt(), "interrupted while waiting: " + w.detail());
            }
        }
    }

    @Override
    public <T> T call(String providerKey, long tokenEstimate, Duration maxWait, Callable<T> call) {
        Objects.requireNonNull(call, "call");
        Permit permit = admit(providerKey, tokenEstimate, maxWait);
        T answer;
        try {
            answer = call.call();
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable t) {
            if (t instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            Outcome o = permit.failed(t);
            throw new CallFailedException(providerKey, o, t);
        }
        TokenUsage usage;
        try {
            usage = TokenUsage.of(answer).orElse(null); // an SDK's response carries its usage
        } catch (RuntimeException | LinkageError e) {
            usage = null;
        }
        permit.record(Outcome.done(), usage);
        return answer;
    }

    private NotAdmittedException refused(String key, Reason reason, Instant until, String detail) {
        series.interactiveRefused(key, reason.name().toLowerCase(java.util.Locale.ROOT));
        return new NotAdmittedException(key, reason, until, "not admitted (" + reason.name().toLowerCase(java.util.Locale.ROOT)
                + "): " + detail);
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /** The outcome of whatever a call threw, as a handler's exception is classified ({@code HandlerRunner}). */
    Outcome classify(Throwable t) {
        if (t instanceof OutcomeException oe) {
            return oe.outcome();
        }
        Optional<Outcome> o;
        try {
            o = classifier.apply(t);
        } catch (RuntimeException | LinkageError | StackOverflowError e) {
            o = Optional.empty();
        }
        return o.orElseGet(() -> new Outcome.Retry(null, t, null));
    }

    private final class GatePermit implements Permit {
        private final String key;
        private final ProviderRun run;
        private final String trial;
        private final Duration waited;
        private final AtomicBoolean recorded = new AtomicBoolean();

        GatePermit(String key, ProviderRun run, String trial, Duration waited) {
            this.key = key;
            this.run = run;
            this.trial = trial;
            this.waited = waited;
        }

        @Override
        public String providerKey() {
            return key;
        }

        @Override
        public Duration waited() {
            return waited;
        }

        @Override
        public boolean trial() {
            return trial != null;
        }

        @Override
        public Instant record(Outcome outcome, TokenUsage usage) {
            Objects.requireNonNull(outcome, "outcome");
            if (!recorded.compareAndSet(false, true)) {
                return null;
            }
            if (usage != null) {
                run.reportUsage(usage);
                series.tokens(JOB_TYPE, key, null, usage.totalInputTokens(), usage.outputTokens(),
                        usage.cachedInputTokens());
            }
            run.settle(); // the reported usage replaces the reservation, as a job's run settles
            series.interactiveCall(key, outcome.kind().tag());
            return gate.afterCall(key, trial, outcome);
        }

        @Override
        public Outcome failed(Throwable failure) {
            Outcome o = classify(Objects.requireNonNull(failure, "failure"));
            record(o, null);
            return o;
        }
    }
}
