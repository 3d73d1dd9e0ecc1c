package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * {@code Layover.Builder#virtualThreads}: before Java 21 a clear configuration error; on Java 21+
 * (a child JVM of the newest JDK found when this one is older) handlers run on virtual threads, at
 * most {@code threads} of them at once.
 */
@ProcessTest
class VirtualThreadsTest {

    private static final JobType<String> NOOP = JobType.builder("noop", String.class)
            .handler((a, ctx) -> Outcome.done()).build();

    @Test
    void beforeJava21VirtualThreadsAreAClearConfigurationErrorAtBuildAndStart(TestDatabase db) {
        assumeTrue(Runtime.version().feature() < 21, "this JVM is Java " + Runtime.version()
                + ", which has virtual threads: the refusal of an older JVM cannot be seen here");
        db.execute("drop schema layover cascade"); // to see that a refused build migrates nothing
        for (boolean start : new boolean[] {false, true}) {
            Layover.Builder b = TestLayovers.builder(db).register(NOOP).virtualThreads(true);
            ConfigurationException e = assertThrows(ConfigurationException.class, start ? b::start : b::build);
            assertTrue(e.getMessage().startsWith("virtualThreads(true) needs Java 21 or newer; this JVM is Java "
                    + Runtime.version()), e.getMessage());
            assertNull(e.getCause(), "no reflective failure behind it");
        }
        assertEquals(0L, db.count("select count(*) from information_schema.schemata where schema_name = 'layover'"),
                "nothing migrated");
        // off (the default) still works on this JVM
        Layover plain = TestLayovers.builder(db).register(NOOP).virtualThreads(false).start();
        try {
            plain.enqueue(NOOP, "x");
            dev.layover.testing.Await.equal(Duration.ofSeconds(30), "jobs left", 0L,
                    () -> db.count("select count(*) from layover.jobs"));
        } finally {
            plain.stop();
        }
    }

    @Test
    void onJava21HandlersRunOnVirtualThreadsAndThreadsStillBoundsHowManyRunAtOnce(TestDatabase db) {
        Optional<Path> java = JvmProcess.javaAtLeast(21);
        assumeTrue(java.isPresent(), "no Java 21 or newer found (this JVM is Java " + Runtime.version()
                + "; looked at -Dlayover.test.java, /usr/lib/jvm and /Library/Java/JavaVirtualMachines): "
                + "virtual threads need one");
        int threads = 3;
        int jobs = 9;
        try (JvmProcess child = JvmProcess.start(java.get(), VirtualThreadsChild.class, "virtual-threads",
                List.of("-Xmx256m"), List.of(db.jdbcUrl(), String.valueOf(threads), String.valueOf(jobs)), Map.of())) {
            child.awaitOutput("RESULT", Duration.ofSeconds(120));
            String line = child.output().lines().filter(l -> l.startsWith("RESULT")).findFirst().orElseThrow();
            Map<String, String> r = new HashMap<>();
            for (String f : line.substring("RESULT ".length()).split(" ")) {
                r.put(f.substring(0, f.indexOf('=')), f.substring(f.indexOf('=') + 1));
            }
            assertTrue(Integer.parseInt(r.get("java")) >= 21, line);
            assertEquals(String.valueOf(jobs), r.get("jobs"), line);
            assertEquals(String.valueOf(jobs), r.get("virtual"), "every handler on a virtual thread: " + line);
            assertEquals(String.valueOf(threads), r.get("maxInFlight"), "threads(3) jobs at once, no more: " + line);
            assertTrue(Integer.parseInt(r.get("threads")) <= threads, "a pool of threads(3) virtual threads: " + line);
            for (String name : r.get("names").split(",")) {
                assertTrue(name.startsWith("layover-virtual-"), line);
            }
        }
        assertEquals(0L, db.count("select count(*) from layover.jobs"));
        assertEquals((long) jobs, db.count("select count(*) from layover.job_history where outcome = 'completed'"));
    }
}
