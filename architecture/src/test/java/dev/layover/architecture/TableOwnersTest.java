package dev.layover.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * One owner per table: every statement that writes a table of the {@code layover} schema
 * ({@code INSERT INTO}, {@code UPDATE}, {@code DELETE FROM}, {@code TRUNCATE}) sits in the Java
 * file docs/architecture.md names as that table's owner. Writes that a statement of one owner
 * needs of another owner's table go through that owner's SQL function (defined in the migrations,
 * which this scan does not cover). The benchmark harnesses are the one exception.
 */
class TableOwnersTest {

    private static final String CORE = "core/src/main/java/dev/layover/core/";
    private static final String DLQ = "dlq/src/main/java/dev/layover/dlq/";

    /** The owner of each table: the files whose SQL may write it. */
    private static final Map<String, Set<String>> OWNERS = Map.ofEntries(
            Map.entry("scheduled_tasks", Set.of(CORE + "internal/jobs/JobSql.java")),
            // the park is a move: the job store's one statement writes the dead letter it moves the job into
            Map.entry("dead_letters", Set.of(CORE + "internal/jobs/JobSql.java", DLQ + "DlqSql.java")),
            Map.entry("job_history", Set.of(CORE + "internal/jobs/JobSql.java", CORE + "history/JobHistoryRetention.java")),
            Map.entry("breakers", Set.of(CORE + "internal/gate/StateSql.java")),
            Map.entry("cooldowns", Set.of(CORE + "internal/gate/StateSql.java")),
            Map.entry("buckets", Set.of(CORE + "internal/gate/StateSql.java", CORE + "internal/gate/TokenSql.java")),
            Map.entry("pauses", Set.of(CORE + "internal/engine/ControlSql.java")),
            Map.entry("recovery_state", Set.of(DLQ + "DlqSql.java")),
            Map.entry("audit_log", Set.of(DLQ + "DlqSql.java")),
            Map.entry("time_series_counts", Set.of(CORE + "internal/observe/TimeSeriesSql.java")),
            Map.entry("fairness_weights", Set.of(CORE + "internal/gate/FairSql.java")),
            Map.entry("limit_overrides", Set.of(CORE + "internal/gate/OverrideSql.java")),
            Map.entry("batches", Set.of(CORE + "internal/batch/BatchSql.java")),
            Map.entry("batch_items", Set.of(CORE + "internal/batch/BatchSql.java")));

    /**
     * The benchmarks are measurement harnesses, not Layover: they fill tables to measure reads of
     * them, and drive raw db-scheduler beside Layover for the comparisons.
     */
    private static final String FIXTURES = "bench/";

    private static final Pattern WRITE = Pattern.compile(
            "(?i)\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM|TRUNCATE(?:\\s+TABLE)?)\\s+layover\\.([a-z_]+)");

    @Test
    void everyWriteOfALayoverTableIsInItsOwnersSql() throws IOException {
        Path root = reactorRoot();
        Map<String, Set<String>> writers = new TreeMap<>();
        List<String> strays = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.filter(p -> p.toString().endsWith(".java") && p.toString().contains("/src/main/java/"))
                    .forEach(p -> {
                        String rel = root.relativize(p).toString();
                        Matcher m = WRITE.matcher(read(p));
                        while (m.find()) {
                            String table = m.group(1);
                            writers.computeIfAbsent(table, t -> new TreeSet<>()).add(rel);
                            Set<String> owners = OWNERS.get(table);
                            if (!rel.startsWith(FIXTURES) && (owners == null || !owners.contains(rel))) {
                                strays.add(rel + " writes layover." + table);
                            }
                        }
                    });
        }
        assertEquals(List.of(), strays, "writes outside the table's owner (docs/architecture.md); all writers: " + writers);
        assertTrue(writers.get("scheduled_tasks").contains(CORE + "internal/jobs/JobSql.java"),
                "the scan found the job table's owner: " + writers);
    }

    private static Path reactorRoot() {
        Path p = Path.of("").toAbsolutePath();
        while (p != null && !Files.exists(p.resolve("core/pom.xml"))) {
            p = p.getParent();
        }
        if (p == null) {
            throw new IllegalStateException("run from inside the Layover reactor");
        }
        return p;
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
