package dev.layover.core.internal.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.layover.core.tracing.LayoverTracing;
import dev.layover.testing.PureTest;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/** A run's MDC is set while it runs and restored after it, on platform and virtual threads. */
@PureTest
class RunScopeTest {

    static {
        org.slf4j.WorkingMdc.install();
    }

    private static final LayoverTracing.RunStart START =
            new LayoverTracing.RunStart("translate", "doc-42", 3, 1, null, null);

    /** Opens a run on this thread, reads the MDC inside it, closes it; returns {inside, after}. */
    private static Map<String, Map<String, String>> runOnce() {
        Map<String, Map<String, String>> seen = new HashMap<>();
        try (RunScope scope = new Runs(LayoverTracing.none(), true).open(START)) {
            assertSame(scope, RunScope.current());
            scope.keys("openai:gpt-4o", "tenant:7");
            seen.put("inside", copy());
        }
        assertNull(RunScope.current(), "no run is current after it");
        seen.put("after", copy());
        return seen;
    }

    private static Map<String, String> copy() {
        Map<String, String> m = MDC.getCopyOfContextMap();
        return m == null ? Map.of() : m;
    }

    @Test
    void theMdcNamesTheJobWhileItRunsAndIsRestoredAfter() {
        MDC.put("request_id", "r-1");
        MDC.put(RunScope.MDC_JOB_ID, "left-over");
        try {
            Map<String, Map<String, String>> seen = runOnce();
            Map<String, String> inside = seen.get("inside");
            assertEquals("translate", inside.get("layover.job_type"));
            assertEquals("doc-42", inside.get("layover.job_id"));
            assertEquals("3", inside.get("layover.attempt"));
            assertEquals("openai:gpt-4o", inside.get("layover.provider_key"));
            assertEquals("r-1", inside.get("request_id"), "the application's own keys stay");
            assertNull(inside.get("trace_id"), "no trace id without tracing");
            assertEquals(Map.of("request_id", "r-1", RunScope.MDC_JOB_ID, "left-over"), seen.get("after"),
                    "what was there before is back, nothing of the run is left");
        } finally {
            MDC.clear();
        }
    }

    @Test
    void mdcOffLeavesTheMdcAlone() {
        try (RunScope scope = new Runs(LayoverTracing.none(), false).open(START)) {
            scope.keys("k", null);
            assertEquals(Map.of(), copy());
        }
    }

    @Test
    void onAVirtualThreadToo() throws Exception {
        java.lang.reflect.Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("startVirtualThread", Runnable.class);
        } catch (NoSuchMethodException e) {
            assumeTrue(false, "virtual threads need Java 21 (this JVM: " + Runtime.version() + ")");
            return;
        }
        AtomicReference<Map<String, Map<String, String>>> seen = new AtomicReference<>();
        Thread t = (Thread) ofVirtual.invoke(null, (Runnable) () -> seen.set(runOnce()));
        t.join();
        assertEquals("doc-42", seen.get().get("inside").get("layover.job_id"));
        assertEquals(Map.of(), seen.get().get("after"));
    }
}
