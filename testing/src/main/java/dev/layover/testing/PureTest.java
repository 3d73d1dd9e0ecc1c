package dev.layover.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * A test class that needs no database, no child JVM and no browser: tagged {@code pure}. It may
 * start in-process HTTP servers (the fake provider) and threads.
 *
 * <p>One of the test tiers (CONTRIBUTING.md, "Test tiers"): every test class carries exactly one of
 * {@link PureTest}, {@link DatabaseTest}, {@link ProcessTest}, {@link BrowserTest}; the
 * architecture module's {@code TestTiersTest} fails the build when one is missing or does not
 * match what the class uses. {@code ./mvnw -Pfast verify} runs {@code pure} and {@code database}.
 */
@Documented
@Inherited
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
@Tag("pure")
public @interface PureTest {
}
