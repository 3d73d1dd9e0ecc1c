package dev.layover.testing.provider;

import java.time.Duration;
import java.util.Objects;

/**
 * Seeded fault probabilities of one {@link FakeProvider.Endpoint}: the errors a real provider makes
 * on an ordinary busy day, each on a fraction of the calls its limits admitted.
 *
 * <pre>{@code
 * fake.primary().faults(Faults.of(42)
 *         .unavailable(0.02)                                        // 503 (529 in Anthropic's API)
 *         .serverError(0.01)                                        // 500
 *         .slow(0.01, Duration.ofSeconds(2), Duration.ofSeconds(8)) // answered, after 2-8 s
 *         .dropped(0.005));                                         // connection closed, no answer
 * }</pre>
 *
 * Immutable; each method returns a copy with one probability changed. The probabilities are of
 * disjoint outcomes and add up to at most 1. {@link #none()} (the endpoint's default) fails nothing.
 * {@link #mix(long, double)} spreads a total share the way the benchmarks do: half 503, a quarter
 * 500, an eighth slow, an eighth dropped.
 *
 * @param seed the seed of the endpoint's random sequence: the same seed and the same order of
 *     admitted calls give the same faults
 * @param unavailable the share answered 503 in the API's shape (Anthropic's API: 529
 *     {@code overloaded_error}), no {@code retry-after}
 * @param serverError the share answered 500 in the API's shape
 * @param slow the share answered normally after a delay drawn uniformly from
 *     [{@code slowMin}, {@code slowMax}] (on top of the endpoint's latency)
 * @param slowMin the shortest delay of a slow answer
 * @param slowMax the longest delay of a slow answer
 * @param dropped the share whose connection is closed without any answer (the client sees a
 *     connection error)
 */
public record Faults(long seed, double unavailable, double serverError, double slow, Duration slowMin,
        Duration slowMax, double dropped) {

    /** The default delay range of a slow answer: 2 to 8 s. */
    public static final Duration SLOW_MIN = Duration.ofSeconds(2);
    /** The longest default delay of a slow answer. */
    public static final Duration SLOW_MAX = Duration.ofSeconds(8);

    /**
     * Checks the probabilities and the delay range.
     *
     * @throws IllegalArgumentException when a probability is outside [0, 1], their sum is above 1,
     *     or the delay range is empty or negative
     */
    public Faults {
        Objects.requireNonNull(slowMin, "slowMin");
        Objects.requireNonNull(slowMax, "slowMax");
        for (double p : new double[] {unavailable, serverError, slow, dropped}) {
            if (!(p >= 0 && p <= 1)) {
                throw new IllegalArgumentException("a probability must be in [0, 1], was " + p);
            }
        }
        if (unavailable + serverError + slow + dropped > 1 + 1e-9) {
            throw new IllegalArgumentException("the probabilities add up to more than 1: " + unavailable + " + "
                    + serverError + " + " + slow + " + " + dropped);
        }
        if (slowMin.isNegative() || slowMax.compareTo(slowMin) < 0) {
            throw new IllegalArgumentException("need 0 <= slowMin <= slowMax, was " + slowMin + ", " + slowMax);
        }
    }

    /** @return no fault (seed 0) */
    public static Faults none() {
        return of(0);
    }

    /**
     * @param seed the seed of the endpoint's random sequence
     * @return no fault yet, with that seed; add them with the other methods
     */
    public static Faults of(long seed) {
        return new Faults(seed, 0, 0, 0, SLOW_MIN, SLOW_MAX, 0);
    }

    /**
     * A total share of failing calls mixed as the benchmarks mix them: half 503, a quarter 500, an
     * eighth slow (2-8 s), an eighth dropped.
     *
     * @param seed the seed
     * @param share the share of calls that meet a fault, in [0, 1]
     * @return the faults
     */
    public static Faults mix(long seed, double share) {
        return of(seed).unavailable(share / 2).serverError(share / 4).slow(share / 8).dropped(share / 8);
    }

    /**
     * @param p the share of admitted calls answered 503 (Anthropic's API: 529)
     * @return a copy with it
     */
    public Faults unavailable(double p) {
        return new Faults(seed, p, serverError, slow, slowMin, slowMax, dropped);
    }

    /**
     * @param p the share of admitted calls answered 500
     * @return a copy with it
     */
    public Faults serverError(double p) {
        return new Faults(seed, unavailable, p, slow, slowMin, slowMax, dropped);
    }

    /**
     * @param p the share of admitted calls answered after a delay within the current range
     *     (default 2-8 s)
     * @return a copy with it
     */
    public Faults slow(double p) {
        return new Faults(seed, unavailable, serverError, p, slowMin, slowMax, dropped);
    }

    /**
     * @param p the share of admitted calls answered after a delay
     * @param min the shortest delay
     * @param max the longest delay
     * @return a copy with them
     */
    public Faults slow(double p, Duration min, Duration max) {
        return new Faults(seed, unavailable, serverError, p, min, max, dropped);
    }

    /**
     * @param p the share of admitted calls whose connection is closed without an answer
     * @return a copy with it
     */
    public Faults dropped(double p) {
        return new Faults(seed, unavailable, serverError, slow, slowMin, slowMax, p);
    }

    /**
     * @param s another seed
     * @return a copy with it
     */
    public Faults seed(long s) {
        return new Faults(s, unavailable, serverError, slow, slowMin, slowMax, dropped);
    }

    /** @return the share of calls that meet any fault */
    public double total() {
        return unavailable + serverError + slow + dropped;
    }

    /** @return whether no call meets a fault */
    public boolean isNone() {
        return total() == 0;
    }

    /** What one admitted call meets. */
    enum Kind {
        NONE, UNAVAILABLE, SERVER_ERROR, SLOW, DROPPED
    }

    /** Which fault a uniform draw {@code u} in [0, 1) falls in, the shares laid end to end. */
    Kind kindOf(double u) {
        double edge = unavailable;
        if (u < edge) {
            return Kind.UNAVAILABLE;
        }
        edge += serverError;
        if (u < edge) {
            return Kind.SERVER_ERROR;
        }
        edge += slow;
        if (u < edge) {
            return Kind.SLOW;
        }
        edge += dropped;
        if (u < edge) {
            return Kind.DROPPED;
        }
        return Kind.NONE;
    }

    /**
     * The faults one endpoint answered, counted since its start or last counter reset.
     *
     * @param unavailable calls answered 503 (or 529 in Anthropic's API) by a fault
     * @param serverError calls answered 500 by a fault
     * @param slow calls answered after a fault's delay
     * @param dropped connections closed without an answer
     */
    public record Counts(int unavailable, int serverError, int slow, int dropped) {
        /** @return every fault */
        public int total() {
            return unavailable + serverError + slow + dropped;
        }

        /** @return the faults that were not answered successfully: all but the slow ones */
        public int failed() {
            return unavailable + serverError + dropped;
        }
    }
}
