package dev.layover.core.observability;

import static dev.layover.core.observability.ObservabilityFixtures.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Provider;
import dev.layover.core.tokens.ModelPrice;
import dev.layover.core.tokens.Prices;
import dev.layover.core.tokens.TokenUsage;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Tokens over time: the usage runs report is counted per job type, provider key and fairness key in
 * the time series (in memory, written by the flush), and {@code layover.token_costs} prices it by the
 * application's price table; a model without a price has no cost, never a guessed one.
 */
@DatabaseTest
class TokenCostsTest {

    /** A job that reports {@code input} tokens ({@code cached} of them from the cache) and {@code output} tokens. */
    record Call(String tenant, String model, long input, long output, long cached) {}

    private static JobType<Call> type() {
        return JobType.builder("priced", Call.class)
                .providerKey(c -> "openai:" + c.model())
                .fairnessKey(c -> c.tenant() == null ? null : "tenant:" + c.tenant())
                .handler((c, ctx) -> {
                    ctx.reportUsage(new TokenUsage(Provider.OPENAI, c.input(), c.output(), c.cached(), 0));
                    return Outcome.done();
                })
                .build();
    }

    private static long tokens(TestDatabase db, String key, String counter, String fairness) {
        return ((Number) db.value("SELECT coalesce(sum(amount), 0) FROM layover.time_series WHERE bucket_seconds = 60"
                + " AND job_type = 'priced' AND provider_key = ? AND counter = ? AND detail IS NOT DISTINCT FROM ?",
                key, counter, fairness)).longValue();
    }

    @Test
    void reportedTokensAreCountedPerKeyAndTenantAndPricedByTheApplicationsTable(TestDatabase db) {
        JobType<Call> type = type();
        Prices prices = Prices.builder()
                .model("gpt-4o-mini", ModelPrice.perMillion("USD", 0.15, 0.60).withCachedInput(0.075))
                .model("house-model", ModelPrice.perMillion("EUR", 1, 2), "gateway:*")
                .build();
        Layover layover = ObservabilityFixtures.builder(db).register(type).prices(prices)
                .timeSeriesFlushInterval(Duration.ofHours(1)).start();
        try {
            layover.enqueue(type, new Call("a", "gpt-4o-mini", 1000, 200, 400));
            layover.enqueue(type, new Call("a", "gpt-4o-mini", 1000, 200, 400));
            layover.enqueue(type, new Call("b", "gpt-4o-mini", 500, 100, 0));
            layover.enqueue(type, new Call(null, "gpt-unpriced", 70, 30, 0));
            Await.equal(WAIT, "every job finished", 4L, () -> db.count("select count(*) from layover.job_history "
                    + "where job_type = 'priced'"));
        } finally {
            layover.stop(); // writes what the flush had not
        }
        assertEquals(2000L, tokens(db, "openai:gpt-4o-mini", "input_tokens", "tenant:a"));
        assertEquals(400L, tokens(db, "openai:gpt-4o-mini", "output_tokens", "tenant:a"));
        assertEquals(800L, tokens(db, "openai:gpt-4o-mini", "cached_input_tokens", "tenant:a"));
        assertEquals(500L, tokens(db, "openai:gpt-4o-mini", "input_tokens", "tenant:b"));
        assertEquals(0L, tokens(db, "openai:gpt-4o-mini", "cached_input_tokens", "tenant:b"), "no row for nothing");
        assertEquals(70L, tokens(db, "openai:gpt-unpriced", "input_tokens", null), "no fairness key: detail empty");

        Map<String, Object> a = db.row("SELECT * FROM layover.token_costs WHERE job_type = 'priced' AND fairness_key = 'tenant:a'");
        assertEquals("gpt-4o-mini", a.get("model"));
        assertEquals(true, a.get("priced"));
        assertEquals("USD", a.get("currency"));
        // (2000 - 800) x 0.15 + 800 x 0.075 + 400 x 0.60, per million
        assertEquals(0, new BigDecimal("0.000480").compareTo((BigDecimal) a.get("cost")), String.valueOf(a.get("cost")));
        Map<String, Object> unpriced = db.row("SELECT * FROM layover.token_costs WHERE provider_key = 'openai:gpt-unpriced'");
        assertEquals("gpt-unpriced", unpriced.get("model"));
        assertEquals(false, unpriced.get("priced"));
        assertEquals(null, unpriced.get("cost"), "a model missing from the price table has no cost");
        assertEquals(70L, ((Number) unpriced.get("input_tokens")).longValue(), "its tokens are still there");

        Map<String, Object> row = db.row("SELECT * FROM layover.model_prices WHERE model = 'house-model'");
        assertEquals("EUR", row.get("currency"));
        assertEquals(null, row.get("cached_input_per_million"), "cached input at the input price");
        assertEquals(ObservabilityFixtures.WORKER, row.get("configured_by"));
        assertEquals("house-model", db.value("SELECT layover.model_of('gateway:team-1')"), "a pattern's model");
        assertEquals("gpt-4o-mini", db.value("SELECT layover.model_of('openai:gpt-4o-mini')"), "the text after ':'");
    }

    @Test
    void theHundredBusiestFairnessKeysKeepTheirRowsAndTheRestAreSummedAsStar(TestDatabase db) {
        JobType<Call> type = type();
        Layover layover = ObservabilityFixtures.builder(db).register(type).timeSeriesFlushInterval(Duration.ofHours(1))
                .start();
        int tenants = 130;
        try {
            for (int t = 0; t < tenants; t++) {
                layover.enqueue(type, new Call("t" + t, "m", t == 129 ? 1000 : 10, 1, 0));
            }
            Await.equal(WAIT, "every job finished", (long) tenants, () -> db.count("select count(*) from "
                    + "layover.job_history where job_type = 'priced'"));
        } finally {
            layover.stop();
        }
        assertEquals(101L, db.count("SELECT count(DISTINCT detail) FROM layover.time_series WHERE bucket_seconds = 10"
                + " AND job_type = 'priced' AND counter = 'input_tokens'"), "100 tenants and '*'");
        assertEquals(1000L, tokens(db, "openai:m", "input_tokens", "tenant:t129"), "the busiest keeps its own row");
        assertEquals(129 * 10 + 1000L, ((Number) db.value("SELECT sum(input_tokens) FROM layover.token_costs "
                + "WHERE job_type = 'priced'")).longValue(), "nothing lost by the sum");
    }

    @Test
    void badPricesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> ModelPrice.perMillion("usd", 1, 1));
        assertThrows(IllegalArgumentException.class, () -> ModelPrice.perMillion("USD", -1, 1));
        assertThrows(IllegalArgumentException.class, () -> ModelPrice.perMillion("USD", Double.NaN, 1));
        assertThrows(IllegalArgumentException.class, () -> Prices.builder().model("m", ModelPrice.perMillion("USD", 1, 1),
                "a*b"));
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class, () -> Prices.builder()
                .model("m", ModelPrice.perMillion("USD", 1, 1)).model("m", ModelPrice.perMillion("USD", 2, 2)));
        assertTrue(twice.getMessage().contains("priced twice"), twice.getMessage());
    }
}
