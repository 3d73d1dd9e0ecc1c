package dev.layover.migrations;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The baseline script builds exactly the schema the pre-release chain V1..V31 built plus the changes
 * made since, each a script under {@code db/since-chain/} ({@link Databases#SINCE_CHAIN}), read from
 * the catalogs of two fresh databases, but for the functions named in {@link #ONLY_IN_CHAIN}: a change
 * of the baseline that is not also written as such a script fails here.
 */
@DatabaseTest
class BaselineSchemaTest {

    /**
     * Functions the chain kept only for workers of earlier versions during a rolling deploy, and
     * that nothing calls any more (no Java or SQL of any module): left out of the baseline. The
     * allowance is these signatures exactly: any other difference fails the comparison.
     */
    static final List<String> ONLY_IN_CHAIN = List.of(
            // layover.admit_tokens without the input and output token dimensions; core calls admit_tokens
            "layover.admit(timestamp with time zone,text,text,bigint,text,text[],double precision[],"
                    + "double precision[],double precision[],double precision[],integer[],double precision,"
                    + "double precision)");

    @Test
    void theBaselineBuildsTheSchemaThePreReleaseChainBuiltWithTheChangesSince() {
        try (TestDatabase chain = LayoverPostgresExtension.emptyDatabase();
                TestDatabase baseline = LayoverPostgresExtension.emptyDatabase()) {
            assertEquals(Databases.CHAIN_SCRIPTS, Databases.migrateChain(chain, null));
            Databases.applySinceChain(chain);
            assertEquals(1, LayoverMigrations.migrate(Databases.plain(baseline)));

            SchemaDescription old = SchemaDescription.of(Databases.plain(chain));
            SchemaDescription now = SchemaDescription.of(Databases.plain(baseline));
            for (String signature : ONLY_IN_CHAIN) {
                assertTrue(old.hasFunction(signature), "the chain defines " + signature);
                assertFalse(now.hasFunction(signature), "the baseline leaves out " + signature);
            }
            String diff = old.withoutFunctions(ONLY_IN_CHAIN).diff("the chain", now, "the baseline");
            assertEquals("", diff, () -> "the baseline's schema differs from the chain's:\n" + diff);
            assertTrue(now.size() > 200, "described " + now.size() + " objects: the description reads the catalogs");
            String trgm = now.asMap().get("extension pg_trgm");
            assertTrue(trgm != null && trgm.startsWith("schema layover,"), "pg_trgm lives in schema layover: " + trgm);
        }
    }

    /** The comparison sees a changed default, a changed function and a dropped comment, and shows them. */
    @Test
    void theComparisonShowsWhatDiffers() {
        try (TestDatabase a = LayoverPostgresExtension.emptyDatabase();
                TestDatabase b = LayoverPostgresExtension.emptyDatabase()) {
            LayoverMigrations.migrate(Databases.plain(a));
            LayoverMigrations.migrate(Databases.plain(b));
            SchemaDescription before = SchemaDescription.of(Databases.plain(b));
            assertEquals("", SchemaDescription.of(Databases.plain(a)).diff("a", before, "b"));

            Databases.execute(Databases.plain(b), """
                    ALTER TABLE layover.scheduled_tasks ALTER COLUMN reschedules SET DEFAULT 1;
                    ALTER FUNCTION layover.bucket_capacity(float8, int) STABLE;
                    COMMENT ON VIEW layover.concurrency IS NULL;
                    """);
            String diff = before.diff("before", SchemaDescription.of(Databases.plain(b)), "after");
            assertTrue(diff.contains("differs: table scheduled_tasks\n"), diff);
            assertTrue(diff.contains("  - " + "  reschedules integer not null default 0\n"), diff);
            assertTrue(diff.contains("  + " + "  reschedules integer not null default 1\n"), diff);
            assertTrue(diff.contains("differs: function layover.bucket_capacity(double precision,integer)\n"), diff);
            assertTrue(diff.contains("only in before: comment on view layover.concurrency\n"), diff);
        }
    }
}
