package dev.layover.core.tokens;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The price table of an application: what each model's tokens cost ({@link ModelPrice}), and which
 * provider keys are billed as which model. It prices the tokens the time series counts, in the view
 * {@code layover.token_costs} ("cost per tenant per day") and on the console. Layover ships no
 * prices and guesses none: a model without a row has no cost ({@code cost} NULL, {@code priced}
 * false), never a made-up one.
 *
 * <pre>{@code
 * Prices prices = Prices.builder()
 *         .model("gpt-4o-mini", ModelPrice.perMillion("USD", 0.15, 0.60).withCachedInput(0.075))
 *         .model("claude-sonnet", ModelPrice.perMillion("USD", 3.00, 15.00), "anthropic:claude-sonnet*")
 *         .build();
 * Layover.builder(dataSource).prices(prices)...
 * }</pre>
 *
 * <p>The model of a provider key: the model whose keys name it exactly, else the one with the
 * longest {@code prefix*} pattern matching it, else the key's text after its first {@code ':'}
 * ({@code openai:gpt-4o-mini} is priced as {@code gpt-4o-mini}) ({@code layover.model_of}).
 *
 * <p>Database effect: when an instance with prices starts, each model is written to
 * {@code layover.model_prices} (one upsert per model, in one transaction; the last instance to start
 * wins a model; models it does not name are left as they are). Default: no prices.
 */
public final class Prices {

    private static final Prices NONE = new Prices(Map.of());
    private static final Pattern KEY = Pattern.compile("[^*]{1,200}\\*?");

    /**
     * A model's price and the provider keys billed as it.
     *
     * @param price its price
     * @param providerKeys provider keys or {@code prefix*} patterns billed as this model (beside the
     *     keys whose text after {@code ':'} is its name)
     */
    public record Entry(ModelPrice price, List<String> providerKeys) {
        /** Copies the keys. */
        public Entry {
            Objects.requireNonNull(price, "price");
            providerKeys = List.copyOf(providerKeys);
        }
    }

    private final Map<String, Entry> models;

    private Prices(Map<String, Entry> models) {
        this.models = Collections.unmodifiableMap(new LinkedHashMap<>(models));
    }

    /** @return no prices (the default) */
    public static Prices none() {
        return NONE;
    }

    /** @return a builder */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the models and their prices, in the order given */
    public Map<String, Entry> models() {
        return models;
    }

    /** @return whether there is no price */
    public boolean isEmpty() {
        return models.isEmpty();
    }

    @Override
    public String toString() {
        return "Prices" + models;
    }

    /** Builds {@link Prices}. */
    public static final class Builder {
        private final Map<String, Entry> models = new LinkedHashMap<>();

        private Builder() {}

        /**
         * @param model the model's name, 1-200 characters (as it appears after {@code ':'} in its
         *     provider keys, or any name when {@code providerKeys} are given)
         * @param price its price
         * @param providerKeys provider keys or {@code prefix*} patterns billed as this model
         * @return this builder
         * @throws IllegalArgumentException for an empty or too long name or key, a {@code *} other
         *     than at a pattern's end, or a model given twice
         */
        public Builder model(String model, ModelPrice price, String... providerKeys) {
            if (model == null || model.isEmpty() || model.length() > 200) {
                throw new IllegalArgumentException("a model name must be 1-200 characters, was: " + model);
            }
            Objects.requireNonNull(price, "price");
            for (String k : providerKeys) {
                if (k == null || !KEY.matcher(k).matches()) {
                    throw new IllegalArgumentException("model " + model + ": a provider key is 1-200 characters, or a "
                            + "prefix followed by one '*', was: " + k);
                }
            }
            if (models.putIfAbsent(model, new Entry(price, Arrays.asList(providerKeys))) != null) {
                throw new IllegalArgumentException("model " + model + " is priced twice");
            }
            return this;
        }

        /** @return the price table */
        public Prices build() {
            return models.isEmpty() ? NONE : new Prices(models);
        }
    }
}
