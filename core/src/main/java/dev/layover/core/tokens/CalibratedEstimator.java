package dev.layover.core.tokens;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A token estimate corrected per key by the usage that key's calls report: the base estimate
 * (by default {@link TextEstimator}) times the key's learned ratio of reported to estimated input
 * tokens. For providers without a public tokenizer (Anthropic, Gemini, Bedrock).
 *
 * <p>Use: {@link #estimate(String, String)} before the call (reserve {@link Estimate#tokens()}
 * plus the request's output ceiling), then {@link #observe(Estimate, TokenUsage)} with the usage
 * the call reported. The ratio starts conservative ({@value #DEFAULT_INITIAL_RATIO}: an estimate
 * over the base one until reports come in) and follows {@link Calibration}'s bounded update, so
 * one report 10&times; over the estimate moves the sample it adds at most
 * {@link Settings#maxStep()}-fold from the mean. Estimates are the mean ratio plus
 * {@link Settings#spread()} standard deviations, so they over-estimate more for a key whose
 * prompts vary more.
 *
 * <p>State is kept per key in memory; {@link #export()} and {@link #importState(Map)} move it as
 * numbers (the engine keeps it fleet-wide). At most {@value #MAX_KEYS} keys are kept; further keys
 * are estimated with the initial ratio and not learned. Thread-safe: each key's update is atomic.
 * Nothing here throws for bad numbers: each method says what it does with them.
 */
public final class CalibratedEstimator {

    /**
     * Default {@link Builder#initialRatio}: 2, an over-estimate until the key has reports (the text
     * estimate falls short of a real tokenizer's count for some scripts: docs/tokens.md).
     */
    public static final double DEFAULT_INITIAL_RATIO = 2.0;

    /** Default {@link Builder#minRatio}: 0.2. */
    public static final double DEFAULT_MIN_RATIO = 0.2;

    /** Default {@link Builder#maxRatio}: 5. */
    public static final double DEFAULT_MAX_RATIO = 5.0;

    /** Default {@link Builder#maxStep}: 2, a report moves its sample at most 2-fold from the mean. */
    public static final double DEFAULT_MAX_STEP = 2.0;

    /** Default {@link Builder#minWeight}: 0.05, about the last 20 reports count. */
    public static final double DEFAULT_MIN_WEIGHT = 0.05;

    /** Default {@link Builder#spread}: 1 standard deviation above the mean ratio. */
    public static final double DEFAULT_SPREAD = 1.0;

    /** Default {@link Builder#minRawTokens}: 20; smaller prompts are not learned from. */
    public static final long DEFAULT_MIN_RAW_TOKENS = 20;

    /** The most keys kept in memory. */
    public static final int MAX_KEYS = 10_000;

    /**
     * The bounds and weights of the calibration; see the builder's methods for each.
     *
     * @param initialRatio the ratio of a key without reports
     * @param minRatio the smallest ratio
     * @param maxRatio the largest ratio
     * @param maxStep how far one report's ratio may be from the mean, as a factor
     * @param minWeight the smallest weight of a report
     * @param spread standard deviations added to the mean ratio in an estimate
     * @param minRawTokens base estimates below this are not learned from
     */
    public record Settings(double initialRatio, double minRatio, double maxRatio, double maxStep, double minWeight,
            double spread, long minRawTokens) {

        /**
         * @throws IllegalArgumentException if a setting is out of range
         *
         * @param initialRatio the ratio of a key without reports
         * @param minRatio the smallest ratio
         * @param maxRatio the largest ratio
         * @param maxStep how far one report's ratio may be from the mean, as a factor
         * @param minWeight the smallest weight of a report
         * @param spread standard deviations added to the mean ratio in an estimate
         * @param minRawTokens base estimates below this are not learned from
         */
        public Settings {
            positive("minRatio", minRatio);
            if (!(maxRatio >= minRatio) || !Double.isFinite(maxRatio)) {
                throw new IllegalArgumentException("maxRatio must be finite and at least minRatio " + minRatio
                        + ", was " + maxRatio);
            }
            if (!(initialRatio >= minRatio && initialRatio <= maxRatio)) {
                throw new IllegalArgumentException("initialRatio must be in [" + minRatio + ", " + maxRatio
                        + "], was " + initialRatio);
            }
            if (!(maxStep > 1) || !Double.isFinite(maxStep)) {
                throw new IllegalArgumentException("maxStep must be finite and above 1, was " + maxStep);
            }
            if (!(minWeight > 0 && minWeight <= 1)) {
                throw new IllegalArgumentException("minWeight must be in (0, 1], was " + minWeight);
            }
            if (!(spread >= 0) || !Double.isFinite(spread)) {
                throw new IllegalArgumentException("spread must be finite and 0 or more, was " + spread);
            }
            if (minRawTokens < 1) {
                throw new IllegalArgumentException("minRawTokens must be 1 or more, was " + minRawTokens);
            }
        }

        private static void positive(String name, double v) {
            if (!(v > 0) || !Double.isFinite(v)) {
                throw new IllegalArgumentException(name + " must be finite and above 0, was " + v);
            }
        }
    }

    /**
     * One estimate: what to reserve, and the base estimate to report usage against.
     *
     * @param key the key it was made for
     * @param rawTokens the base estimator's count
     * @param tokens the calibrated estimate, 0 to {@link TokenUsage#MAX_COUNT}
     */
    public record Estimate(String key, long rawTokens, long tokens) {}

    private final TokenEstimator base;
    private final Settings settings;
    private final Calibration initial;
    private final Map<String, Calibration> keys = new ConcurrentHashMap<>();

    private CalibratedEstimator(TokenEstimator base, Settings settings) {
        this.base = base;
        this.settings = settings;
        this.initial = Calibration.initial(settings);
    }

    /**
     * An estimator on {@link TextEstimator} with the defaults.
     *
     * @return a new estimator
     */
    public static CalibratedEstimator create() {
        return builder().build();
    }

    /**
     * A builder; the defaults are the {@code DEFAULT_*} constants and {@link TextEstimator}.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the bounds and weights in use */
    public Settings settings() {
        return settings;
    }

    /** @return the base estimator */
    public TokenEstimator base() {
        return base;
    }

    /**
     * Estimates a text's tokens for a key.
     *
     * @param key the provider key, e.g. {@code anthropic:claude-sonnet-4-5}; not {@code null}
     * @param text the prompt; {@code null} counts as empty
     * @return the estimate
     */
    public Estimate estimate(String key, String text) {
        return estimate(key, base.textTokens(text));
    }

    /**
     * Estimates a chat prompt's tokens for a key.
     *
     * @param key the provider key; not {@code null}
     * @param messages the prompt
     * @return the estimate
     */
    public Estimate estimate(String key, List<ChatMessage> messages) {
        return estimate(key, base.messageTokens(messages));
    }

    /**
     * Calibrates a base estimate made elsewhere.
     *
     * @param key the provider key; not {@code null}
     * @param rawTokens the base estimate; below 0 counts as 0
     * @return the estimate: {@code ceil(rawTokens * factor)}, at most {@link TokenUsage#MAX_COUNT}
     */
    public Estimate estimate(String key, long rawTokens) {
        Objects.requireNonNull(key, "key");
        long raw = Math.max(0, rawTokens);
        double scaled = Math.ceil(raw * calibration(key).factor(settings));
        long tokens = scaled >= TokenUsage.MAX_COUNT ? TokenUsage.MAX_COUNT : (long) scaled;
        return new Estimate(key, raw, tokens);
    }

    /**
     * Learns from the usage a call reported: its {@link TokenUsage#totalInputTokens()} (every
     * prompt token, cached or not, which is what the text estimate counts) against the base
     * estimate.
     *
     * @param estimate the estimate made before the call
     * @param usage the usage reported; {@code null} is ignored
     * @return whether the report was learned from (see {@link #observe(String, long, long)})
     */
    public boolean observe(Estimate estimate, TokenUsage usage) {
        if (estimate == null || usage == null) {
            return false;
        }
        return observe(estimate.key(), estimate.rawTokens(), usage.totalInputTokens());
    }

    /**
     * Learns from one (base estimate, reported input tokens) pair. Ignored, and false returned,
     * when the base estimate is below {@link Settings#minRawTokens()} (a small prompt's fixed
     * overhead says little about the ratio), when the report is negative or above
     * {@link TokenUsage#MAX_COUNT}, or when the key is new and {@value #MAX_KEYS} keys are kept.
     * A report far off the estimate is taken in bounded (see {@link Calibration}).
     *
     * @param key the provider key; not {@code null}
     * @param rawTokens the base estimate made before the call
     * @param reportedInputTokens the input tokens the provider reported
     * @return whether the pair was learned from
     */
    public boolean observe(String key, long rawTokens, long reportedInputTokens) {
        Objects.requireNonNull(key, "key");
        if (rawTokens < settings.minRawTokens() || !TokenUsage.valid(reportedInputTokens)) {
            return false;
        }
        if (keys.size() >= MAX_KEYS && !keys.containsKey(key)) {
            return false;
        }
        double ratio = (double) reportedInputTokens / rawTokens;
        keys.compute(key, (k, current) -> (current == null ? initial : current).observe(ratio, settings));
        return true;
    }

    /**
     * A key's state.
     *
     * @param key the provider key; not {@code null}
     * @return its calibration, or the initial one when it has none
     */
    public Calibration calibration(String key) {
        return keys.getOrDefault(Objects.requireNonNull(key, "key"), initial);
    }

    /**
     * Every key's state, to store or share.
     *
     * @return a copy, by key
     */
    public Map<String, Calibration> export() {
        return Map.copyOf(new LinkedHashMap<>(keys));
    }

    /**
     * Replaces the state of the given keys, e.g. with what the fleet learned. An entry whose
     * ratio is outside {@code [minRatio, maxRatio]} is clamped into it; {@code null} keys or
     * values are skipped; keys past {@value #MAX_KEYS} are skipped.
     *
     * @param state calibrations by key
     * @return how many entries were taken
     */
    public int importState(Map<String, Calibration> state) {
        if (state == null) {
            return 0;
        }
        int taken = 0;
        for (Map.Entry<String, Calibration> e : state.entrySet()) {
            if (e.getKey() == null || e.getValue() == null) {
                continue;
            }
            if (keys.size() >= MAX_KEYS && !keys.containsKey(e.getKey())) {
                continue;
            }
            Calibration c = e.getValue();
            double ratio = Math.max(settings.minRatio(), Math.min(settings.maxRatio(), c.ratio()));
            keys.put(e.getKey(), new Calibration(ratio, c.variance(), c.samples()));
            taken++;
        }
        return taken;
    }

    /**
     * Builds a {@link CalibratedEstimator}. Every setting has a {@code DEFAULT_*} constant.
     */
    public static final class Builder {

        private TokenEstimator base = TextEstimator.defaults();
        private double initialRatio = DEFAULT_INITIAL_RATIO;
        private double minRatio = DEFAULT_MIN_RATIO;
        private double maxRatio = DEFAULT_MAX_RATIO;
        private double maxStep = DEFAULT_MAX_STEP;
        private double minWeight = DEFAULT_MIN_WEIGHT;
        private double spread = DEFAULT_SPREAD;
        private long minRawTokens = DEFAULT_MIN_RAW_TOKENS;

        private Builder() {}

        /**
         * The estimator whose counts are calibrated. Default {@link TextEstimator#defaults()}; an
         * {@link OpenAiTokenCounter} with {@code initialRatio(1.0)} learns what it does not count
         * (tool definitions, images).
         *
         * @param base not {@code null}
         * @return this builder
         */
        public Builder base(TokenEstimator base) {
            this.base = Objects.requireNonNull(base, "base");
            return this;
        }

        /**
         * The ratio of a key without reports. Default 2.
         *
         * @param ratio within {@code [minRatio, maxRatio]}
         * @return this builder
         */
        public Builder initialRatio(double ratio) {
            this.initialRatio = ratio;
            return this;
        }

        /**
         * The smallest ratio. Default 0.2.
         *
         * @param ratio above 0
         * @return this builder
         */
        public Builder minRatio(double ratio) {
            this.minRatio = ratio;
            return this;
        }

        /**
         * The largest ratio. Default 5.
         *
         * @param ratio at least minRatio
         * @return this builder
         */
        public Builder maxRatio(double ratio) {
            this.maxRatio = ratio;
            return this;
        }

        /**
         * How far one report's ratio may be from the mean, as a factor: it is clamped into
         * {@code [mean / maxStep, mean * maxStep]}. Default 2.
         *
         * @param factor above 1
         * @return this builder
         */
        public Builder maxStep(double factor) {
            this.maxStep = factor;
            return this;
        }

        /**
         * The smallest weight of one report in the moving mean: {@code 1/minWeight} is about how
         * many recent reports count. Default 0.05.
         *
         * @param weight in (0, 1]
         * @return this builder
         */
        public Builder minWeight(double weight) {
            this.minWeight = weight;
            return this;
        }

        /**
         * How many standard deviations of the ratio an estimate adds to its mean. Default 1; 0
         * estimates at the mean.
         *
         * @param deviations 0 or more
         * @return this builder
         */
        public Builder spread(double deviations) {
            this.spread = deviations;
            return this;
        }

        /**
         * Base estimates below this many tokens are not learned from. Default 20.
         *
         * @param tokens 1 or more
         * @return this builder
         */
        public Builder minRawTokens(long tokens) {
            this.minRawTokens = tokens;
            return this;
        }

        /**
         * @return a new estimator
         * @throws IllegalArgumentException if a setting is out of range (the message names it)
         */
        public CalibratedEstimator build() {
            return new CalibratedEstimator(base,
                    new Settings(initialRatio, minRatio, maxRatio, maxStep, minWeight, spread, minRawTokens));
        }
    }
}
