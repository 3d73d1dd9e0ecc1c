package dev.layover.samples;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/getting-started.md shows the code GettingStartedTest runs: every Java block of the OpenAI
 * part is a run of lines of GettingStartedOpenAi.java, every one of the Anthropic part a run of
 * lines of GettingStartedAnthropic.java (indentation aside), and the OpenAI program stays under
 * 40 lines of code.
 */
class GettingStartedDocTest {

    private static final Path SOURCES = Path.of("src", "main", "java", "dev", "layover", "samples");

    @Test
    void everyCodeBlockIsPartOfTheProgramTheTestRuns() throws Exception {
        String doc = Files.readString(Path.of("..", "docs", "getting-started.md"));
        int anthropic = doc.indexOf("\n## Anthropic");
        assertTrue(anthropic > 0, "the doc has an Anthropic section");
        assertBlocksIn(doc.substring(0, anthropic), SOURCES.resolve("GettingStartedOpenAi.java"), 4);
        assertBlocksIn(doc.substring(anthropic), SOURCES.resolve("GettingStartedAnthropic.java"), 2);
    }

    @Test
    void theOpenAiProgramIsUnderFortyLinesOfCode() throws Exception {
        long code = Files.readAllLines(SOURCES.resolve("GettingStartedOpenAi.java")).stream().map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("*") && !l.startsWith("/*") && !l.startsWith("//")
                        && !l.startsWith("import ") && !l.startsWith("package "))
                .count();
        assertTrue(code <= 40, code + " lines of code");
    }

    private static void assertBlocksIn(String doc, Path source, int expectedBlocks) throws Exception {
        List<String> program = lines(Files.readString(source));
        Matcher m = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(doc);
        int blocks = 0;
        while (m.find()) {
            blocks++;
            List<String> block = lines(m.group(1));
            assertFalse(block.isEmpty());
            assertTrue(Collections.indexOfSubList(program, block) >= 0,
                    "this block of docs/getting-started.md is not in " + source + ":\n" + m.group(1));
        }
        assertTrue(blocks == expectedBlocks, blocks + " Java blocks checked against " + source);
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
