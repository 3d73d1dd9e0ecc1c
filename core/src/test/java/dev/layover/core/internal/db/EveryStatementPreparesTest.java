package dev.layover.core.internal.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.Statements;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every statement core keeps, in its {@code *Sql} classes and its {@code .sql} resources, prepares
 * against the migrated schema: a misspelt column or function fails the build, not a run.
 */
@DatabaseTest
class EveryStatementPreparesTest {

    private static final Path SOURCES = Path.of("src/main/java");
    private static final Path SQL = Path.of("src/main/resources/dev/layover/core/sql");

    @Test
    void everyStatementOfCorePrepares(TestDatabase db) throws Exception {
        List<Class<?>> holders = new ArrayList<>();
        try (Stream<Path> files = Files.walk(SOURCES)) {
            for (Path f : files.filter(p -> p.getFileName().toString().endsWith("Sql.java")).toList()) {
                String name = SOURCES.relativize(f).toString().replace('/', '.').replaceAll("\\.java$", "");
                holders.add(Class.forName(name));
            }
        }
        Map<String, String> statements = new TreeMap<>(Statements.constants(holders.toArray(Class<?>[]::new)));
        for (String file : sqlFiles()) {
            statements.put(file + ".sql", NamedSql.load(file).jdbc());
        }
        assertTrue(holders.size() >= 10, "found core's statement classes: " + holders);
        assertTrue(statements.size() >= 100, "found core's statements: " + statements.size());
        try (Connection c = db.dataSource().getConnection()) {
            assertEquals(1, Statements.refused(c, Map.of("misspelt", "SELECT task_nme FROM layover.scheduled_tasks "
                    + "WHERE task_instance = ?")).size(), "the check refuses a misspelt column");
            List<String> refused = Statements.refused(c, statements);
            assertEquals(List.of(), refused, refused.size() + " of " + statements.size() + " statements refused");
            System.out.println("MEASURED " + statements.size() + " statements of " + holders.size() + " classes and the .sql files prepared");
        }
    }

    private static List<String> sqlFiles() throws IOException {
        try (Stream<Path> files = Files.list(SQL)) {
            return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".sql"))
                    .map(n -> n.substring(0, n.length() - 4)).sorted().toList();
        }
    }
}
