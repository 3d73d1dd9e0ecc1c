package dev.layover.samples.translate;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * The demo's bookkeeping of reschedules: Layover deletes a finished job's row, and with it the
 * job's {@code reschedules} count, so the demo logs every reschedule of its job type as it
 * happens, with a trigger on Layover's job table, into {@code layover_demo.reschedules} (reason,
 * attempts before and after). It also checks, from the database's side, that a reschedule never
 * touched the attempts.
 *
 * <p>Demo only: an application needs none of this (Layover has no counters API yet). The trigger
 * is installed by {@link #install} and removed by {@link #uninstall} when the demo ends; if the
 * demo is killed first, it stays until the next run (dropping the schema {@code layover_demo}
 * drops it too) and only logs reschedules of the demo's own job type.
 */
public final class RescheduleLog {

    private static final String TRIGGER = "layover_demo_reschedules";

    private RescheduleLog() {}

    /**
     * Creates the log table and the trigger. Run after {@link Credits#createSchema} and after
     * Layover's migrations.
     *
     * @param dataSource the database
     * @param jobType the job type to log
     * @throws SQLException on a database error
     */
    public static void install(DataSource dataSource, String jobType) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("""
                    CREATE TABLE IF NOT EXISTS layover_demo.reschedules (
                        at              timestamptz NOT NULL DEFAULT clock_timestamp(),
                        job_id          text        NOT NULL,
                        reason          text,
                        attempts_before int,
                        attempts_after  int)""");
            st.execute("""
                    CREATE OR REPLACE FUNCTION layover_demo.log_reschedule() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        INSERT INTO layover_demo.reschedules (job_id, reason, attempts_before, attempts_after)
                        VALUES (NEW.task_instance, NEW.last_reschedule_reason,
                                coalesce(OLD.consecutive_failures, 0), coalesce(NEW.consecutive_failures, 0));
                        RETURN NULL;
                    END $$""");
            st.execute("DROP TRIGGER IF EXISTS " + TRIGGER + " ON layover.scheduled_tasks");
            st.execute("CREATE TRIGGER " + TRIGGER + " AFTER UPDATE OF reschedules ON layover.scheduled_tasks FOR EACH ROW"
                    + " WHEN (NEW.reschedules > OLD.reschedules AND NEW.task_name = '" + jobType.replace("'", "''") + "')"
                    + " EXECUTE FUNCTION layover_demo.log_reschedule()");
        }
    }

    /**
     * Removes the trigger (the log table stays, for queries after the demo).
     *
     * @param dataSource the database
     */
    public static void uninstall(DataSource dataSource) {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP TRIGGER IF EXISTS " + TRIGGER + " ON layover.scheduled_tasks");
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            if (state.startsWith("08") || state.startsWith("57P")) {
                return; // the server is going away (an embedded one stopping on Ctrl-C): nothing to clean
            }
            System.err.println("could not remove the demo's trigger " + TRIGGER + " on layover.scheduled_tasks: "
                    + e.getMessage());
        }
    }

    /**
     * @param dataSource the database
     * @return reschedules by reason ({@code cooldown}, {@code bucket}, {@code rate_limited}, ...)
     * @throws SQLException on a database error
     */
    public static Map<String, Long> byReason(DataSource dataSource) throws SQLException {
        Map<String, Long> out = new TreeMap<>();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT coalesce(reason, '?'), count(*) FROM layover_demo.reschedules GROUP BY 1")) {
            while (rs.next()) {
                out.put(rs.getString(1), rs.getLong(2));
            }
        }
        return out;
    }

    /**
     * @param dataSource the database
     * @return reschedules that changed a job's attempts; must be 0
     * @throws SQLException on a database error
     */
    public static long touchingAttempts(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM layover_demo.reschedules"
                        + " WHERE attempts_after IS DISTINCT FROM attempts_before")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
