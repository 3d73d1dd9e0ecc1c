package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Registration refuses what would fail later, with a message that says how to fix it. */
@DatabaseTest
class RegistrationTest {

    record Ok(String a) {}

    record NoArgs() {}

    /** No properties Jackson can see: its data would be lost. */
    static final class Hidden {
        @SuppressWarnings("unused")
        private String secret = "x";
    }

    /** No constructor Jackson can use. */
    static final class NoCreator {
        private final String value;

        NoCreator(String value, int other) {
            this.value = value + other;
        }

        public String getValue() {
            return value;
        }
    }

    interface Abstract {
        String name();
    }

    @Test
    void aDuplicateNameIsRefused(TestDatabase db) {
        var a = JobType.of("same", Ok.class, (x, c) -> Outcome.done());
        var b = JobType.of("same", Ok.class, (x, c) -> Outcome.done());
        var e = assertThrows(ConfigurationException.class, () -> Layover.builder(db.dataSource()).register(a, b).build());
        assertTrue(e.getMessage().contains("'same' is registered twice"), e.getMessage());
    }

    @Test
    void anArgsTypeWithoutVisiblePropertiesIsRefused(TestDatabase db) {
        var t = JobType.of("hidden", Hidden.class, (x, c) -> Outcome.done());
        var e = assertThrows(ConfigurationException.class, () -> Layover.builder(db.dataSource()).register(t).build());
        assertTrue(e.getMessage().contains("no properties Jackson can write"), e.getMessage());
    }

    @Test
    void anArgsTypeJacksonCannotConstructIsRefused(TestDatabase db) {
        var t = JobType.of("nocreator", NoCreator.class, (x, c) -> Outcome.done());
        var e = assertThrows(ConfigurationException.class, () -> Layover.builder(db.dataSource()).register(t).build());
        assertTrue(e.getMessage().contains("cannot be read back from JSON"), e.getMessage());
        var abs = JobType.of("abstract", Abstract.class, (x, c) -> Outcome.done());
        assertThrows(ConfigurationException.class, () -> Layover.builder(db.dataSource()).register(abs).build());
    }

    @Test
    void recordsIncludingEmptyOnesAreAccepted(TestDatabase db) {
        var a = JobType.of("ok", Ok.class, (x, c) -> Outcome.done());
        var b = JobType.of("noargs", NoArgs.class, (x, c) -> Outcome.done());
        Layover l = Layover.builder(db.dataSource()).register(List.of(a, b)).build();
        assertEquals(List.of(a, b), l.jobTypes());
        assertTrue(l.enqueue(b, new NoArgs()).created());
        assertEquals("{}", db.value("select args::text from layover.jobs"));
    }

    @Test
    void badNamesAndLimitsAreRefused() {
        assertThrows(ConfigurationException.class, () -> JobType.builder("has space", Ok.class));
        assertThrows(ConfigurationException.class, () -> JobType.builder("", Ok.class));
        assertThrows(ConfigurationException.class, () -> JobType.builder("x".repeat(101), Ok.class));
        assertThrows(ConfigurationException.class, () -> JobPolicy.defaults().withMaxAttempts(0));
        assertThrows(ConfigurationException.class,
                () -> JobPolicy.defaults().withBackoff(Duration.ofMinutes(2), Duration.ofMinutes(1)));
        assertThrows(ConfigurationException.class, () -> JobPolicy.defaults().withMaxDeferral(Duration.ZERO));
        assertThrows(NullPointerException.class, () -> JobType.builder("nohandler", Ok.class).build());
    }

    @Test
    void editedArgsAreValidatedAgainstTheArgsType(TestDatabase db) {
        var t = JobType.of("ok", Ok.class, (x, c) -> Outcome.done());
        Layover l = Layover.builder(db.dataSource()).register(t).build();
        assertEquals("{\"a\":\"b\"}", new String(l.validateArgs("ok", "{ \"a\" : \"b\" }")));
        var e = assertThrows(InvalidArgsException.class, () -> l.validateArgs("ok", "{\"b\": 1}"));
        assertTrue(e.getMessage().contains("Unrecognized field \"b\""), e.getMessage());
        assertThrows(InvalidArgsException.class, () -> l.validateArgs("ok", "{not json"));
        assertThrows(UnknownJobTypeException.class, () -> l.validateArgs("gone", "{}"));
    }
}
