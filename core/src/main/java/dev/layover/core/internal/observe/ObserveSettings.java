package dev.layover.core.internal.observe;

import dev.layover.core.tokens.Prices;
import dev.layover.core.tracing.LayoverTracing;

/**
 * How a Layover instance is seen from the systems around it, as {@code Layover.Builder} collected
 * it: its tracing, whether runs carry their job in the MDC, its price table.
 *
 * @param tracing the tracing ({@link LayoverTracing#none()} by default)
 * @param mdc whether runs put their job into the SLF4J MDC (default on)
 * @param prices the price table written at start ({@link Prices#none()} by default)
 */
public record ObserveSettings(LayoverTracing tracing, boolean mdc, Prices prices) {

    /** No tracing, MDC on, no prices. */
    public static final ObserveSettings DEFAULTS = new ObserveSettings(LayoverTracing.none(), true, Prices.none());

    /** Nulls are the defaults. */
    public ObserveSettings {
        tracing = tracing == null ? LayoverTracing.none() : tracing;
        prices = prices == null ? Prices.none() : prices;
    }
}
