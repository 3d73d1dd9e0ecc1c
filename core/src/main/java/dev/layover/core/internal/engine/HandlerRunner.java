package dev.layover.core.internal.engine;

import dev.layover.core.JobContext;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls a handler and turns whatever it does into an outcome: its return value, an
 * {@link OutcomeException}'s outcome, a classified provider exception, or a {@link Outcome.Retry}
 * for anything else (the job's own error). Never throws but for a {@link VirtualMachineError}.
 */
final class HandlerRunner {

    private static final Logger LOG = LoggerFactory.getLogger(HandlerRunner.class);

    /** A handler interrupted because the worker stops: written by {@link OutcomeWriter#workerStopped}. */
    static final Outcome STOPPED = new Outcome.Snooze(Duration.ZERO, "the worker stopped");

    private final Function<Throwable, Optional<Outcome>> classifier;

    HandlerRunner(Function<Throwable, Optional<Outcome>> classifier) {
        this.classifier = classifier;
    }

    /** @return the classifier of provider exceptions */
    Function<Throwable, Optional<Outcome>> classifier() {
        return classifier;
    }

    <A> Outcome run(Registry.Entry<A> entry, A args, JobContext ctx) {
        try {
            Outcome o = entry.type().handler().handle(args, ctx);
            return o == null ? Outcome.done() : o;
        } catch (OutcomeException e) {
            return e.outcome();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (ctx.isStopping()) {
                // Layover.stop() ran out of shutdownMaxWait: not the job's failure
                return STOPPED;
            }
            return new Outcome.Retry("interrupted (the worker is stopping or the job timed out)", e, null);
        } catch (StackOverflowError e) {
            // the handler's own bug; the stack has unwound, the worker thread is fine
            LOG.warn("Job {}/{} failed: {}", entry.type().name(), ctx.jobId(), e.getClass().getName());
            return new Outcome.Retry(null, e, null);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable t) {
            Optional<Outcome> classified;
            try {
                classified = classifier.apply(t);
            } catch (RuntimeException | LinkageError | StackOverflowError e) {
                // an exception the classifier cannot even look at (its getMessage() throws, ...)
                LOG.debug("Job {}/{}: the exception classifier failed on {}", entry.type().name(), ctx.jobId(),
                        t.getClass().getName(), e);
                classified = Optional.empty();
            }
            if (classified.isPresent()) {
                return classified.get();
            }
            LOG.warn("Job {}/{} failed: {}", entry.type().name(), ctx.jobId(), Errors.describe(t));
            LOG.debug("Job {}/{} stack trace", entry.type().name(), ctx.jobId(), t);
            return new Outcome.Retry(null, t, null);
        }
    }
}
