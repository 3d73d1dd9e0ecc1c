package dev.layover.core.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.tracing.OpenTelemetryTracing;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A user without the OpenTelemetry API pays nothing: Layover core runs (enqueue, the run, its MDC,
 * history) in a class loader where OpenTelemetry does not exist, stores no trace context, and no
 * class but {@link OpenTelemetryTracing} needs it.
 */
@DatabaseTest
class WithoutOpenTelemetryTest {

    @Test
    void jobsRunWithoutOpenTelemetry(TestDatabase db) throws Exception {
        try (CoreWithout loader = new CoreWithout(getClass().getClassLoader(), "io.opentelemetry.")) {
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass("io.opentelemetry.api.OpenTelemetry"));
            loader.runOneJob(db, "untraced", (layoverClass, layover) -> assertEquals(1L,
                    db.count("select count(*) from layover.job_types where job_type = 'untraced'"), "registered"));
            assertTrue(loader.loaded("dev.layover.core.internal.observe.RunScope"), "runs were scoped (MDC)");
            assertTrue(!loader.loaded(OpenTelemetryTracing.class.getName()), "OpenTelemetryTracing was never loaded");
        }
    }

    @Test
    void noClassButOpenTelemetryTracingNeedsOpenTelemetry() throws Exception {
        List<String> needing = CoreWithout.classesNeeding(getClass().getClassLoader(), "io.opentelemetry.");
        assertTrue(needing.stream().allMatch(n -> n.startsWith(OpenTelemetryTracing.class.getName())),
                "only OpenTelemetryTracing needs OpenTelemetry: " + needing);
        assertTrue(needing.contains(OpenTelemetryTracing.class.getName()), "and it does: " + needing);
    }
}
