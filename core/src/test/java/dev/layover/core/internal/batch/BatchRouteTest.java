package dev.layover.core.internal.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.batch.BatchLine;
import dev.layover.core.batch.BatchProgress;
import dev.layover.core.batch.BatchResultLine;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.batch.BatchTransport;
import dev.layover.testing.PureTest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The routing rule of batchable jobs, a pure function of database time and the key's settings. */
@PureTest
class BatchRouteTest {

    private static final Instant NOW = Instant.parse("2026-12-01T12:00:00Z");

    /** A transport that is only read for its limits here: routing never calls a provider. */
    private static final BatchTransport LIMITS_ONLY = new BatchTransport() {
        @Override public String name() { return "limits-only"; }
        @Override public int maxRequests() { return 50_000; }
        @Override public long maxBytes() { return 200_000_000L; }
        @Override public Duration completionWindow() { return Duration.ofHours(24); }
        @Override public String submit(String ref, List<BatchLine> lines) { throw new UnsupportedOperationException(); }
        @Override public Optional<String> find(String ref, int lines, Instant since) { throw new UnsupportedOperationException(); }
        @Override public BatchProgress poll(String id) { throw new UnsupportedOperationException(); }
        @Override public void cancel(String id) { throw new UnsupportedOperationException(); }
        @Override public void results(String id, Consumer<BatchResultLine> sink) { throw new UnsupportedOperationException(); }
    };

    private static final BatchSettings S = BatchSettings.of(LIMITS_ONLY); // 1 h expected, 15 min margin, 30 s polls

    @Test
    void theDeadlineWinsOverTheTolerance() {
        Instant deadline = NOW.plusSeconds(60);
        assertEquals(deadline, BatchRoute.latest(deadline, NOW, Duration.ofHours(5)));
        assertEquals(NOW.plus(Duration.ofHours(5)), BatchRoute.latest(null, NOW, Duration.ofHours(5)));
        assertNull(BatchRoute.latest(null, NOW, null), "no deadline and no tolerance: never gathered");
    }

    @Test
    void aJobIsGatheredOnlyWhenExpectedCompletionPlusTheMarginFits() {
        assertTrue(BatchRoute.gather(NOW, NOW.plus(Duration.ofMinutes(75)), S), "exactly 1 h + 15 min away");
        assertFalse(BatchRoute.gather(NOW, NOW.plus(Duration.ofMinutes(75)).minusSeconds(1), S));
        assertTrue(BatchRoute.gather(NOW, NOW.plus(Duration.ofHours(2)), S));
        assertFalse(BatchRoute.gather(NOW, null, S));
        assertFalse(BatchRoute.gather(NOW, NOW.minusSeconds(1), S), "a passed deadline");
        assertEquals(4500.0, BatchRoute.needSeconds(S));
    }

    @Test
    void aGatheredJobLooksAgainHalfTheMarginBeforeItsLatestFinishButNeverSoonerThanAPoll() {
        Instant latest = NOW.plus(Duration.ofHours(2));
        assertEquals(latest.minus(Duration.ofSeconds(450)), BatchRoute.waitUntil(NOW, latest, S));
        assertEquals(NOW.plusSeconds(30), BatchRoute.waitUntil(NOW, NOW.plusSeconds(60), S), "the poll interval is the floor");
    }

    @Test
    void aJobLeavesAnUnsentBatchOnceWithinTheMargin() {
        Instant latest = NOW.plus(Duration.ofMinutes(15));
        assertTrue(BatchRoute.mustLeave(NOW, latest, S));
        assertFalse(BatchRoute.mustLeave(NOW, latest.plusSeconds(1), S));
        assertFalse(BatchRoute.mustLeave(NOW, null, S));
    }

    @Test
    void anExactKeyWinsOverPatternsAndTheLongestPatternWins() {
        BatchSettings a = S.withPollInterval(Duration.ofSeconds(1));
        BatchSettings b = S.withPollInterval(Duration.ofSeconds(2));
        BatchSettings c = S.withPollInterval(Duration.ofSeconds(3));
        BatchKeys keys = new BatchKeys(Map.of("openai:*", a, "openai:gpt-*", b, "openai:gpt-4o", c));
        assertSame(c, keys.of("openai:gpt-4o"));
        assertSame(b, keys.of("openai:gpt-5"));
        assertSame(a, keys.of("openai:o3"));
        assertNull(keys.of("anthropic:claude"));
        assertNull(keys.of(null));
        assertFalse(new BatchKeys(Map.of()).any());
    }
}
