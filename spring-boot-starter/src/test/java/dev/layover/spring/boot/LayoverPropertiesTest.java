package dev.layover.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.history.JobHistoryRetention;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.dlq.DeadLetterRetention;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.PureTest;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** The properties' defaults are Layover's own, so an unset property changes nothing. */
@PureTest
class LayoverPropertiesTest {

    private final LayoverProperties defaults = new LayoverProperties();

    @Test
    void breakerCooldownAndBucketDefaultsAreLayovers() {
        assertEquals(BreakerSettings.defaults(), PropertiesApplier.breakers(defaults.getBreakers()));
        assertEquals(CooldownSettings.defaults(), PropertiesApplier.cooldowns(defaults.getCooldowns()));
        LayoverProperties.Bucket bucket = new LayoverProperties.Bucket();
        bucket.setRequestsPerMinute(120);
        assertEquals(BucketSettings.requestsPerMinute(120), PropertiesApplier.bucket(bucket));
        assertEquals(JobHistoryRetention.DEFAULT_KEEP, defaults.getHistory().getRetention());
        assertEquals(dev.layover.core.Layover.Builder.DEFAULT_STACK_TRACE_CHARS, defaults.getStackTraceChars());
        assertEquals(4000, defaults.getStackTraceChars());
        assertTrue(defaults.getTimeSeries().isEnabled());
        assertEquals(java.time.Duration.ofSeconds(10), defaults.getTimeSeries().getFlushInterval());
        assertEquals(java.time.Duration.ofHours(1), defaults.getTimeSeries().getTenSecondRetention());
        assertEquals(java.time.Duration.ofDays(7), defaults.getTimeSeries().getMinuteRetention());
    }

    @Test
    void stackTraceAndTimeSeriesSettingsReachTheBuilderAndARefusalNamesItsProperty() {
        LayoverProperties p = new LayoverProperties();
        p.setStackTraceChars(50);
        InvalidLayoverPropertyException e = org.junit.jupiter.api.Assertions.assertThrows(
                InvalidLayoverPropertyException.class,
                () -> PropertiesApplier.apply(p, dev.layover.core.Layover.builder(new PGSimpleDataSource())));
        assertEquals("layover.stack-trace-chars", e.property());
        LayoverProperties q = new LayoverProperties();
        q.getTimeSeries().setFlushInterval(java.time.Duration.ofMillis(1));
        e = org.junit.jupiter.api.Assertions.assertThrows(InvalidLayoverPropertyException.class,
                () -> PropertiesApplier.apply(q, dev.layover.core.Layover.builder(new PGSimpleDataSource())));
        assertEquals("layover.time-series.flush-interval", e.property());
        LayoverProperties r = new LayoverProperties();
        r.getTimeSeries().setMinuteRetention(java.time.Duration.ZERO);
        e = org.junit.jupiter.api.Assertions.assertThrows(InvalidLayoverPropertyException.class,
                () -> PropertiesApplier.apply(r, dev.layover.core.Layover.builder(new PGSimpleDataSource())));
        assertEquals("layover.time-series", e.property());
    }

    @Test
    void recoverySweepAndRetentionDefaultsAreLayovers() {
        LayoverDeadLettersAutoConfiguration config = new LayoverDeadLettersAutoConfiguration();
        RecoverySweep fromProperties = config.layoverRecoverySweep(defaults);
        RecoverySweep plain = RecoverySweep.plugin();
        assertEquals(plain.checkEvery(), fromProperties.checkEvery());
        assertEquals(plain.firstBatch(), fromProperties.firstBatch());
        assertEquals(plain.growthFactor(), fromProperties.growthFactor());
        assertEquals(plain.maxBatch(), fromProperties.maxBatch());
        assertEquals(plain.spread(), fromProperties.spread());
        assertEquals(plain.replayBudget(), fromProperties.replayBudget());
        assertEquals(plain.closeGrace(), fromProperties.closeGrace());
        assertEquals(plain.trials(), fromProperties.trials());

        DataSource ds = new PGSimpleDataSource();
        DeadLetterRetention retention = config.layoverDeadLetterRetention(ds, defaults);
        assertEquals(DeadLetterRetention.DEFAULT_KEEP, retention.keep());
        assertEquals(DeadLetterRetention.DEFAULT_EVERY, retention.every());
        assertEquals(DeadLetterRetention.DEFAULT_BATCH_SIZE, defaults.getDlq().getRetention().getBatchSize());
    }

    @Test
    void aRefusedValueNamesItsProperty() {
        LayoverProperties p = new LayoverProperties();
        p.getDlq().getRecoverySweep().setFirstBatch(0);
        InvalidLayoverPropertyException e = org.junit.jupiter.api.Assertions.assertThrows(
                InvalidLayoverPropertyException.class,
                () -> new LayoverDeadLettersAutoConfiguration().layoverRecoverySweep(p));
        assertEquals("layover.dlq.recovery-sweep.first-batch", e.property());

        FailureAnalysis analysis = new LayoverFailureAnalyzer().analyze(new IllegalStateException("context", e));
        assertTrue(analysis.getDescription().contains("layover.dlq.recovery-sweep.first-batch"), analysis.getDescription());
        assertTrue(analysis.getAction().contains("Change layover.dlq.recovery-sweep.first-batch"), analysis.getAction());
    }

    @Test
    void virtualThreadsAreOffByDefaultAndThePropertyReachesTheBuilder() {
        org.junit.jupiter.api.Assertions.assertFalse(defaults.isVirtualThreads());
        org.junit.jupiter.api.Assumptions.assumeTrue(Runtime.version().feature() < 21, "this JVM is Java "
                + Runtime.version() + ": the builder would accept the property and go on to the database");
        LayoverProperties p = new LayoverProperties();
        p.setVirtualThreads(true);
        dev.layover.core.Layover.Builder b = dev.layover.core.Layover.builder(new PGSimpleDataSource());
        PropertiesApplier.apply(p, b);
        dev.layover.core.ConfigurationException e = org.junit.jupiter.api.Assertions.assertThrows(
                dev.layover.core.ConfigurationException.class, b::build);
        assertTrue(e.getMessage().startsWith("virtualThreads(true) needs Java 21 or newer"), e.getMessage());
    }

    @Test
    void theWorkerSettingsReachTheBuilder() {
        LayoverProperties p = new LayoverProperties();
        p.setGiveBackAfter(java.time.Duration.ofSeconds(-1));
        InvalidLayoverPropertyException e = org.junit.jupiter.api.Assertions.assertThrows(
                InvalidLayoverPropertyException.class,
                () -> PropertiesApplier.apply(p, dev.layover.core.Layover.builder(new PGSimpleDataSource())));
        assertEquals("layover.give-back-after", e.property());
        assertTrue(e.getMessage().contains("giveBackAfter must not be negative"), e.getMessage());
    }
}
