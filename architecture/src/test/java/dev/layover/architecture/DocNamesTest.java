package dev.layover.architecture;

import static dev.layover.architecture.ReactorSources.reactorRoot;
import static dev.layover.architecture.ReactorSources.read;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The docs that map the code name classes and members that exist: every {@code `ClassName`},
 * {@code `ClassName.MEMBER`} or {@code `ClassName#member`} in them names a class of the reactor
 * (its source file) and members its source declares, or a JDK or third-party class listed here.
 * A rename that leaves a doc behind fails here.
 */
@PureTest
class DocNamesTest {

    /** The docs that say where things are in the code (not the notebooks and histories). */
    private static final List<String> DOCS = List.of("docs/architecture.md", "CONTRIBUTING.md", "docs/observability.md");

    /** Classes the docs name that are not Layover's and not in the JDK packages tried below. */
    private static final Set<String> OTHERS = Set.of("MeterFilter", "OpenTelemetry");

    private static final List<String> JDK_PACKAGES = List.of("java.lang.", "java.util.", "java.util.concurrent.",
            "java.util.concurrent.atomic.", "java.sql.", "javax.sql.", "java.time.", "java.io.", "java.net.",
            "java.nio.file.");

    private static final Pattern CODE = Pattern.compile("`([A-Za-z_][\\w.#]*)(?:\\(\\))?`");
    private static final Pattern CLASS_NAME = Pattern.compile("[A-Z][a-z0-9]+[A-Z]\\w*");

    @Test
    void theDocsNameClassesAndMembersThatExist() throws IOException {
        Path root = reactorRoot();
        Map<String, List<Path>> sources = new HashMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.filter(p -> p.toString().endsWith(".java") && p.toString().contains("/src/"))
                    .filter(p -> !root.relativize(p).toString().contains("/target/"))
                    .forEach(p -> sources.computeIfAbsent(p.getFileName().toString().replace(".java", ""),
                            k -> new ArrayList<>()).add(p));
        }
        Set<String> wrong = new TreeSet<>();
        int checked = 0;
        for (String doc : DOCS) {
            Matcher m = CODE.matcher(read(root.resolve(doc)));
            while (m.find()) {
                String[] segments = m.group(1).split("[.#]");
                int i = 0;
                while (i < segments.length && !CLASS_NAME.matcher(segments[i]).matches()) {
                    i++;
                }
                if (i == segments.length) {
                    continue; // not a class name: a column, a function, a setting
                }
                checked++;
                String name = segments[i];
                List<Path> files = sources.get(name);
                if (files == null) {
                    if (!OTHERS.contains(name) && !inJdk(name)) {
                        wrong.add(doc + ": `" + m.group(1) + "`: no class " + name + " in the reactor");
                    }
                    continue;
                }
                String text = String.join("\n", files.stream().map(ReactorSources::read).toList());
                for (int j = i + 1; j < segments.length; j++) {
                    if (!Pattern.compile("\\b" + Pattern.quote(segments[j]) + "\\b").matcher(text).find()) {
                        wrong.add(doc + ": `" + m.group(1) + "`: " + name + " has no " + segments[j]);
                    }
                }
            }
        }
        assertTrue(checked > 100, "the docs name classes: " + checked);
        assertEquals(Set.of(), wrong, "names in the docs that the code does not have");
    }

    private static boolean inJdk(String simpleName) {
        for (String p : JDK_PACKAGES) {
            try {
                Class.forName(p + simpleName, false, DocNamesTest.class.getClassLoader());
                return true;
            } catch (ClassNotFoundException e) {
                // try the next package
            }
        }
        return false;
    }
}
