package dev.layover.core.tokens;

/**
 * What a {@link CalibratedEstimator} has learned for one key, as plain numbers, so it can be
 * stored and shared (the engine keeps it fleet-wide in Postgres): the exponentially weighted mean
 * and variance of the reports' {@code reported / estimated} input tokens, and how many reports
 * made them.
 *
 * <p>{@link #observe(double, CalibratedEstimator.Settings)} is the whole update rule, a pure
 * function, so any node (or a SQL statement doing the same arithmetic) gets the same result:
 *
 * <ol>
 *   <li>the report's ratio {@code x} is bounded: into {@code [ratio / maxStep, ratio * maxStep]},
 *       then into {@code [minRatio, maxRatio]}, so one report 10&times; off cannot throw the
 *       calibration;
 *   <li>its weight is {@code w = 1 / (samples + 1)} (a running mean at first), never below
 *       {@code minWeight} (then the last {@code 1 / minWeight} or so reports count);
 *   <li>{@code ratio += w * (x - ratio)} and, from the second report on, {@code variance =
 *       (1 - w) * (variance + w * (x - ratio_before)^2)}.
 * </ol>
 *
 * <p>An estimate multiplies by {@link #factor}: the mean of the reports with the starting ratio
 * counted as one more report ({@link #mean}), so a key starts conservative and the start fades as
 * reports come in, plus {@code spread} standard deviations.
 *
 * @param ratio the mean of the reports' ratios ({@code initialRatio} before any); finite, above 0
 * @param variance the variance of the reports' ratios; finite and 0 or more
 * @param samples the reports taken in; 0 or more
 */
public record Calibration(double ratio, double variance, long samples) {

    /**
     * @throws IllegalArgumentException if a number is out of range (NaN, infinite, negative, a
     *     ratio of 0)
     *
     * @param ratio the mean of the reports' ratios ({@code initialRatio} before any); finite, above 0
     * @param variance the variance of the reports' ratios; finite and 0 or more
     * @param samples the reports taken in; 0 or more
     */
    public Calibration {
        if (!Double.isFinite(ratio) || ratio <= 0) {
            throw new IllegalArgumentException("ratio must be finite and above 0, was " + ratio);
        }
        if (!Double.isFinite(variance) || variance < 0) {
            throw new IllegalArgumentException("variance must be finite and 0 or more, was " + variance);
        }
        if (samples < 0) {
            throw new IllegalArgumentException("samples must be 0 or more, was " + samples);
        }
    }

    /**
     * The state before any report.
     *
     * @param settings the estimator's settings
     * @return ratio {@link CalibratedEstimator.Settings#initialRatio()}, variance 0, no samples
     */
    public static Calibration initial(CalibratedEstimator.Settings settings) {
        return new Calibration(settings.initialRatio(), 0, 0);
    }

    /**
     * The state after one more report.
     *
     * @param reportedOverEstimated the report's ratio; NaN or infinite leaves the state as it is
     * @param settings the bounds and weights
     * @return the next state
     */
    public Calibration observe(double reportedOverEstimated, CalibratedEstimator.Settings settings) {
        if (!Double.isFinite(reportedOverEstimated)) {
            return this;
        }
        double x = clamp(reportedOverEstimated, ratio / settings.maxStep(), ratio * settings.maxStep());
        x = clamp(x, settings.minRatio(), settings.maxRatio());
        double weight = Math.max(settings.minWeight(), 1.0 / (samples + 1.0));
        double delta = x - ratio;
        double nextRatio = clamp(ratio + weight * delta, settings.minRatio(), settings.maxRatio());
        double nextVariance = samples == 0 ? 0 : (1 - weight) * (variance + weight * delta * delta);
        long nextSamples = samples == Long.MAX_VALUE ? samples : samples + 1;
        return new Calibration(nextRatio, nextVariance, nextSamples);
    }

    /**
     * The reports' mean with the starting ratio counted as one report more:
     * {@code (initialRatio + samples * ratio) / (samples + 1)}.
     *
     * @param settings the starting ratio
     * @return the mean ratio an estimate starts from
     */
    public double mean(CalibratedEstimator.Settings settings) {
        double n = samples;
        return (settings.initialRatio() + n * ratio) / (n + 1);
    }

    /**
     * The factor an estimate is multiplied by: {@link #mean} plus {@code spread} standard
     * deviations, within {@code [minRatio, maxRatio]}.
     *
     * @param settings the bounds and spread
     * @return the factor
     */
    public double factor(CalibratedEstimator.Settings settings) {
        return clamp(mean(settings) + settings.spread() * Math.sqrt(variance), settings.minRatio(),
                settings.maxRatio());
    }

    private static double clamp(double v, double lo, double hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
