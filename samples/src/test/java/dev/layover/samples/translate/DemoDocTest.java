package dev.layover.samples.translate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docs/demo.md shows the charge statement the demo runs. */
class DemoDocTest {

    @Test
    void theDocumentedChargeIsTheOneTheDemoRuns() throws Exception {
        String doc = Files.readString(Path.of("..", "docs", "demo.md"));
        Matcher m = Pattern.compile("```sql\\n(WITH account AS.*?)```", Pattern.DOTALL).matcher(doc);
        assertTrue(m.find(), "docs/demo.md has the charge statement");
        String documented = m.group(1);
        Matcher params = Pattern.compile("\\$(\\w+)").matcher(documented);
        List<String> names = params.results().map(r -> r.group(1)).toList();
        assertEquals(List.of("account", "job", "cost", "cost"), names, "the parameters, in the code's order");
        assertEquals(normalize(Credits.CHARGE), normalize(documented.replaceAll("\\$\\w+", "?")));
    }

    private static String normalize(String sql) {
        return sql.replaceAll("\\s+", " ").trim();
    }
}
