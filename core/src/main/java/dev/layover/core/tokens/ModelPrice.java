package dev.layover.core.tokens;

import java.math.BigDecimal;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What one model's tokens cost, per million tokens, in one currency: input tokens, output tokens
 * (reasoning and thinking included, as {@link TokenUsage} counts them), and input tokens read from a
 * prompt cache (default: the input price). Layover ships no prices: take them from your provider's
 * price list and contract ({@link Prices}).
 *
 * @param currency an ISO 4217 code such as {@code USD} (three capital letters)
 * @param inputPerMillion the price of a million input tokens, 0 or more
 * @param cachedInputPerMillion the price of a million input tokens read from a cache, 0 or more;
 *     null: the input price
 * @param outputPerMillion the price of a million output tokens, 0 or more
 */
public record ModelPrice(String currency, BigDecimal inputPerMillion, BigDecimal cachedInputPerMillion,
        BigDecimal outputPerMillion) {

    private static final Pattern CURRENCY = Pattern.compile("[A-Z]{3}");

    /**
     * @throws IllegalArgumentException for a currency that is not three capital letters or a
     *     negative price
     */
    public ModelPrice {
        Objects.requireNonNull(currency, "currency");
        if (!CURRENCY.matcher(currency).matches()) {
            throw new IllegalArgumentException("a currency is an ISO 4217 code of three capital letters (USD, EUR), was: "
                    + currency);
        }
        check("inputPerMillion", Objects.requireNonNull(inputPerMillion, "inputPerMillion"));
        check("outputPerMillion", Objects.requireNonNull(outputPerMillion, "outputPerMillion"));
        if (cachedInputPerMillion != null) {
            check("cachedInputPerMillion", cachedInputPerMillion);
        }
    }

    /**
     * @param currency an ISO 4217 code such as {@code USD}
     * @param input the price of a million input tokens
     * @param output the price of a million output tokens
     * @return the price; cached input at the input price
     */
    public static ModelPrice perMillion(String currency, double input, double output) {
        return new ModelPrice(currency, decimal("input", input), null, decimal("output", output));
    }

    /**
     * @param cachedInput the price of a million input tokens read from a prompt cache
     * @return a copy with that price
     */
    public ModelPrice withCachedInput(double cachedInput) {
        return new ModelPrice(currency, inputPerMillion, decimal("cachedInput", cachedInput), outputPerMillion);
    }

    private static BigDecimal decimal(String what, double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            throw new IllegalArgumentException(what + " price must be a finite number, was " + v);
        }
        return BigDecimal.valueOf(v);
    }

    private static void check(String what, BigDecimal v) {
        if (v.signum() < 0) {
            throw new IllegalArgumentException(what + " must not be negative, was " + v);
        }
    }
}
