package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import java.util.Objects;

/**
 * What a call will use, reserved in its key's bucket before the call: its input tokens (an
 * estimate: {@link TokenEstimator}, {@link CalibratedEstimator}) and its output ceiling (the
 * request's own {@code max_tokens} / {@code max_output_tokens} / {@code maxOutputTokens}). A job
 * type states it from its args in one line ({@code JobType.Builder#tokenEstimate}); a handler may
 * refine it before the call ({@code JobContext#refineEstimate}). After the call the reported
 * usage replaces it ({@code JobContext#reportUsage}).
 *
 * <p>Against each bucket dimension ({@link #tokensFor}): {@link TokenDimension#INPUT_TOKENS} the
 * input, {@link TokenDimension#OUTPUT_TOKENS} the output ceiling, {@link TokenDimension#TOKENS}
 * both. An estimate made with {@link #total} (one number, split unknown, as
 * {@code Layover.Builder#tokenCost} gives) counts that number against every dimension. Immutable.
 */
public final class TokenEstimate {

    /** Nothing reserved. */
    public static final TokenEstimate NONE = new TokenEstimate(0, 0, 0);

    private final long input;
    private final long output;
    private final long combined;

    private TokenEstimate(long input, long output, long combined) {
        this.input = input;
        this.output = output;
        this.combined = combined;
    }

    /**
     * @param inputTokens the prompt's estimated tokens, 0 to {@link TokenUsage#MAX_COUNT}
     * @param outputCeiling the most output tokens the request allows, 0 to {@link TokenUsage#MAX_COUNT}
     * @return the estimate
     * @throws IllegalArgumentException for a negative count or one above {@code MAX_COUNT}
     *     (thrown inside a job type's estimate function it is handled as a failed estimate)
     */
    public static TokenEstimate of(long inputTokens, long outputCeiling) {
        check(inputTokens, "inputTokens");
        check(outputCeiling, "outputCeiling");
        return new TokenEstimate(inputTokens, outputCeiling, Math.min(TokenUsage.MAX_COUNT, inputTokens + outputCeiling));
    }

    /**
     * One number for the whole call, split unknown: counted in full against every dimension.
     *
     * @param tokens the call's tokens, 0 to {@link TokenUsage#MAX_COUNT}
     * @return the estimate
     * @throws IllegalArgumentException for a negative count or one above {@code MAX_COUNT}
     */
    public static TokenEstimate total(long tokens) {
        check(tokens, "tokens");
        return new TokenEstimate(tokens, tokens, tokens);
    }

    /**
     * @param dimension a bucket dimension
     * @return the tokens this estimate reserves in it
     */
    public long tokensFor(TokenDimension dimension) {
        return switch (Objects.requireNonNull(dimension, "dimension")) {
            case TOKENS -> combined;
            case INPUT_TOKENS -> input;
            case OUTPUT_TOKENS -> output;
        };
    }

    /** @return the input tokens (for {@link #total}: the total) */
    public long inputTokens() {
        return input;
    }

    /** @return the output ceiling (for {@link #total}: the total) */
    public long outputCeiling() {
        return output;
    }

    /** @return input plus output ceiling (for {@link #total}: the total) */
    public long totalTokens() {
        return combined;
    }

    /** @return whether it reserves nothing */
    public boolean isZero() {
        return combined == 0 && input == 0 && output == 0;
    }

    private static void check(long n, String what) {
        if (!TokenUsage.valid(n)) {
            throw new IllegalArgumentException(what + " must be 0 to " + TokenUsage.MAX_COUNT + ", was " + n);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TokenEstimate e && e.input == input && e.output == output && e.combined == combined;
    }

    @Override
    public int hashCode() {
        return Objects.hash(input, output, combined);
    }

    @Override
    public String toString() {
        return input == output && output == combined ? combined + " tokens"
                : input + " input + " + output + " output tokens";
    }
}
