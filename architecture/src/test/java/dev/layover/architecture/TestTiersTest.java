package dev.layover.architecture;

import static dev.layover.architecture.ReactorSources.reactorRoot;
import static dev.layover.architecture.ReactorSources.read;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every test class of the reactor carries exactly one tier annotation of layover-testing
 * ({@code @PureTest}, {@code @DatabaseTest}, {@code @ProcessTest}, {@code @BrowserTest}), and the
 * tier follows from what the class uses: a class that reaches a {@code TestDatabase} is not pure;
 * one that starts child JVMs ({@code JvmProcess.start}) or servers of its own ({@code PgBouncer},
 * {@code ReplicatedPostgres}) is a process test; one that drives Chromium is a browser test. The
 * fast profile ({@code ./mvnw -Pfast verify}) selects by these tags, so an untagged class would
 * silently never run there, and a mislabelled one would run in parallel where it must not.
 *
 * <p>A helper is a class of the module's main sources, or of its test sources without test
 * methods. A child JVM is started with {@code JvmProcess.start} (a child main itself only calls
 * {@code JvmProcess.runUntilKilled}, so a test that borrows its nested classes stays in one JVM).
 * Read from the sources (comments left out), not the class files, so the check needs no test
 * classes of other modules compiled.
 */
@PureTest
class TestTiersTest {

    private static final List<String> TIERS = List.of("PureTest", "DatabaseTest", "ProcessTest", "BrowserTest");

    private static final Pattern TEST_METHOD =
            Pattern.compile("@(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)\\b");
    private static final Pattern TIER = Pattern.compile("(?m)^@(PureTest|DatabaseTest|ProcessTest|BrowserTest)\\b");
    private static final Pattern RAW_TIER_TAG = Pattern.compile("@Tag\\(\"(pure|database|process|browser)\"\\)");
    private static final Pattern BROWSER = Pattern.compile("\\b(ChromeDriver|ChromeOptions|WebDriver)\\b");
    private static final Pattern PROCESS = Pattern.compile("\\bJvmProcess\\.start\\b|\\b(PgBouncer|ReplicatedPostgres)\\b");
    private static final Pattern DATABASE = Pattern.compile("\\b(TestDatabase|LayoverPostgresExtension|PostgresServer)\\b");
    private static final Pattern COMMENT = Pattern.compile("(?s)/\\*.*?\\*/|//[^\n]*");
    private static final Pattern IDENTIFIER = Pattern.compile("\\b[A-Z]\\w*\\b");

    @Test
    void everyTestClassHasTheTierOfWhatItUses() {
        Path root = reactorRoot();
        Map<String, String> wrong = new TreeMap<>();
        int classes = 0;
        for (Path testRoot : testRoots(root)) {
            Map<String, String> sources = new TreeMap<>();
            for (Path f : javaFiles(testRoot)) {
                sources.put(stem(f), COMMENT.matcher(read(f)).replaceAll(" "));
            }
            Map<String, String> mainClasses = new TreeMap<>();
            Path mainRoot = testRoot.getParent().resolveSibling("main").resolve("java");
            if (Files.isDirectory(mainRoot)) {
                for (Path f : javaFiles(mainRoot)) {
                    mainClasses.put(stem(f), COMMENT.matcher(read(f)).replaceAll(" "));
                }
            }
            Map<String, String> testHelpers = new TreeMap<>();
            sources.forEach((name, code) -> {
                if (!TEST_METHOD.matcher(code).find()) {
                    testHelpers.put(name, code);
                }
            });
            for (Path f : javaFiles(testRoot)) {
                String code = sources.get(stem(f));
                if (!TEST_METHOD.matcher(code).find() || f.getFileName().toString().equals("TestTiersTest.java")) {
                    continue; // not a test class, or this one (its patterns name what they look for)
                }
                classes++;
                String where = root.relativize(f).toString();
                List<String> tiers = new ArrayList<>();
                Matcher m = TIER.matcher(code);
                while (m.find()) {
                    tiers.add(m.group(1));
                }
                if (RAW_TIER_TAG.matcher(code).find()) {
                    wrong.put(where, "a tier as a bare @Tag: use the annotation (it brings the extension too)");
                    continue;
                }
                if (tiers.size() != 1) {
                    wrong.put(where, tiers.isEmpty() ? "no tier annotation (one of " + TIERS + ")" : "tiers " + tiers);
                    continue;
                }
                String tier = tiers.get(0);
                String uses = reached(code, testHelpers, mainClasses);
                String expected;
                if (BROWSER.matcher(uses).find()) {
                    expected = "BrowserTest";
                } else if (PROCESS.matcher(uses).find()) {
                    expected = "ProcessTest";
                } else if (DATABASE.matcher(uses).find()) {
                    expected = tier.equals("ProcessTest") ? "ProcessTest" : "DatabaseTest";
                } else {
                    // a pure class may still be a process test (an embedded server of its own), never a database one
                    expected = tier.equals("ProcessTest") ? "ProcessTest" : "PureTest";
                }
                if (!tier.equals(expected)) {
                    wrong.put(where, "@" + tier + ", but what it uses makes it @" + expected);
                }
            }
        }
        assertTrue(classes > 150, "found only " + classes + " test classes: is " + root + " the reactor?");
        assertEquals(Map.of(), wrong, "test classes whose tier is missing or does not match what they use");
    }

    /**
     * The class's code and that of every helper it reaches, transitively: test helpers and main
     * classes from test code, only main classes from main code (which cannot see the tests).
     */
    private static String reached(String code, Map<String, String> testHelpers, Map<String, String> mainClasses) {
        StringBuilder all = new StringBuilder(code);
        Set<String> seen = new HashSet<>();
        Deque<Map.Entry<String, Boolean>> todo = new ArrayDeque<>(List.of(Map.entry(code, true)));
        while (!todo.isEmpty()) {
            Map.Entry<String, Boolean> next = todo.pop();
            Matcher m = IDENTIFIER.matcher(next.getKey());
            while (m.find()) {
                String name = m.group();
                boolean test = next.getValue() && testHelpers.containsKey(name);
                String helper = test ? testHelpers.get(name) : mainClasses.get(name);
                if (helper != null && seen.add((test ? "test:" : "main:") + name)) {
                    all.append('\n').append(helper);
                    todo.push(Map.entry(helper, test));
                }
            }
        }
        return all.toString();
    }

    private static List<Path> testRoots(Path root) {
        try (Stream<Path> modules = Files.list(root)) {
            return modules.map(m -> m.resolve("src/test/java")).filter(Files::isDirectory).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<Path> javaFiles(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String stem(Path f) {
        String name = f.getFileName().toString();
        return name.substring(0, name.length() - ".java".length());
    }
}
