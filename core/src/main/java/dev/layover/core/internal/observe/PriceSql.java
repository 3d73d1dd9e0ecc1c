package dev.layover.core.internal.observe;

import dev.layover.core.spi.Db;
import dev.layover.core.tokens.Prices;
import java.sql.PreparedStatement;
import java.util.Map;

/**
 * The owner of {@code layover.model_prices}: writes an instance's price table ({@code Prices}) when
 * it starts, one upsert per model in one transaction; models it does not name are left as they are.
 */
public final class PriceSql {

    /** Parameters: model, currency, input, cached input (or null), output, provider keys (text[]), worker. */
    static final String UPSERT = """
            INSERT INTO layover.model_prices AS p
                (model, currency, input_per_million, cached_input_per_million, output_per_million, provider_keys,
                 configured_by, configured_at)
            VALUES (?, ?, ?, ?, ?, ?::text[], ?, now())
            ON CONFLICT (model) DO UPDATE
            SET currency = excluded.currency, input_per_million = excluded.input_per_million,
                cached_input_per_million = excluded.cached_input_per_million,
                output_per_million = excluded.output_per_million, provider_keys = excluded.provider_keys,
                configured_by = excluded.configured_by, configured_at = excluded.configured_at""";

    private PriceSql() {}

    /**
     * Writes the price table.
     *
     * @param db the database
     * @param prices the application's prices (nothing is written when empty)
     * @param worker the instance writing them
     */
    public static void write(Db db, Prices prices, String worker) {
        if (prices.isEmpty()) {
            return;
        }
        db.transaction("writing the price table", c -> {
            try (PreparedStatement ps = c.prepareStatement(UPSERT)) {
                for (Map.Entry<String, Prices.Entry> m : prices.models().entrySet()) {
                    var p = m.getValue().price();
                    Db.bind(ps, m.getKey(), p.currency(), p.inputPerMillion(), p.cachedInputPerMillion(),
                            p.outputPerMillion(), c.createArrayOf("text", m.getValue().providerKeys().toArray()), worker);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            return null;
        });
    }
}
