package dev.layover.core.observability;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.metrics.MicrometerMetrics;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A user without Micrometer pays nothing: Layover core runs (jobs, history) in a class loader where
 * Micrometer does not exist, and no class but {@link MicrometerMetrics} needs it.
 */
@DatabaseTest
class WithoutMicrometerTest {

    @Test
    void jobsRunAndLeaveHistoryWithoutMicrometer(TestDatabase db) throws Exception {
        try (CoreWithout loader = new CoreWithout(getClass().getClassLoader(), "io.micrometer.")) {
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass("io.micrometer.core.instrument.MeterRegistry"));
            loader.runOneJob(db, "plain", (layoverClass, layover) -> {
                Object metrics = layoverClass.getMethod("metrics").invoke(layover);
                assertTrue(String.valueOf(metrics).contains("none"), String.valueOf(metrics));
            });
            assertTrue(loader.loaded("dev.layover.core.internal.engine.Engine"), "the engine ran in isolation");
            assertTrue(!loader.loaded(MicrometerMetrics.class.getName()), "MicrometerMetrics was never loaded");
        }
    }

    @Test
    void noClassButMicrometerMetricsNeedsMicrometer() throws Exception {
        List<String> needing = CoreWithout.classesNeeding(getClass().getClassLoader(), "io.micrometer.");
        assertTrue(needing.stream().allMatch(n -> n.startsWith(MicrometerMetrics.class.getName())),
                "only MicrometerMetrics needs Micrometer: " + needing);
        assertTrue(needing.contains(MicrometerMetrics.class.getName()), "and it does: " + needing);
    }
}
