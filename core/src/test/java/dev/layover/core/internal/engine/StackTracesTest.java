package dev.layover.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import org.junit.jupiter.api.Test;

/** The stored trace's shape: causes kept, frames trimmed, cycles and throwing messages survived. */
@PureTest
class StackTracesTest {

    private static RuntimeException nested(int depth) {
        if (depth > 0) {
            return nested(depth - 1);
        }
        return new IllegalStateException("outer token=abcdef123456", new IllegalArgumentException("inner sk-ant-api03-abcdefghijk"));
    }

    @Test
    void framesAreTrimmedAndCausesKept() {
        String trace = new StackTraces(4000).of(nested(30));
        assertTrue(trace.startsWith("java.lang.IllegalStateException: outer token=[masked]\n\tat "), trace);
        assertEquals(12, trace.lines().takeWhile(l -> !l.startsWith("Caused by")).filter(l -> l.startsWith("\tat ")).count(),
                trace);
        assertTrue(trace.contains("Caused by: java.lang.IllegalArgumentException: inner sk-ant-[masked]"), trace);
        assertTrue(trace.length() <= 4000);
    }

    @Test
    void aTightCapDropsFramesBeforeCauses() {
        String trace = new StackTraces(200).of(nested(30));
        assertTrue(trace.length() <= 200, trace);
        assertTrue(trace.contains("Caused by: java.lang.IllegalArgumentException"), trace);
    }

    @Test
    void cyclesEndAndThrowingMessagesAreDescribed() {
        RuntimeException a = new RuntimeException("a");
        RuntimeException b = new RuntimeException("b", a);
        a.initCause(b);
        assertTrue(new StackTraces(4000).of(a).contains("[circular reference: java.lang.RuntimeException]"));
        RuntimeException bad = new RuntimeException() {
            @Override
            public String getMessage() {
                throw new IllegalStateException("no");
            }
        };
        assertTrue(new StackTraces(4000).of(bad).contains("getMessage() of"));
        assertNull(StackTraces.OFF.of(bad));
        assertNull(new StackTraces(4000).of(null));
    }
}
