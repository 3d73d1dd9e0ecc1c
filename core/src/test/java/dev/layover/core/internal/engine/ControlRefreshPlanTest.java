package dev.layover.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * Each worker runs the control refresh once a second, as a prepared statement: after five runs
 * PostgreSQL may keep one plan for any parameter (a generic plan). That plan must not read the job
 * table: written as {@code EXISTS (... deadline <= ?)}, it did, 430 ms a second per worker behind
 * a million-job backlog, evicting the index pages every pick then read again.
 */
@DatabaseTest
class ControlRefreshPlanTest {

    @Test
    void theControlRefreshReadsTheJobTableThroughItsIndexesWhateverItsParameters(TestDatabase db) throws Exception {
        db.update("INSERT INTO layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version)"
                + " SELECT 'plan', 'job-' || i, now() + make_interval(secs => i), false, 1 FROM generate_series(1, 20000) i");
        db.execute("ANALYZE layover.scheduled_tasks");
        String sql = ControlSql.REFRESH;
        for (int i = 1; sql.contains("?"); i++) {
            sql = sql.replaceFirst("\\?", "\\$" + i);
        }
        StringBuilder plan = new StringBuilder();
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("SET plan_cache_mode = force_generic_plan");
            st.execute("PREPARE refresh(text, timestamptz) AS " + sql);
            try (ResultSet rs = st.executeQuery("EXPLAIN EXECUTE refresh('worker', now())")) {
                while (rs.next()) {
                    plan.append(rs.getString(1)).append('\n');
                }
            }
            st.execute("DEALLOCATE refresh");
        }
        assertTrue(plan.indexOf("scheduled_tasks") >= 0, plan.toString());
        assertFalse(plan.toString().contains("Seq Scan on scheduled_tasks"), plan.toString());
    }
}
