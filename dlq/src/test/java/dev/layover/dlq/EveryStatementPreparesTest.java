package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.Statements;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every statement of {@link DlqSql} prepares against the migrated schema: a misspelt column or
 * function fails the build, not a run (statements assembled from fragments are left out).
 */
@DatabaseTest
class EveryStatementPreparesTest {

    @Test
    void everyStatementPrepares(TestDatabase db) throws Exception {
        Map<String, String> statements = new java.util.TreeMap<>(Statements.constants(DlqSql.class));
        // the facets' heads, which DlqSql.facets completes with a filter and its GROUP BY
        statements.keySet().removeAll(List.of("DlqSql.FACETS_SELECT", "DlqSql.FACETS_FROM_COUNTS"));
        assertTrue(statements.size() >= 10, "found the statements: " + statements.keySet());
        try (Connection c = db.dataSource().getConnection()) {
            List<String> refused = Statements.refused(c, statements);
            assertEquals(List.of(), refused, refused.size() + " of " + statements.size() + " statements refused");
        }
    }
}
