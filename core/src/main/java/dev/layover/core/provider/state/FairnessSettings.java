package dev.layover.core.provider.state;

import dev.layover.core.ConfigurationException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How a provider key's admissions are shared among the fairness keys of its jobs
 * ({@code JobType.Builder#fairnessKey}; {@code docs/fairness.md}). Immutable; every
 * {@code withX} returns a copy. Set with {@code Layover.Builder#fairness(FairnessSettings)} and
 * {@code Layover.Builder#fairnessWeight(String, double)}.
 *
 * <p>Discipline: start-time fair queueing kept in the job table. A job with a fairness key enqueued
 * due gets a tag in its key's fair queue ({@code layover.fair_tags}: the later of its priority's
 * clock and its flow's last tag, plus its cost / its flow's weight), and the pick admits a key's
 * jobs in tag order, highest priority first. So while several fairness keys have waiting jobs, each
 * gets the key's admissions in proportion to its weight, and the share of one with nothing waiting
 * goes to the others at once (work-conserving).
 *
 * <p>Database effect per job: its tag, written with its insert; then its pick and its delete. No
 * write while it waits, no attempt, no reschedule.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #lowPriorityShare()}</td><td>0.1: of each key's admissions, this share goes to jobs
 *       below the highest priority waiting, when there are any (0: strict priority)</td></tr>
 *   <tr><td>{@link #weights()}</td><td>none: every fairness key weighs 1</td></tr>
 * </table>
 *
 * @param lowPriorityShare the share of admissions reserved for lower-priority jobs, in [0, 1)
 * @param weights weights by fairness key or pattern ({@code *} matches any text; the longest
 *     matching pattern wins; an operator's weight, set at run time, wins over a configured one)
 */
public record FairnessSettings(double lowPriorityShare, Map<String, Double> weights) {

    /** The default {@link #lowPriorityShare()}. */
    public static final double DEFAULT_LOW_PRIORITY_SHARE = 0.1;

    /**
     * Validates the settings.
     *
     * @param lowPriorityShare the share reserved for lower-priority jobs
     * @param weights weights by fairness key or pattern
     * @throws ConfigurationException when a value is out of range
     */
    public FairnessSettings {
        if (!(lowPriorityShare >= 0 && lowPriorityShare < 1)) {
            throw new ConfigurationException("fairness lowPriorityShare must be in [0, 1), was " + lowPriorityShare);
        }
        weights = Map.copyOf(weights);
        for (Map.Entry<String, Double> e : weights.entrySet()) {
            checkWeight(e.getKey(), e.getValue());
        }
    }

    /** @return the defaults: 0.1 reserved for lower priorities, every weight 1 */
    public static FairnessSettings defaults() {
        return new FairnessSettings(DEFAULT_LOW_PRIORITY_SHARE, Map.of());
    }

    /**
     * @param share the share of admissions reserved for lower-priority jobs
     * @return a copy with that share
     */
    public FairnessSettings withLowPriorityShare(double share) {
        return new FairnessSettings(share, weights);
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
        return new FairnessSettings(lowPriorityShare, w);
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
