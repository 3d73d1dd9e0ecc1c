package dev.layover.core.tokens;

import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * Runs a user's token estimate (a job type's "tokens from args" function) so that no bad answer
 * reaches a bucket and no exception escapes:
 *
 * <ul>
 *   <li>the function throws (any {@link RuntimeException}, or a {@link StackOverflowError}): the
 *       fallback is used, and the problem says what was thrown;
 *   <li>it returns a negative number or NaN: the fallback is used;
 *   <li>it returns more than {@link TokenUsage#MAX_COUNT} (or +infinity): {@code MAX_COUNT} is
 *       used, which is larger than any bucket admits, so the engine refuses the job as too large
 *       at once instead of letting it wait forever;
 *   <li>a fraction is rounded up.
 * </ul>
 *
 * <p>The fallback is the caller's choice; a reservation that is too small is corrected after the
 * call by the reported usage, one too large is given back, so a sound fallback is a typical
 * call's cost for the key (e.g. a {@link CalibratedEstimator} estimate of a typical prompt).
 * Stateless.
 */
public final class EstimateGuard {

    /**
     * A checked estimate.
     *
     * @param tokens the tokens to reserve, 0 to {@link TokenUsage#MAX_COUNT}
     * @param problem what was wrong with the estimate, for the job's history or a log line;
     *     {@code null} when nothing was
     */
    public record Checked(long tokens, String problem) {

        /** @return whether the estimate was taken as given */
        public boolean ok() {
            return problem == null;
        }
    }

    private EstimateGuard() {}

    /**
     * Runs an estimate function on a job's args.
     *
     * @param estimate the function; {@code null} means "no estimate" and gives the fallback
     * @param args the job's args, passed as they are
     * @param fallback what to reserve when the function fails
     * @param <A> the args type
     * @return the checked estimate
     * @throws IllegalArgumentException if {@code fallback} is not 0 to {@link TokenUsage#MAX_COUNT}
     */
    public static <A> Checked apply(ToLongFunction<? super A> estimate, A args, long fallback) {
        checkFallback(fallback);
        if (estimate == null) {
            return new Checked(fallback, "no estimate function");
        }
        long value;
        try {
            value = estimate.applyAsLong(args);
        } catch (RuntimeException | StackOverflowError e) {
            return new Checked(fallback, "estimate failed: " + describe(e));
        }
        return check(value, fallback);
    }

    /**
     * Runs an estimate function that answers in floating point (e.g. characters divided by a
     * ratio).
     *
     * @param estimate the function; {@code null} gives the fallback
     * @param args the job's args
     * @param fallback what to reserve when the function fails
     * @param <A> the args type
     * @return the checked estimate
     * @throws IllegalArgumentException if {@code fallback} is not 0 to {@link TokenUsage#MAX_COUNT}
     */
    public static <A> Checked applyDouble(ToDoubleFunction<? super A> estimate, A args, long fallback) {
        checkFallback(fallback);
        if (estimate == null) {
            return new Checked(fallback, "no estimate function");
        }
        double value;
        try {
            value = estimate.applyAsDouble(args);
        } catch (RuntimeException | StackOverflowError e) {
            return new Checked(fallback, "estimate failed: " + describe(e));
        }
        return check(value, fallback);
    }

    /**
     * Checks an estimate already made.
     *
     * @param tokens the estimate
     * @param fallback what to reserve when it is negative
     * @return the checked estimate
     * @throws IllegalArgumentException if {@code fallback} is not 0 to {@link TokenUsage#MAX_COUNT}
     */
    public static Checked check(long tokens, long fallback) {
        checkFallback(fallback);
        if (tokens < 0) {
            return new Checked(fallback, "estimate was negative: " + tokens);
        }
        if (tokens > TokenUsage.MAX_COUNT) {
            return new Checked(TokenUsage.MAX_COUNT, "estimate above " + TokenUsage.MAX_COUNT + ": " + tokens);
        }
        return new Checked(tokens, null);
    }

    /**
     * Checks a floating-point estimate: NaN and negatives give the fallback, a fraction is rounded
     * up, more than {@link TokenUsage#MAX_COUNT} gives {@code MAX_COUNT}.
     *
     * @param tokens the estimate
     * @param fallback what to reserve when it is NaN or negative
     * @return the checked estimate
     * @throws IllegalArgumentException if {@code fallback} is not 0 to {@link TokenUsage#MAX_COUNT}
     */
    public static Checked check(double tokens, long fallback) {
        checkFallback(fallback);
        if (Double.isNaN(tokens)) {
            return new Checked(fallback, "estimate was NaN");
        }
        if (tokens < 0) {
            return new Checked(fallback, "estimate was negative: " + tokens);
        }
        double up = Math.ceil(tokens);
        if (up > TokenUsage.MAX_COUNT) {
            return new Checked(TokenUsage.MAX_COUNT, "estimate above " + TokenUsage.MAX_COUNT + ": " + tokens);
        }
        return new Checked((long) up, null);
    }

    private static void checkFallback(long fallback) {
        if (!TokenUsage.valid(fallback)) {
            throw new IllegalArgumentException("fallback must be 0 to " + TokenUsage.MAX_COUNT + ", was " + fallback);
        }
    }

    private static String describe(Throwable t) {
        String m = t.getMessage();
        return m == null || m.isBlank() ? t.getClass().getName() : t.getClass().getSimpleName() + ": " + m;
    }
}
