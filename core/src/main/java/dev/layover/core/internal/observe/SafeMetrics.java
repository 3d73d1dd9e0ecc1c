package dev.layover.core.internal.observe;

import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.metrics.StateSample;
import dev.layover.core.outcome.Outcome;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The metrics of a Layover instance as the engine calls them: the application's
 * {@link LayoverMetrics}, with every exception it throws caught (logged once at WARN, then at
 * DEBUG) so that metrics can never fail a job. Also the one place that names outcomes for tags.
 */
public final class SafeMetrics implements LayoverMetrics {

    private static final Logger LOG = LoggerFactory.getLogger(SafeMetrics.class);
    private static final SafeMetrics NONE = new SafeMetrics(LayoverMetrics.none());

    private final LayoverMetrics delegate;
    private final boolean enabled;
    private final AtomicBoolean warned = new AtomicBoolean();

    private SafeMetrics(LayoverMetrics delegate) {
        this.delegate = delegate;
        this.enabled = delegate != LayoverMetrics.none();
    }

    /**
     * @param metrics the application's metrics, or null
     * @return them, guarded (the same instance when already guarded)
     */
    public static SafeMetrics of(LayoverMetrics metrics) {
        if (metrics == null || metrics == LayoverMetrics.none()) {
            return NONE;
        }
        return metrics instanceof SafeMetrics s ? s : new SafeMetrics(metrics);
    }

    /** @return whether anything is recorded (false for {@link LayoverMetrics#none()}) */
    public boolean enabled() {
        return enabled;
    }

    /** @return the application's metrics */
    public LayoverMetrics delegate() {
        return delegate;
    }

    private void failed(String what, RuntimeException e) {
        if (warned.compareAndSet(false, true)) {
            LOG.warn("Layover: the metrics implementation {} failed in {} (further failures are logged at DEBUG): {}",
                    delegate, what, e.toString(), e);
        } else {
            LOG.debug("Layover: the metrics implementation {} failed in {}", delegate, what, e);
        }
    }

    @Override
    public void jobCompleted(String jobType) {
        if (enabled) {
            try {
                delegate.jobCompleted(jobType);
            } catch (RuntimeException e) {
                failed("jobCompleted", e);
            }
        }
    }

    @Override
    public void jobRetried(String jobType, String reason) {
        if (enabled) {
            try {
                delegate.jobRetried(jobType, reason);
            } catch (RuntimeException e) {
                failed("jobRetried", e);
            }
        }
    }

    @Override
    public void scheduleClaimed(String jobType, String outcome, int enqueued) {
        if (enabled) {
            try {
                delegate.scheduleClaimed(jobType, outcome, enqueued);
            } catch (RuntimeException e) {
                failed("scheduleClaimed", e);
            }
        }
    }

    @Override
    public void batchLines(String providerKey, String kind, long lines) {
        if (enabled && lines > 0) {
            try {
                delegate.batchLines(providerKey, kind, lines);
            } catch (RuntimeException e) {
                failed("batchLines", e);
            }
        }
    }

    @Override
    public void jobRescheduled(String jobType, String reason) {
        if (enabled) {
            try {
                delegate.jobRescheduled(jobType, reason);
            } catch (RuntimeException e) {
                failed("jobRescheduled", e);
            }
        }
    }

    @Override
    public void step(String jobType, String outcome) {
        if (enabled) {
            try {
                delegate.step(jobType, outcome);
            } catch (RuntimeException e) {
                failed("step", e);
            }
        }
    }

    @Override
    public void jobParked(String jobType, String failureType) {
        if (enabled) {
            try {
                delegate.jobParked(jobType, failureType);
            } catch (RuntimeException e) {
                failed("jobParked", e);
            }
        }
    }

    @Override
    public void jobCancelled(String jobType) {
        if (enabled) {
            try {
                delegate.jobCancelled(jobType);
            } catch (RuntimeException e) {
                failed("jobCancelled", e);
            }
        }
    }

    @Override
    public void jobsReplayed(String jobType, String kind, long count) {
        if (enabled && count > 0) {
            try {
                delegate.jobsReplayed(jobType, kind, count);
            } catch (RuntimeException e) {
                failed("jobsReplayed", e);
            }
        }
    }

    @Override
    public void jobStarted(String jobType, Duration queueWait) {
        if (enabled) {
            try {
                delegate.jobStarted(jobType, queueWait.isNegative() ? Duration.ZERO : queueWait);
            } catch (RuntimeException e) {
                failed("jobStarted", e);
            }
        }
    }

    @Override
    public void jobRan(String jobType, String outcome, Duration duration) {
        if (enabled) {
            try {
                delegate.jobRan(jobType, outcome, duration);
            } catch (RuntimeException e) {
                failed("jobRan", e);
            }
        }
    }

    @Override
    public void providerCall(String providerKey, String outcome) {
        if (enabled) {
            try {
                delegate.providerCall(providerKey, outcome);
            } catch (RuntimeException e) {
                failed("providerCall", e);
            }
        }
    }

    @Override
    public void tokens(String providerKey, String kind, long tokens) {
        if (enabled && tokens > 0) {
            try {
                delegate.tokens(providerKey, kind, tokens);
            } catch (RuntimeException e) {
                failed("tokens", e);
            }
        }
    }

    @Override
    public void breakerChanged(String providerKey, String from, String to) {
        if (enabled) {
            try {
                delegate.breakerChanged(providerKey, from, to);
            } catch (RuntimeException e) {
                failed("breakerChanged", e);
            }
        }
    }

    @Override
    public Duration sampleInterval() {
        if (!enabled) {
            return null;
        }
        try {
            return delegate.sampleInterval();
        } catch (RuntimeException e) {
            failed("sampleInterval", e);
            return null;
        }
    }

    @Override
    public void sampled(StateSample sample) {
        if (enabled) {
            try {
                delegate.sampled(sample);
            } catch (RuntimeException e) {
                failed("sampled", e);
            }
        }
    }

    @Override
    public String toString() {
        return "guarded " + delegate;
    }

    /**
     * The {@code outcome} tag of a handler's outcome (timer {@code layover.jobs.duration}).
     *
     * @param o the outcome
     * @return its name
     */
    public static String outcomeTag(Outcome o) {
        return o.kind().tag();
    }

    /**
     * The {@code outcome} tag of a provider call (counter {@code layover.provider.calls}), or null
     * for an outcome that says nothing of the provider (a snooze: the handler's own "not now").
     *
     * @param o the call's outcome
     * @return its name, or null
     */
    public static String callTag(Outcome o) {
        return switch (o.kind()) {
            case SNOOZE -> null;
            case DONE -> "ok";
            default -> o.kind().tag();
        };
    }
}
