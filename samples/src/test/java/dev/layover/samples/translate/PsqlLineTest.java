package dev.layover.samples.translate;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.testing.PureTest;
import org.junit.jupiter.api.Test;

/** The psql line the demo prints for its database. */
@PureTest
class PsqlLineTest {

    @Test
    void theUserMovesFromTheQueryToTheUrlAndNothingElseIsKept() {
        assertEquals("psql \"postgresql://postgres@localhost:40123/postgres\"",
                TranslationDemo.psql("jdbc:postgresql://localhost:40123/postgres?user=postgres"));
        assertEquals("psql \"postgresql://app@db.internal:5432/orders\"",
                TranslationDemo.psql("jdbc:postgresql://db.internal:5432/orders?user=app&password=***"));
        assertEquals("psql \"postgresql://127.0.0.1:5432/test\"", TranslationDemo.psql("jdbc:postgresql://127.0.0.1:5432/test"));
    }
}
