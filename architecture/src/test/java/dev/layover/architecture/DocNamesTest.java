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
 * A rename that leaves a doc behind fails here. Two of architecture.md's lists are checked
 * whole: the tables the console reads (what its SQL reads), and core's classes that read the
 * JVM's timer rather than the instance's clock (what calls {@code System.nanoTime()}).
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
    private static final Pattern READ = Pattern.compile("(?i)\\b(?:FROM|JOIN)\\s+layover\\.(\\w+)\\b(?!\\s*\\()");
    private static final Pattern VIEW = Pattern.compile("(?i)CREATE\\s+(?:OR\\s+REPLACE\\s+)?VIEW\\s+layover\\.(\\w+)");
    private static final Pattern BACKTICKED = Pattern.compile("`(\\w+)`");
    private static final Pattern NANO_TIME = Pattern.compile("System(\\.|::)nanoTime\\b");

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

    /**
     * architecture.md lists the tables (not views) the console reads: the list is exactly what the
     * console's SQL, Java or resource, reads with {@code FROM} or {@code JOIN}.
     */
    @Test
    void architectureMdListsTheTablesTheConsoleReads() throws IOException {
        Path root = reactorRoot();
        Set<String> views = new TreeSet<>();
        Set<String> read = new TreeSet<>();
        try (Stream<Path> migrations = Files.walk(root.resolve("migrations/src/main/resources"))) {
            migrations.filter(Files::isRegularFile).forEach(p -> VIEW.matcher(read(p)).results()
                    .forEach(r -> views.add(r.group(1))));
        }
        try (Stream<Path> console = Files.walk(root.resolve("replay-console/src/main"))) {
            console.filter(p -> p.toString().endsWith(".java") || p.toString().endsWith(".sql"))
                    .forEach(p -> READ.matcher(read(p)).results().map(r -> r.group(1))
                            .filter(t -> !views.contains(t)).forEach(read::add));
        }
        String doc = read(root.resolve("docs/architecture.md"));
        int from = doc.indexOf("the console's `ConsoleSql` reads");
        int to = doc.indexOf("(a page's fallback trail", from);
        assertTrue(from >= 0 && to > from, "architecture.md lists the tables the console reads");
        Set<String> listed = new TreeSet<>();
        BACKTICKED.matcher(doc.substring(from, to)).results().map(r -> r.group(1))
                .filter(t -> !t.equals("ConsoleSql")).forEach(listed::add);
        assertTrue(views.contains("jobs") && read.contains("dead_letters"), "views " + views + ", read " + read);
        assertEquals(read, listed, "the tables the console reads, and architecture.md's list of them");
    }

    /** architecture.md's Time section names every class of core that reads {@code System.nanoTime()}. */
    @Test
    void architectureMdNamesCoresReadersOfTheJvmsTimer() throws IOException {
        Path root = reactorRoot();
        Set<String> readers = new TreeSet<>();
        Set<String> coreClasses = new TreeSet<>();
        try (Stream<Path> core = Files.walk(root.resolve("core/src/main/java"))) {
            core.filter(p -> p.toString().endsWith(".java")).forEach(p -> {
                String name = p.getFileName().toString().replace(".java", "");
                coreClasses.add(name);
                if (NANO_TIME.matcher(read(p)).find()) {
                    readers.add(name);
                }
            });
        }
        String doc = read(root.resolve("docs/architecture.md"));
        int from = doc.indexOf("Intervals that stay inside one JVM read `System.nanoTime()`");
        int to = doc.indexOf("`DocNamesTest` keeps this list to core's uses", from);
        assertTrue(from >= 0 && to > from, "architecture.md's Time section names the JVM's timer's readers");
        Set<String> named = new TreeSet<>();
        BACKTICKED.matcher(doc.substring(from, to)).results().map(r -> r.group(1))
                .filter(coreClasses::contains).forEach(named::add);
        assertTrue(readers.contains("Lifeline"), "readers " + readers);
        assertEquals(readers, named, "core's classes that read System.nanoTime(), and architecture.md's list of them");
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
