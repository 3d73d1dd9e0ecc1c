package dev.layover.core.schedule;

import java.time.Duration;
import java.util.Objects;

/**
 * What a schedule does with occurrences whose time passed while no scheduler looked at it (every
 * JVM down, the database away, the schedule's job type run by no live worker). An occurrence found
 * within the grace period after its instant is on time and runs under every policy.
 *
 * <table>
 *   <caption>Policies</caption>
 *   <tr><th>policy</th><th>what runs of the missed occurrences</th></tr>
 *   <tr><td>{@link #skip()} (the default)</td><td>none: the schedule skips to its next occurrence
 *       after now; occurrences later than the grace period (default 1 minute) are dropped</td></tr>
 *   <tr><td>{@link #runLast()}</td><td>the latest one, once (its own instant, so its own id)</td></tr>
 *   <tr><td>{@link #catchUp(Duration)}</td><td>every one whose instant lies within the window before
 *       now, each as its own job (at most 1,000 a time), all enqueued together unless the overlap
 *       policy is {@link Overlap#QUEUE}, which enqueues them one after another</td></tr>
 * </table>
 *
 * <p>Stored in {@code layover.schedules.missed} ({@code skip}, {@code run_last}, {@code catch_up})
 * and {@code missed_window_ms} (the grace period of {@code skip}, the window of {@code catch_up}).
 */
public final class MissedRuns {

    /** The grace period of {@link #skip()}: an occurrence found later than this is missed. */
    public static final Duration DEFAULT_GRACE = Duration.ofMinutes(1);

    /** The policies. */
    public enum Policy {
        /** Skip missed occurrences. */
        SKIP,
        /** Run the latest missed occurrence once. */
        RUN_LAST,
        /** Run every missed occurrence within a window. */
        CATCH_UP
    }

    private static final MissedRuns SKIP = new MissedRuns(Policy.SKIP, DEFAULT_GRACE);
    private static final MissedRuns RUN_LAST = new MissedRuns(Policy.RUN_LAST, null);

    private final Policy policy;
    private final Duration window;

    private MissedRuns(Policy policy, Duration window) {
        this.policy = policy;
        this.window = window;
    }

    /** @return skip missed occurrences, with a grace period of {@link #DEFAULT_GRACE} */
    public static MissedRuns skip() {
        return SKIP;
    }

    /**
     * @param grace how late an occurrence may be found and still run; positive
     * @return skip occurrences found later than {@code grace}
     */
    public static MissedRuns skip(Duration grace) {
        return new MissedRuns(Policy.SKIP, positive(grace, "grace period"));
    }

    /** @return run the latest missed occurrence once */
    public static MissedRuns runLast() {
        return RUN_LAST;
    }

    /**
     * @param window how far back missed occurrences are run; positive
     * @return run every missed occurrence within {@code window} before now
     */
    public static MissedRuns catchUp(Duration window) {
        return new MissedRuns(Policy.CATCH_UP, positive(window, "catch-up window"));
    }

    /**
     * @param policy a policy
     * @param window its grace period or window (ignored for {@link Policy#RUN_LAST}); null for the default grace
     * @return the policy
     */
    public static MissedRuns of(Policy policy, Duration window) {
        return switch (Objects.requireNonNull(policy, "policy")) {
            case SKIP -> window == null ? SKIP : skip(window);
            case RUN_LAST -> RUN_LAST;
            case CATCH_UP -> {
                if (window == null) {
                    throw new InvalidScheduleException("the missed-run policy catch_up needs a window");
                }
                yield catchUp(window);
            }
        };
    }

    private static Duration positive(Duration d, String what) {
        Objects.requireNonNull(d, what);
        if (d.isNegative() || d.isZero()) {
            throw new InvalidScheduleException("a schedule's " + what + " must be positive, was " + d);
        }
        return d;
    }

    /** @return the policy */
    public Policy policy() {
        return policy;
    }

    /** @return the grace period ({@code SKIP}), the window ({@code CATCH_UP}), or null ({@code RUN_LAST}) */
    public Duration window() {
        return window;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MissedRuns m && m.policy == policy && Objects.equals(m.window, window);
    }

    @Override
    public int hashCode() {
        return Objects.hash(policy, window);
    }

    @Override
    public String toString() {
        return policy.name().toLowerCase(java.util.Locale.ROOT) + (window == null ? "" : " " + window);
    }
}
