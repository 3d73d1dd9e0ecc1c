package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How a provider key's permits are shared among the fairness keys of its jobs
 * ({@code JobType.Builder#fairnessKey}; {@code docs/fairness.md}). Immutable; every
 * {@code withX} returns a copy. Set with {@code Layover.Builder#fairness(FairnessSettings)} and
 * {@code Layover.Builder#fairnessWeight(String, double)}.
 *
 * <p>Discipline: start-time fair queueing in Postgres ({@code layover.fair_round}). A job
 * with a fairness key that finds no permit of its key's bucket free now gets a virtual tag in its
 * key's fair queue, {@code greatest(its flow's last tag, the key's clock) + rank / weight}; a
 * round books the bucket's next permits, up to {@link #horizon()} ahead, for the waiting jobs with
 * the lowest tags, highest priority first. So while several fairness keys have waiting jobs, each
 * gets the key's permits in proportion to its weight, and the share of one with nothing waiting
 * goes to the others at once (work-conserving).
 *
 * <p>Database effect per job: its tag (one write, with the move of its run time to the estimate of
 * its turn), then its booked permit (a second write), then its run; no attempt is spent and
 * {@code reschedules} is not counted (queueing within the key's own limit). Each worker that knows
 * a key has waiting jobs runs a round every half {@link #horizon()} (the fair pump).
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #horizon()}</td><td>100 ms: how far ahead a round books permits (a tenant that
 *       arrives takes over the booked, unstarted permits of jobs behind it in the queue)</td></tr>
 *   <tr><td>{@link #lowPriorityShare()}</td><td>0.1: of each round's permits, at least this share
 *       goes to jobs below the highest priority waiting, when there are any (0: strict priority)</td></tr>
 *   <tr><td>{@link #weights()}</td><td>none: every fairness key weighs 1</td></tr>
 * </table>
 *
 * @param horizon how far ahead a round books permits, 50 ms to 10 s
 * @param lowPriorityShare the share of each round's permits reserved for lower-priority jobs, in [0, 1)
 * @param weights weights by fairness key or pattern ({@code *} matches any text; the longest
 *     matching pattern wins; an operator's weight, set at run time, wins over a configured one)
 */
public record FairnessSettings(Duration horizon, double lowPriorityShare, Map<String, Double> weights) {

    /** The default {@link #horizon()}. */
    public static final Duration DEFAULT_HORIZON = Duration.ofMillis(100);

    /** The default {@link #lowPriorityShare()}. */
    public static final double DEFAULT_LOW_PRIORITY_SHARE = 0.1;

    /**
     * Validates the settings.
     *
     * @param horizon how far ahead a round books permits
     * @param lowPriorityShare the share reserved for lower-priority jobs
     * @param weights weights by fairness key or pattern
     * @throws ConfigurationException when a value is out of range
     */
    public FairnessSettings {
        if (horizon == null || horizon.compareTo(Duration.ofMillis(50)) < 0 || horizon.compareTo(Duration.ofSeconds(10)) > 0) {
            throw new ConfigurationException("fairness horizon must be between 50 ms and 10 s, was " + horizon);
        }
        if (!(lowPriorityShare >= 0 && lowPriorityShare < 1)) {
            throw new ConfigurationException("fairness lowPriorityShare must be in [0, 1), was " + lowPriorityShare);
        }
        weights = Map.copyOf(weights);
        for (Map.Entry<String, Double> e : weights.entrySet()) {
            checkWeight(e.getKey(), e.getValue());
        }
    }

    /** @return the defaults: 100 ms horizon, 0.1 reserved for lower priorities, every weight 1 */
    public static FairnessSettings defaults() {
        return new FairnessSettings(DEFAULT_HORIZON, DEFAULT_LOW_PRIORITY_SHARE, Map.of());
    }

    /**
     * @param d how far ahead a round books permits
     * @return a copy with that horizon
     */
    public FairnessSettings withHorizon(Duration d) {
        return new FairnessSettings(d, lowPriorityShare, weights);
    }

    /**
     * @param share the share of each round's permits reserved for lower-priority jobs
     * @return a copy with that share
     */
    public FairnessSettings withLowPriorityShare(double share) {
        return new FairnessSettings(horizon, share, weights);
    }

    /**
     * @param pattern a fairness key, or a pattern with {@code *} ({@code "tenant:premium-*"})
     * @param weight its weight, in (0, 1,000,000]
     * @return a copy with that weight
     */
    public FairnessSettings withWeight(String pattern, double weight) {
        checkWeight(pattern, weight);
        Map<String, Double> w = new LinkedHashMap<>(weights);
        w.put(pattern, weight);
        return new FairnessSettings(horizon, lowPriorityShare, w);
    }

    private static void checkWeight(String pattern, Double weight) {
        if (pattern == null || pattern.isEmpty() || pattern.length() > 200 || pattern.indexOf('\0') >= 0) {
            throw new ConfigurationException("a fairness weight's pattern must be 1-200 characters without NUL, was "
                    + (pattern == null ? "null" : pattern.length() + " characters"));
        }
        if (weight == null || !(weight > 0 && weight <= 1_000_000)) {
            throw new ConfigurationException("fairness weight of " + pattern + " must be in (0, 1000000], was " + weight);
        }
    }
}
