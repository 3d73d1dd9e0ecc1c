package dev.layover.core.tokens;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

@PureTest
class CalibratedEstimatorTest {

    static final String KEY = "anthropic:claude-sonnet-4-5";

    @Test
    void startsOverEstimatingAndConvergesOnTheReportedRatio() {
        CalibratedEstimator c = CalibratedEstimator.create();
        CalibratedEstimator.Estimate first = c.estimate(KEY, 1000);
        assertEquals(2000, first.tokens(), "2 x the base estimate before any report");
        assertEquals(1000, first.rawTokens());
        for (int i = 0; i < 200; i++) {
            assertTrue(c.observe(KEY, 1000, 1200));
        }
        Calibration cal = c.calibration(KEY);
        assertEquals(1.2, cal.ratio(), 1e-3);
        assertTrue(cal.variance() < 1e-4, "a steady ratio has no spread: " + cal.variance());
        assertEquals(200, cal.samples());
        long tokens = c.estimate(KEY, 1000).tokens();
        assertTrue(tokens >= 1200 && tokens <= 1215, "estimate " + tokens);
    }

    @Test
    void aSpreadOfReportsRaisesTheEstimateAboveTheMean() {
        CalibratedEstimator c = CalibratedEstimator.create();
        for (int i = 0; i < 400; i++) {
            c.observe(KEY, 1000, i % 2 == 0 ? 800 : 1200);
        }
        Calibration cal = c.calibration(KEY);
        assertEquals(1.0, cal.ratio(), 0.05);
        assertEquals(0.2, Math.sqrt(cal.variance()), 0.05);
        assertEquals(1.0, cal.mean(c.settings()), 0.05);
        long tokens = c.estimate(KEY, 1000).tokens();
        assertTrue(tokens >= 1150 && tokens <= 1250, "mean plus one deviation: " + tokens);
        CalibratedEstimator atMean = CalibratedEstimator.builder().spread(0).build();
        atMean.importState(c.export());
        assertEquals(Math.ceil(1000 * atMean.calibration(KEY).mean(atMean.settings())), atMean.estimate(KEY, 1000).tokens());
    }

    @Test
    void aReportTenTimesOverTheEstimateMovesTheRatioByABoundedStep() {
        CalibratedEstimator c = CalibratedEstimator.create();
        for (int i = 0; i < 100; i++) {
            c.observe(KEY, 1000, 1000);
        }
        double before = c.calibration(KEY).ratio();
        assertTrue(c.observe(KEY, 1000, 10_000));
        double after = c.calibration(KEY).ratio();
        // the sample is clamped to 2 x the mean and weighs 0.05 at most: the ratio grows at most 5 %
        assertTrue(after > before && after <= before * 1.05 + 1e-9, before + " -> " + after);
        // a run of them climbs step by step, never past maxRatio
        for (int i = 0; i < 1000; i++) {
            c.observe(KEY, 1000, TokenUsage.MAX_COUNT);
        }
        assertEquals(CalibratedEstimator.DEFAULT_MAX_RATIO, c.calibration(KEY).ratio(), 1e-9);
        long capped = c.estimate(KEY, 1000).tokens();
        assertTrue(capped > 4990 && capped <= 5000, "factor capped at maxRatio: " + capped);
        // the first report of a new key counts 4.0 at most (2 x 2.0), averaged with the start: 3.0
        c.observe("new", 1000, 10_000);
        assertEquals(4.0, c.calibration("new").ratio(), 1e-9);
        assertEquals(3000, c.estimate("new", 1000).tokens());
    }

    @Test
    void badReportsAreIgnored() {
        CalibratedEstimator c = CalibratedEstimator.create();
        assertFalse(c.observe(KEY, 0, 100), "no base estimate");
        assertFalse(c.observe(KEY, -5, 100));
        assertFalse(c.observe(KEY, 19, 100), "below minRawTokens");
        assertFalse(c.observe(KEY, 1000, -1));
        assertFalse(c.observe(KEY, 1000, TokenUsage.MAX_COUNT + 1));
        assertFalse(c.observe(KEY, 1000, Long.MAX_VALUE));
        assertFalse(c.observe(null, (TokenUsage) null));
        assertFalse(c.observe(c.estimate(KEY, 1000), null));
        assertEquals(Map.of(), c.export());
        assertTrue(c.observe(KEY, 1000, 0), "a zero report is a report: the ratio falls, bounded");
        assertEquals(1.0, c.calibration(KEY).ratio(), 1e-9);
        assertEquals(1500, c.estimate(KEY, 1000).tokens(), "(2.0 + 1.0) / 2");
        assertThrows(NullPointerException.class, () -> c.observe(null, 1000, 1000));
    }

    @Test
    void nanAndInfiniteRatiosLeaveTheStateAlone() {
        CalibratedEstimator.Settings s = CalibratedEstimator.create().settings();
        Calibration c = Calibration.initial(s);
        assertEquals(c, c.observe(Double.NaN, s));
        assertEquals(c, c.observe(Double.POSITIVE_INFINITY, s));
        assertEquals(c, c.observe(Double.NEGATIVE_INFINITY, s));
        assertThrows(IllegalArgumentException.class, () -> new Calibration(Double.NaN, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new Calibration(0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new Calibration(1, -1, 0));
        assertThrows(IllegalArgumentException.class, () -> new Calibration(1, Double.POSITIVE_INFINITY, 0));
        assertThrows(IllegalArgumentException.class, () -> new Calibration(1, 0, -1));
        Calibration last = new Calibration(1, 0, Long.MAX_VALUE).observe(2, s);
        assertEquals(Long.MAX_VALUE, last.samples());
    }

    @Test
    void estimatesOfHugeOrNegativeBaseCountsStayInRange() {
        CalibratedEstimator c = CalibratedEstimator.create();
        assertEquals(0, c.estimate(KEY, -10).tokens());
        assertEquals(0, c.estimate(KEY, -10).rawTokens());
        assertEquals(TokenUsage.MAX_COUNT, c.estimate(KEY, Long.MAX_VALUE).tokens());
        assertEquals(0, c.estimate(KEY, (String) null).tokens());
        assertTrue(c.estimate(KEY, List.of(ChatMessage.user("Bonjour"))).tokens() > 0);
    }

    @Test
    void stateExportsAndImportsAsNumbers() {
        CalibratedEstimator a = CalibratedEstimator.create();
        for (int i = 0; i < 30; i++) {
            a.observe(KEY, 2000, 2600);
            a.observe("gemini:gemini-2.5-flash", 2000, 1500);
        }
        Map<String, Calibration> exported = a.export();
        assertEquals(2, exported.size());
        CalibratedEstimator b = CalibratedEstimator.create();
        assertEquals(2, b.importState(exported));
        assertEquals(a.estimate(KEY, 777), b.estimate(KEY, 777));
        assertEquals(exported, b.export());

        Map<String, Calibration> odd = new HashMap<>();
        odd.put("too-high", new Calibration(50, 0, 3));
        odd.put(null, new Calibration(1, 0, 1));
        odd.put("null-value", null);
        assertEquals(1, b.importState(odd));
        assertEquals(CalibratedEstimator.DEFAULT_MAX_RATIO, b.calibration("too-high").ratio());
        assertEquals(0, b.importState(null));
    }

    @Test
    void usageIsLearnedAgainstEveryPromptTokenCachedOrNot() {
        CalibratedEstimator c = CalibratedEstimator.builder().initialRatio(1.0).spread(0).build();
        CalibratedEstimator.Estimate e = c.estimate(KEY, 1000);
        // Anthropic reports input_tokens without the cache: the prompt was 100 + 900 read + 200 written
        assertTrue(c.observe(e, new TokenUsage(Provider.ANTHROPIC, 100, 50, 900, 200)));
        assertEquals(1.2, c.calibration(KEY).ratio(), 1e-9);
        assertEquals(1100, c.estimate(KEY, 1000).tokens(), "averaged with the start of 1.0");
    }

    @Test
    void settingsOutOfRangeAreRefusedByName() {
        assertEquals("minRatio must be finite and above 0, was 0.0", assertThrows(IllegalArgumentException.class,
                () -> CalibratedEstimator.builder().minRatio(0).build()).getMessage());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().maxRatio(0.1).build());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().maxRatio(Double.NaN).build());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().initialRatio(9).build());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().maxStep(1).build());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().minWeight(0).build());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().minWeight(1.5).build());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().spread(-1).build());
        assertThrows(IllegalArgumentException.class, () -> CalibratedEstimator.builder().minRawTokens(0).build());
        assertThrows(NullPointerException.class, () -> CalibratedEstimator.builder().base(null));
    }

    @Test
    void concurrentReportsAreEachTakenInOnce() throws Exception {
        CalibratedEstimator c = CalibratedEstimator.builder().minWeight(0.001).build();
        int threads = 8;
        int each = 2000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<?>> done = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < each; i++) {
                        c.observe(KEY, 1000, 1300);
                        c.estimate(KEY, 1000);
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals((long) threads * each, c.calibration(KEY).samples());
        assertEquals(1.3, c.calibration(KEY).ratio(), 0.01);
    }

    @Test
    void keysPastTheCapAreEstimatedButNotLearned() {
        CalibratedEstimator c = CalibratedEstimator.create();
        for (int i = 0; i < CalibratedEstimator.MAX_KEYS; i++) {
            assertTrue(c.observe("k" + i, 100, 100));
        }
        assertFalse(c.observe("one-more", 100, 100));
        assertEquals(200, c.estimate("one-more", 100).tokens());
        assertTrue(c.observe("k0", 100, 100), "known keys still learn");
    }
}
