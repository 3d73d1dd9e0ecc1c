package dev.layover.core;

import dev.layover.core.outcome.Outcome;

/**
 * The code of a job type.
 *
 * <p>Return {@link Outcome#done()} (or {@code null}) when the work is done, or another
 * {@link Outcome} to say what should happen instead. Throwing is fine too: an
 * {@link dev.layover.core.outcome.OutcomeException} applies its outcome, a provider SDK or HTTP
 * error is classified into the matching provider outcome, and any other exception is retried as
 * the job's own error (an attempt spent).
 *
 * <p>Delivery is at least once: a handler may run again after a crash, a lost database connection
 * or a timeout, even if its work already happened. Make it idempotent (the job id, stable across
 * retries and replays, is the natural key).
 *
 * @param <A> the args type
 */
@FunctionalInterface
public interface JobHandler<A> {

    /**
     * Runs the job once.
     *
     * @param args the job's arguments, read from the database
     * @param ctx the job's id, attempt number and more
     * @return the outcome; {@code null} means done
     * @throws Exception anything; see the class description for how it is treated
     */
    Outcome handle(A args, JobContext ctx) throws Exception;
}
