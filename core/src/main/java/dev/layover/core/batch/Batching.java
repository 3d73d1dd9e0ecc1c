package dev.layover.core.batch;

import dev.layover.core.outcome.Outcome;
import java.time.Duration;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * How the jobs of one job type go by batch: how a job's args become one batch request line, and
 * how one result line becomes its outcome. Given to {@code JobType.Builder#batchable(Batching)}.
 * Immutable; {@link #tolerance(Duration)} returns a copy.
 *
 * <p>A job of such a type whose provider key has batching ({@code Layover.Builder#batching}) is
 * <b>gathered</b> into a batch when its latest useful finish (its {@code EnqueueOptions} deadline,
 * else its enqueue plus {@link #tolerance()}) is at least the key's
 * {@link BatchSettings#expectedCompletion()} plus {@link BatchSettings#rescueMargin()} away; every
 * other job of the type is called directly, by its handler, as without batching. A job without a
 * deadline and without a tolerance is never gathered.
 *
 * <p>What a result line does (at the job's next pick, through the engine's one outcome writer):
 * <ul>
 *   <li>succeeded: {@code result.apply(args, line)} gives the outcome (usually {@code Outcome.done()}),
 *       the line's tokens go to the job's history row;
 *   <li>errored: classified as a direct call's response with the same status and body would be
 *       (400 {@code rejected}: parked; 429 {@code rate_limited}: rescheduled, no attempt; 500
 *       {@code transient}, 529 {@code overloaded}: retried, an attempt spent). It teaches the key's
 *       breaker and cooldown nothing: a batch's limits are not the key's;
 *   <li>expired or cancelled: the job routes anew, no attempt spent: to a new batch while its
 *       deadline allows, else to a direct call.
 * </ul>
 *
 * <p>Defaults: no tolerance (only jobs with a deadline are gathered).
 *
 * @param <A> the job type's args
 */
public final class Batching<A> {

    private final Function<? super A, ?> request;
    private final BiFunction<? super A, BatchResult, Outcome> result;
    private final Duration tolerance;

    private Batching(Function<? super A, ?> request, BiFunction<? super A, BatchResult, Outcome> result,
            Duration tolerance) {
        this.request = request;
        this.result = result;
        this.tolerance = tolerance;
    }

    /**
     * @param request makes a job's request body from its args: a {@code String} is taken as JSON
     *     text; anything else (a {@code Map}, a record, a Jackson node) is written as JSON by
     *     Jackson. For OpenAI it is the body of the transport's endpoint (e.g. a chat completion
     *     request), for Anthropic the {@code params} of a Messages request. It runs at the job's pick;
     *     if it throws or gives nothing, the job is called directly instead
     * @param result turns a succeeded line into the job's outcome; an exception it throws is the
     *     job's failure (retried, an attempt spent), as a handler's would be
     * @param <A> the args type
     * @return the batching, without a tolerance
     */
    public static <A> Batching<A> of(Function<? super A, ?> request, BiFunction<? super A, BatchResult, Outcome> result) {
        return new Batching<>(Objects.requireNonNull(request, "request"), Objects.requireNonNull(result, "result"), null);
    }

    /**
     * How long a job without a deadline may wait for its answer: its enqueue plus this is its
     * latest useful finish. A job with a deadline uses its deadline.
     *
     * @param tolerance positive
     * @return a copy with the tolerance
     * @throws IllegalArgumentException for a zero or negative tolerance
     */
    public Batching<A> tolerance(Duration tolerance) {
        Objects.requireNonNull(tolerance, "tolerance");
        if (tolerance.isNegative() || tolerance.isZero()) {
            throw new IllegalArgumentException("a batching tolerance must be positive: " + tolerance);
        }
        return new Batching<>(request, result, tolerance);
    }

    /** @return the request function */
    public Function<? super A, ?> request() {
        return request;
    }

    /** @return the result function */
    public BiFunction<? super A, BatchResult, Outcome> result() {
        return result;
    }

    /** @return the tolerance of jobs without a deadline, or {@code null} (none: only jobs with a deadline are gathered) */
    public Duration tolerance() {
        return tolerance;
    }
}
