package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the dead-letter store needs of the schema. */
@DatabaseTest
class SchemaTest {

    @Test
    void textSearchIsIndexedWithTrigramsWhenTheServerHasPgTrgm(TestDatabase db) {
        boolean available = db.count("select count(*) from pg_available_extensions where name = 'pg_trgm'") == 1;
        long index = db.count("select count(*) from pg_indexes where schemaname = 'layover' "
                + "and indexname = 'dead_letters_error_text_idx'");
        assertEquals(available ? 1 : 0, index);
        if (available) {
            StringBuilder plan = new StringBuilder();
            try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
                st.execute("set enable_seqscan = off");
                try (ResultSet rs = st.executeQuery("explain select id from layover.dead_letters d where "
                        + DlqSql.TEXT_MATCH.replace("?", "'%Read Timed Out%'"))) {
                    while (rs.next()) {
                        plan.append(rs.getString(1)).append('\n');
                    }
                }
                st.execute("reset enable_seqscan");
            } catch (SQLException e) {
                throw new AssertionError(e);
            }
            assertTrue(plan.toString().contains("dead_letters_error_text_idx"), plan.toString());
        }
    }

    @Test
    void errorTextIsTheLowerCasedErrorClassAndMessageKeptUpToDateByPostgres(TestDatabase db) {
        long id = Fixtures.deadLetter("t").error("java.net.SocketTimeoutException", "Read Timed Out").insert(db);
        assertEquals("java.net.sockettimeoutexception read timed out",
                db.value("select error_text from layover.dead_letters where id = ?", id));
        db.update("update layover.dead_letters set error_class = null, error_message = 'HTTP 529' where id = ?", id);
        assertEquals(" http 529", db.value("select error_text from layover.dead_letters where id = ?", id));
    }

    @Test
    void theAuditLogRefusesAnEmptyActorAndAnOddAction(TestDatabase db) {
        for (String sql : List.of(
                "insert into layover.audit_log (actor, action) values ('', 'replay')",
                "insert into layover.audit_log (actor, action) values ('a', 'Replay; drop')")) {
            try {
                db.update(sql);
                throw new AssertionError("accepted: " + sql);
            } catch (IllegalStateException expected) {
                assertTrue(expected.getMessage().contains("audit_log_"), expected.getMessage());
            }
        }
    }
}
