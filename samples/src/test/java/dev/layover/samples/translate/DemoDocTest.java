package dev.layover.samples.translate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docs/demo.md shows the charge statement the demo runs, and a report with the rows the demo prints. */
@PureTest
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

    @Test
    void theDocumentedReportHasTheRowsAndPartsTheDemoPrints() throws Exception {
        String doc = Files.readString(Path.of("..", "docs", "demo.md"));
        Matcher m = Pattern.compile("```\\n(Report after .*?)```", Pattern.DOTALL).matcher(doc);
        assertTrue(m.find(), "docs/demo.md has a report");
        String documented = m.group(1);

        BatchReport batch = new BatchReport(140, 140, 140, 0, 12, 12, 12, 0, 18000, 9000, 18000, 0, 0.5);
        DemoReport report = new DemoReport(81, 151, 140, Map.of("handler_parked", 11L), 0, 128, 38, 11, 11,
                Map.of("cooldown", 412L, "rate_limited", 143L), 40, 0, 21, 112, 32, 19, 16, 4, 8, 6, 71, 75,
                Map.of("breaker_open", 60L, "handler_parked", 11L), Map.of("sweep", 62L, "trial", 2L), 140, 569, 569, 0, 0,
                57, batch);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        report.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String printed = bytes.toString(StandardCharsets.UTF_8);

        assertEquals(List.of(), report.problems(), printed);
        assertEquals(shape(printed), shape(documented), "docs/demo.md's report, row by row, as DemoReport prints it:\n" + printed);
        Matcher cost = Pattern.compile("cost relative to direct calls +(\\d\\.\\d\\d)").matcher(documented);
        assertTrue(cost.find(), documented);
        assertEquals("0.50", cost.group(1), "the documented run's summaries cost half of direct calls");
    }

    /** Each line of a report without its figures: headings and row labels (what comes before two spaces), in order. */
    private static List<String> shape(String report) {
        return report.lines().map(String::strip).filter(l -> !l.isEmpty())
                .map(l -> l.replaceAll("^(.*?)\\s{2,}.*$", "$1").replaceAll("\\d+", "N"))
                .toList();
    }

    private static String normalize(String sql) {
        return sql.replaceAll("\\s+", " ").trim();
    }
}
